import { randomUUID } from 'node:crypto';
import { OptionalProps } from '@mikro-orm/core';
import { Entity, Enum, ManyToOne, PrimaryKey, Property } from '@mikro-orm/decorators/legacy';
import { Account } from '../accounts/account.entity.js';

export const SUBSCRIBABLE_TYPES = ['incident', 'business_service'] as const;
export type SubscribableType = (typeof SUBSCRIBABLE_TYPES)[number];

export function isSubscribableType(value: unknown): value is SubscribableType {
  return typeof value === 'string' && (SUBSCRIBABLE_TYPES as readonly string[]).includes(value);
}

/** Longest public id or name the registry keeps. */
export const MAX_SUBSCRIBABLE_FIELD_LENGTH = 255;

/**
 * An entity of an account that users may subscribe to (an incident or a business service),
 * registered by an operator under the public id it has elsewhere (e.g. "PD1234"), so that
 * subscriptions can be checked against the account and shown with a name.
 */
@Entity({ tableName: 'subscribables' })
export class Subscribable {
  [OptionalProps]?: 'id' | 'createdAt' | 'updatedAt';

  /** Internal key; the public face is (`type`, `publicId`). */
  @PrimaryKey({ type: 'uuid' })
  id: string = randomUUID();

  @ManyToOne({ entity: () => Account, fieldName: 'account_id' })
  account!: Account;

  @Enum({ items: () => [...SUBSCRIBABLE_TYPES], type: 'string' })
  type!: SubscribableType;

  /** The id the operator gave; unique per account and type. */
  @Property({ type: 'string', length: MAX_SUBSCRIBABLE_FIELD_LENGTH })
  publicId!: string;

  @Property({ type: 'string', length: MAX_SUBSCRIBABLE_FIELD_LENGTH })
  name!: string;

  @Property({ type: 'Date', columnType: 'timestamptz' })
  createdAt: Date = new Date();

  @Property({ type: 'Date', columnType: 'timestamptz', onUpdate: () => new Date() })
  updatedAt: Date = new Date();
}
