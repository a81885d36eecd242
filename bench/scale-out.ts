// Scale-out scenarios (docs/BENCHMARKS.md, "Scaling out"), on the topology of scripts/topology.sh:
//
//   DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres \
//   BENCH_PGBOUNCER_URL=postgres://postgres@127.0.0.1:6432/postgres \
//   BENCH_REPLICA_URL=postgres://postgres@127.0.0.1:5433/postgres \
//   npm run build && node dist/bench/scale-out.js
//
// (`npm run bench` runs them too, after its own scenarios, when either URL is set.) Seeds
// `aag_bench_scale` on the primary (BENCH_SCALE_USERS users, default 10,000), then:
// 1. PgBouncer vs direct: the service with DATABASE_POOLER=pgbouncer-transaction through PgBouncer
//    (statements unnamed, values as bind parameters) against the same service straight to the
//    primary, GET /users/:id and GET /users?limit=25: once with the direct service's named prepared
//    statements (its default), once with them off (DATABASE_PREPARED_STATEMENTS=off).
//    BENCH_DB_PREFIX names the database (<prefix>_scale, default aag_bench_scale).
// 2. Replica vs none under a write load: pgbench updates rows on the primary the whole time; the
//    service without replicas against the service with the replica, GET /users?limit=25 and
//    GET /users/:id, plus what one listing statement costs on each server.
// Markdown on stdout.
import 'reflect-metadata';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import os from 'node:os';
import pg from 'pg';
import { allEntities } from '../src/app/features.js';
import { openDatabase } from '../src/db/database.js';
import { bootstrapAccount } from '../src/accounts/bootstrap.js';
import { AccountsService } from '../src/accounts/accounts.service.js';
import { seedCommand } from '../src/cli/commands/seed.command.js';
import { userListStatements } from '../src/users/search/user-list-statements.js';
import { call, load, log, median, startService, type LoadResult, type Scenario, type Server } from './servers.js';

/** BENCH_DB_PREFIX as in bench/run.ts, so checkouts with different schemas keep their own database. */
const DATABASE = `${process.env.BENCH_DB_PREFIX ?? 'aag_bench'}_scale`;
const WRITE_LOAD_ROWS = 10_000;

interface Settings {
  primaryUrl: string;
  pgbouncerUrl?: string;
  replicaUrl?: string;
  users: number;
  seconds: number;
  rounds: number;
  connections: number;
  writeClients: number;
}

const withDatabase = (server: string) => Object.assign(new URL(server), { pathname: `/${DATABASE}` }).toString();

async function seed(settings: Settings): Promise<{ apiKey: string; showId: string; accountId: string }> {
  const admin = new pg.Client({ connectionString: settings.primaryUrl });
  await admin.connect();
  const exists = (await admin.query('select 1 from pg_database where datname = $1', [DATABASE])).rowCount === 1;
  if (!exists) await admin.query(`create database ${DATABASE}`);
  await admin.end();
  const database = await openDatabase({ databaseUrl: withDatabase(settings.primaryUrl), dataDir: undefined, entities: allEntities(), poolMax: 4 });
  try {
    await database.migrate();
    const em = database.em();
    let [account] = await em.execute<{ id: string }[]>(`select id from accounts where name = 'Bench'`);
    const [{ n: users } = { n: 0 }] = await em.execute<{ n: string | number }[]>('select count(*) as n from users where deleted_at is null');
    if (!account || Number(users) < settings.users) {
      if (!account) account = (await database.transactions.run(database.em(), (tx) => bootstrapAccount(tx, { accountName: 'Bench', ownerEmail: 'owner@bench.example' }))).account;
      log(`${DATABASE}: seeding ${settings.users - Number(users)} users`);
      await seedCommand.run(database, { account: account.id, users: String(settings.users - Number(users)), 'shifts-per-user': '0' }, { info: (message) => log(message) });
    }
    // The write load's own table: its updates are WAL the replica replays, like any write.
    await em.execute(`create table if not exists bench_write_load (id int primary key, n bigint not null default 0, pad text not null default '')`);
    await em.execute(`insert into bench_write_load (id) select generate_series(1, ${WRITE_LOAD_ROWS}) on conflict do nothing`);
    await em.execute('analyze');
    const { apiKey } = await database.transactions.run(database.em(), (tx) => new AccountsService(tx).createApiKey({ accountId: account!.id }));
    const [sample] = await em.execute<{ id: string }[]>(`select id from users where account_id = ? and role = 'user' order by id limit 1 offset 5`, [account.id]);
    return { apiKey, showId: sample!.id, accountId: account.id };
  } finally {
    await database.close();
  }
}

/** Until the replica has replayed everything the primary had written when asked. */
async function replicaCaughtUp(primaryUrl: string, replicaUrl: string): Promise<void> {
  const primary = new pg.Client({ connectionString: primaryUrl });
  await primary.connect();
  const { rows } = await primary.query<{ lsn: string }>('select pg_current_wal_lsn()::text as lsn');
  await primary.end();
  const replica = new pg.Client({ connectionString: replicaUrl });
  await replica.connect();
  try {
    for (let i = 0; i < 600; i++) {
      const { rows: [state] } = await replica.query<{ caught_up: boolean }>('select pg_last_wal_replay_lsn() >= $1::pg_lsn as caught_up', [rows[0]!.lsn]);
      if (state!.caught_up) return;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    throw new Error('the replica did not catch up within a minute');
  } finally {
    await replica.end();
  }
}

function pgbenchPath(): string {
  const versions = existsSync('/usr/lib/postgresql') ? readdirSync('/usr/lib/postgresql').sort() : [];
  const found = versions.reverse().map((version) => `/usr/lib/postgresql/${version}/bin/pgbench`).find((candidate) => existsSync(candidate));
  return process.env.PGBENCH ?? found ?? 'pgbench';
}

/** Updates the write load has made so far (each adds 1 to one row's n). */
async function writesDone(primaryUrl: string): Promise<number> {
  const client = new pg.Client({ connectionString: withDatabase(primaryUrl) });
  await client.connect();
  try {
    const { rows } = await client.query<{ n: string }>('select sum(n) as n from bench_write_load');
    return Number(rows[0]?.n ?? 0);
  } finally {
    await client.end();
  }
}

/** pgbench updating random rows of bench_write_load on the primary until stopped. */
function startWriteLoad(settings: Settings): { process: ChildProcess; exited: Promise<unknown> } {
  const url = new URL(withDatabase(settings.primaryUrl));
  const script = path.join(mkdtempSync(path.join(os.tmpdir(), 'aag-write-load-')), 'write-load.sql');
  writeFileSync(script, `\\set id random(1, ${WRITE_LOAD_ROWS})\nupdate bench_write_load set n = n + 1, pad = md5(random()::text) where id = :id;\n`);
  const child = spawn(pgbenchPath(), ['-n', '-h', url.hostname, '-p', url.port || '5432', '-U', url.username || 'postgres', '-c', String(settings.writeClients), '-j', '1', '-T', '3600', '-f', script, DATABASE], { stdio: ['ignore', 'ignore', 'inherit'] });
  return { process: child, exited: new Promise((resolve) => child.on('exit', resolve)) };
}

async function transactionsOn(serverUrl: string): Promise<number> {
  const client = new pg.Client({ connectionString: serverUrl });
  await client.connect();
  try {
    const { rows } = await client.query<{ n: string }>('select xact_commit + xact_rollback as n from pg_stat_database where datname = $1', [DATABASE]);
    return Number(rows[0]?.n ?? 0);
  } finally {
    await client.end();
  }
}

/** Milliseconds one listing statement takes to execute on a server (EXPLAIN ANALYZE, median of 5). */
async function listingStatementMs(serverUrl: string, accountId: string): Promise<number> {
  const statement = userListStatements(accountId, { first: 25 }, ['id', 'name', 'email', 'timeZone', 'color', 'role', 'avatarUrl', 'description', 'invitationSent', 'jobTitle', 'createdViaSso']).page;
  const client = new pg.Client({ connectionString: serverUrl });
  await client.connect();
  try {
    let index = 0;
    const sql = statement.sql.replace(/\?/g, () => `$${++index}`);
    const times: number[] = [];
    for (let i = 0; i < 5; i++) {
      const { rows } = await client.query<{ 'QUERY PLAN': [{ 'Execution Time': number; 'Planning Time': number }] }>(`explain (analyze, format json) ${sql}`, statement.params);
      const [plan] = rows[0]!['QUERY PLAN'];
      times.push(plan['Execution Time'] + plan['Planning Time']);
    }
    return median(times);
  } finally {
    await client.end();
  }
}

/** Alternating rounds of each scenario on `a` then `b` (order swapped every round); medians. */
async function compare(settings: Settings, servers: { a: Server; b: Server }, scenarios: Scenario[], apiKey: string): Promise<{ scenario: Scenario; a: LoadResult; b: LoadResult }[]> {
  const results = [];
  for (const scenario of scenarios) {
    for (const server of [servers.a, servers.b]) {
      const answer = await call(server, apiKey, scenario.method, scenario.path);
      if (answer.status !== 200) throw new Error(`${scenario.name}: answered ${answer.status}: ${answer.text.slice(0, 300)}`);
    }
    const runs: Record<'a' | 'b', LoadResult[]> = { a: [], b: [] };
    for (let round = 0; round < settings.rounds; round++) {
      log(`${scenario.name}: round ${round + 1}`);
      for (const which of round % 2 === 0 ? (['a', 'b'] as const) : (['b', 'a'] as const)) runs[which].push(await load(servers[which], scenario, apiKey, settings));
    }
    const summarize = (values: LoadResult[]): LoadResult => ({ rps: median(values.map((r) => r.rps)), p50: median(values.map((r) => r.p50)), p99: median(values.map((r) => r.p99)), failures: values.reduce((sum, r) => sum + r.failures, 0) });
    results.push({ scenario, a: summarize(runs.a), b: summarize(runs.b) });
  }
  return results;
}

const row = (name: string, a: LoadResult, b: LoadResult) =>
  `| ${name} | ${a.rps.toFixed(0)} | ${a.p50.toFixed(1)} | ${a.p99.toFixed(1)} | ${b.rps.toFixed(0)} | ${b.p50.toFixed(1)} | ${b.p99.toFixed(1)} | ${(b.rps / a.rps).toFixed(2)}x | ${a.failures + b.failures} |`;

export async function scaleOutReport(settings: Settings): Promise<string[]> {
  const output = [`Scale-out run started ${new Date().toISOString()}; ${os.cpus().length} cores; load average ${os.loadavg().map((v) => v.toFixed(2)).join(' ')}; ${settings.users.toLocaleString('en')} users; ${settings.connections} connections, ${settings.seconds} s per round, ${settings.rounds} alternating rounds.`];
  const { apiKey, showId, accountId } = await seed(settings);
  const scenarios: Scenario[] = [
    { name: 'GET /users/:id', method: 'GET', path: `/users/${showId}`, baseline: false },
    { name: 'GET /users?limit=25', method: 'GET', path: '/users?limit=25', baseline: false },
  ];
  const header = (a: string, b: string) => [`| scenario | ${a} req/s | p50 ms | p99 ms | ${b} req/s | p50 ms | p99 ms | ${b} / ${a} | failures |`, '|---|---|---|---|---|---|---|---|---|'];

  if (settings.pgbouncerUrl) {
    const direct = await startService(withDatabase(settings.primaryUrl));
    const directUnnamed = await startService(withDatabase(settings.primaryUrl), { DATABASE_PREPARED_STATEMENTS: 'off' });
    const pooled = await startService(withDatabase(settings.pgbouncerUrl), { DATABASE_POOLER: 'pgbouncer-transaction', DATABASE_LISTEN_URL: withDatabase(settings.primaryUrl) });
    try {
      const prepared = await compare(settings, { a: direct, b: pooled }, scenarios, apiKey);
      output.push('', '#### PgBouncer (pool_mode = transaction, unnamed statements) vs direct with named prepared statements', '', ...header('direct', 'PgBouncer'), ...prepared.map((r) => row(r.scenario.name, r.a, r.b)));
      const unnamed = await compare(settings, { a: directUnnamed, b: pooled }, scenarios, apiKey);
      output.push('', '#### PgBouncer vs direct, both with unnamed statements (DATABASE_PREPARED_STATEMENTS=off on the direct one)', '', ...header('direct, off', 'PgBouncer'), ...unnamed.map((r) => row(r.scenario.name, r.a, r.b)));
    } finally {
      await Promise.all([direct.request('stop'), directUnnamed.request('stop'), pooled.request('stop')]);
    }
  }

  if (settings.replicaUrl) {
    const replicaDatabase = withDatabase(settings.replicaUrl);
    await replicaCaughtUp(settings.primaryUrl, replicaDatabase);
    const alone = await startService(withDatabase(settings.primaryUrl));
    const replicated = await startService(withDatabase(settings.primaryUrl), { DATABASE_REPLICA_URLS: replicaDatabase });
    const idle = { primary: await listingStatementMs(withDatabase(settings.primaryUrl), accountId), replica: await listingStatementMs(replicaDatabase, accountId) };
    const writeLoad = startWriteLoad(settings);
    try {
      await new Promise((resolve) => setTimeout(resolve, 2_000));
      const busy = { primary: await listingStatementMs(withDatabase(settings.primaryUrl), accountId), replica: await listingStatementMs(replicaDatabase, accountId) };
      const replicaBefore = await transactionsOn(replicaDatabase);
      const writesBefore = { count: await writesDone(settings.primaryUrl), at: Date.now() };
      const results = await compare(settings, { a: alone, b: replicated }, scenarios, apiKey);
      const tps = ((await writesDone(settings.primaryUrl)) - writesBefore.count) / ((Date.now() - writesBefore.at) / 1000);
      const replicaServed = (await transactionsOn(replicaDatabase)) - replicaBefore;
      output.push(
        '',
        `#### One replica vs none, primary busy with a write load (pgbench, ${settings.writeClients} clients updating random rows: ${tps.toFixed(0)} updates/s during the runs)`,
        '',
        ...header('primary only', 'with replica'),
        ...results.map((r) => row(r.scenario.name, r.a, r.b)),
        '',
        `Transactions the replica ran during the runs: ${replicaServed.toLocaleString('en')}.`,
        `One listing statement (GET /users?limit=25's page, planning + execution, median of 5): idle primary ${idle.primary.toFixed(2)} ms, idle replica ${idle.replica.toFixed(2)} ms; under the write load primary ${busy.primary.toFixed(2)} ms, replica ${busy.replica.toFixed(2)} ms.`,
      );
    } finally {
      writeLoad.process.kill('SIGINT');
      await writeLoad.exited;
      await Promise.all([alone.request('stop'), replicated.request('stop')]);
    }
  }
  output.push('', `Scale-out run ended ${new Date().toISOString()}; load average ${os.loadavg().map((v) => v.toFixed(2)).join(' ')}.`);
  return output;
}

export function scaleOutSettings(): Settings | undefined {
  const primaryUrl = process.env.DATABASE_URL;
  const pgbouncerUrl = process.env.BENCH_PGBOUNCER_URL;
  const replicaUrl = process.env.BENCH_REPLICA_URL;
  if (!primaryUrl || (!pgbouncerUrl && !replicaUrl)) return undefined;
  return {
    primaryUrl,
    pgbouncerUrl,
    replicaUrl,
    users: Number(process.env.BENCH_SCALE_USERS ?? 10_000),
    seconds: Number(process.env.BENCH_SECONDS ?? 5),
    rounds: Number(process.env.BENCH_ROUNDS ?? 3),
    connections: Number(process.env.BENCH_CONNECTIONS ?? 10),
    writeClients: Number(process.env.BENCH_WRITE_CLIENTS ?? 4),
  };
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const settings = scaleOutSettings();
  if (!settings) {
    process.stderr.write('Set DATABASE_URL (the primary) and BENCH_PGBOUNCER_URL and/or BENCH_REPLICA_URL (scripts/topology.sh start).\n');
    process.exit(2);
  }
  process.stdout.write(`${(await scaleOutReport(settings)).join('\n')}\n`);
}
