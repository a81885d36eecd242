import { LockMode } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/sql';
import { actingUserId, isUserPrincipal, scopesOf, type Principal } from '../auth/principal.js';
import { CALENDAR_URL_SCOPE, policy } from '../auth/policy.js';
import { PUBLIC_ID_PATTERN } from '../db/public-id.js';
import { recordChange } from '../db/change-journal.js';
import type { TransactionRunner } from '../db/transaction.js';
import { ForbiddenError, InvalidInputError, NotFoundError } from '../errors/domain-errors.js';
import { User } from '../users/user.entity.js';
import { activeUser, liveUser } from '../users/user.sql.js';
import type { CalendarKeyCodec } from './calendar-key.codec.js';

/** The user a presented feed key belongs to. */
export interface FeedOwner {
  userId: string;
  name: string;
  timeZone: string;
  updatedAt: Date;
}

/** Keys for the live users among the given ones that have none yet; a concurrent first use's key wins. */
const INSERT_MISSING_KEYS = `insert into calendar_feed_keys (user_id, nonce, key_digest)
         select t.user_id, t.nonce, t.key_digest
           from jsonb_to_recordset(?::jsonb) as t(user_id text, nonce text, key_digest text)
           join users u on u.id = t.user_id and ${liveUser('u')}
          order by u.id
            for share of u
         on conflict (user_id) do nothing
         returning user_id, (select u.account_id from users u where u.id = calendar_feed_keys.user_id) as account_id`;

/** The active user a feed key belongs to (a suspended or deleted user's key opens nothing). */
const FEED_OWNER_BY_DIGEST = `select k.user_id, k.nonce, u.name, u.time_zone, u.updated_at
         from calendar_feed_keys k
         join users u on u.id = k.user_id and ${activeUser('u')}
        where k.key_digest = ?`;

interface KeyRow {
  user_id: string;
  nonce: string;
}

/** One record of the users whose calendar URLs `viewer` was shown: `view_calendar_urls` about the account, the users in `details.references`. */
function recordViewed(tx: EntityManager, viewer: Principal, userIds: readonly string[]): void {
  recordChange(tx, { accountId: viewer.accountId, action: 'view_calendar_urls', resource: { type: 'account', id: viewer.accountId }, references: userIds.map((id) => ({ type: 'user', id })) });
}

/**
 * The calendar key's whole life: shown (created at first use), regenerated, resolved from a feed
 * URL, invalidated with its user. Keys are never stored; see CalendarKeyCodec.
 */
export class CalendarFeedService {
  constructor(
    private readonly em: EntityManager,
    private readonly codec: CalendarKeyCodec,
    private readonly transactions: TransactionRunner,
  ) {}

  /**
   * Who may read a user's calendar URLs (`policy.mayReadCalendarUrls`), the same rule on both
   * faces, with the reason when refused.
   */
  static assertMayReadUrls(principal: Principal, userId: string): void {
    const scopes = scopesOf(principal);
    if (scopes && !scopes.has(CALENDAR_URL_SCOPE)) {
      throw new ForbiddenError(`This OAuth token lacks the required scope: ${CALENDAR_URL_SCOPE} (calendar URLs are credentials; users.read does not show them)`);
    }
    if (policy.mayReadCalendarUrls(principal, userId)) return;
    throw new ForbiddenError(
      isUserPrincipal(principal)
        ? 'Only the user themself or a holder of can_update_user may read this user\'s calendar URLs.'
        : 'This credential may not read calendar URLs.',
    );
  }

  /**
   * The current key of each given live user. A user without one gets one here, at first use:
   * `insert ... on conflict do nothing` and a re-read, so concurrent first uses (and a concurrent
   * regeneration) agree on the single row that won. Deleted users get none: the users are
   * share-locked (in id order, like every multi-user lock) as the keys are added, so a deletion in
   * progress is waited for and then seen, and never leaves a key behind. With a `viewer`, the users
   * other than the viewer whose keys are returned are recorded as shown to them, committed before
   * the keys are returned (for answers sent as soon as they are executed; a request over HTTP
   * records its answer's users once instead, see `recordUrlsShown`).
   */
  async currentKeys(userIds: readonly string[], viewer?: Principal): Promise<Map<string, string>> {
    const ids = [...new Set(userIds)];
    const keys = new Map<string, string>();
    const collect = (rows: KeyRow[]) => rows.forEach((row) => keys.set(row.user_id, this.codec.keyFor(row.user_id, row.nonce)));
    const select = (wanted: string[]) =>
      this.em.execute<KeyRow[]>('select user_id, nonce from calendar_feed_keys where user_id in (?)', [wanted]);

    collect(await select(ids));
    const missing = ids.filter((id) => !keys.has(id));
    // Other users' URLs shown are credentials handed over: recorded, so a viewer's reach can be regenerated. One's own are not.
    const others = viewer ? ids.filter((id) => id !== actingUserId(viewer)) : [];
    if (missing.length === 0 && others.length === 0) return keys;
    if (missing.length === 0) {
      await this.recordUrlsShown(viewer!, others);
      return keys;
    }

    const fresh = missing.map((userId) => {
      const nonce = this.codec.newNonce();
      return { user_id: userId, nonce, key_digest: this.codec.digest(this.codec.keyFor(userId, nonce)) };
    });
    await this.transactions.run(this.em, async (tx) => {
      const created = await tx.execute<{ user_id: string; account_id: string }[]>(
        INSERT_MISSING_KEYS,
        [JSON.stringify(fresh)],
      );
      // A credential made is a change of access, recorded: only the keys this transaction created, not those a concurrent first use won.
      for (const row of created) recordChange(tx, { accountId: row.account_id, action: 'create', resource: { type: 'calendar_feed_key', id: row.user_id }, userId: row.user_id });
      const madeNow = new Set(created.map((row) => row.user_id));
      // Users deleted meanwhile get no key and are not shown.
      const shown = others.filter((id) => keys.has(id) || madeNow.has(id));
      if (shown.length) recordViewed(tx, viewer!, shown);
    }, 'calendarFeed.firstKeys');
    collect(await select(missing));
    return keys;
  }

  /** One `view_calendar_urls` record: `viewer` was shown the calendar URLs of `userIds` (they are credentials, so showing them is recorded). */
  async recordUrlsShown(viewer: Principal, userIds: readonly string[]): Promise<void> {
    await this.transactions.run(this.em, async (tx) => recordViewed(tx, viewer, userIds), 'calendarFeed.viewUrls');
  }

  /**
   * Replaces the user's key with a new one in one statement (an upsert that takes the row lock),
   * so the old key is dead once this returns, and of concurrent regenerations the last to commit
   * is the key that stays. The user row is share-locked first, so a concurrent deletion either
   * waits for this (and then invalidates the new key) or wins (and this answers 404).
   */
  async regenerate(principal: Principal, userId: string): Promise<{ user: User; key: string }> {
    policy.assertSelfOrUserManager(principal, userId);
    if (!PUBLIC_ID_PATTERN.test(userId)) throw new NotFoundError('user');
    return this.transactions.run(this.em, async (tx) => {
      const user = await tx.findOne(User, { id: userId, account: principal.accountId, deletedAt: null }, { lockMode: LockMode.PESSIMISTIC_READ });
      if (!user) throw new NotFoundError('user');
      if (user.suspendedAt) throw new InvalidInputError(`user ${user.id} is suspended: a suspended user cannot be given a new calendar key`);
      const nonce = this.codec.newNonce();
      const key = this.codec.keyFor(user.id, nonce);
      await tx.execute(
        `insert into calendar_feed_keys (user_id, nonce, key_digest, created_at, rotated_at)
         values (?, ?, ?, now(), now())
         on conflict (user_id) do update set nonce = excluded.nonce, key_digest = excluded.key_digest, rotated_at = excluded.rotated_at`,
        [user.id, nonce, this.codec.digest(key)],
        'run',
      );
      // The key itself (and the feed URL holding it) never reaches a record.
      recordChange(tx, { accountId: principal.accountId, action: 'regenerate', resource: { type: 'calendar_feed_key', id: user.id }, userId: user.id, revokesAccess: true });
      return { user, key };
    }, 'calendarFeed.regenerate');
  }

  /**
   * The owner of a presented feed key, or undefined. Every presented value costs the same: one
   * SHA-256, one look-up on the unique digest index (a deleted user's row is gone, and the join
   * excludes tombstones anyway), one HMAC and one constant-time comparison (against a decoy
   * when nothing matched), so an unknown, an old and a deleted user's key are indistinguishable.
   */
  async findFeedOwner(presentedKey: string): Promise<FeedOwner | undefined> {
    const [row] = await this.em.execute<{ user_id: string; nonce: string; name: string; time_zone: string; updated_at: Date | string }[]>(
      FEED_OWNER_BY_DIGEST,
      [this.codec.digest(presentedKey)],
    );
    const valid = this.codec.verify(presentedKey, row ? { userId: row.user_id, nonce: row.nonce } : undefined);
    if (!row || !valid) return undefined;
    return { userId: row.user_id, name: row.name, timeZone: row.time_zone, updatedAt: new Date(row.updated_at) };
  }

  /** In the deleting transaction: the key row goes, so the user's feed URL dies with the commit. */
  static async invalidate(em: EntityManager, userId: string): Promise<void> {
    await em.execute('delete from calendar_feed_keys where user_id = ?', [userId], 'run');
  }
}
