import type { CredentialResolver } from '../auth/authenticate.js';
import { isUserRole } from '../auth/roles.js';
import { readPath } from '../db/read-path.js';

interface ApiKeyRow {
  id: string;
  account_id: string;
  user_id: string | null;
  read_only: boolean;
  role: string | null;
  description: string | null;
  user_name: string | null;
}

/**
 * One indexed query per request: the key, and for a user key the user's current role
 * (a deleted or suspended user's keys stop working even before the revocation hook has run).
 */
export const apiKeyCredentials: CredentialResolver = {
  scheme: 'token',
  async resolve(em, digest) {
    const [row] = await readPath(em).rows<ApiKeyRow>(
      `select k.id, k.account_id, k.user_id, k.read_only, u.role, k.description, u.name as user_name
         from api_keys k
         left join users u on u.id = k.user_id and u.deleted_at is null and u.suspended_at is null
        where k.token_digest = ? and k.revoked_at is null`,
      [digest],
      { prepared: true },
    );
    if (!row) return undefined;
    if (row.user_id === null) {
      return { kind: 'account_key', accountId: row.account_id, credentialId: row.id, readOnly: row.read_only, rateLimitKey: `account-key:${row.id}`, summaries: { credential: row.description } };
    }
    if (!isUserRole(row.role)) return undefined;
    return { kind: 'user_key', accountId: row.account_id, credentialId: row.id, userId: row.user_id, role: row.role, rateLimitKey: `user:${row.user_id}`, summaries: { user: row.user_name, credential: row.description } };
  },
};
