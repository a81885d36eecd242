import type { EntityManager } from '@mikro-orm/sql';
import { recordChange } from '../db/change-journal.js';
import { InvalidInputError, NotFoundError } from '../errors/domain-errors.js';
import { Account } from './account.entity.js';
import { issueApiKey } from './api-keys.service.js';

export interface IssuedApiKey {
  id: string;
  /** Shown once; only its digest is stored. */
  apiKey: string;
}

export class AccountsService {
  constructor(private readonly em: EntityManager) {}

  async createAccount(name: string): Promise<Account> {
    if (!name.trim()) throw new InvalidInputError('account name must not be empty');
    const account = this.em.create(Account, { name: name.trim() });
    await this.em.persist(account).flush();
    return account;
  }

  async getAccount(id: string): Promise<Account> {
    const account = await this.em.findOne(Account, { id });
    if (!account) throw new NotFoundError('account');
    return account;
  }

  /** `userId` makes a user key; it must be a live user of the account. The operator's and bootstrap's way: no creator user. */
  async createApiKey(options: { accountId: string; userId?: string; readOnly?: boolean; description?: string; expiresAt?: Date }): Promise<IssuedApiKey> {
    if (options.userId && options.readOnly) throw new InvalidInputError('a user key acts with the user\'s role; --read-only applies to account keys only');
    const kind = options.userId ? 'user' : options.readOnly ? 'account_read_only' : 'account_full_access';
    const issued = await issueApiKey(this.em, { accountId: options.accountId, kind, userId: options.userId, description: options.description, expiresAt: options.expiresAt });
    return { id: issued.apiKey.id, apiKey: issued.secret };
  }

  async revokeUserApiKeys(userId: string, at: Date): Promise<void> {
    const revoked = await this.em.execute<{ id: string; account_id: string }[]>(
      'update api_keys set revoked_at = ? where user_id = ? and revoked_at is null returning id, account_id',
      [at, userId],
    );
    for (const key of revoked) {
      recordChange(this.em, { accountId: key.account_id, action: 'revoke', resource: { type: 'api_key', id: key.id }, userId, revokesAccess: true });
    }
  }

  async countAccounts(): Promise<number> {
    return this.em.count(Account, {});
  }
}
