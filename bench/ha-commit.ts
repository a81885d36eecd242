/**
 * What waiting for the synchronous standby costs (SPEC 21, docs/operating.md "On a Patroni
 * cluster"): `PUT /users/{id}` and `DELETE /oauth_delegations` on the `ha` topology
 * (scripts/topology.sh ha start), once with commits that wait for the synchronous standby
 * (`synchronous_commit = on`, the cluster's default) and once asynchronous (`local`), set on the
 * benchmark's own database. One service instance in this process, requests at concurrency 4.
 *
 *   npm run bench:ha-commit   (prints one JSON line per mode and endpoint)
 */
import 'reflect-metadata';
import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import pg from 'pg';
import { createApp } from '../src/app/create-app.js';
import { allCommitHooks, allEntities } from '../src/app/features.js';
import { bootstrapAccount } from '../src/accounts/bootstrap.js';
import { createRateLimiter } from '../src/auth/rate-limit.js';
import { openDatabase } from '../src/db/database.js';
import { createLogger } from '../src/logging/logger.js';
import { issueDelegation } from '../src/oauth-delegations/oauth-delegation.service.js';
import { BENCH_URLS } from './settings.js';

const REQUESTS = Number(process.env.HA_BENCH_REQUESTS ?? 300);
const CONCURRENCY = 4;
const V2 = 'application/vnd.pagerduty+json;version=2';

function clusterEnv(): Record<string, string> {
  const output = execFileSync(path.resolve('scripts/topology.sh'), ['ha', 'env'], { encoding: 'utf8' });
  return Object.fromEntries(output.trim().split('\n').map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]));
}

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!;

async function run(requests: (() => Promise<number>)[]): Promise<{ p50Ms: number; p95Ms: number; perSecond: number; failures: number }> {
  const latencies: number[] = [];
  let failures = 0;
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < requests.length) {
        const request = requests[next++]!;
        const begun = performance.now();
        const status = await request();
        latencies.push(performance.now() - begun);
        if (status >= 300) failures++;
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  return { p50Ms: Math.round(percentile(latencies, 0.5) * 10) / 10, p95Ms: Math.round(percentile(latencies, 0.95) * 10) / 10, perSecond: Math.round(requests.length / seconds), failures };
}

async function main(): Promise<void> {
  const cluster = clusterEnv();
  const name = `aag_ha_bench_${randomBytes(4).toString('hex')}`;
  const url = (base: string) => Object.assign(new URL(base), { pathname: `/${name}` }).toString();
  const admin = new pg.Client({ connectionString: cluster.DATABASE_URL });
  await admin.connect();
  await admin.query(`create database ${name}`);
  try {
    for (const mode of ['on', 'local', 'on', 'local'] as const) {
      await admin.query(`alter database ${name} set synchronous_commit = ${mode}`);
      const database = await openDatabase({ databaseUrl: url(cluster.DATABASE_URL!), listenUrl: url(cluster.DATABASE_LISTEN_URL!), dataDir: undefined, entities: allEntities(), commitHooks: allCommitHooks(), poolMax: 8 });
      await database.migrate();
      const logger = createLogger({ logLevel: 'silent' });
      const app = await createApp({
        settings: { publicApiUrl: BENCH_URLS.api, publicWebUrl: BENCH_URLS.web, publicFeedUrl: BENCH_URLS.feed, apiVendor: 'pagerduty', introspection: false, landingPage: false, corsOrigins: [], graphqlMaxDepth: 12, graphqlMaxCost: 20_000 },
        database,
        logger,
        serverSecret: randomBytes(32),
        rateLimiter: createRateLimiter({ perMinute: 100_000_000, logger }),
      });
      await new Promise<void>((resolve) => app.httpServer.listen(0, '127.0.0.1', resolve));
      const base = `http://127.0.0.1:${(app.httpServer.address() as AddressInfo).port}`;
      try {
        const setup = await database.transactions.run(database.em(), (tx) => bootstrapAccount(tx, { accountName: `bench ${mode}`, ownerEmail: `owner-${randomBytes(4).toString('hex')}@example.com`, ownerName: 'Bench owner' }));
        const headers = { Accept: V2, Authorization: `Token token=${setup.apiKey}`, 'Content-Type': 'application/json' };
        const userIds: string[] = [];
        for (let index = 0; index < REQUESTS; index++) {
          const response = await fetch(`${base}/users`, { method: 'POST', headers, body: JSON.stringify({ user: { name: `Bench ${index}`, email: `bench-${index}-${randomBytes(4).toString('hex')}@example.com` } }) });
          const id = ((await response.json()) as { user: { id: string } }).user.id;
          await database.transactions.run(database.em(), (tx) => issueDelegation(tx, { userId: id, type: 'web', scopes: 'users.read' }));
          userIds.push(id);
        }
        const [{ synchronous_commit: effective }] = (await database.em().execute<{ synchronous_commit: string }[]>('show synchronous_commit')) as [{ synchronous_commit: string }];
        const updates = await run(userIds.map((id, index) => async () => (await fetch(`${base}/users/${id}`, { method: 'PUT', headers, body: JSON.stringify({ user: { job_title: `t${index}` } }) })).status));
        const revocations = await run(userIds.map((id) => async () => (await fetch(`${base}/oauth_delegations?user_id=${id}&type=web`, { method: 'DELETE', headers })).status));
        console.log(JSON.stringify({ synchronous_commit: effective, endpoint: 'PUT /users/{id}', requests: REQUESTS, concurrency: CONCURRENCY, ...updates }));
        console.log(JSON.stringify({ synchronous_commit: effective, endpoint: 'DELETE /oauth_delegations', requests: REQUESTS, concurrency: CONCURRENCY, ...revocations }));
      } finally {
        await app.stop(1_000);
        await database.close();
      }
    }
  } finally {
    await admin.query(`drop database if exists ${name} with (force)`);
    await admin.end();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
