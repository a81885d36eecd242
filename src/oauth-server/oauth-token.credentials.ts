import type { CredentialResolver } from '../auth/authenticate.js';
import type { OAuthAppPrincipal, OAuthPrincipal } from '../auth/principal.js';
import { isUserRole } from '../auth/roles.js';
import { readPath } from '../db/read-path.js';
import { activeUser } from '../users/user.sql.js';

interface FlowTokenRow {
  model: string;
  scope: string | null;
  delegation_id: string;
  account_id: string;
  user_id: string | null;
  client_id: string;
  role: string | null;
  delegation_type: string;
  expires_at: Date | string;
  user_name: string | null;
  app_name: string | null;
  app_scope: string;
  signed_in_at: Date | string | null;
  session_id: string | null;
}

/**
 * `Authorization: Bearer <access token>` issued by the authorization server (authorization code,
 * refresh, client credentials): one indexed query by the token's digest, joined to the grant's
 * delegation (which must be issued and unexpired) and, for a user's grant, the live user's current
 * role, and to its app, which must not be disabled. Nothing is cached: revoking the delegation or
 * disabling the app refuses the token on the next request, anywhere. A token acts with the scopes
 * it was issued that its app still holds: narrowing the app's scopes narrows its live tokens too.
 */
export const flowTokenCredentials: CredentialResolver = {
  scheme: 'bearer',
  async resolve(em, digest, now) {
    const at = now.toISOString();
    const [row] = await readPath(em).rows<FlowTokenRow>(
      `select r.model, r.scope, d.id as delegation_id, d.account_id, d.user_id, d.client_id, d.delegation_type, u.role, least(r.expires_at, d.expires_at) as expires_at,
              u.name as user_name, a.name as app_name, a.scope as app_scope, s.signed_in_at, s.id as session_id
         from oauth_server_records r
         join oauth_delegations d on d.grant_id = r.grant_id and d.status = 'issued' and d.expires_at > ?
         join oauth_apps a on a.client_id = d.client_id and a.disabled_at is null
         left join users u on u.id = d.user_id and u.account_id = d.account_id and ${activeUser('u')}
         left join sign_in_sessions s on s.session_uid_digest = r.uid_digest and s.user_id = d.user_id
        where r.model in ('AccessToken', 'ClientCredentials') and r.key_digest = ? and r.expires_at > ?`,
      [at, digest, at],
      { prepared: true },
    );
    if (!row) return undefined;
    const held = new Set(row.app_scope.split(/\s+/));
    const scopes = new Set((row.scope ?? '').split(/\s+/).filter((scope) => scope && held.has(scope)));
    if (row.model === 'ClientCredentials') {
      if (row.user_id !== null) return undefined;
      const principal: OAuthAppPrincipal = {
        kind: 'oauth_app',
        accountId: row.account_id,
        credentialId: row.delegation_id,
        clientId: row.client_id,
        summaries: { app: row.app_name },
        scopes,
        rateLimitKey: `oauth-app:${row.client_id}`,
        expiresAt: new Date(row.expires_at),
      };
      return principal;
    }
    if (row.user_id === null || !isUserRole(row.role)) return undefined;
    const principal: OAuthPrincipal = {
      kind: 'oauth',
      accountId: row.account_id,
      credentialId: row.delegation_id,
      clientId: row.client_id,
      summaries: { user: row.user_name, app: row.app_name },
      userId: row.user_id,
      role: row.role,
      scopes,
      // A third-party app's grant is recorded as an `integration` delegation acting as the user.
      firstParty: row.delegation_type === 'mobile' || row.delegation_type === 'web',
      // The product's own apps' tokens come from a browser sign-in (the browser app's are `web` delegations); the token remembers its session.
      ...(row.delegation_type === 'mobile' || row.delegation_type === 'web'
        ? { browserSignIn: { ...(row.signed_in_at ? { signedInAt: new Date(row.signed_in_at) } : {}), ...(row.session_id ? { sessionId: row.session_id } : {}) } }
        : {}),
      rateLimitKey: `user:${row.user_id}`,
      expiresAt: new Date(row.expires_at),
    };
    return principal;
  },
};
