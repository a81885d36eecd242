import type { CredentialResolver } from '../auth/authenticate.js';
import type { OAuthPrincipal } from '../auth/principal.js';
import { isUserRole } from '../auth/roles.js';
import { readPath } from '../db/read-path.js';
import { activeUser } from '../users/user.sql.js';

interface BearerRow {
  id: string;
  account_id: string;
  user_id: string;
  scope: string;
  role: string;
  delegation_type: string;
  expires_at: Date | string;
  user_name: string;
}

const BEARER_BY_DIGEST = `select d.id, d.account_id, d.user_id, d.scope, d.delegation_type, u.role, d.expires_at, u.name as user_name
         from oauth_delegations d
         join users u on u.id = d.user_id and u.account_id = d.account_id and ${activeUser('u')}
        where d.access_token_digest = ? and d.status = 'issued' and d.expires_at > ?`;

/**
 * `Authorization: Bearer <access token>`: one indexed query per request (the unique digest),
 * joined to the live user for their current role. Revoked, expired or deleted-user tokens find
 * no row (401). Nothing is cached, so a revocation is effective at once on every instance.
 */
export const bearerCredentials: CredentialResolver = {
  scheme: 'bearer',
  async resolve(em, digest, now) {
    const [row] = await readPath(em).rows<BearerRow>(
      BEARER_BY_DIGEST,
      [digest, now.toISOString()],
      { prepared: true },
    );
    if (!row || !isUserRole(row.role)) return undefined;
    const principal: OAuthPrincipal = {
      kind: 'oauth',
      accountId: row.account_id,
      credentialId: row.id,
      summaries: { user: row.user_name },
      userId: row.user_id,
      role: row.role,
      scopes: new Set(row.scope.split(/\s+/).filter(Boolean)),
      firstParty: row.delegation_type === 'mobile' || row.delegation_type === 'web',
      // A user's keys and tokens share one budget.
      rateLimitKey: `user:${row.user_id}`,
      expiresAt: new Date(row.expires_at),
    };
    return principal;
  },
};
