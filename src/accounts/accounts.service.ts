import type { EntityManager } from '@mikro-orm/sql';
import { digestSecret, newSecretToken } from '../auth/secrets.js';
import { recordChange } from '../db/change-journal.js';
import { InvalidInputError, NotFoundError } from '../errors/domain-errors.js';
import { Account } from './account.entity.js';
import { ApiKey } from './api-key.entity.js';

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

  /** `userId` makes a user key; it must be a live user of the account. */
  async createApiKey(options: { accountId: string; userId?: string; readOnly?: boolean; description?: string }): Promise<IssuedApiKey> {
    const account = await this.getAccount(options.accountId);
    if (options.userId) {
      if (options.readOnly) throw new InvalidInputError('a user key acts with the user\'s role; --read-only applies to account keys only');
      const [user] = await this.em.execute<{ id: string; suspended: boolean }[]>(
        'select id, suspended_at is not null as suspended from users where id = ? and account_id = ? and deleted_at is null for share',
        [options.userId, account.id],
      );
      if (!user) throw new NotFoundError('user');
      if (user.suspended) throw new InvalidInputError(`user ${options.userId} is suspended: a suspended user cannot be given new credentials`);
    }
    const secret = newSecretToken();
    const key = this.em.create(ApiKey, {
      account,
      userId: options.userId ?? null,
      readOnly: options.readOnly ?? false,
      tokenDigest: digestSecret(secret),
      description: options.description ?? null,
    });
    await this.em.persist(key).flush();
    recordChange(this.em, {
      accountId: account.id,
      action: 'create',
      resource: { type: 'api_key', id: key.id, ...(key.description ? { summary: key.description } : {}) },
      ...(options.userId ? { userId: options.userId } : {}),
      fields: [{ name: 'read_only', value: key.readOnly }, ...(key.description ? [{ name: 'description', value: key.description }] : [])],
    });
    return { id: key.id, apiKey: secret };
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
