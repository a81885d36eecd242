import { OptionalProps } from '@mikro-orm/core';
import { Entity, PrimaryKey, Property } from '@mikro-orm/decorators/legacy';
import { newPublicId } from '../db/public-id.js';

/** A tenant: nothing of one account is visible through another account's credentials. */
@Entity({ tableName: 'accounts' })
export class Account {
  [OptionalProps]?: 'id' | 'timeZone' | 'createdAt';

  @PrimaryKey({ type: 'string', length: 7 })
  id: string = newPublicId();

  @Property({ type: 'string', length: 255 })
  name!: string;

  @Property({ type: 'string', length: 64 })
  timeZone: string = 'Etc/UTC';

  @Property({ type: 'Date', columnType: 'timestamptz' })
  createdAt: Date = new Date();
}
