import type { EntityManager } from '@mikro-orm/sql';
import type { Authorship } from '../auth/owner-rights.js';
import type { UserRole } from '../auth/roles.js';
import { recordChange, type ChangedField } from '../db/change-journal.js';
import { patchUpdateStatement, writePath, type WritePath } from '../db/write-path.js';
import { lockLiveUserRows } from './user-locks.js';
import { USER_FIELDS, USER_FIELD_COLUMNS, USER_FIELD_NAMES, restName } from './user.fields.js';
import { userRows, type UserRow } from './user.reads.js';
import { LIVE_USER, liveUser, userSelectList } from './user.sql.js';
import type { UserFields } from './user.validation.js';

/** What an update reads from a user row it locked: what the checks need, and every field's value before (the audit trail's). */
export interface LockedUser extends Required<UserFields> {
  id: string;
  email: string;
  role: UserRole;
  externalId: string | null;
  active: boolean;
  version: string;
}

/** What `lockForUpdate` reads of each user: every field a write sets, whether the user is active, and the version. */
const LOCKED_COLUMNS = [
  'id',
  ...Object.entries(USER_FIELD_COLUMNS).map(([field, column]) => (field === column ? column : `${column} as "${field}"`)),
  'suspended_at is null as active',
  `${USER_FIELDS.version.column} as version`,
].join(', ');
const EMAIL_HOLDERS = `select id, lower(email) as email from users where account_id = ? and lower(email) = any(?) and ${LIVE_USER}`;
const EXTERNAL_ID_HOLDERS = `select id, external_id from users where account_id = ? and external_id = any(?) and ${LIVE_USER}`;
const SET_SUSPENDED = `update users set suspended_at = ?, updated_at = now() where account_id = ? and ${LIVE_USER} and id = any(?) returning id`;
const UPDATED_USERS = `users.account_id = ? and ${liveUser('users')}`;

/**
 * Each field of `fields` as a change reports it: its value (and for updates, its value before).
 * Change records name a user's fields as REST does (user.fields.ts), on both faces.
 */
export function userChangedFields(after: UserFields, before?: UserFields): ChangedField[] {
  return USER_FIELD_NAMES.flatMap((field) => {
    const value = after[field];
    if (value === undefined || (before && (before[field] ?? null) === (value ?? null))) return [];
    return [{ name: restName(field), value, ...(before ? { beforeValue: before[field] ?? null } : {}) }];
  });
}

/**
 * Who set the emails of the users `ids` (src/auth/owner-rights.ts): a first single sign-on links an
 * owner or admin by an email only when it was set with owner rights or by that user.
 */
export interface EmailAuthorship {
  ids: ReadonlySet<string>;
  authorship: Authorship;
}

/** `active` and `expectedVersion` are not columns: the service suspends or refuses before the fields are written. */
export type UserPatch = UserFields & { id: string; active?: boolean | null; expectedVersion?: string | null };

/**
 * Updates of users on the write path (src/db/write-path.ts), inside the caller's transaction:
 * lock and read what the checks need, find who holds an email, apply the patches in one
 * statement. The service decides what is allowed; this decides how it reaches the database.
 */
export class UserWrites {
  private readonly writes: WritePath;

  constructor(
    private readonly tx: EntityManager,
    private readonly accountId: string,
  ) {
    this.writes = writePath(tx);
  }

  /** The live users among `ids`, locked first in id order (user-locks.ts), with what the checks read. */
  lockForUpdate(ids: readonly string[]): Promise<LockedUser[]> {
    return lockLiveUserRows<LockedUser>(this.tx, this.accountId, ids, LOCKED_COLUMNS);
  }

  /**
   * Which live user of the account holds each of these emails, already lower-cased and trimmed
   * (`normalizeEmail`): normalized email -> user id. One statement for the batch, through the
   * unique index on lower(email).
   */
  async emailHolders(normalizedEmails: readonly string[]): Promise<Map<string, string>> {
    if (normalizedEmails.length === 0) return new Map();
    const rows = await this.writes.rows<{ id: string; email: string }>(
      EMAIL_HOLDERS,
      [this.accountId, [...new Set(normalizedEmails)]],
    );
    return new Map(rows.map((row) => [row.email, row.id]));
  }

  /** Which live user of the account holds each of these identity-provider ids: id -> user id (one statement, its unique index). */
  async externalIdHolders(externalIds: readonly string[]): Promise<Map<string, string>> {
    if (externalIds.length === 0) return new Map();
    const rows = await this.writes.rows<{ id: string; external_id: string }>(
      EXTERNAL_ID_HOLDERS,
      [this.accountId, [...new Set(externalIds)]],
    );
    return new Map(rows.map((row) => [row.external_id, row.id]));
  }

  /** Suspends (`at`) or reactivates (null) locked users; either changes their version. */
  async setSuspended(ids: readonly string[], at: Date | null): Promise<void> {
    if (ids.length === 0) return;
    await this.writes.rows(
      SET_SUSPENDED,
      [at, this.accountId, [...ids]],
    );
  }

  /**
   * Applies every patch in one UPDATE (name and email stored trimmed, as created) and answers the
   * rows in the patches' order with the columns `fields` needs, as the read path presents them.
   * Rows whose values do not change keep their updated_at. The caller has locked and checked them
   * (`locked`: the rows as `lockForUpdate` read them); each user whose fields change is reported
   * as one change, naming each changed field with its value before and after.
   */
  async apply(patches: readonly UserPatch[], fields: Iterable<string>, locked: ReadonlyMap<string, LockedUser>, emailSetBy?: EmailAuthorship): Promise<UserRow[]> {
    const stored = patches.map((patch) => ({ ...patch, name: patch.name?.trim(), email: patch.email?.trim() }));
    const authored = (patch: UserPatch) => (emailSetBy?.ids.has(patch.id)
      ? { emailSetByUserId: emailSetBy.authorship.userId, emailSetWithOwnerRights: emailSetBy.authorship.ownerRights }
      : {});
    const statement = patchUpdateStatement({
      table: 'users',
      key: 'id',
      columns: USER_FIELD_COLUMNS,
      // Who set an email (src/auth/owner-rights.ts) is not one of the user's fields: it changes neither version nor updated_at.
      bookkeeping: { emailSetByUserId: { column: 'email_set_by_user_id', type: 'varchar' }, emailSetWithOwnerRights: { column: 'email_set_with_owner_rights', type: 'boolean' } },
      patches: stored.map((patch) => ({ ...patch, ...authored(patch) })),
      where: { sql: UPDATED_USERS, params: [this.accountId] },
      touched: 'updated_at',
      returning: userSelectList(fields),
    });
    const byId = new Map((await userRows(this.writes.rows<UserRow>(statement.sql, statement.params))).map((row) => [row.id, row]));
    for (const patch of stored) {
      const before = locked.get(patch.id)!;
      const { id: _id, ...after } = patch;
      const changed = userChangedFields(after, before);
      if (changed.length === 0) continue;
      const lowersRole = patch.role !== undefined && patch.role !== before.role;
      recordChange(this.tx, {
        accountId: this.accountId,
        action: 'update',
        resource: { type: 'user', id: patch.id, summary: patch.name ?? before.name },
        userId: patch.id,
        fields: changed,
        ...(lowersRole ? { revokesAccess: true } : {}),
      });
    }
    return patches.map((patch) => byId.get(patch.id)!);
  }
}
