import { randomUUID } from 'node:crypto';
import type { FilterQuery } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/sql';
import { Account } from '../accounts/account.entity.js';
import { policy } from '../auth/policy.js';
import type { Principal } from '../auth/principal.js';
import { SCOPES } from '../auth/scopes.js';
import { digestSecret, newSecretToken } from '../auth/secrets.js';
import { PUBLIC_ID_PATTERN } from '../db/public-id.js';
import type { TransactionRunner } from '../db/transaction.js';
import { recordChange } from '../db/change-journal.js';
import { InvalidInputError, NotFoundError } from '../errors/domain-errors.js';
import type { DeletedUser, SuspendedUser } from '../users/user-lifecycle.js';
import { lockLiveUser } from '../users/user-locks.js';
import { delegationsRevoked } from '../observability/metrics.js';
import { endUserAccess, revokeIssued, type EndedAccess } from './user-access.js';
import {
  DELEGATION_TYPES,
  OAuthDelegation,
  isDelegationType,
  type DelegationStatus,
  type DelegationType,
} from './oauth-delegation.entity.js';

/** `DELETE /oauth_delegations` signs users out of these apps; integrations are revoked elsewhere. */
export const REVOCABLE_TYPES: readonly DelegationType[] = ['mobile', 'web'];

/**
 * Scopes a delegation may be issued with: the API scopes, plus the OpenID Connect `openid` and
 * `profile` that web sign-ins carry (the reference's examples show "openid profile"). Those two
 * grant no API operation: a token holding only them is refused (403) everywhere.
 */
export const ISSUABLE_SCOPES: readonly string[] = [...SCOPES, 'openid', 'profile'];

export const MAX_DELEGATION_PAGE_SIZE = 100;

/** Without --expires-in: a web session lasts a week (as in the reference's example), apps longer. */
export const DEFAULT_LIFETIME_SECONDS: Record<DelegationType, number> = {
  web: 7 * 86_400,
  mobile: 90 * 86_400,
  integration: 365 * 86_400,
};
const MAX_LIFETIME_SECONDS = 10 * 365 * 86_400;

const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function isUuid(value: string): boolean {
  return UUID_PATTERN.test(value);
}

export interface DelegationFilter {
  types?: readonly DelegationType[] | null;
  statuses?: readonly DelegationStatus[] | null;
}

/** A keyset position in the (created_at desc, id desc) order. */
export interface DelegationPosition {
  createdAt: Date;
  id: string;
}

export interface DelegationPageRequest extends DelegationFilter {
  first: number;
  after?: DelegationPosition;
}

export interface DelegationPage {
  items: OAuthDelegation[];
  hasNextPage: boolean;
  countTotal: () => Promise<number>;
}

interface DelegationRow {
  id: string;
  account_id: string;
  user_id: string;
  delegation_type: string;
  client_id: string;
  client_name: string | null;
  scope: string;
  status: string;
  created_at: Date | string;
  expires_at: Date | string;
  revoked_at: Date | string | null;
  revoked_by_kind: string | null;
  revoked_by_credential_id: string | null;
  revocation_reason: string | null;
}

/** Every column but the token digest, which never leaves the database on a read. */
const PUBLIC_COLUMNS = 'id, account_id, user_id, delegation_type, client_id, client_name, scope, status, created_at, expires_at, revoked_at, revoked_by_kind, revoked_by_credential_id, revocation_reason';

async function isLiveUser(em: EntityManager, accountId: string, userId: string): Promise<boolean> {
  if (!PUBLIC_ID_PATTERN.test(userId)) return false;
  const [row] = await em.execute<{ id: string }[]>(
    'select id from users where id = ? and account_id = ? and deleted_at is null',
    [userId, accountId],
  );
  return row !== undefined;
}

/** Domain logic of OAuth delegations for one caller; knows nothing of HTTP or GraphQL. */
export class OAuthDelegationsService {
  constructor(
    private readonly em: EntityManager,
    private readonly principal: Principal,
    private readonly transactions: TransactionRunner,
  ) {}

  /** The user themself, or a holder of can_update_user (SPEC section 2). */
  assertMayManage(userId: string): void {
    policy.assertSelfOrUserManager(this.principal, userId);
  }

  /** Signs the user out of the given apps, synchronously; returns the delegations this call revoked (now REVOKED). */
  async revoke(userId: string, types: readonly DelegationType[]): Promise<OAuthDelegation[]> {
    if (types.length === 0) throw new InvalidInputError(`type must name at least one of ${REVOCABLE_TYPES.join(', ')}`);
    const refused = types.filter((type) => !REVOCABLE_TYPES.includes(type));
    if (refused.length) {
      throw new InvalidInputError(`type ${refused.join(', ')} cannot be revoked here; allowed values: ${REVOCABLE_TYPES.join(', ')}`);
    }
    this.assertMayManage(userId);
    return this.transactions.run(this.em, async (em) => {
      // The user's row first (the lock order of every write about a user): a revocation queues
      // behind the user's deletion, which revokes everything itself, instead of crossing it.
      // The reference lists no 404 for this operation: an unknown user (or another account's) is invalid input.
      if (!(await lockLiveUser(em, this.principal.accountId, userId))) {
        throw new InvalidInputError(`user ${userId} is not a user of this account`);
      }
      // Signing out of the product's apps signs the user's browsers out too: no silent new code.
      const ended = await endUserAccess(em, { accountId: this.principal.accountId, userId }, { principal: this.principal, reason: 'sign_out' }, { types: [...new Set(types)] });
      // Read back after the UPDATE (not from the identity map): the client's cache gets the new status.
      return ended.delegationIds.length ? em.find(OAuthDelegation, { id: { $in: ended.delegationIds } }, { orderBy: { createdAt: 'desc', id: 'desc' }, refresh: true }) : [];
    }, 'oauthDelegations.revoke');
  }

  /**
   * Revokes one of the user's delegations, whatever its type (a third-party app's grant included):
   * the user themself or can_update_user. Another user's or account's delegation, or an id that is
   * not a uuid, is not found. Revoking a revoked delegation changes nothing and answers the same.
   * Without `userId`, the delegation is found by id alone: a user's (same rights), or an
   * integration's account-wide one (`account_admin`, a token with `credentials.write`).
   */
  async revokeOne(userId: string | undefined, id: string): Promise<OAuthDelegation> {
    if (userId === undefined) {
      const found = isUuid(id) ? await this.em.findOne(OAuthDelegation, { id, account: this.principal.accountId }) : null;
      if (!found) throw new NotFoundError('OAuth delegation');
      if (found.userId !== null) return this.revokeOne(found.userId, id);
      policy.assertManagesAccountCredentials(this.principal, 'write');
      return this.transactions.run(this.em, async (em) => {
        await revokeAccountWide(em, this.principal, id);
        return em.refresh(found) as Promise<OAuthDelegation>;
      }, 'oauthDelegations.revokeAccountWide');
    }
    this.assertMayManage(userId);
    return this.transactions.run(this.em, async (em) => {
      if (!(await lockLiveUser(em, this.principal.accountId, userId))) throw new NotFoundError('user');
      const delegation = isUuid(id) ? await em.findOne(OAuthDelegation, { id, account: this.principal.accountId, userId }) : null;
      if (!delegation) throw new NotFoundError('OAuth delegation');
      const by = { principal: this.principal, reason: 'sign_out' as const };
      // A first-party app's delegation is the user's session in the product: its end signs the browsers out too.
      if (delegation.status === 'issued' && REVOCABLE_TYPES.includes(delegation.delegationType)) await endUserAccess(em, { accountId: this.principal.accountId, userId }, by, { ids: [id] });
      else await revokeIssued(em, { accountId: this.principal.accountId, userId, ids: [id] }, { ...by, at: new Date() });
      return em.refresh(delegation) as Promise<OAuthDelegation>;
    }, 'oauthDelegations.revokeOne');
  }

  /** An integration app's account-wide delegation (`OAuthApp.delegation`): `account_admin`, a token with `credentials.read`. */
  async accountWideOf(clientId: string): Promise<OAuthDelegation | null> {
    policy.assertManagesAccountCredentials(this.principal, 'read');
    return this.em.findOne(OAuthDelegation, { account: this.principal.accountId, grantId: `client:${clientId}`, userId: null });
  }

  /** A user's delegations, newest first; 404 for a user that is not (or no longer) in the account. */
  async listForUser(userId: string, request: DelegationPageRequest): Promise<DelegationPage> {
    this.assertMayManage(userId);
    if (!(await isLiveUser(this.em, this.principal.accountId, userId))) throw new NotFoundError('user');
    return (await this.pagesForUsers([userId], request)).get(userId)!;
  }

  /**
   * One page per user in one query (a LATERAL join walks each user's index), so a list of users
   * with their delegations costs one statement. Callers check access to each user first.
   */
  async pagesForUsers(userIds: readonly string[], request: DelegationPageRequest): Promise<Map<string, DelegationPage>> {
    if (userIds.length === 0) return new Map();
    // Plain placeholders (no array parameters): the drivers differ in how they bind arrays.
    const placeholders = (values: readonly unknown[]) => values.map(() => '?').join(', ');
    const conditions = ['d.user_id = u.id', 'd.account_id = ?'];
    const params: unknown[] = [...userIds, this.principal.accountId];
    if (request.types?.length) {
      conditions.push(`d.delegation_type in (${placeholders(request.types)})`);
      params.push(...request.types);
    }
    if (request.statuses?.length) {
      conditions.push(`d.status in (${placeholders(request.statuses)})`);
      params.push(...request.statuses);
    }
    if (request.after) {
      conditions.push('(d.created_at, d.id) < (?::timestamptz, ?::uuid)');
      params.push(request.after.createdAt.toISOString(), request.after.id);
    }
    params.push(request.first + 1);
    const rows = await this.em.execute<DelegationRow[]>(
      `select d.${PUBLIC_COLUMNS.split(', ').join(', d.')}
         from (values ${userIds.map(() => '(?::varchar)').join(', ')}) as u(id)
         cross join lateral (
           select ${PUBLIC_COLUMNS} from oauth_delegations d
            where ${conditions.join(' and ')}
            order by d.created_at desc, d.id desc
            limit ?
         ) d`,
      params,
    );
    const byUser = new Map<string, OAuthDelegation[]>(userIds.map((id) => [id, []]));
    for (const row of rows) byUser.get(row.user_id)?.push(this.em.map(OAuthDelegation, row as unknown as Record<string, unknown>));
    const pages = new Map<string, DelegationPage>();
    for (const [userId, found] of byUser) {
      found.sort(newestFirst);
      pages.set(userId, {
        items: found.slice(0, request.first),
        hasNextPage: found.length > request.first,
        countTotal: () => this.em.count(OAuthDelegation, this.filterFor(userId, request)),
      });
    }
    return pages;
  }

  /**
   * One delegation. With `userId` (the REST path), it must be that user's: another user's or
   * account's delegation, a deleted user's, or an id that is not a uuid is simply not found.
   */
  async get(id: string, userId?: string): Promise<OAuthDelegation> {
    if (userId !== undefined) this.assertMayManage(userId);
    const delegation = isUuid(id)
      ? await this.em.findOne(OAuthDelegation, { id, account: this.principal.accountId, ...(userId !== undefined ? { userId } : {}) })
      : null;
    if (!delegation) throw new NotFoundError('OAuth delegation');
    // An integration acting for the whole account has no user, so no user's delegation path reaches it;
    // by id alone it is the account's credential, for those who manage those.
    if (delegation.userId === null) {
      if (userId !== undefined) throw new NotFoundError('OAuth delegation');
      policy.assertManagesAccountCredentials(this.principal, 'read');
      return delegation;
    }
    if (userId === undefined) this.assertMayManage(delegation.userId);
    if (!(await isLiveUser(this.em, this.principal.accountId, delegation.userId))) throw new NotFoundError('OAuth delegation');
    return delegation;
  }

  private filterFor(userId: string, filter: DelegationFilter): FilterQuery<OAuthDelegation> {
    const where: FilterQuery<OAuthDelegation> = { account: this.principal.accountId, userId };
    if (filter.types?.length) where.delegationType = { $in: [...filter.types] };
    if (filter.statuses?.length) where.status = { $in: [...filter.statuses] };
    return where;
  }
}

function newestFirst(a: OAuthDelegation, b: OAuthDelegation): number {
  const byTime = b.createdAt.getTime() - a.createdAt.getTime();
  if (byTime !== 0) return byTime;
  return a.id < b.id ? 1 : a.id > b.id ? -1 : 0;
}

/** The users feature's deletion hook: the deleted user's sessions and delegations end in the deleting transaction. */
export function endDeletedUsersAccess(em: EntityManager, user: DeletedUser, principal: Principal): Promise<EndedAccess> {
  return endUserAccess(em, { accountId: user.accountId, userId: user.id }, { principal, at: user.deletedAt, reason: 'user_deleted' });
}

/** In the suspending transaction: the user's sessions and delegations (their OAuth grants' tokens with them) end at the commit. */
export function endSuspendedUsersAccess(em: EntityManager, user: SuspendedUser, principal: Principal): Promise<EndedAccess> {
  return endUserAccess(em, { accountId: user.accountId, userId: user.id }, { principal, at: user.suspendedAt, reason: 'user_suspended' });
}

/** Space-separated scopes, each one of ISSUABLE_SCOPES; duplicates collapse, order is kept. */
export function parseScopes(raw: string): string[] {
  const scopes = [...new Set(raw.split(/\s+/).filter(Boolean))];
  if (scopes.length === 0) throw new InvalidInputError(`scopes must name at least one of: ${ISSUABLE_SCOPES.join(' ')}`);
  const unknown = scopes.filter((scope) => !ISSUABLE_SCOPES.includes(scope));
  if (unknown.length) throw new InvalidInputError(`unknown scope ${unknown.join(', ')}; allowed scopes: ${ISSUABLE_SCOPES.join(' ')}`);
  return scopes;
}

const DURATION_UNITS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86_400, w: 7 * 86_400 };

/** `30d`, `12h`, `45m`, `90s`, `2w` (a bare number is seconds) -> seconds. */
export function parseDuration(raw: string): number {
  const match = /^(\d+)\s*([smhdw]?)$/i.exec(raw.trim());
  const seconds = match ? Number(match[1]) * DURATION_UNITS[(match[2] || 's').toLowerCase()]! : NaN;
  if (!Number.isSafeInteger(seconds) || seconds < 1 || seconds > MAX_LIFETIME_SECONDS) {
    throw new InvalidInputError(`expires-in must be a positive duration such as 30d, 12h, 45m or 90s, at most ${MAX_LIFETIME_SECONDS / 86_400} days (got "${raw}")`);
  }
  return seconds;
}

export interface IssueDelegationOptions {
  userId: string;
  type: string;
  scopes: string;
  clientId?: string;
  expiresInSeconds?: number;
}

export interface IssuedDelegation {
  delegation: OAuthDelegation;
  /** Shown once; only its digest is stored. */
  accessToken: string;
}

/**
 * Issues a delegation and its access token, as a sign-in or app authorization would (those flows
 * are outside this API; operators and tests use `accessctl delegations create`).
 */
export async function issueDelegation(em: EntityManager, options: IssueDelegationOptions): Promise<IssuedDelegation> {
  if (!isDelegationType(options.type)) throw new InvalidInputError(`type must be one of ${DELEGATION_TYPES.join(', ')} (got "${options.type}")`);
  const scopes = parseScopes(options.scopes);
  const clientId = (options.clientId ?? 'accessctl').trim();
  if (clientId === '' || clientId.length > 255) throw new InvalidInputError('client-id must be 1 to 255 characters');
  const lifetime = options.expiresInSeconds ?? DEFAULT_LIFETIME_SECONDS[options.type];
  if (!Number.isSafeInteger(lifetime) || lifetime < 1 || lifetime > MAX_LIFETIME_SECONDS) throw new InvalidInputError('expires-in is out of range');

  const [user] = PUBLIC_ID_PATTERN.test(options.userId)
    ? await em.execute<{ id: string; account_id: string; suspended: boolean }[]>('select id, account_id, suspended_at is not null as suspended from users where id = ? and deleted_at is null for share', [options.userId])
    : [];
  if (!user) throw new InvalidInputError(`user ${options.userId} does not exist or has been deleted`);
  if (user.suspended) throw new InvalidInputError(`user ${options.userId} is suspended: a suspended user cannot be given new credentials`);

  const accessToken = newSecretToken(32);
  const createdAt = new Date();
  const delegation = em.create(OAuthDelegation, {
    account: em.getReference(Account, user.account_id),
    userId: user.id,
    delegationType: options.type,
    clientId,
    scope: scopes.join(' '),
    accessTokenDigest: digestSecret(accessToken),
    createdAt,
    expiresAt: new Date(createdAt.getTime() + lifetime * 1000),
  });
  await em.persist(delegation).flush();
  recordChange(em, {
    accountId: user.account_id,
    action: 'create',
    resource: { type: 'oauth_delegation', id: delegation.id },
    userId: user.id,
    fields: [
      { name: 'delegation_type', value: options.type },
      { name: 'client_id', value: clientId },
      { name: 'scope', value: delegation.scope },
      { name: 'expires_at', value: delegation.expiresAt.toISOString() },
    ],
  });
  return { delegation, accessToken };
}

/** What an OAuth flow leaves behind: the authorization server's grant, seen as a delegation. */
export interface GrantDelegation {
  accountId: string;
  /** Null for an integration app acting for its whole account. */
  userId: string | null;
  type: DelegationType;
  clientId: string;
  clientName: string;
  scopes: readonly string[];
  grantId: string;
  expiresAt: Date;
}

/**
 * One grant is one delegation: the first consent creates it, a later consent that widens the same
 * grant updates its scopes but never its expiry (a grant lasts its lifetime from the first consent,
 * as the authorization server's own grant record does). A revoked delegation stays revoked (its
 * grant is refused from then on).
 */
export async function recordGrantDelegation(em: EntityManager, grant: GrantDelegation): Promise<void> {
  const scopes = grant.scopes.filter((scope) => ISSUABLE_SCOPES.includes(scope));
  const [row] = await em.execute<{ id: string; created: boolean }[]>(
    `insert into oauth_delegations (id, account_id, user_id, delegation_type, client_id, client_name, scope, status, grant_id, created_at, expires_at)
     values (?, ?, ?, ?, ?, ?, ?, 'issued', ?, ?, ?)
     on conflict (grant_id) where grant_id is not null
     do update set scope = excluded.scope
     returning id, (xmax = 0) as created`,
    [randomUUID(), grant.accountId, grant.userId, grant.type, grant.clientId, grant.clientName, scopes.join(' '), grant.grantId, new Date().toISOString(), grant.expiresAt.toISOString()],
  );
  recordChange(em, {
    accountId: grant.accountId,
    action: row!.created ? 'create' : 'update',
    resource: { type: 'oauth_delegation', id: row!.id, summary: grant.clientName },
    ...(grant.userId ? { userId: grant.userId } : {}),
    fields: [
      { name: 'delegation_type', value: grant.type },
      { name: 'client_id', value: grant.clientId },
      { name: 'scope', value: scopes.join(' ') },
    ],
  });
}

/** The authorization server revoked a grant itself (RFC 7009 revocation, a reused refresh token). */
export async function revokeGrantDelegation(em: EntityManager, grantId: string, at: Date = new Date()): Promise<number> {
  const rows = await em.execute<RevokedGrantRow[]>(
    `update oauth_delegations set status = 'revoked', revoked_at = ?, revocation_reason = 'grant_revoked'
      where grant_id = ? and status = 'issued' returning id, account_id, user_id, client_id, delegation_type`,
    [at, grantId],
  );
  await grantsRevoked(em, rows, at);
  return rows.length;
}

interface RevokedGrantRow {
  id: string;
  account_id: string;
  user_id: string | null;
  client_id: string;
  delegation_type: DelegationType;
}

/**
 * After delegations' grants were revoked (by the authorization server, or by possession of one of
 * their tokens): one record per delegation, and a first-party delegation's user signed out (SPEC
 * section 17: their browsers' sessions end too, through `endUserAccess`).
 */
async function grantsRevoked(em: EntityManager, rows: readonly RevokedGrantRow[], at: Date): Promise<void> {
  for (const row of rows) {
    recordChange(em, {
      accountId: row.account_id,
      action: 'revoke',
      resource: { type: 'oauth_delegation', id: row.id },
      ...(row.user_id ? { userId: row.user_id } : {}),
      fields: [{ name: 'revocation_reason', value: 'grant_revoked' }, { name: 'client_id', value: row.client_id }],
      revokesAccess: true,
    });
  }
  const signedOut = new Map(rows.flatMap((row) => (row.user_id && REVOCABLE_TYPES.includes(row.delegation_type) ? [[row.user_id, row.account_id] as const] : [])));
  for (const [userId, accountId] of signedOut) await endUserAccess(em, { accountId, userId }, { reason: 'grant_revoked', at }, { ids: [] });
}

/**
 * One token of a grant was revoked by its app (RFC 7009): the delegation stays, but the change ends
 * access, so connections that presented the token are re-checked on every instance.
 */
export async function recordTokenRevoked(em: EntityManager, grantId: string): Promise<void> {
  const [row] = await em.execute<{ id: string; account_id: string; user_id: string | null; client_id: string }[]>(
    'select id, account_id, user_id, client_id from oauth_delegations where grant_id = ?',
    [grantId],
  );
  if (!row) return;
  recordChange(em, {
    accountId: row.account_id,
    action: 'revoke_token',
    resource: { type: 'oauth_delegation', id: row.id },
    ...(row.user_id ? { userId: row.user_id } : {}),
    fields: [{ name: 'client_id', value: row.client_id }],
    revokesAccess: true,
  });
}

/** An integration's account-wide delegation, revoked by an account admin: its client-credentials tokens die with it. */
async function revokeAccountWide(em: EntityManager, principal: Principal, id: string, at: Date = new Date()): Promise<number> {
  const rows = await em.execute<{ id: string; account_id: string; client_id: string }[]>(
    `update oauth_delegations set status = 'revoked', revoked_at = ?, revoked_by_kind = ?, revoked_by_credential_id = ?, revocation_reason = 'sign_out'
      where id = ? and account_id = ? and user_id is null and status = 'issued' returning id, account_id, client_id`,
    [at, principal.kind, principal.credentialId, id, principal.accountId],
  );
  for (const row of rows) {
    delegationsRevoked.inc({ reason: 'sign_out' }, 1);
    recordChange(em, {
      accountId: row.account_id,
      action: 'revoke',
      resource: { type: 'oauth_delegation', id: row.id },
      fields: [{ name: 'revocation_reason', value: 'sign_out' }, { name: 'client_id', value: row.client_id }],
      revokesAccess: true,
    });
  }
  return rows.length;
}

/** An app was deleted: every delegation it held, for every user and for its account, is revoked. */
export async function revokeClientDelegations(em: EntityManager, clientId: string, principal: Principal | undefined, at: Date = new Date()): Promise<number> {
  const rows = await em.execute<{ id: string; account_id: string; user_id: string | null }[]>(
    `update oauth_delegations set status = 'revoked', revoked_at = ?, revoked_by_kind = ?, revoked_by_credential_id = ?, revocation_reason = 'app_deleted'
      where client_id = ? and status = 'issued' returning id, account_id, user_id`,
    [at, principal?.kind ?? null, principal?.credentialId ?? null, clientId],
  );
  // One record per user (or for the account, an integration's), naming the delegations the deletion ended.
  const byHolder = new Map<string, typeof rows>();
  for (const row of rows) {
    const holder = `${row.account_id}/${row.user_id ?? ''}`;
    const ofHolder = byHolder.get(holder);
    if (ofHolder) ofHolder.push(row);
    else byHolder.set(holder, [row]);
  }
  for (const held of byHolder.values()) {
    const { account_id: accountId, user_id: userId } = held[0]!;
    recordChange(em, {
      accountId,
      action: 'revoke',
      resource: userId ? { type: 'user', id: userId } : { type: 'app', id: clientId },
      ...(userId ? { userId } : {}),
      fields: [{ name: 'revocation_reason', value: 'app_deleted' }],
      references: held.map((row) => ({ type: 'oauth_delegation', id: row.id })),
      revokesAccess: true,
    });
  }
  return rows.length;
}

/**
 * Revocation by possession (`POST /credentials/revoke`): every issued delegation whose access token
 * (an operator-issued one), or whose grant's access, refresh or client-credentials token, has one
 * of these digests. Its tokens are refused from the commit on; each revocation is recorded.
 */
export async function revokeDelegationsHoldingTokens(em: EntityManager, digests: readonly string[], at: Date = new Date()): Promise<number> {
  if (digests.length === 0) return 0;
  const list = digests.map(() => '?').join(', ');
  const rows = await em.execute<RevokedGrantRow[]>(
    `update oauth_delegations set status = 'revoked', revoked_at = ?, revocation_reason = 'grant_revoked'
      where status = 'issued'
        and (access_token_digest in (${list})
          or grant_id in (select r.grant_id from oauth_server_records r
                           where r.model in ('AccessToken', 'RefreshToken', 'ClientCredentials') and r.key_digest in (${list}) and r.grant_id is not null))
      returning id, account_id, user_id, client_id, delegation_type`,
    [at, ...digests, ...digests],
  );
  await grantsRevoked(em, rows, at);
  if (rows.length) delegationsRevoked.inc({ reason: 'grant_revoked' }, rows.length);
  return rows.length;
}
