import { AccountsService } from '../accounts/accounts.service.js';
import { bootstrapAccount } from '../accounts/bootstrap.js';
import type { Database } from '../db/database.js';

export type FirstStart = 'not_first' | 'demo_account' | 'instructions';

/**
 * The first start of an embedded database that has no account. Outside production it creates a
 * demo account and prints its full-access key once, so one command gives a working server. In
 * production it creates nothing and prints how an operator creates the first account: a key
 * printed to whatever collects the process's output is a credential in someone else's logs.
 * Written straight to the terminal, never through the logger.
 */
export async function greetFirstStart(database: Database, options: { production: boolean; publicApiUrl: string; write(text: string): void }): Promise<FirstStart> {
  if ((await new AccountsService(database.em()).countAccounts()) > 0) return 'not_first';
  if (options.production) {
    options.write(
      `\nThe embedded database has no account yet (NODE_ENV=production: no demo account, no key printed).\n` +
        `  Create the first one, its full-access key printed once to your terminal:\n` +
        `  accessctl bootstrap --account-name "Your company" --owner-email you@example.com\n\n`,
    );
    return 'instructions';
  }
  const demo = await database.transactions.run(
    database.em(),
    (tx) => bootstrapAccount(tx, { accountName: 'Demo account', ownerEmail: 'owner@example.com', ownerName: 'Demo Owner' }),
    'accounts.bootstrap',
  );
  options.write(
    `\nCreated a demo account on the embedded database.\n` +
      `  account ${demo.account.id}, owner ${demo.owner.id} <${demo.owner.email}>\n` +
      `  Full-access API key (shown only now): ${demo.apiKey}\n` +
      `  Try: curl -H 'Authorization: Token token=${demo.apiKey}' ${options.publicApiUrl}/users\n\n`,
  );
  return 'demo_account';
}
