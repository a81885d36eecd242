import { BigIntType, OptionalProps } from '@mikro-orm/core';
import { Entity, ManyToOne, PrimaryKey, Property } from '@mikro-orm/decorators/legacy';
import { Account } from '../accounts/account.entity.js';
import { Subscribable } from './subscribable.entity.js';

/**
 * A user's subscription to a subscribable entity of the same account; one per (user, entity),
 * enforced by a unique index. Rows are written with plain SQL (INSERT ... ON CONFLICT DO NOTHING)
 * and read through this entity.
 */
@Entity({ tableName: 'notification_subscriptions' })
export class NotificationSubscription {
  [OptionalProps]?: 'id' | 'createdAt';

  /** Identity column: ascending in subscription order, which is the listing order. */
  @PrimaryKey({ type: new BigIntType('string') })
  id!: string;

  @ManyToOne({ entity: () => Account, fieldName: 'account_id' })
  account!: Account;

  /** A plain column rather than a relation: the users feature owns users, subscriptions only point at one. */
  @Property({ type: 'string', length: 7 })
  userId!: string;

  @ManyToOne({ entity: () => Subscribable, fieldName: 'subscribable_id' })
  subscribable!: Subscribable;

  @Property({ type: 'Date', columnType: 'timestamptz' })
  createdAt: Date = new Date();
}
