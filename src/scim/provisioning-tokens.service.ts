import type { EntityManager } from '@mikro-orm/sql';
import { Account } from '../accounts/account.entity.js';
import { credentialTail } from '../auth/credentials.js';
import { mintSecret } from '../auth/secret-format.js';
import { digestSecret } from '../auth/secrets.js';
import { recordChange } from '../db/change-journal.js';
import { PUBLIC_ID_PATTERN } from '../db/public-id.js';
import { InvalidInputError, NotFoundError } from '../errors/domain-errors.js';
import { ProvisioningToken } from './provisioning-token.entity.js';

export interface IssuedProvisioningToken {
  id: string;
  provisioningToken: ProvisioningToken;
  /** Shown once; only its digest is stored. */
  token: string;
}

export interface ProvisioningTokenListing {
  id: string;
  description: string | null;
  created_at: string;
  revoked_at: string | null;
}

/** The operator's side of provisioning tokens (`accessctl provisioning-tokens ...`), inside the caller's transaction. */
export class ProvisioningTokensService {
  constructor(private readonly em: EntityManager) {}

  /** `ownerRights`: the creator holds them (the owner's own credential, or the operator), and so will the token. */
  async create(accountId: string, description?: string, ownerRights = true): Promise<IssuedProvisioningToken> {
    if (description !== undefined && description.length > 255) throw new InvalidInputError('description must be at most 255 characters');
    if (!PUBLIC_ID_PATTERN.test(accountId) || !(await this.em.findOne(Account, { id: accountId }))) throw new NotFoundError('account');
    const token = mintSecret('provisioningToken');
    const row = this.em.create(ProvisioningToken, { account: this.em.getReference(Account, accountId), tokenDigest: digestSecret(token), tokenTail: credentialTail(token), description: description?.trim() || null, createdWithOwnerRights: ownerRights });
    await this.em.persist(row).flush();
    recordChange(this.em, { accountId, action: 'create', resource: { type: 'provisioning_token', id: row.id, summary: row.description ?? undefined } });
    return { id: row.id, token, provisioningToken: row };
  }

  async list(accountId: string): Promise<ProvisioningTokenListing[]> {
    const rows = await this.em.find(ProvisioningToken, { account: accountId }, { orderBy: { createdAt: 'asc', id: 'asc' } });
    return rows.map((row) => ({ id: row.id, description: row.description, created_at: row.createdAt.toISOString(), revoked_at: row.revokedAt?.toISOString() ?? null }));
  }

  /** The account's tokens, newest first, as the API lists them. */
  async listForAccount(accountId: string): Promise<ProvisioningToken[]> {
    return this.em.find(ProvisioningToken, { account: accountId }, { orderBy: { createdAt: 'desc', id: 'desc' } });
  }

  /**
   * Refused from the commit on, on every instance (the credential resolver reads the row on each
   * request). With `accountId` (the API), a token of another account is not found.
   */
  async revoke(id: string, accountId?: string): Promise<{ id: string; revoked_at: string; provisioningToken: ProvisioningToken }> {
    const row = PUBLIC_ID_PATTERN.test(id) ? await this.em.findOne(ProvisioningToken, { id, ...(accountId ? { account: accountId } : {}) }) : null;
    if (!row) throw new NotFoundError('provisioning token');
    await revokeProvisioningTokenRow(this.em, row);
    return { id: row.id, revoked_at: row.revokedAt!.toISOString(), provisioningToken: row };
  }
}

/** Revokes a token if still live, in the caller's write transaction; recorded, and open sockets re-checked. */
export async function revokeProvisioningTokenRow(em: EntityManager, row: ProvisioningToken, at: Date = new Date()): Promise<void> {
  if (row.revokedAt) return;
  row.revokedAt = at;
  await em.flush();
  recordChange(em, { accountId: row.account.id, action: 'revoke', resource: { type: 'provisioning_token', id: row.id, summary: row.description ?? undefined }, revokesAccess: true });
}

/** Revocation by possession: every unrevoked provisioning token with one of these digests, recorded one by one. */
export async function revokeProvisioningTokensByDigest(em: EntityManager, digests: readonly string[], at: Date = new Date()): Promise<number> {
  if (digests.length === 0) return 0;
  const rows = await em.execute<{ id: string; account_id: string; description: string | null }[]>(
    `update provisioning_tokens set revoked_at = ? where revoked_at is null and token_digest in (${digests.map(() => '?').join(', ')})
      returning id, account_id, description`,
    [at, ...digests],
  );
  for (const row of rows) {
    recordChange(em, { accountId: row.account_id, action: 'revoke', resource: { type: 'provisioning_token', id: row.id, summary: row.description ?? undefined }, revokesAccess: true });
  }
  return rows.length;
}
