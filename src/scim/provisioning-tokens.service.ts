import type { EntityManager } from '@mikro-orm/sql';
import { Account } from '../accounts/account.entity.js';
import { digestSecret, newSecretToken } from '../auth/secrets.js';
import { recordChange } from '../db/change-journal.js';
import { PUBLIC_ID_PATTERN } from '../db/public-id.js';
import { InvalidInputError, NotFoundError } from '../errors/domain-errors.js';
import { ProvisioningToken } from './provisioning-token.entity.js';
import { PROVISIONING_TOKEN_PREFIX } from './provisioning-token.credentials.js';

export interface IssuedProvisioningToken {
  id: string;
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

  async create(accountId: string, description?: string): Promise<IssuedProvisioningToken> {
    if (description !== undefined && description.length > 255) throw new InvalidInputError('description must be at most 255 characters');
    if (!PUBLIC_ID_PATTERN.test(accountId) || !(await this.em.findOne(Account, { id: accountId }))) throw new NotFoundError('account');
    const token = `${PROVISIONING_TOKEN_PREFIX}${newSecretToken(32)}`;
    const row = this.em.create(ProvisioningToken, { account: this.em.getReference(Account, accountId), tokenDigest: digestSecret(token), description: description ?? null });
    await this.em.persist(row).flush();
    recordChange(this.em, { accountId, action: 'create', resource: { type: 'provisioning_token', id: row.id, summary: row.description ?? undefined } });
    return { id: row.id, token };
  }

  async list(accountId: string): Promise<ProvisioningTokenListing[]> {
    const rows = await this.em.find(ProvisioningToken, { account: accountId }, { orderBy: { createdAt: 'asc', id: 'asc' } });
    return rows.map((row) => ({ id: row.id, description: row.description, created_at: row.createdAt.toISOString(), revoked_at: row.revokedAt?.toISOString() ?? null }));
  }

  /** Refused from the commit on, on every instance (the credential resolver reads the row on each request). */
  async revoke(id: string): Promise<{ id: string; revoked_at: string }> {
    const row = PUBLIC_ID_PATTERN.test(id) ? await this.em.findOne(ProvisioningToken, { id }) : null;
    if (!row) throw new NotFoundError('provisioning token');
    if (!row.revokedAt) {
      row.revokedAt = new Date();
      await this.em.flush();
      recordChange(this.em, { accountId: row.account.id, action: 'revoke', resource: { type: 'provisioning_token', id: row.id, summary: row.description ?? undefined }, revokesAccess: true });
    }
    return { id: row.id, revoked_at: row.revokedAt.toISOString() };
  }
}
