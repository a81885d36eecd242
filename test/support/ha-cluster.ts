import 'reflect-metadata';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { Writable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { createApp, type App } from '../../src/app/create-app.js';
import { allCommitHooks, allEntities } from '../../src/app/features.js';
import { createRateLimiter } from '../../src/auth/rate-limit.js';
import { openDatabase, type Database } from '../../src/db/database.js';
import { MemoryRecentWrites } from '../../src/db/recent-writes.js';
import { createLogger } from '../../src/logging/logger.js';
import { TEST_SETTINGS } from './harness.js';

/**
 * The Patroni cluster of `scripts/topology.sh ha` (three PostgreSQL nodes; CI's ha phase), and
 * instances of the service on a database of it.
 */
const TOPOLOGY = path.resolve(process.cwd(), 'scripts/topology.sh');
const REST_PORTS = [8008, 8009, 8010];
export const POOL_TIMEOUT_MS = 2_000;
export const STATEMENT_TIMEOUT_MS = 2_000;

/** Runs `scripts/topology.sh ha <args>` and returns what it prints. */
export function topology(...args: string[]): string {
  return execFileSync(TOPOLOGY, ['ha', ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
}

/** The cluster's connection settings (DATABASE_URL, DATABASE_REPLICA_URLS, DATABASE_LISTEN_URL), as `topology.sh ha env` prints them. */
export function clusterEnvironment(): Record<string, string> {
  return Object.fromEntries(
    topology('env')
      .trim()
      .split('\n')
      .map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]),
  );
}

export function withDatabase(url: string, name: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${name}`;
  return parsed.toString();
}

/** Creates the database `name` on the cluster's leader and migrates it. */
export async function createClusterDatabase(cluster: Record<string, string>, name: string): Promise<void> {
  const admin = new pg.Client({ connectionString: cluster.DATABASE_URL });
  await admin.connect();
  await admin.query(`create database ${name}`);
  await admin.end();
  const migrating = await openDatabase({ databaseUrl: withDatabase(cluster.DATABASE_URL!, name), dataDir: undefined, entities: allEntities(), poolMax: 1 });
  await migrating.migrate();
  await migrating.close();
}

/** Drops the database `name` on whichever node leads now (the former leader rejoins as a standby on its own), retrying while none does. */
export async function dropClusterDatabase(cluster: Record<string, string>, name: string): Promise<void> {
  for (let attempt = 0; attempt < 20; attempt++) {
    const admin = new pg.Client({ connectionString: cluster.DATABASE_URL, connectionTimeoutMillis: 2_000 });
    try {
      await admin.connect();
      await admin.query(`drop database if exists ${name} with (force)`);
      break;
    } catch {
      await sleep(500);
    } finally {
      await admin.end().catch(() => {});
    }
  }
}

/** The node (1 to 3) whose Patroni REST API answers /primary, if any does. */
export async function leaderIndex(): Promise<number | undefined> {
  const answers = await Promise.all(
    REST_PORTS.map((port) => fetch(`http://127.0.0.1:${port}/primary`, { signal: AbortSignal.timeout(500) }).then((response) => response.status === 200, () => false)),
  );
  const index = answers.indexOf(true);
  return index < 0 ? undefined : index + 1;
}

/**
 * The member Patroni names the synchronous standby, asked of any node that answers. After the
 * failover test the old leader rejoins as a replica and a standby is named synchronous again
 * within a few loops: waited for (up to 60 s), as a client of the cluster would.
 */
export async function synchronousStandby(): Promise<{ role: string; port: number } | undefined> {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    for (const port of REST_PORTS) {
      const cluster = await fetch(`http://127.0.0.1:${port}/cluster`, { signal: AbortSignal.timeout(1_000) })
        .then((response) => response.json() as Promise<{ members: { role: string; port: number; state: string }[] }>, () => undefined);
      const standby = cluster?.members.find((member) => member.role === 'sync_standby' && ['running', 'streaming'].includes(member.state));
      if (standby) return standby;
    }
    await sleep(500);
  }
  return undefined;
}

export interface Instance {
  name: 'a' | 'b';
  app: App;
  database: Database;
  base: string;
  /** Log lines at error level or above. */
  errorLogs: string[];
}

/**
 * Instances `a` and `b` of the service on the cluster's database `name`, listening on ports of
 * their own: small pools with short timeouts, one server secret, one store of recent writes (two
 * processes would share Redis; two instances in one process share one store).
 */
export async function startInstances(cluster: Record<string, string>, name: string): Promise<Instance[]> {
  const serverSecret = randomBytes(32);
  let recentWrites: MemoryRecentWrites | undefined;
  const start = async (instanceName: 'a' | 'b'): Promise<Instance> => {
    const database = await openDatabase({
      databaseUrl: withDatabase(cluster.DATABASE_URL!, name),
      replicaUrls: [withDatabase(cluster.DATABASE_REPLICA_URLS!, name)],
      listenUrl: withDatabase(cluster.DATABASE_LISTEN_URL!, name),
      recentWrites: (windowMs) => (recentWrites ??= new MemoryRecentWrites(windowMs)),
      dataDir: undefined,
      entities: allEntities(),
      commitHooks: allCommitHooks(),
      poolMax: 5,
      poolTimeoutMs: POOL_TIMEOUT_MS,
      statementTimeoutMs: STATEMENT_TIMEOUT_MS,
    });
    const errorLogs: string[] = [];
    const sink = new Writable({
      write(chunk, _encoding, done) {
        for (const line of String(chunk).split('\n')) if (line && JSON.parse(line).level >= 50) errorLogs.push(line);
        done();
      },
    });
    const logger = createLogger({ logLevel: 'info' }, sink);
    const app = await createApp({ settings: TEST_SETTINGS, database, logger, serverSecret, rateLimiter: createRateLimiter({ perMinute: 1_000_000, logger }), outageLogIntervalMs: 60_000 });
    await new Promise<void>((resolve) => app.httpServer.listen(0, '127.0.0.1', resolve));
    return { name: instanceName, app, database, base: `http://127.0.0.1:${(app.httpServer.address() as AddressInfo).port}`, errorLogs };
  };
  return [await start('a'), await start('b')];
}
