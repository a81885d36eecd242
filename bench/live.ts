// `DATABASE_URL=postgres://... npm run bench:live` (docs/BENCHMARKS.md, "Live updates"). Starts two
// service instances (bench/app-server.ts, as deployed) on the database `<BENCH_DB_PREFIX>_live`
// (default `aag_bench_live`), then:
// 1. write-to-event latency across instances: BENCH_LIVE_SUBSCRIPTIONS (default 1,000) userChanged
//    subscriptions open on instance A (20 per connection), PUT /users/{id} on instance B one at a
//    time; per write, the time from its response to the event at a designated subscriber on A, and
//    to the last of all the subscriptions;
// 2. idle connections: BENCH_LIVE_IDLE (default 10,000) connections on instance A, each with one
//    viewerAccessRevoked subscription, on a third, fresh instance; its resident memory before and
//    after, per connection.
// Markdown on stdout. BENCH_LIVE_CPU_PROF=<directory>: instance A writes a V8 CPU profile there
// (--cpu-prof) when it stops, to see where scenario 1 spends its time.
import 'reflect-metadata';
import { fork, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import WebSocket from 'ws';
import { allCommitHooks, allEntities } from '../src/app/features.js';
import { bootstrapAccount } from '../src/accounts/bootstrap.js';
import { openDatabase } from '../src/db/database.js';

const serverUrl = process.env.DATABASE_URL;
if (!serverUrl) {
  process.stderr.write('Set DATABASE_URL to a PostgreSQL server; the benchmark creates the database <BENCH_DB_PREFIX>_live there.\n');
  process.exit(2);
}
const databasePrefix = process.env.BENCH_DB_PREFIX ?? 'aag_bench';
if (!/^[a-z_][a-z0-9_]*$/.test(databasePrefix)) {
  process.stderr.write('BENCH_DB_PREFIX must be a lower-case SQL identifier.\n');
  process.exit(2);
}
const cpuProfileDirectory = process.env.BENCH_LIVE_CPU_PROF;
const subscriptions = Number(process.env.BENCH_LIVE_SUBSCRIPTIONS ?? 1_000);
const idle = Number(process.env.BENCH_LIVE_IDLE ?? 10_000);
const writes = Number(process.env.BENCH_LIVE_WRITES ?? 200);
const PER_CONNECTION = 20;
const log = (message: string) => process.stderr.write(`[bench:live ${new Date().toISOString().slice(11, 19)}] ${message}\n`);

interface Instance {
  process: ChildProcess;
  port: number;
  rss(): Promise<number>;
  stop(): Promise<void>;
}

async function startInstance(databaseUrl: string, options: { cpuProfile?: boolean } = {}): Promise<Instance> {
  const profiling = options.cpuProfile && cpuProfileDirectory ? ['--cpu-prof', `--cpu-prof-dir=${cpuProfileDirectory}`] : [];
  const child = fork(fileURLToPath(new URL('./app-server.js', import.meta.url)), [], {
    env: { ...process.env, NODE_ENV: 'production', BENCH_DATABASE_URL: databaseUrl },
    execArgv: ['--enable-source-maps', '--max-semi-space-size=16', '--max-old-space-size=1024', ...profiling],
  });
  const [ready] = (await once(child, 'message')) as [{ port: number }];
  return {
    process: child,
    port: ready.port,
    async rss() {
      child.send({ kind: 'stats' });
      const [stats] = (await once(child, 'message')) as [{ rss: number }];
      return stats.rss;
    },
    async stop() {
      child.send({ kind: 'stop' });
      await once(child, 'exit');
    },
  };
}

/** A raw graphql-ws connection: acknowledged, then `onNext(id)` per event. */
async function connect(port: number, authorization: string, onNext: (id: string) => void = () => {}): Promise<WebSocket> {
  const socket = new WebSocket(`ws://127.0.0.1:${port}/graphql`, 'graphql-transport-ws', { perMessageDeflate: false });
  await once(socket, 'open');
  socket.send(JSON.stringify({ type: 'connection_init', payload: { authorization } }));
  await new Promise<void>((resolve, reject) => {
    socket.on('message', (data) => {
      const message = JSON.parse(String(data)) as { type: string; id?: string };
      if (message.type === 'connection_ack') resolve();
      else if (message.type === 'next') onNext(message.id!);
    });
    socket.once('close', (code) => reject(new Error(`closed ${code}`)));
  });
  return socket;
}

const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
};
const ms = (value: number) => value.toFixed(2);

const databaseName = `${databasePrefix}_live`;
const admin = new pg.Client({ connectionString: serverUrl });
await admin.connect();
await admin.query(`drop database if exists ${databaseName} with (force)`);
await admin.query(`create database ${databaseName}`);
await admin.end();
const url = new URL(serverUrl);
url.pathname = `/${databaseName}`;
const databaseUrl = url.toString();

const database = await openDatabase({ databaseUrl, dataDir: undefined, entities: allEntities(), commitHooks: allCommitHooks(), poolMax: 2 });
await database.migrate();
const seeded = await database.transactions.run(database.em(), (tx) => bootstrapAccount(tx, { accountName: 'Live bench', ownerEmail: 'owner@live.bench', ownerName: 'Owner' }));
await database.close();
const authorization = `Token token=${seeded.apiKey}`;
const userId = seeded.owner.id;

const a = await startInstance(databaseUrl, { cpuProfile: true });
const b = await startInstance(databaseUrl);
log(`instances on ports ${a.port} and ${b.port}`);
const output: string[] = [`## Live updates (${new Date().toISOString()}, ${os.cpus().length} CPUs, load average before ${os.loadavg().map((v) => v.toFixed(2)).join(' ')})`, ''];

// 1. Latency across instances.
const sockets: WebSocket[] = [];
let pending = 0;
let designatedAt = 0;
let lastAt = 0;
let allArrived: () => void = () => {};
for (let opened = 0; opened < subscriptions; opened += PER_CONNECTION) {
  const count = Math.min(PER_CONNECTION, subscriptions - opened);
  const socket = await connect(a.port, authorization, (id) => {
    const now = performance.now();
    if (opened === 0 && id === 's0') designatedAt = now;
    if (--pending === 0) {
      lastAt = now;
      allArrived();
    }
  });
  for (let index = 0; index < count; index++) {
    socket.send(JSON.stringify({ id: `s${index}`, type: 'subscribe', payload: { query: 'subscription ($id: ID!) { userChanged(id: $id) { kind changedFields } }', variables: { id: userId } } }));
  }
  sockets.push(socket);
}
await new Promise((resolve) => setTimeout(resolve, 1_000));
log(`${subscriptions} subscriptions open on A over ${sockets.length} connections`);

const toDesignated: number[] = [];
const toAll: number[] = [];
const headers = { Authorization: authorization, Accept: 'application/vnd.pagerduty+json;version=2', 'Content-Type': 'application/json' };
for (let write = 0; write < writes + 10; write++) {
  pending = subscriptions;
  const arrived = new Promise<void>((resolve) => {
    allArrived = resolve;
  });
  const response = await fetch(`http://127.0.0.1:${b.port}/users/${userId}`, { method: 'PUT', headers, body: JSON.stringify({ user: { job_title: `Title ${write}` } }) });
  await response.arrayBuffer();
  const respondedAt = performance.now();
  if (response.status !== 200) throw new Error(`PUT answered ${response.status}`);
  await arrived;
  // The first 10 writes warm both instances up and are not counted.
  if (write < 10) continue;
  toDesignated.push(Math.max(0, designatedAt - respondedAt));
  toAll.push(Math.max(0, lastAt - respondedAt));
}
output.push(
  `### Write-to-event latency across instances (${subscriptions} userChanged subscriptions on A, ${writes} sequential PUT /users/{id} on B)`,
  '',
  '| from the write\'s response to | p50 ms | p99 ms | max ms |',
  '|---|---|---|---|',
  `| the event at one subscriber on A | ${ms(percentile(toDesignated, 50))} | ${ms(percentile(toDesignated, 99))} | ${ms(Math.max(...toDesignated))} |`,
  `| the event at the last of the ${subscriptions} | ${ms(percentile(toAll, 50))} | ${ms(percentile(toAll, 99))} | ${ms(Math.max(...toAll))} |`,
  '',
  'An event that arrived before the response counts as 0 ms (the notification is delivered at commit, before the response is written).',
  '',
);
for (const socket of sockets) socket.terminate();
await new Promise((resolve) => setTimeout(resolve, 1_000));

// 2. Idle connections: resident memory per connection, on a fresh instance (A's heap has grown with scenario 1 and does not give memory back).
const c = await startInstance(databaseUrl);
await new Promise((resolve) => setTimeout(resolve, 2_000));
const rssBefore = await c.rss();
const idleSockets: WebSocket[] = [];
for (let index = 0; index < idle; index++) {
  const socket = await connect(c.port, authorization);
  socket.send(JSON.stringify({ id: 'v', type: 'subscribe', payload: { query: 'subscription { viewerAccessRevoked { reason } }' } }));
  idleSockets.push(socket);
  if ((index + 1) % 1_000 === 0) log(`${index + 1} idle connections`);
}
await new Promise((resolve) => setTimeout(resolve, 3_000));
const rssAfter = await c.rss();
output.push(
  `### Idle subscribed connections on one fresh instance (${idle}, one viewerAccessRevoked subscription each)`,
  '',
  '| RSS before (MB) | RSS with the connections (MB) | per connection (KB) |',
  '|---|---|---|',
  `| ${(rssBefore / 1_048_576).toFixed(1)} | ${(rssAfter / 1_048_576).toFixed(1)} | ${((rssAfter - rssBefore) / idle / 1024).toFixed(1)} |`,
  '',
  `Run ended ${new Date().toISOString()}; load average ${os.loadavg().map((v) => v.toFixed(2)).join(' ')}.`,
);
for (const socket of idleSockets) socket.terminate();
await Promise.all([a.stop(), b.stop(), c.stop()]);
process.stdout.write(`${output.join('\n')}\n`);
process.exit(0);
