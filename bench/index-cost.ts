// `DATABASE_URL=postgres://... node dist/bench/index-cost.js`: what one index of `users` costs the
// writes. Two databases are migrated and seeded alike (an account of INDEX_COST_USERS users, default
// 10,000), INDEX_COST_INDEX (default users_search_prefixes_idx) is dropped from the second, and the
// service as deployed runs on each. `POST /users` and `PUT /users` (100 job titles) are then sent one
// at a time, alternating the two services and which goes first, INDEX_COST_ROUNDS rounds (4) of
// INDEX_COST_REQUESTS requests (200; 60 for the bulk update) a side. Markdown on stdout.
import 'reflect-metadata';
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { allCommitHooks, allEntities } from '../src/app/features.js';
import { openDatabase } from '../src/db/database.js';
import { bootstrapAccount } from '../src/accounts/bootstrap.js';
import { call, log, median, startService, type Server } from './servers.js';

const serverUrl = process.env.DATABASE_URL;
if (!serverUrl) {
  process.stderr.write('Set DATABASE_URL to a PostgreSQL server; the benchmark creates the databases index_cost_with and index_cost_without there.\n');
  process.exit(2);
}
const indexName = process.env.INDEX_COST_INDEX ?? 'users_search_prefixes_idx';
const users = Number(process.env.INDEX_COST_USERS ?? 10_000);
const rounds = Number(process.env.INDEX_COST_ROUNDS ?? 4);
const requests = Number(process.env.INDEX_COST_REQUESTS ?? 200);

interface Side {
  label: string;
  server: Server;
  apiKey: string;
  userIds: string[];
}

async function side(label: string, withIndex: boolean): Promise<Side> {
  const name = `index_cost_${label}`;
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  await admin.query(`drop database if exists ${name} with (force)`);
  await admin.query(`create database ${name}`);
  await admin.end();
  const url = new URL(serverUrl!);
  url.pathname = `/${name}`;
  const database = await openDatabase({ databaseUrl: url.toString(), dataDir: undefined, entities: allEntities(), commitHooks: allCommitHooks(), poolMax: 2 });
  await database.migrate();
  const booted = await database.transactions.run(database.em(), (tx) => bootstrapAccount(tx, { accountName: 'Index cost', ownerEmail: 'owner@index-cost.example' }));
  await database.em().execute(
    `insert into users (id, account_id, name, email, time_zone, color, role)
     select 'PI' || lpad(i::text, 5, '0'), ?, 'Seeded User ' || i, 'seeded' || i || '@index-cost.example', 'Etc/UTC', 'green', 'user' from generate_series(1, ?) as i`,
    [booted.account.id, users],
  );
  if (!withIndex) await database.em().execute(`drop index ${indexName}`);
  await database.em().execute('vacuum analyze users');
  await database.close();
  const userIds = Array.from({ length: 100 }, (_, i) => `PI${String(i + 1).padStart(5, '0')}`);
  return { label, server: await startService(url.toString()), apiKey: booted.apiKey, userIds };
}

let sent = 0;
const writes = [
  { name: 'POST /users', method: 'POST', requests, body: () => JSON.stringify({ user: { type: 'user', name: `Created Person ${sent}`, email: `created-${sent}@index-cost.example` } }) },
  {
    name: 'PUT /users (100 job titles)',
    method: 'PUT',
    requests: Math.max(1, Math.round((requests * 60) / 200)),
    body: (s: Side) => JSON.stringify({ users: s.userIds.map((id) => ({ id, type: 'user', job_title: `Bench ${sent}` })) }),
  },
];

async function timed(s: Side, method: string, body: string): Promise<number> {
  sent++;
  const started = performance.now();
  const answer = await call(s.server, s.apiKey, method, '/users', body);
  if (answer.status >= 300) throw new Error(`${method} /users answered ${answer.status}: ${answer.text.slice(0, 300)}`);
  return performance.now() - started;
}

const sides = [await side('with', true), await side('without', false)];
const output = [
  `## ${indexName}: writes with and without it (${new Date().toISOString()}, ${os.cpus().length} cores, load average ${os.loadavg().map((v) => v.toFixed(2)).join(' ')})`,
  '',
  '| write | round | load average before | p50 with (ms) | p50 without (ms) | ratio |',
  '|---|---|---|---|---|---|',
];
for (const write of writes) {
  for (let i = 0; i < 10; i++) for (const s of sides) await timed(s, write.method, write.body(s));
  const all = { with: [] as number[], without: [] as number[] };
  for (let round = 1; round <= rounds; round++) {
    const times = { with: [] as number[], without: [] as number[] };
    const load = os.loadavg()[0]!.toFixed(1);
    for (let i = 0; i < write.requests; i++) {
      for (const s of (i + round) % 2 === 0 ? sides : [...sides].reverse()) times[s.label as 'with' | 'without'].push(await timed(s, write.method, write.body(s)));
    }
    all.with.push(...times.with);
    all.without.push(...times.without);
    const ratio = median(times.with) / median(times.without);
    log(`${write.name}, round ${round}: ${median(times.with).toFixed(2)} against ${median(times.without).toFixed(2)} ms (${ratio.toFixed(3)})`);
    output.push(`| ${write.name} | ${round} | ${load} | ${median(times.with).toFixed(2)} | ${median(times.without).toFixed(2)} | ${ratio.toFixed(3)} |`);
  }
  output.push(`| ${write.name} | all | | ${median(all.with).toFixed(2)} | ${median(all.without).toFixed(2)} | **${(median(all.with) / median(all.without)).toFixed(3)}** |`);
}
for (const s of sides) await s.server.request('stop');
process.stdout.write(`${output.join('\n')}\n`);
