import type { CredentialResolver } from '../auth/authenticate.js';
import { credentialUsage } from '../auth/credential-usage.js';
import { isUserRole } from '../auth/roles.js';
import { readPath } from '../db/read-path.js';
import { AuthenticationError } from '../errors/domain-errors.js';
import { activeUser } from '../users/user.sql.js';

interface ApiKeyRow {
  id: string;
  account_id: string;
  user_id: string | null;
  read_only: boolean;
  role: string | null;
  expires_at: Date | string | null;
  superseded_at: Date | string | null;
  description: string | null;
  user_name: string | null;
}

/**
 * One indexed query per request: the key, and for a user key the user's current role
 * (a deleted or suspended user's keys stop working even before the revocation hook has run).
 * An expired key is refused like a revoked one, with a message saying that it expired. Its use is
 * noted off the request's path (credential-usage.ts): no write per request.
 */
export const apiKeyCredentials: CredentialResolver = {
  scheme: 'token',
  async resolve(em, digest, now) {
    const [row] = await readPath(em).rows<ApiKeyRow>(
      `select k.id, k.account_id, k.user_id, k.read_only, u.role, k.expires_at, k.superseded_at, k.description, u.name as user_name
         from api_keys k
         left join users u on u.id = k.user_id and ${activeUser('u')}
        where k.token_digest = ? and k.revoked_at is null`,
      [digest],
      { prepared: true },
    );
    if (!row) return undefined;
    const expiresAt = row.expires_at === null ? undefined : new Date(row.expires_at);
    if (expiresAt && expiresAt.getTime() <= now.getTime()) throw new AuthenticationError(`The API key expired at ${expiresAt.toISOString()}.`);
    const lifetime = { ...(expiresAt ? { expiresAt } : {}), ...(row.superseded_at === null ? {} : { supersededAt: new Date(row.superseded_at) }) };
    if (row.user_id === null) {
      credentialUsage.noteUse(em, 'api_keys', row.id);
      return { kind: 'account_key', accountId: row.account_id, credentialId: row.id, readOnly: row.read_only, rateLimitKey: `account-key:${row.id}`, summaries: { credential: row.description }, ...lifetime };
    }
    if (!isUserRole(row.role)) return undefined;
    credentialUsage.noteUse(em, 'api_keys', row.id);
    return { kind: 'user_key', accountId: row.account_id, credentialId: row.id, userId: row.user_id, role: row.role, rateLimitKey: `user:${row.user_id}`, summaries: { user: row.user_name, credential: row.description }, ...lifetime };
  },
};
