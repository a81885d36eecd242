// Benchmarks against a real PostgreSQL: `DATABASE_URL=postgres://... npm run bench`.
// BENCH_USERS (default 1,000,000) users are seeded into a dedicated database `aag_bench`, the
// app is served in-process, and autocannon drives each scenario; results print as Markdown.
import 'reflect-metadata';
import { randomBytes } from 'node:crypto';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import pg from 'pg';
import { allEntities } from '../src/app/features.js';
import { createApp } from '../src/app/app.js';
import { openDatabase } from '../src/db/database.js';
import { bootstrapAccount } from '../src/accounts/bootstrap.js';
import { createLogger } from '../src/logging/logger.js';
import { createRateLimiter } from '../src/auth/rate-limit.js';
import { seedCommand } from '../src/cli/commands/seed.command.js';

const serverUrl = process.env.DATABASE_URL;
if (!serverUrl) {
  process.stderr.write('Set DATABASE_URL to a PostgreSQL server (the benchmark creates and drops the database aag_bench there).\n');
  process.exit(2);
}
const users = Number(process.env.BENCH_USERS ?? 1_000_000);
const duration = Number(process.env.BENCH_SECONDS ?? 10);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 10);

const admin = new pg.Client({ connectionString: serverUrl });
await admin.connect();
await admin.query('drop database if exists aag_bench with (force)');
await admin.query('create database aag_bench');
await admin.end();
const url = new URL(serverUrl);
url.pathname = '/aag_bench';

const database = await openDatabase({ databaseUrl: url.toString(), dataDir: undefined, entities: allEntities(), poolMax: 20 });
await database.migrate();
const account = await bootstrapAccount(database.em(), { accountName: 'Bench', ownerEmail: 'owner@bench.example' });
const seedStarted = Date.now();
await seedCommand.run(database, { account: account.account.id, users: String(users), 'shifts-per-user': '0' }, { info: (m) => process.stderr.write(`${m}\n`) });
await database.em().execute('analyze users');
const seedSeconds = (Date.now() - seedStarted) / 1000;

const logger = createLogger({ logLevel: 'silent' });
const rateLimiter = createRateLimiter({ perMinute: 100_000_000, logger });
const server = await createApp({
  settings: { publicApiUrl: 'http://bench', publicWebUrl: 'http://bench', publicFeedUrl: 'http://bench', apiVendor: 'pagerduty', introspection: false, landingPage: false, corsOrigins: [], graphqlMaxDepth: 12, graphqlMaxCost: 20_000 },
  database,
  logger,
  serverSecret: randomBytes(32),
  rateLimiter,
});
await new Promise<void>((resolve) => server.httpServer.listen(0, '127.0.0.1', resolve));
const address = server.httpServer.address();
const base = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
const headers = { Authorization: `Token token=${account.apiKey}`, Accept: 'application/vnd.pagerduty+json;version=2', 'Content-Type': 'application/json' };

const [sample] = await database.em().execute<{ id: string; name: string }[]>('select id, name from users where account_id = ? and role = ? order by id limit 1 offset 500', [account.account.id, 'user']);
const rareTerm = sample!.name.split(' ').pop()!; // a serial number: matches about one user
const scenarios: { name: string; path: string; method?: 'GET' | 'POST'; body?: string }[] = [
  { name: `GET /users?query=${rareTerm} (trigram search, ~1 match)`, path: `/users?query=${rareTerm}` },
  { name: 'GET /users?query=lovelace (trigram search, many matches, first page)', path: '/users?query=lovelace' },
  { name: 'GET /users (first page, ordered by name, id)', path: '/users' },
  { name: 'GET /users?offset=5000 (deep page)', path: '/users?offset=5000' },
  { name: `GET /users/${sample!.id}`, path: `/users/${sample!.id}` },
  { name: 'POST /graphql users(query:, first: 25) with totalCount', path: '/graphql', method: 'POST', body: JSON.stringify({ query: `{ users(query: "${rareTerm}", first: 25) { totalCount nodes { id name email } } }` }) },
];

// The load comes from a separate process, so it does not share the server's event loop.
async function load(scenario: (typeof scenarios)[number]) {
  const requestHeaders = scenario.path === '/graphql' ? { ...headers, Accept: 'application/json' } : headers;
  const args = ['node_modules/autocannon/autocannon.js', '--json', '-c', String(connections), '-d', String(duration), '-m', scenario.method ?? 'GET'];
  for (const [name, value] of Object.entries(requestHeaders)) args.push('-H', `${name}=${value}`);
  if (scenario.body) args.push('-b', scenario.body);
  args.push(`${base}${scenario.path}`);
  const { stdout } = await promisify(execFile)(process.execPath, args, { maxBuffer: 16 * 1024 * 1024 });
  return JSON.parse(stdout) as { requests: { average: number }; latency: { p50: number; p99: number }; non2xx: number; errors: number };
}

const rows: string[] = [];
for (const scenario of scenarios) {
  const result = await load(scenario);
  rows.push(`| ${scenario.name} | ${result.requests.average.toFixed(0)} | ${result.latency.p50} | ${result.latency.p99} | ${result.non2xx + result.errors} |`);
}
const plan = await database.em().execute<{ 'QUERY PLAN': string }[]>(
  `explain analyze select * from users where account_id = ? and deleted_at is null and (name ilike ? or email ilike ?) order by name, id limit 26`,
  [account.account.id, `%${rareTerm}%`, `%${rareTerm}%`],
);

process.stdout.write(
  [
    `Users: ${users.toLocaleString('en')} (seeded in ${seedSeconds.toFixed(0)} s); ${connections} connections, ${duration} s per scenario; Node ${process.version}.`,
    '',
    '| scenario | req/s | p50 ms | p99 ms | non-2xx + errors |',
    '|---|---|---|---|---|',
    ...rows,
    '',
    'Plan of the search query:',
    '',
    '```',
    ...plan.map((line) => line['QUERY PLAN']),
    '```',
    '',
  ].join('\n'),
);

await server.stop();
await rateLimiter.close();
await database.close();
