import type { EntityManager } from '@mikro-orm/sql';
import { createAccountOwner } from '../users/user.service.js';
import { AccountsService } from './accounts.service.js';

export interface BootstrapResult {
  account: { id: string; name: string };
  owner: { id: string; email: string };
  /** The full-access account key, shown once. */
  apiKey: string;
}

/** A new account with its owner and a full-access account key, in the caller's write transaction (`TransactionRunner.run`): all or nothing, and recorded. */
export async function bootstrapAccount(em: EntityManager, options: { accountName: string; ownerEmail: string; ownerName?: string }): Promise<BootstrapResult> {
  const accounts = new AccountsService(em);
  const account = await accounts.createAccount(options.accountName);
  const owner = await createAccountOwner(em, account, { name: options.ownerName ?? 'Account Owner', email: options.ownerEmail });
  const key = await accounts.createApiKey({ accountId: account.id, description: 'bootstrap: full access' });
  return { account: { id: account.id, name: account.name }, owner: { id: owner.id, email: owner.email }, apiKey: key.apiKey };
}
