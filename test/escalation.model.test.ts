import { describe, expect, test } from '@jest/globals';
import fc from 'fast-check';
import * as client from 'openid-client';
import { AccountsService } from '../src/accounts/accounts.service.js';
import { Account } from '../src/accounts/account.entity.js';
import { User } from '../src/users/user.entity.js';
import { CookieJar, PASSWORD, authorizeAgain, discover, givePassword, graphqlCall, newMember, registerApp, signIn, useOAuthServers } from './support/oauth-server.js';
import { escalationCommands, obtained, type World } from './support/escalation-commands.js';

/**
 * Model-based search for a way up the privilege order: random sequences of up to 12 account
 * administration steps by an admin and a member (mint and roll keys, change emails, register or
 * edit apps and have the owner's signed-in browser open the link they send, create provisioning
 * tokens and use them, revoke), each followed by the check that nothing they hold or can obtain acts
 * as the owner or another admin, or with more rights than its creator. The seed is fixed
 * (ESCALATION_SEED overrides it) and printed with the failing sequence; the run is bounded in time.
 */
const fixture = useOAuthServers(1);
const SEED = Number(process.env.ESCALATION_SEED ?? 20261128);
const TIME_LIMIT_MS = Number(process.env.ESCALATION_TIME_LIMIT_MS ?? 60_000);
const CONSOLE_REDIRECT = 'https://console.example.com/callback';

/** A user of the account with a password and a user key of their own. */
async function personOf(accountId: string, role: 'admin' | 'user', name: string): Promise<{ id: string; email: string; key: string }> {
  const em = fixture.database.em();
  const user = em.create(User, { account: em.getReference(Account, accountId), name, email: `${name.toLowerCase().replace(/\W+/g, '-')}-${Math.random().toString(36).slice(2, 8)}@example.com`, timeZone: 'Etc/UTC', color: 'red', role });
  await em.persist(user).flush();
  await givePassword(fixture.database, user.id, PASSWORD);
  const issued = await fixture.database.transactions.run(fixture.database.em(), (tx) => new AccountsService(tx).createApiKey({ accountId, userId: user.id }));
  return { id: user.id, email: user.email, key: `Token token=${issued.apiKey}` };
}

/** A fresh account: its owner signed in to the account's own console in a browser, a victim admin, the attacking admin and member. */
async function newWorld(): Promise<World> {
  const account = await newMember(fixture.database);
  const [owner] = await fixture.database.em().execute<{ id: string; email: string }[]>('select id, email from users where account_id = ? and role = \'owner\'', [account.accountId]);
  await givePassword(fixture.database, owner!.id, PASSWORD);
  const { app: console, clientSecret } = await registerApp(fixture.database, fixture.serverSecret, { accountId: account.accountId, kind: 'web', redirectUris: [CONSOLE_REDIRECT], scopes: 'openid users.read' });
  const ownerBrowser = new CookieJar();
  const consoleConfig = await discover(fixture.instances[0]!.url, console.clientId, client.ClientSecretBasic(clientSecret!));
  await signIn({ config: consoleConfig, baseUrl: fixture.instances[0]!.url, redirectUri: CONSOLE_REDIRECT, scope: 'openid users.read', email: owner!.email, password: PASSWORD, jar: ownerBrowser });
  const victim = await personOf(account.accountId, 'admin', 'Victor Admin');
  const admin = await personOf(account.accountId, 'admin', 'Mallory Admin');
  const [member] = await fixture.database.em().execute<{ email: string }[]>('select email from users where id = ?', [account.userId]);
  const memberKey = await fixture.database.transactions.run(fixture.database.em(), (tx) => new AccountsService(tx).createApiKey({ accountId: account.accountId, userId: account.userId }));
  return {
    accountId: account.accountId,
    baseUrl: fixture.instances[0]!.url,
    database: fixture.database,
    owner: { id: owner!.id, email: owner!.email, key: `Token token=${account.ownerUserKey}` },
    victim,
    consoleClientId: console.clientId,
    attackers: [
      { name: 'admin', id: admin.id, email: admin.email, role: 'admin', credentials: [admin.key], scimTokens: [] },
      { name: 'member', id: account.userId, email: member!.email, role: 'user', credentials: [`Token token=${memberKey.apiKey}`], scimTokens: [] },
    ],
    apps: [],
    openLink: async (clientId: string, redirectUri: string) => {
      const config = await discover(fixture.instances[0]!.url, clientId, client.None());
      return (await authorizeAgain(ownerBrowser, config, redirectUri)).kind;
    },
    graphql: (authorization, query, variables) => graphqlCall(fixture.instances[0]!, authorization, query, variables),
  };
}

describe('no sequence of administration steps leads up the privilege order', () => {
  test(`fast-check model run (seed ${SEED})`, async () => {
    const started = Date.now();
    let runs = 0;
    await fc.assert(
      fc.asyncProperty(fc.commands(escalationCommands(), { maxCommands: 12 }), async (commands) => {
        runs += 1;
        const world = await newWorld();
        await fc.asyncModelRun(() => ({ model: { steps: 0 }, real: world }), commands);
      }),
      { seed: SEED, numRuns: 80, interruptAfterTimeLimit: TIME_LIMIT_MS, markInterruptAsFailure: false, endOnFailure: true, verbose: 1 },
    );
    // Interrupted by the time bound is fine; having tried nothing is not.
    expect(runs).toBeGreaterThan(5);
    process.stdout.write(`escalation model: ${runs} sequences in ${Date.now() - started} ms, seed ${SEED}; obtained ${JSON.stringify(obtained)}\n`);
    // The steps reach the server's rules: attackers did obtain keys, tokens and apps the owner opened, and none led up.
    expect(obtained.keys).toBeGreaterThan(0);
    expect(obtained.provisioningTokens).toBeGreaterThan(0);
    expect(obtained.appsOpenedByOwner).toBeGreaterThan(0);
  }, 150_000);
});
