import type { EntityManager } from '@mikro-orm/sql';
import { Account } from '../accounts/account.entity.js';
import { SCOPES } from '../auth/scopes.js';
import { digestSecret, newSecretToken } from '../auth/secrets.js';
import { PUBLIC_ID_PATTERN } from '../db/public-id.js';
import { recordChange } from '../db/change-journal.js';
import { InvalidInputError } from '../errors/domain-errors.js';
import { LIVE_USER } from '../users/user.sql.js';
import { DELEGATION_TYPES, OAuthDelegation, isDelegationType, type DelegationType } from './oauth-delegation.entity.js';

/**
 * Scopes a delegation may be issued with: the API scopes, plus the OpenID Connect `openid` and
 * `profile` that web sign-ins carry (the reference's examples show "openid profile"). Those two
 * grant no API operation: a token holding only them is refused (403) everywhere.
 */
export const ISSUABLE_SCOPES: readonly string[] = [...SCOPES, 'openid', 'profile'];

/** Without --expires-in: a web session lasts a week (as in the reference's example), apps longer. */
export const DEFAULT_LIFETIME_SECONDS: Record<DelegationType, number> = {
  web: 7 * 86_400,
  mobile: 90 * 86_400,
  integration: 365 * 86_400,
};
const MAX_LIFETIME_SECONDS = 10 * 365 * 86_400;

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

/** The live user a delegation is issued to, kept from deletion until the delegation is written. */
const ISSUED_TO = `select id, account_id, suspended_at is not null as suspended from users where id = ? and ${LIVE_USER} for share`;

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
    ? await em.execute<{ id: string; account_id: string; suspended: boolean }[]>(ISSUED_TO, [options.userId])
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
