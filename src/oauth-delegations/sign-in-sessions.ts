import { randomUUID } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/sql';
import { policy } from '../auth/policy.js';
import type { Principal } from '../auth/principal.js';
import { digestSecret } from '../auth/secrets.js';
import { recordChange } from '../db/change-journal.js';
import type { TransactionRunner } from '../db/transaction.js';
import { InvalidInputError, NotFoundError } from '../errors/domain-errors.js';
import { lockLiveUserRole } from '../users/user-locks.js';
import { isUuid } from './oauth-delegation.service.js';
import { endSessionsByUid } from './user-access.js';

export type SignInMethodKind = 'password' | 'single_sign_on';

/** How a browser signed in, said by the sign-in that finished (the password form, single sign-on). */
export interface SignInMade {
  method: SignInMethodKind;
  /** The identity provider's name, for single sign-on. */
  identityProvider?: string;
}

/** What the browser that signed in showed of itself on the request that made the session. */
export interface SignInBrowser {
  userAgent?: string;
  /** As Express derives it under `TRUST_PROXY`. */
  remoteAddress?: string;
}

/** A browser's sign-in session, as `User.signInSessions` shows it. */
export interface SignInSessionView {
  id: string;
  createdAt: Date;
  lastActiveAt: Date;
  expiresAt: Date | null;
  method: SignInMethodKind;
  identityProvider: string | null;
  userAgent: string | null;
  remoteAddress: string | null;
  current: boolean;
}

const USER_AGENT_MAX_LENGTH = 512;
const MAX_IDS = 100;

/**
 * Called by the authorization server's storage at each save of a signed-in Session record: with
 * `made` on the save that follows a sign-in (its details replace what was known), else only
 * `last_active_at` moves. Keyed by the session's uid, which survives the library's renewal of the
 * cookie value; the row's `id` is the session's public id, derived from no secret.
 */
export async function noteSignInSessionSaved(
  em: EntityManager,
  session: { uidDigest: string; userId: string; loginTs?: number; grantIds: readonly string[] },
  made?: SignInMade & SignInBrowser,
): Promise<void> {
  // The grants the session made: ending one of their delegations signs out this browser only (`endUserAccess`).
  const grantIds = `{${session.grantIds.map((id) => JSON.stringify(id)).join(',')}}`;
  if (!made) {
    await em.execute('update sign_in_sessions set last_active_at = now(), grant_ids = ?::text[] where session_uid_digest = ? and user_id = ?', [grantIds, session.uidDigest, session.userId], 'run');
    return;
  }
  const signedInAt = session.loginTs ? new Date(session.loginTs * 1000) : new Date();
  await em.execute(
    `insert into sign_in_sessions (id, session_uid_digest, user_id, method, identity_provider, user_agent, remote_address, signed_in_at, last_active_at, grant_ids)
     values (?, ?, ?, ?, ?, ?, ?, ?, now(), ?::text[])
     on conflict (session_uid_digest) do update set user_id = excluded.user_id, method = excluded.method, identity_provider = excluded.identity_provider,
       user_agent = excluded.user_agent, remote_address = excluded.remote_address, signed_in_at = excluded.signed_in_at, last_active_at = now(), grant_ids = excluded.grant_ids`,
    [
      randomUUID(),
      session.uidDigest,
      session.userId,
      made.method,
      made.identityProvider ?? null,
      made.userAgent?.slice(0, USER_AGENT_MAX_LENGTH) || null,
      made.remoteAddress ?? null,
      signedInAt,
      grantIds,
    ],
    'run',
  );
}

/** Details of sessions that no longer exist (expired, signed out through the library): bounded per call. */
export async function purgeEndedSignInSessions(em: EntityManager, batch: number): Promise<void> {
  await em.execute(
    `delete from sign_in_sessions where ctid in (
       select s.ctid from sign_in_sessions s
        where not exists (select 1 from oauth_server_records r where r.model = 'Session' and r.uid_digest = s.session_uid_digest)
        limit ${batch})`,
    [],
    'run',
  );
}

/**
 * How the authorization server's session with this uid was signed in, and its user's account. No
 * method for a session signed in before sessions recorded how (which could have been a password).
 */
export async function signInSessionOrigin(em: EntityManager, session: { uid: string; userId: string }): Promise<{ accountId: string; method?: SignInMethodKind } | undefined> {
  const [row] = await em.execute<{ account_id: string; method: SignInMethodKind | null }[]>(
    `select u.account_id, s.method from users u
       left join sign_in_sessions s on s.session_uid_digest = ? and s.user_id = u.id
      where u.id = ?`,
    [digestSecret(session.uid), session.userId],
  );
  return row && { accountId: row.account_id, ...(row.method ? { method: row.method } : {}) };
}

interface SessionRow {
  id: string;
  method: SignInMethodKind;
  identity_provider: string | null;
  user_agent: string | null;
  remote_address: string | null;
  signed_in_at: Date | string;
  last_active_at: Date | string;
  expires_at: Date | string | null;
  key_digest: string;
}

/** A live Session record of the authorization server with its details (a session never signed in has none). */
const LIVE_SESSIONS = `from oauth_server_records r
  join sign_in_sessions s on s.session_uid_digest = r.uid_digest and s.user_id = r.user_id
  where r.model = 'Session' and r.user_id = ? and (r.expires_at is null or r.expires_at > now())`;

export interface RevokeSignInSessionsRequest {
  userId: string;
  ids?: readonly string[] | null;
  allButCurrent?: boolean | null;
}

/**
 * `User.signInSessions` and `revokeSignInSessions`: the user themself or
 * `can_update_user` (the scopes are declared on the schema). `browserSession` is the value of the
 * request's own sign-in session cookie, if it sent one: only its digest is ever compared.
 */
export class SignInSessionsService {
  private readonly currentKeyDigest: string | null;

  constructor(
    private readonly em: EntityManager,
    private readonly principal: Principal,
    private readonly transactions: TransactionRunner,
    browserSession: string | undefined,
  ) {
    this.currentKeyDigest = browserSession ? digestSecret(browserSession) : null;
    this.currentSessionId = principal.kind === 'oauth' ? principal.browserSignIn?.sessionId : undefined;
  }

  /** The sign-in session behind the request's token, when a browser sign-in obtained it (the token remembers it). */
  private readonly currentSessionId: string | undefined;

  /** The user's live sessions, most recently active first. */
  async listFor(userId: string): Promise<SignInSessionView[]> {
    policy.assertSelfOrUserManager(this.principal, userId);
    const rows = await this.em.execute<SessionRow[]>(
      `select s.id, s.method, s.identity_provider, s.user_agent, s.remote_address, s.signed_in_at, s.last_active_at, r.expires_at, r.key_digest
       ${LIVE_SESSIONS} order by s.last_active_at desc, s.id`,
      [userId],
    );
    return rows.map((row) => ({
      id: row.id,
      createdAt: new Date(row.signed_in_at),
      lastActiveAt: new Date(row.last_active_at),
      expiresAt: row.expires_at === null ? null : new Date(row.expires_at),
      method: row.method,
      identityProvider: row.identity_provider,
      userAgent: row.user_agent,
      remoteAddress: row.remote_address,
      current: (this.currentKeyDigest !== null && row.key_digest === this.currentKeyDigest) || row.id === this.currentSessionId,
    }));
  }

  /**
   * Ends the named sessions of the user, or all of them (`allButCurrent` keeps the caller's own):
   * that browser's next `GET /oauth/authorize` shows the sign-in page, and the codes they issued
   * that nobody redeemed yet are refused. Tokens live with their delegations, which stay. One audit record, marked `revokesAccess`. Answers how many ended, and the ids of those it knew.
   */
  async revoke(request: RevokeSignInSessionsRequest): Promise<{ count: number; sessionIds: string[] }> {
    policy.assertSelfOrUserManager(this.principal, request.userId);
    const ids = request.ids ?? undefined;
    if (ids && request.allButCurrent != null) throw new InvalidInputError('give either ids or allButCurrent, not both');
    if (ids?.length === 0) throw new InvalidInputError('ids must name at least one sign-in session');
    if (ids && ids.length > MAX_IDS) throw new InvalidInputError(`ids names at most ${MAX_IDS} sign-in sessions`);
    const accountId = this.principal.accountId;
    return this.transactions.run(this.em, async (em) => {
      const role = await lockLiveUserRole(em, accountId, request.userId);
      if (!role) throw new NotFoundError('user');
      policy.assertMayEndAccessOf(this.principal, { id: request.userId, role });
      let sessionUidDigests: string[];
      if (ids) {
        const wanted = [...new Set(ids)];
        const found = wanted.every(isUuid)
          ? await em.execute<{ id: string; uid_digest: string }[]>(
            `select s.id, r.uid_digest ${LIVE_SESSIONS} and s.id in (${wanted.map(() => '?').join(', ')})`,
            [request.userId, ...wanted],
          )
          : [];
        // An unknown id, or another user's, changes nothing.
        if (found.length !== wanted.length) throw new NotFoundError('sign-in session');
        sessionUidDigests = found.map((row) => row.uid_digest);
      } else {
        // The asking browser's session: by its cookie, or the session its token came from.
        const keepCookie = request.allButCurrent ? this.currentKeyDigest : null;
        const keepSession = request.allButCurrent ? this.currentSessionId : undefined;
        const rows = await em.execute<{ uid_digest: string | null }[]>(
          `select uid_digest from oauth_server_records where model = 'Session' and user_id = ?${keepCookie ? ' and key_digest <> ?' : ''}
             ${keepSession ? 'and uid_digest is distinct from (select session_uid_digest from sign_in_sessions where id = ?)' : ''}`,
          [request.userId, ...(keepCookie ? [keepCookie] : []), ...(keepSession ? [keepSession] : [])],
        );
        sessionUidDigests = rows.flatMap((row) => (row.uid_digest ? [row.uid_digest] : []));
      }
      const { ended: count, sessionIds: endedIds } = await endSessionsByUid(em, sessionUidDigests, { userId: request.userId });
      if (count > 0) {
        recordChange(em, {
          accountId,
          action: 'revoke',
          resource: { type: 'user', id: request.userId },
          userId: request.userId,
          fields: [{ name: 'revocation_reason', value: 'sign_out' }, { name: 'sign_in_sessions', value: count }],
          references: endedIds.map((id) => ({ type: 'sign_in_session', id })),
          revokesAccess: true,
        });
      }
      return { count, sessionIds: endedIds };
    }, 'signInSessions.revoke');
  }
}

