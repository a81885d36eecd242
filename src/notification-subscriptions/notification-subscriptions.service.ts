import type { EntityManager } from '@mikro-orm/sql';
import type { Principal } from '../auth/principal.js';
import { recordChange, type Change } from '../db/change-journal.js';
import type { TransactionRunner } from '../db/transaction.js';
import { policy } from '../auth/policy.js';
import { NotFoundError, UnprocessableError } from '../errors/domain-errors.js';
import type { User } from '../users/user.entity.js';
import { UsersService } from '../users/user.service.js';
import { lockLiveUser } from '../users/user-locks.js';
import { isoTimestamp, readPath, toDate } from '../db/read-path.js';
import { NotificationSubscription } from './notification-subscription.entity.js';
import { MAX_SUBSCRIBABLE_FIELD_LENGTH, SUBSCRIBABLE_TYPES, isSubscribableType, type SubscribableType } from './subscribable.entity.js';

export const MAX_SUBSCRIBABLES_PER_CALL = 100;
export const MAX_SUBSCRIPTIONS_PAGE_SIZE = 100;

/** A subscribable entity as a caller names it: its type and the public id. */
export interface SubscribableRef {
  subscribableType: SubscribableType;
  subscribableId: string;
}

export type SubscriptionResult = 'success' | 'duplicate' | 'unauthorized';

/** One element of a subscribe call's answer, in request order. */
export interface SubscriptionAttempt {
  subscriberId: string;
  subscriberType: 'user';
  subscribableId: string;
  subscribableType: SubscribableType;
  accountId: string;
  result: SubscriptionResult;
}

/** What a subscribe call did: one attempt per requested entity, and the subscriptions it created. */
export interface SubscribeOutcome {
  attempts: SubscriptionAttempt[];
  created: SubscriptionRow[];
}

export interface RemovalCounts {
  /** Subscriptions removed. */
  deletedCount: number;
  /** Entities that are not in the caller's account (unknown to its registry). */
  unauthorizedCount: number;
  /** Entities of the account the user was not subscribed to. */
  nonExistentCount: number;
  /** The subscriptions removed, as they were. */
  removed: SubscriptionRow[];
}

/** A subscription as reads present it: a plain row with its entity's public face (no entities). */
export interface SubscriptionRow {
  id: string;
  userId: string;
  accountId: string;
  createdAt: Date;
  subscribableId: string;
  subscribableType: SubscribableType;
  subscribableName: string;
}

/** One page of one user's list (`first + 1` rows were read, so `hasNextPage` needs no count). */
export interface SubscriptionSlice {
  items: SubscriptionRow[];
  hasNextPage: boolean;
}

const SUBSCRIPTION_COLUMNS = `ns.id::text as id, ns.user_id as "userId", ns.account_id as "accountId", ${isoTimestamp('ns.created_at', 'createdAt')},
       s.public_id as "subscribableId", s.type as "subscribableType", s.name as "subscribableName"`;

/**
 * A subscription's id for clients: its key (user, entity type, entity public id), so the same
 * subscription keeps its id in a client's cache across removal and re-creation.
 */
export function subscriptionId(row: Pick<SubscriptionRow, 'userId' | 'subscribableType' | 'subscribableId'>): string {
  return `${row.userId}:${row.subscribableType}:${row.subscribableId}`;
}

const refKey = (ref: SubscribableRef) => `${ref.subscribableType}\u0000${ref.subscribableId}`;

/**
 * The payload rules of both write operations: 1 to 100 entities, each with a
 * known type and a non-empty id, none twice. A violation is 422 and nothing is written.
 */
export function validateSubscribables(items: readonly SubscribableRef[]): void {
  if (items.length < 1 || items.length > MAX_SUBSCRIBABLES_PER_CALL) {
    throw new UnprocessableError(`subscribables must hold 1 to ${MAX_SUBSCRIBABLES_PER_CALL} elements (got ${items.length})`);
  }
  const problems: string[] = [];
  const seen = new Map<string, number>();
  items.forEach((item, index) => {
    if (!isSubscribableType(item.subscribableType)) problems.push(`subscribables[${index}].subscribable_type must be one of ${SUBSCRIBABLE_TYPES.join(', ')}`);
    if (typeof item.subscribableId !== 'string' || item.subscribableId.trim() === '') {
      problems.push(`subscribables[${index}].subscribable_id must be a non-empty string`);
      return;
    }
    if (item.subscribableId.length > MAX_SUBSCRIBABLE_FIELD_LENGTH) problems.push(`subscribables[${index}].subscribable_id must be at most ${MAX_SUBSCRIBABLE_FIELD_LENGTH} characters`);
    const key = refKey(item);
    const first = seen.get(key);
    if (first !== undefined) problems.push(`subscribables[${index}] repeats subscribables[${first}] (${item.subscribableType} ${item.subscribableId})`);
    else seen.set(key, index);
  });
  if (problems.length) throw new UnprocessableError(problems);
}

/** A user's notification subscriptions; every operation is for the user themself or a holder of can_update_user. */
export class NotificationSubscriptionsService {
  constructor(
    private readonly em: EntityManager,
    private readonly principal: Principal,
    private readonly transactions: TransactionRunner,
  ) {}

  /** The target user (404 for unknown, deleted or another account's), once the caller may act for them. */
  private async subscriber(userId: string, options: { write: boolean }): Promise<User> {
    const user = await new UsersService(this.em, this.principal, this.transactions).get(userId);
    policy.assertSelfOrUserManager(this.principal, user.id);
    if (options.write) policy.assertCanWrite(this.principal);
    return user;
  }

  /**
   * Locks the user's row (the first lock of every write about a user), which also proves the user
   * was not deleted meanwhile. It serializes the user's subscription writes: concurrent calls
   * naming the same entities in different orders would otherwise take unique-index locks in
   * opposite orders, and a subscribe racing the user's deletion could leave a subscription behind.
   * The unique index, not this lock, decides between success and duplicate.
   */
  private async lockLiveSubscriber(em: EntityManager, userId: string): Promise<void> {
    if (!(await lockLiveUser(em, this.principal.accountId, userId))) throw new NotFoundError('user');
  }

  /**
   * The registry's internal ids of the given entities that belong to the caller's account, by ref key.
   * (em.execute inlines parameters as escaped literals and spreads an array into a list: hence `array[?]`.)
   */
  private async resolve(em: EntityManager, items: readonly SubscribableRef[]): Promise<Map<string, string>> {
    const rows = await em.execute<{ id: string; type: SubscribableType; public_id: string }[]>(
      `select s.id, s.type, s.public_id
         from subscribables s
         join unnest(array[?]::text[], array[?]::text[]) as wanted (type, public_id) on s.type = wanted.type and s.public_id = wanted.public_id
        where s.account_id = ?`,
      [items.map((item) => item.subscribableType), items.map((item) => item.subscribableId), this.principal.accountId],
    );
    return new Map(rows.map((row) => [refKey({ subscribableType: row.type, subscribableId: row.public_id }), row.id]));
  }

  /**
   * Subscribes the user to each entity, in one transaction. The unique index decides between
   * `success` and `duplicate` (INSERT ... ON CONFLICT DO NOTHING RETURNING), so concurrent
   * identical calls create exactly one subscription.
   */
  async subscribe(userId: string, items: readonly SubscribableRef[]): Promise<SubscribeOutcome> {
    const user = await this.subscriber(userId, { write: true });
    validateSubscribables(items);
    const accountId = this.principal.accountId;
    return this.transactions.run(this.em, async (em) => {
      await this.lockLiveSubscriber(em, user.id);
      const known = await this.resolve(em, items);
      const ids = items.map((item) => known.get(refKey(item))).filter((id): id is string => id !== undefined);
      const created = new Set<string>();
      let createdRows: SubscriptionRow[] = [];
      if (ids.length) {
        const rows = await em.execute<{ id: string; subscribable_id: string }[]>(
          `insert into notification_subscriptions (account_id, user_id, subscribable_id)
           select ?, ?, wanted.id from unnest(array[?]::uuid[]) with ordinality as wanted (id, position) order by wanted.position
           on conflict (user_id, subscribable_id) do nothing
           returning id, subscribable_id`,
          [accountId, user.id, ids],
        );
        for (const row of rows) {
          created.add(row.subscribable_id);
          recordChange(em, subscriptionChange(accountId, user.id, 'create', row));
        }
        if (rows.length) {
          createdRows = await em.execute<SubscriptionRow[]>(
            `select ${SUBSCRIPTION_COLUMNS}
               from notification_subscriptions ns join subscribables s on s.id = ns.subscribable_id
              where ns.id = any(array[?]::bigint[]) order by ns.id`,
            [rows.map((row) => row.id)],
          );
        }
      }
      const attempts = items.map((item): SubscriptionAttempt => {
        const id = known.get(refKey(item));
        return {
          subscriberId: user.id,
          subscriberType: 'user',
          subscribableId: item.subscribableId,
          subscribableType: item.subscribableType,
          accountId,
          result: id === undefined ? 'unauthorized' : created.has(id) ? 'success' : 'duplicate',
        };
      });
      return { attempts, created: createdRows };
    }, 'notificationSubscriptions.subscribe');
  }

  /** Removes the user's subscriptions to the given entities, in one transaction, and counts what happened to each. */
  async unsubscribe(userId: string, items: readonly SubscribableRef[]): Promise<RemovalCounts> {
    const user = await this.subscriber(userId, { write: true });
    validateSubscribables(items);
    return this.transactions.run(this.em, async (em) => {
      await this.lockLiveSubscriber(em, user.id);
      const known = await this.resolve(em, items);
      const ids = [...known.values()];
      let removed: SubscriptionRow[] = [];
      if (ids.length) {
        const rows = await em.execute<(SubscriptionRow & { subscribable_id: string })[]>(
          `delete from notification_subscriptions ns using subscribables s
            where s.id = ns.subscribable_id and ns.user_id = ? and ns.subscribable_id = any(array[?]::uuid[])
            returning ns.subscribable_id, ${SUBSCRIPTION_COLUMNS}`,
          [user.id, ids],
        );
        for (const row of rows) recordChange(em, subscriptionChange(this.principal.accountId, user.id, 'delete', row));
        removed = rows.map(({ subscribable_id: _internal, ...row }) => row).sort((a, b) => Number(a.id) - Number(b.id));
      }
      const deletedCount = removed.length;
      return { deletedCount, unauthorizedCount: items.length - ids.length, nonExistentCount: ids.length - deletedCount, removed };
    }, 'notificationSubscriptions.unsubscribe');
  }

  /** The user (404 for unknown, deleted or another account's) once the caller may read their list. */
  async assertMayList(userId: string): Promise<void> {
    await this.subscriber(userId, { write: false });
  }

  /**
   * The same page (first/offset) of several users' lists in ONE statement, whatever the number of
   * users and the page size: a LATERAL join walks each user's index for the page and joins the
   * entities. Callers check access to each user first (`assertMayRead`).
   */
  async slicesFor(userIds: readonly string[], options: { first: number; offset: number }): Promise<Map<string, SubscriptionSlice>> {
    const slices = new Map<string, SubscriptionSlice>();
    if (userIds.length === 0) return slices;
    // The users as one array parameter: one statement text (one prepared statement) for every page size.
    const rows = await readPath(this.em).rows<SubscriptionRow>(
      `select ${SUBSCRIPTION_COLUMNS}
         from unnest(?::varchar[]) as u(id)
         cross join lateral (
           select id, user_id, account_id, subscribable_id, created_at from notification_subscriptions
            where user_id = u.id and account_id = ?
            order by id limit ? offset ?
         ) ns
         join subscribables s on s.id = ns.subscribable_id`,
      [userIds, this.principal.accountId, options.first + 1, options.offset],
      { prepared: true },
    );
    return groupSlices(userIds, rows, options.first);
  }

  /** One user's page after a cursor (keyset on the identity column), in one statement. */
  async sliceAfter(userId: string, options: { first: number; afterId: string }): Promise<SubscriptionSlice> {
    policy.assertSelfOrUserManager(this.principal, userId);
    const rows = await readPath(this.em).rows<SubscriptionRow>(
      `select ${SUBSCRIPTION_COLUMNS}
         from notification_subscriptions ns join subscribables s on s.id = ns.subscribable_id
        where ns.user_id = ? and ns.account_id = ? and ns.id > ?
        order by ns.id limit ?`,
      [userId, this.principal.accountId, options.afterId, options.first + 1],
      { prepared: true },
    );
    return groupSlices([userId], rows, options.first).get(userId)!;
  }

  /** How many subscriptions each user has, in one grouped statement (no rows loaded). */
  async countsFor(userIds: readonly string[]): Promise<Map<string, number>> {
    const rows = userIds.length
      ? await readPath(this.em).rows<{ user_id: string; n: number | string }>(
          `select user_id, count(*) as n from notification_subscriptions
            where account_id = ? and user_id = any(?) group by user_id`,
          [this.principal.accountId, userIds],
          { prepared: true },
        )
      : [];
    const counts = new Map(userIds.map((id) => [id, 0]));
    for (const row of rows) counts.set(row.user_id, Number(row.n));
    return counts;
  }

  /** The user themself, or a holder of can_update_user. */
  assertMayRead(userId: string): void {
    policy.assertSelfOrUserManager(this.principal, userId);
  }
}

function groupSlices(userIds: readonly string[], rows: SubscriptionRow[], first: number): Map<string, SubscriptionSlice> {
  const byUser = new Map<string, SubscriptionRow[]>(userIds.map((id) => [id, []]));
  for (const row of rows) byUser.get(row.userId)?.push({ ...row, createdAt: toDate(row.createdAt) });
  const slices = new Map<string, SubscriptionSlice>();
  for (const [userId, own] of byUser) {
    // Identity values only grow, so numeric order is subscription order.
    own.sort((a, b) => (BigInt(a.id) < BigInt(b.id) ? -1 : 1));
    slices.set(userId, { items: own.slice(0, first), hasNextPage: own.length > first });
  }
  return slices;
}

/** Runs inside the transaction that deletes the user, which holds the user's row lock that subscription writes queue on. */
export async function removeSubscriptionsOfUser(em: EntityManager, userId: string): Promise<void> {
  await em.nativeDelete(NotificationSubscription, { userId });
}

/** One subscription created or removed, as the write path records it. */
function subscriptionChange(accountId: string, userId: string, action: 'create' | 'delete', row: { id: string; subscribable_id: string }): Change {
  return {
    accountId,
    action,
    resource: { type: 'notification_subscription', id: row.id },
    userId,
    fields: [{ name: 'subscribable_id', ...(action === 'create' ? { value: row.subscribable_id } : { beforeValue: row.subscribable_id }) }],
  };
}
