import { randomUUID } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/sql';
import type { Principal } from '../auth/principal.js';
import { recordChange } from '../db/change-journal.js';
import { delegationsRevoked } from '../observability/metrics.js';
import { REVOCABLE_TYPES, type DelegationType } from './oauth-delegation.entity.js';
import { ISSUABLE_SCOPES } from './oauth-delegation.issuing.js';
import { endUserAccess } from './user-access.js';

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
      where grant_id = ? and status = 'issued' returning id, account_id, user_id, client_id, delegation_type, grant_id`,
    [at, grantId],
  );
  // The app signed its user out (RFC 7009), or the library ended a grant whose refresh token was replayed: that browser only.
  await grantsRevoked(em, rows, at, 'theirs');
  return rows.length;
}

interface RevokedGrantRow {
  id: string;
  account_id: string;
  user_id: string | null;
  client_id: string;
  delegation_type: DelegationType;
  grant_id: string | null;
}

/**
 * After delegations' grants were revoked (by the authorization server, or by possession of one of
 * their tokens): one record per delegation, and a first-party delegation's user signed out
 * (`endUserAccess`): from the browsers whose sessions made those grants (`theirs`), or, when a
 * token was reported as leaked, from every browser (`all`).
 */
async function grantsRevoked(em: EntityManager, rows: readonly RevokedGrantRow[], at: Date, browsers: 'theirs' | 'all'): Promise<void> {
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
  const signedOut = new Map<string, { accountId: string; grantIds: string[] }>();
  for (const row of rows) {
    if (!row.user_id || !REVOCABLE_TYPES.includes(row.delegation_type)) continue;
    const user = signedOut.get(row.user_id) ?? { accountId: row.account_id, grantIds: [] };
    if (row.grant_id) user.grantIds.push(row.grant_id);
    signedOut.set(row.user_id, user);
  }
  for (const [userId, { accountId, grantIds }] of signedOut) {
    await endUserAccess(em, { accountId, userId }, { reason: 'grant_revoked', at }, { ids: [], browsers: browsers === 'all' ? 'all' : { grantIds } });
  }
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
export async function revokeAccountWide(em: EntityManager, principal: Principal, id: string, at: Date = new Date()): Promise<number> {
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
 * Revocation by possession (`POST /credentials/revoke`): every live delegation whose access token
 * (an operator-issued one), or whose grant's access, refresh or client-credentials token, has one
 * of these digests, counting only tokens that still work (unexpired, a refresh token not yet used):
 * holding a dead token is no right to end the live grant. Its tokens are refused from the commit
 * on; each revocation is recorded.
 */
export async function revokeDelegationsHoldingTokens(em: EntityManager, digests: readonly string[], at: Date = new Date()): Promise<number> {
  if (digests.length === 0) return 0;
  const list = digests.map(() => '?').join(', ');
  const rows = await em.execute<RevokedGrantRow[]>(
    `update oauth_delegations set status = 'revoked', revoked_at = ?, revocation_reason = 'grant_revoked'
      where status = 'issued' and expires_at > ?
        and (access_token_digest in (${list})
          or grant_id in (select r.grant_id from oauth_server_records r
                           where r.model in ('AccessToken', 'RefreshToken', 'ClientCredentials') and r.key_digest in (${list}) and r.grant_id is not null
                             and (r.expires_at is null or r.expires_at > ?) and r.consumed_at is null))
      returning id, account_id, user_id, client_id, delegation_type, grant_id`,
    [at, at, ...digests, ...digests, at],
  );
  // A token reported as leaked: its user is signed out of every browser.
  await grantsRevoked(em, rows, at, 'all');
  if (rows.length) delegationsRevoked.inc({ reason: 'grant_revoked' }, rows.length);
  return rows.length;
}
