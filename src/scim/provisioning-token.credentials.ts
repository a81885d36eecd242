import type { CredentialResolver } from '../auth/authenticate.js';
import type { ProvisioningTokenPrincipal } from '../auth/principal.js';
import { credentialUsage } from '../auth/credential-usage.js';
import { SECRET_KINDS } from '../auth/secret-format.js';
import { readPath } from '../db/read-path.js';

/** What a provisioning token may do on the SCIM face; it is refused everywhere else (app.ts). */
export const PROVISIONING_SCOPES: ReadonlySet<string> = new Set(['users.read', 'users.write']);
/**
 * Every provisioning token begins with one of these, so its look-up is the only one a SCIM request
 * pays (and other bearer tokens never pay it): the scannable format's prefix (secret-format.ts) for
 * tokens issued now, `scim_` for those issued before, which keep working.
 */
export const PROVISIONING_TOKEN_PREFIX = `${SECRET_KINDS.provisioningToken}_`;
export const LEGACY_PROVISIONING_TOKEN_PREFIX = 'scim_';

/**
 * `Authorization: Bearer <provisioning token>`: one look-up on the unique digest per request and
 * nothing cached, so a revoked token is refused on the next request on every instance.
 */
const provisioningTokenResolver: CredentialResolver = {
  scheme: 'bearer',
  prefix: PROVISIONING_TOKEN_PREFIX,
  async resolve(em, digest) {
    const [row] = await readPath(em).rows<{ id: string; account_id: string; description: string | null; created_with_owner_rights: boolean }>(
      'select id, account_id, description, created_with_owner_rights from provisioning_tokens where token_digest = ? and revoked_at is null',
      [digest],
      { prepared: true },
    );
    if (!row) return undefined;
    credentialUsage.noteUse(em, 'provisioning_tokens', row.id);
    const principal: ProvisioningTokenPrincipal = {
      kind: 'provisioning_token',
      // The account's identity provider acts through SCIM only, on every transport.
      confinedTo: 'scim',
      accountId: row.account_id,
      credentialId: row.id,
      summaries: { credential: row.description },
      scopes: PROVISIONING_SCOPES,
      rateLimitKey: `provisioning-token:${row.id}`,
      ownerRights: row.created_with_owner_rights,
    };
    return principal;
  },
};

/** The same look-up for each prefix a provisioning token may carry. */
export const provisioningTokenCredentials: CredentialResolver[] = [
  provisioningTokenResolver,
  { ...provisioningTokenResolver, prefix: LEGACY_PROVISIONING_TOKEN_PREFIX },
];
