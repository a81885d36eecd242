import type { UserRole } from '../auth/roles.js';
import type { EntityManager } from '@mikro-orm/sql';
import { PUBLIC_ID_PATTERN } from '../db/public-id.js';
import { LIVE_USER } from './user.sql.js';

/**
 * The first lock of every write that changes a user or anything that belongs to a user (see
 * "Concurrent writes" in docs/ARCHITECTURE.md): the live users among `ids`, locked in one
 * statement in id order, so two writers naming overlapping users in any order queue up instead of
 * deadlocking. Returns the ids that were live (and are now locked) in the account.
 *
 * `FOR NO KEY UPDATE` excludes the other writers of these users (updates, deletion, subscription
 * and delegation writes, which all take this lock first) but not the `FOR KEY SHARE` that foreign
 * keys take when a row pointing at the user is inserted. A writer that waited re-reads the row as
 * committed, so a user deleted meanwhile is simply not returned.
 */
export async function lockLiveUsers(em: EntityManager, accountId: string, ids: readonly string[]): Promise<Set<string>> {
  const rows = await lockLiveUserRows<{ id: string }>(em, accountId, ids, 'id');
  return new Set(rows.map((row) => row.id));
}

/**
 * `lockLiveUsers` that also reads `columns` (a select list of `users`, `id` included) of the rows
 * it locks, in the same statement: a write that checks the rows before changing them needs no
 * second read, and what it checks is what it locked.
 */
export async function lockLiveUserRows<T extends { id: string }>(em: EntityManager, accountId: string, ids: readonly string[], columns: string): Promise<T[]> {
  const wanted = [...new Set(ids.filter((id) => PUBLIC_ID_PATTERN.test(id)))];
  if (wanted.length === 0) return [];
  return em.execute<T[]>(
    `select ${columns} from users where account_id = ? and ${LIVE_USER} and id in (?) order by id for no key update`,
    [accountId, wanted],
  );
}

/** `lockLiveUsers` for one user: true when the user is live in the account and now locked. */
export async function lockLiveUser(em: EntityManager, accountId: string, id: string): Promise<boolean> {
  return (await lockLiveUsers(em, accountId, [id])).has(id);
}


/** `lockLiveUser` that answers the locked user's role (what the privilege order checks), or null when there is no such live user. */
export async function lockLiveUserRole(em: EntityManager, accountId: string, id: string): Promise<UserRole | null> {
  const [row] = await lockLiveUserRows<{ id: string; role: UserRole }>(em, accountId, [id], 'id, role');
  return row?.role ?? null;
}
