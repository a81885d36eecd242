// The benchmark's data, shared by bench/run.ts and bench/compare.ts: a seeded database per size on
// the server in DATABASE_URL (`<prefix>_<size>`), an account key, and the read scenarios that a
// hand-written baseline answers with the same bytes.
import pg from 'pg';
import { AccountsService } from '../src/accounts/accounts.service.js';
import { bootstrapAccount } from '../src/accounts/bootstrap.js';
import { allCommitHooks, allEntities } from '../src/app/features.js';
import { seedCommand } from '../src/cli/commands/seed.command.js';
import { openDatabase, type Database } from '../src/db/database.js';
import { ProvisioningTokensService } from '../src/scim/provisioning-tokens.service.js';
import { log, type Scenario } from './servers.js';

/**
 * A term held by 5% of the users, all of them last in the name order (their names start with it):
 * a search for it finds nothing in the first 95% of the name order.
 */
export const lateTerm = 'zenith';
export const label = (size: number) => (size >= 1_000_000 ? `${size / 1_000_000}M` : size >= 1000 ? `${size / 1000}k` : String(size));

export interface Prepared {
  databaseUrl: string;
  accountId: string;
  apiKey: string;
  showId: string;
  rareTerm: string;
  bulkIds: string[];
  delegationsUserId: string;
  /** A provisioning token of the bench account (SCIM scenarios) and an email to look up. */
  provisioningToken: string;
  lookupEmail: string;
  seedSeconds: number | null;
}

export interface SeedOptions {
  /** The PostgreSQL server the databases are made on (DATABASE_URL). */
  serverUrl: string;
  /** Database name prefix, so two checkouts with different schemas keep their own seeded databases. */
  databasePrefix: string;
  /** Keep an already seeded database of the right size (development); the default seeds afresh. */
  reuse: boolean;
}

/** Seeds (or, with BENCH_REUSE=1, reuses) the database for one size. */
export async function prepare(size: number, { serverUrl, databasePrefix, reuse }: SeedOptions): Promise<Prepared> {
  const name = `${databasePrefix}_${label(size).toLowerCase()}`;
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  const exists = (await admin.query('select 1 from pg_database where datname = $1', [name])).rowCount === 1;
  let seedSeconds: number | null = null;
  if (!reuse || !exists) {
    await admin.query(`drop database if exists ${name} with (force)`);
    await admin.query(`create database ${name}`);
  }
  await admin.end();
  const database = await openDatabase({ databaseUrl: url.toString(), dataDir: undefined, entities: allEntities(), commitHooks: allCommitHooks(), poolMax: 4 });
  try {
    await database.migrate();
    const em = database.em();
    let [account] = await em.execute<{ id: string }[]>(`select id from accounts where name = 'Bench'`);
    const [{ n: users } = { n: 0 }] = await em.execute<{ n: string | number }[]>('select count(*) as n from users where deleted_at is null');
    if (!account || Number(users) < size) {
      const started = Date.now();
      if (!account) account = (await database.transactions.run(database.em(), (tx) => bootstrapAccount(tx, { accountName: 'Bench', ownerEmail: 'owner@bench.example' }))).account;
      log(`${name}: seeding ${size.toLocaleString('en')} users`);
      await seedCommand.run(database, { account: account.id, users: String(size - Number(users)), 'shifts-per-user': '0' }, { info: (m) => log(m) });
      await seedNestedAndWrites(database, account.id);
      seedSeconds = (Date.now() - started) / 1000;
    }
    const [{ n: late } = { n: 0 }] = await em.execute<{ n: string | number }[]>('select count(*) as n from users where account_id = ? and deleted_at is null and search_text like ?', [account.id, `%${lateTerm}%`]);
    if (Number(late) === 0) {
      // The 5% last in the name order get the term as a first name, so they stay last whatever is added later.
      await em.execute(
        `update users set name = initcap(?) || ' ' || name where id in
           (select id from users where account_id = ? and deleted_at is null order by name desc, id desc limit ?)`,
        [lateTerm, account.id, Math.round(size * 0.05)],
      );
    }
    // Fresh statistics and GIN pending lists merged, as a maintained production database has them.
    const maintenance = new pg.Client({ connectionString: url.toString() });
    await maintenance.connect();
    await maintenance.query('vacuum analyze');
    await maintenance.end();
    const { apiKey } = await database.transactions.run(database.em(), (tx) => new AccountsService(tx).createApiKey({ accountId: account.id }));
    const { token: provisioningToken } = await database.transactions.run(database.em(), (tx) => new ProvisioningTokensService(tx).create(account.id, 'bench'));
    const [sample] = await em.execute<{ id: string; name: string; email: string }[]>(`select id, name, email from users where account_id = ? and role = 'user' order by id limit 1 offset 5`, [account.id]);
    const bulk = await em.execute<{ id: string }[]>(`select id from users where account_id = ? and role = 'user' order by id limit 100 offset 10`, [account.id]);
    const [delegations] = await em.execute<{ user_id: string }[]>(`select user_id from oauth_delegations where client_id = 'bench' limit 1`);
    return {
      databaseUrl: url.toString(),
      accountId: account.id,
      apiKey,
      showId: sample!.id,
      // The seeded serial number: matches about one user.
      rareTerm: sample!.name.split(' ').pop()!,
      bulkIds: bulk.map((row) => row.id),
      delegationsUserId: delegations!.user_id,
      provisioningToken,
      lookupEmail: sample!.email,
      seedSeconds,
    };
  } finally {
    await database.close();
  }
}

/** Five subscriptions for each user of the first page, and 1,000 delegations for one user. */
async function seedNestedAndWrites(database: Database, accountId: string) {
  const em = database.em();
  await em.execute(
    `insert into subscribables (id, account_id, type, public_id, name)
     select gen_random_uuid(), ?, 'incident', 'PBENCH' || n, 'Bench incident ' || n from generate_series(1, 5) as n`,
    [accountId],
  );
  await em.execute(
    `insert into notification_subscriptions (account_id, user_id, subscribable_id)
     select ?, u.id, s.id
       from (select id from users where account_id = ? and deleted_at is null order by name, id limit 25) u
       cross join (select id from subscribables where account_id = ? and public_id like 'PBENCH%') s`,
    [accountId, accountId, accountId],
  );
  await em.execute(
    `insert into oauth_delegations (id, account_id, user_id, delegation_type, client_id, scope, access_token_digest, expires_at)
     select gen_random_uuid(), ?, u.id, case when n % 2 = 0 then 'mobile' else 'web' end, 'bench', 'users.read',
            encode(sha256(convert_to(gen_random_uuid()::text, 'UTF8')), 'hex'), now() + interval '30 days'
       from (select id from users where account_id = ? and role = 'user' order by id limit 1 offset 120) u
       cross join generate_series(1, 1000) as n`,
    [accountId, accountId],
  );
}


/** The reads a hand-written baseline answers with the same bytes: one user, the first list page, the nested GraphQL page. */
export function baselineReads(prepared: Prepared): Scenario[] {
  const nested = JSON.stringify({ query: '{ users(first: 25) { totalCount nodes { id name email role notificationSubscriptions(first: 5) { totalCount } } } }' });
  return [
    { name: 'GET /users/:id', method: 'GET', path: `/users/${prepared.showId}`, baseline: true },
    { name: 'GET /users?limit=25', method: 'GET', path: '/users?limit=25', baseline: true },
    { name: 'GraphQL users(first: 25) + totalCount + notificationSubscriptions(first: 5) { totalCount }', method: 'POST', path: '/graphql', body: nested, baseline: true },
  ];
}

/** The search scenarios (no hand-written baseline answers them): a rare term, common terms early and late in the name order, short terms. */
export function searchReads(prepared: Prepared): Scenario[] {
  return [
    { name: `search: rare term (${prepared.rareTerm}, ~1 match)`, method: 'GET', path: `/users?query=${prepared.rareTerm}`, baseline: false },
    { name: 'search: lovelace (6% of users, late in name order)', method: 'GET', path: '/users?query=lovelace', baseline: false },
    // The first name sorting last: every match lies in the last 6% of the name order.
    { name: 'search: shafi (6% of users, last in name order)', method: 'GET', path: '/users?query=shafi', baseline: false },
    { name: `search: ${lateTerm} (5% of users, all last in name order)`, method: 'GET', path: `/users?query=${lateTerm}`, baseline: false },
    { name: 'search: one character (q, no match)', method: 'GET', path: '/users?query=q', baseline: false },
    { name: 'search: two characters (zq, no match)', method: 'GET', path: '/users?query=zq', baseline: false },
    { name: 'search: two characters (an, common)', method: 'GET', path: '/users?query=an', baseline: false },
  ];
}
