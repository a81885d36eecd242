import { randomUUID } from 'node:crypto';
import { OptionalProps } from '@mikro-orm/core';
import { Entity, PrimaryKey, Property } from '@mikro-orm/decorators/legacy';

/** One on-call shift of a user (e.g. a schedule's layer turn); the calendar feed lists them. */
@Entity({ tableName: 'oncall_shifts' })
export class OnCallShift {
  [OptionalProps]?: 'id' | 'createdAt' | 'updatedAt';

  @PrimaryKey({ type: 'uuid' })
  id: string = randomUUID();

  @Property({ type: 'string', length: 7 })
  userId!: string;

  @Property({ type: 'Date', columnType: 'timestamptz' })
  startsAt!: Date;

  @Property({ type: 'Date', columnType: 'timestamptz' })
  endsAt!: Date;

  /** What the shift is for, e.g. the schedule's name. */
  @Property({ type: 'string', length: 255 })
  summary!: string;

  @Property({ type: 'Date', columnType: 'timestamptz' })
  createdAt: Date = new Date();

  @Property({ type: 'Date', columnType: 'timestamptz', onUpdate: () => new Date() })
  updatedAt: Date = new Date();
}
