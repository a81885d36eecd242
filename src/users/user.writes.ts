import type { EntityManager } from '@mikro-orm/sql';
import type { Change } from '../db/change-journal.js';
import type { UserRole } from '../auth/roles.js';
import { patchUpdateStatement, writePath, type WritePath } from '../db/write-path.js';
import { lockLiveUserRows } from './user-locks.js';
import { USER_FIELD_COLUMNS, userRows, userSelectList, type UserRow } from './user.reads.js';
import type { UserFields } from './user.validation.js';

/** What the checks of an update read from a user row it locked. */
export interface LockedUser {
  id: string;
  email: string;
  role: UserRole;
}

export type UserPatch = UserFields & { id: string };

/** The change an update makes, for the commit hooks (`recordChange`): the fields it sets, and whether the role moves (access changes). */
export function userUpdated(accountId: string, patch: UserPatch, before: LockedUser): Change {
  const fields = Object.entries(patch).filter(([name, value]) => name !== 'id' && value !== undefined).map(([name]) => ({ name }));
  return { accountId, action: 'update', resource: { type: 'user', id: patch.id }, userId: patch.id, fields, revokesAccess: patch.role !== undefined && patch.role !== before.role };
}

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
    return lockLiveUserRows<LockedUser>(this.tx, this.accountId, ids, 'id, email, role');
  }

  /**
   * Which live user of the account holds each of these emails, already lower-cased and trimmed
   * (`normalizeEmail`): normalized email -> user id. One statement for the batch, through the
   * unique index on lower(email).
   */
  async emailHolders(normalizedEmails: readonly string[]): Promise<Map<string, string>> {
    if (normalizedEmails.length === 0) return new Map();
    const rows = await this.writes.rows<{ id: string; email: string }>(
      'select id, lower(email) as email from users where account_id = ? and lower(email) in (?) and deleted_at is null',
      [this.accountId, [...new Set(normalizedEmails)]],
    );
    return new Map(rows.map((row) => [row.email, row.id]));
  }

  /**
   * Applies every patch in one UPDATE (name and email stored trimmed, as created) and answers the
   * rows in the patches' order with the columns `fields` needs, as the read path presents them.
   * Rows whose values do not change keep their updated_at. The caller has locked and checked them.
   */
  async apply(patches: readonly UserPatch[], fields: Iterable<string>): Promise<UserRow[]> {
    const statement = patchUpdateStatement({
      table: 'users',
      key: 'id',
      columns: USER_FIELD_COLUMNS,
      patches: patches.map((patch) => ({ ...patch, name: patch.name?.trim(), email: patch.email?.trim() })),
      where: { sql: 'users.account_id = ? and users.deleted_at is null', params: [this.accountId] },
      touched: 'updated_at',
      returning: userSelectList(fields),
    });
    const byId = new Map((await userRows(this.writes.rows<UserRow>(statement.sql, statement.params))).map((row) => [row.id, row]));
    return patches.map((patch) => byId.get(patch.id)!);
  }
}
