import type { EntityManager } from '@mikro-orm/sql';
import type { Principal } from '../auth/principal.js';
import { recordChange } from '../db/change-journal.js';
import type { DeletedUser, SuspendedUser } from '../users/user-lifecycle.js';
import type { DelegationType, RevocationReason } from './oauth-delegation.entity.js';
import { delegationsRevoked } from '../observability/metrics.js';

export interface EndedAccess {
  /** Sign-in sessions (and sign-ins in progress, unredeemed codes) ended. */
  sessions: number;
  delegations: number;
  /** The delegations this call revoked, for an answer that shows them with their new status. */
  delegationIds: string[];
}

/** Which of the user's delegations end with their sessions; all of them unless narrowed. */
export interface DelegationsToEnd {
  types?: readonly DelegationType[];
  ids?: readonly string[];
  /** Spares the credential making the change (the session the user changes their password in). */
  keepDelegationId?: string;
  /**
   * Which browsers sign out: every one of the user's (the default: sign-out everywhere, suspension,
   * a password change), or only those whose sessions made the given grants and the delegations
   * ended here (one browser signing out, or an app revoking its token).
   */
  browsers?: 'all' | { grantIds: readonly string[] };
}

/**
 * THE place that ends a user's access: their sign-in sessions at the authorization server (so the
 * next `GET /oauth/authorize` from any of their browsers shows the sign-in page), sign-ins in
 * progress and unredeemed codes, and their delegations (every one, or those `scope` names), in the
 * caller's transaction, which holds the user's row lock (the lock order of every write about a
 * user). What it ends is one audit record marked `revokesAccess`, so open sockets of the user are
 * re-checked on every instance at the commit. Nothing it ends comes back (a reactivation included).
 *
 * Callers: sign-out (`DELETE /oauth_delegations`, `deleteOAuthDelegations`), revoking a first-party
 * delegation by id, suspension and deletion (this feature's user hooks), a password change and
 * `users set-password`, `revokeSignInSessions`. It sits in the delegations feature, below the
 * authorization server and reached by the users feature through its hooks, so no import runs back up.
 * API keys and the calendar key are their own features' (suspension and deletion hooks).
 */
export async function endUserAccess(
  em: EntityManager,
  user: { accountId: string; userId: string },
  by: { principal?: Principal; reason: RevocationReason; at?: Date },
  scope: DelegationsToEnd = {},
): Promise<EndedAccess> {
  const sessions = scope.browsers && scope.browsers !== 'all'
    ? await endBrowsersOfGrants(em, user.userId, scope.browsers.grantIds, scope.ids ?? [])
    : await endSignInSessions(em, user.userId);
  const delegationIds = await revokeIssued(
    em,
    { accountId: user.accountId, userId: user.userId, types: scope.types, ids: scope.ids, exceptId: scope.keepDelegationId },
    { principal: by.principal, at: by.at ?? new Date(), reason: by.reason, sessions },
  );
  if (delegationIds.length === 0 && sessions > 0) {
    recordChange(em, {
      accountId: user.accountId,
      action: 'revoke',
      resource: { type: 'user', id: user.userId },
      userId: user.userId,
      fields: [{ name: 'revocation_reason', value: by.reason }, { name: 'sign_in_sessions', value: sessions }],
      revokesAccess: true,
    });
  }
  return { sessions, delegations: delegationIds.length, delegationIds };
}

/** The users feature's deletion hook: the deleted user's sessions and delegations end in the deleting transaction. */
export function endDeletedUsersAccess(em: EntityManager, user: DeletedUser, principal: Principal): Promise<EndedAccess> {
  return endUserAccess(em, { accountId: user.accountId, userId: user.id }, { principal, at: user.deletedAt, reason: 'user_deleted' });
}

/** In the suspending transaction: the user's sessions and delegations (their OAuth grants' tokens with them) end at the commit. */
export function endSuspendedUsersAccess(em: EntityManager, user: SuspendedUser, principal: Principal): Promise<EndedAccess> {
  return endUserAccess(em, { accountId: user.accountId, userId: user.id }, { principal, at: user.suspendedAt, reason: 'user_suspended' });
}


/**
 * Ends the account's sign-in sessions a single sign-on made (with the codes they issued and nobody
 * redeemed), when the provider that vouched for them is removed or replaced: that browser's next
 * `GET /oauth/authorize` shows the sign-in page. Sessions a password made, and the delegations
 * (tokens) issued from any session, stay. Answers how many ended; the caller's record says so.
 */
export async function endSingleSignOnSessions(em: EntityManager, accountId: string): Promise<number> {
  const sessions = await em.execute<{ user_id: string; session_uid_digest: string }[]>(
    `select s.user_id, s.session_uid_digest from sign_in_sessions s join users u on u.id = s.user_id
      where u.account_id = ? and s.method = 'single_sign_on'`,
    [accountId],
  );
  return (await endSessionsByUid(em, sessions.map((session) => session.session_uid_digest), { accountId })).ended;
}

/**
 * Ends the sign-in sessions whose uid digests are given (the user's, or any of the account's), with
 * the codes they issued and nobody redeemed (the adapter keeps a code's session uid), and their
 * details in `sign_in_sessions`. Answers how many sessions ended and the ids of the details removed.
 */
export async function endSessionsByUid(em: EntityManager, uidDigests: readonly string[], owner: { userId: string } | { accountId: string }): Promise<{ ended: number; sessionIds: string[] }> {
  if (uidDigests.length === 0) return { ended: 0, sessionIds: [] };
  const placeholders = uidDigests.map(() => '?').join(', ');
  const [ownedBy, ownerParam] = 'userId' in owner ? ['user_id = ?', owner.userId] : ['user_id in (select id from users where account_id = ?)', owner.accountId];
  const ended = await em.execute<{ affectedRows?: number }>(
    `delete from oauth_server_records where model = 'Session' and uid_digest in (${placeholders}) and ${ownedBy}`,
    [...uidDigests, ownerParam],
    'run',
  );
  await em.execute(`delete from oauth_server_records where model = 'AuthorizationCode' and uid_digest in (${placeholders}) and ${ownedBy}`, [...uidDigests, ownerParam], 'run');
  const removed = await em.execute<{ id: string }[]>(
    `delete from sign_in_sessions where session_uid_digest in (${placeholders}) and ${ownedBy} returning id`,
    [...uidDigests, ownerParam],
  );
  return { ended: ended.affectedRows ?? 0, sessionIds: removed.map((row) => row.id) };
}

/**
 * The user's browsers whose sessions made these grants (or the grants of these delegations): each
 * session remembers the grants it made, and each token the session it came from. Other browsers
 * stay signed in.
 */
async function endBrowsersOfGrants(em: EntityManager, userId: string, grantIds: readonly string[], delegationIds: readonly string[]): Promise<number> {
  const grants = [...grantIds];
  if (delegationIds.length) {
    const rows = await em.execute<{ grant_id: string }[]>(
      `select grant_id from oauth_delegations where user_id = ? and grant_id is not null and id in (${delegationIds.map(() => '?').join(', ')})`,
      [userId, ...delegationIds],
    );
    grants.push(...rows.map((row) => row.grant_id));
  }
  if (grants.length === 0) return 0;
  const list = grants.map(() => '?').join(', ');
  const sessions = await em.execute<{ uid_digest: string }[]>(
    `select session_uid_digest as uid_digest from sign_in_sessions where user_id = ? and grant_ids && array[${list}]::text[]
     union
     select uid_digest from oauth_server_records where user_id = ? and model in ('AccessToken', 'RefreshToken', 'AuthorizationCode') and uid_digest is not null and grant_id in (${list})`,
    [userId, ...grants, userId, ...grants],
  );
  return (await endSessionsByUid(em, sessions.map((session) => session.uid_digest), { userId })).ended;
}

/**
 * The authorization server's memory of the user's browsers (`oauth_server_records` rows of model
 * Session, with the interactions and codes in flight), found by the user column its adapter keeps.
 */
async function endSignInSessions(em: EntityManager, userId: string): Promise<number> {
  const ended = await em.execute<{ affectedRows?: number }>(
    `delete from oauth_server_records where user_id = ? and model in ('Session', 'Interaction', 'AuthorizationCode')`,
    [userId],
    'run',
  );
  // What those sessions were made by goes with them (`User.signInSessions`, sign-in-sessions.ts).
  await em.execute('delete from sign_in_sessions where user_id = ?', [userId], 'run');
  return ended.affectedRows ?? 0;
}

/**
 * Revokes, in one conditional UPDATE, every issued delegation of the user matching `types`; answers
 * the ids of the delegations this call revoked.
 * `status = 'issued'` in the condition makes concurrent revocations revoke each row exactly once:
 * the first writer sets revoked_at and the revoking principal; the others find nothing left to do.
 */
export async function revokeIssued(
  em: EntityManager,
  scope: { accountId: string; userId: string; types?: readonly DelegationType[]; ids?: readonly string[]; exceptId?: string },
  by: { principal?: Principal; at: Date; reason: RevocationReason; sessions?: number },
): Promise<string[]> {
  if (scope.ids?.length === 0) return [];
  const types = scope.types ? [...scope.types] : undefined;
  const conditions = ['account_id = ?', 'user_id = ?', "status = 'issued'"];
  const params: unknown[] = [scope.accountId, scope.userId];
  const where = (condition: string, ...values: unknown[]) => {
    conditions.push(condition);
    params.push(...values);
  };
  if (types) where(`delegation_type in (${types.map(() => '?').join(', ')})`, ...types);
  if (scope.ids) where(`id in (${scope.ids.map(() => '?').join(', ')})`, ...scope.ids);
  if (scope.exceptId) where('id <> ?', scope.exceptId);
  const rows = await em.execute<{ id: string }[]>(
    `update oauth_delegations set status = 'revoked', revoked_at = ?, revoked_by_kind = ?, revoked_by_credential_id = ?, revocation_reason = ?
      where ${conditions.join(' and ')}
      returning id`,
    [by.at, by.principal?.kind ?? null, by.principal?.credentialId ?? null, by.reason, ...params],
  );
  if (rows.length === 0) return [];
  delegationsRevoked.inc({ reason: by.reason }, rows.length);
  // One record per user, naming every delegation this revocation ended.
  recordChange(em, {
    accountId: scope.accountId,
    action: 'revoke',
    resource: { type: 'user', id: scope.userId },
    userId: scope.userId,
    fields: [
      { name: 'revocation_reason', value: by.reason },
      ...(types ? [{ name: 'delegation_type', value: types.join(',') }] : []),
      ...(by.sessions ? [{ name: 'sign_in_sessions', value: by.sessions }] : []),
    ],
    references: rows.map((row) => ({ type: 'oauth_delegation', id: row.id })),
    revokesAccess: true,
  });
  return rows.map((row) => row.id);
}
