import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import pg from 'pg';
import { databasePresentingReads } from '../src/observability/metrics.js';
import { issueDelegation } from '../src/oauth-delegations/oauth-delegation.service.js';
import { parseLsn, type Replica } from '../src/db/replicas.js';
import { randomBytes } from 'node:crypto';
import supertest from 'supertest';
import { allEntities } from '../src/app/features.js';
import { createApp } from '../src/app/create-app.js';
import { createRateLimiter } from '../src/auth/rate-limit.js';
import { openDatabase } from '../src/db/database.js';
import { sharedRecentWrites } from '../src/db/recent-writes.js';
import { createLogger } from '../src/logging/logger.js';
import { startHarness, TEST_SETTINGS, type Credential, type Harness } from './support/harness.js';

/**
 * Against the streaming replica of scripts/topology.sh (TEST_REPLICA_URL: the replica server of
 * DATABASE_URL's server). The test database is created on the primary and reaches the replica by
 * streaming, like every row the tests write; pausing replay on the replica makes its lag as long as
 * the test needs. Without that topology the tests report as skipped, with the reason in their name.
 */
const replicaServer = process.env.TEST_REPLICA_URL;
const redisUrl = process.env.TEST_REDIS_URL;
/** Recent writes shared as a deployment of several instances shares them (in memory without Redis). */
const recentWrites = redisUrl ? (windowMs: number) => sharedRecentWrites(redisUrl, windowMs, 500) : undefined;
const REPLICA_OPTIONS = { replicaMaxLagMs: 120_000, replicaProbeIntervalMs: 100, recentWrites };
const execFileAsync = promisify(execFile);
const topologyScript = path.resolve(import.meta.dirname, '../scripts/topology.sh');

async function whyNoReplica(): Promise<string | undefined> {
  if (!process.env.DATABASE_URL) return 'no DATABASE_URL (replicas are a PostgreSQL feature)';
  if (!replicaServer) return 'TEST_REPLICA_URL is not set (start scripts/topology.sh and eval "$(scripts/topology.sh env)")';
  const client = new pg.Client({ connectionString: replicaServer, connectionTimeoutMillis: 2_000 });
  try {
    await client.connect();
    const { rows } = await client.query<{ standby: boolean }>('select pg_is_in_recovery() as standby');
    return rows[0]!.standby ? undefined : `${replicaServer} is not a standby`;
  } catch (error) {
    return `the replica at TEST_REPLICA_URL does not answer (${(error as Error).message})`;
  } finally {
    await client.end().catch(() => {});
  }
}

const skipReason = await whyNoReplica();
const describeWithReplica = skipReason ? describe.skip : describe;
// Jest names no test of a suite skipped whole: the reason goes to the run's output here.
if (skipReason) process.stderr.write(`read replicas: skipped, ${skipReason}\n`);
const title = (name: string) => (skipReason ? `${name} (skipped: ${skipReason})` : name);

/** Runs `sql` on the replica server, in `database` (its own `postgres` database unless given). */
async function onReplica<T extends object>(sql: string, database?: string): Promise<T[]> {
  const url = new URL(replicaServer!);
  if (database) url.pathname = `/${database}`;
  const client = new pg.Client({ connectionString: url.toString() });
  await client.connect();
  try {
    return (await client.query<T>(sql)).rows;
  } finally {
    await client.end();
  }
}

const pauseReplay = () => onReplica('select pg_wal_replay_pause()');
const resumeReplay = () => onReplica('select pg_wal_replay_resume()');

async function until(what: string, condition: () => boolean | Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await sleep(50);
  }
}

async function readsBy(target: string, reason: string): Promise<number> {
  const { values } = await databasePresentingReads.get();
  return values.filter((value) => value.labels.target === target && value.labels.reason === reason).reduce((sum, value) => sum + value.value, 0);
}

let h: Harness;
let replica: Replica;

/** Up, within the lag bound, and has replayed everything the primary had written when asked. */
async function caughtUp(): Promise<void> {
  const [{ lsn }] = (await h.database.em().execute<{ lsn: string }[]>('select pg_current_wal_lsn()::text as lsn')) as [{ lsn: string }];
  await until('the replica has replayed the primary', async () => {
    await h.database.readRouting!.replicas.probe();
    return replica.up && replica.replayed >= parseLsn(lsn) && replica.lagMs === 0;
  });
}

async function bearer(userId: string): Promise<Credential> {
  const { accessToken } = await h.database.transactions.run(h.database.em(), (tx) => issueDelegation(tx, { userId, type: 'mobile', scopes: 'users.read users.write' }));
  return { bearer: accessToken };
}

// One harness on the primary and its replica for the file, started only where the topology is (the blocks below are skipped otherwise).
if (!skipReason) {
  beforeAll(async () => {
    // A lag bound longer than any test here: a paused replica keeps serving, as a slow one within the bound would.
    h = await startHarness({ replicaServers: [replicaServer!], ...REPLICA_OPTIONS });
    replica = h.database.readRouting!.replicas.replicas[0]!;
    await caughtUp();
  });
  afterAll(async () => {
    await resumeReplay().catch(() => {});
    await h?.close();
  });
}

describeWithReplica(title('with replay paused, authentication and a writer\'s own reads go to the primary'), () => {
  test('with replay paused, a token revoked on the primary is refused on the next request (authentication reads the primary)', async () => {
    const account = await h.createAccount();
    const user = await h.createUser(account);
    const token = await bearer(user.id);
    expect((await h.rest('get', '/users/me', { key: token })).status).toBe(200);
    await caughtUp();
    await pauseReplay();
    try {
      expect((await h.rest('delete', `/oauth_delegations?user_id=${user.id}&type=mobile`, { key: account.key })).status).toBe(200);
      const refused = await h.rest('get', '/users/me', { key: token });
      expect(refused.status).toBe(401);
      // The replica still holds the delegation as issued: had authentication read it, the token would have passed.
      const onStandby = await onReplica<{ status: string }>(`select status from oauth_delegations where user_id = '${user.id}'`, new URL(h.database.url!).pathname.slice(1));
      expect(onStandby).toEqual([{ status: 'issued' }]);
    } finally {
      await resumeReplay();
    }
  });

  test('with replay paused, a writer reads its own writes on the next request; another client sees the older data until replay resumes', async () => {
    const account = await h.createAccount();
    const writer: Credential = account.key;
    const other = await h.accountKey(account);
    const existing = await h.createUser(account, { name: 'Before Rename' });
    await caughtUp();
    await pauseReplay();
    let resumed = false;
    try {
      const ownWritesBefore = await readsBy('primary', 'own_write');
      const replicaBefore = await readsBy(replica.name, 'replica');

      const created = await h.rest('post', '/users', { key: writer, body: { user: { name: 'Fresh Person', email: 'fresh@example.com' } } });
      expect(created.status).toBe(201);
      const freshId = created.body.user.id as string;
      const shownToWriter = await h.rest('get', `/users/${freshId}`, { key: writer });
      expect([shownToWriter.status, shownToWriter.body.user?.name]).toEqual([200, 'Fresh Person']);

      expect((await h.rest('put', `/users/${existing.id}`, { key: writer, body: { user: { name: 'After Rename' } } })).status).toBe(200);
      expect((await h.rest('get', `/users/${existing.id}`, { key: writer })).body.user.name).toBe('After Rename');
      const listedToWriter = await h.rest('get', '/users?limit=25', { key: writer });
      expect(listedToWriter.body.users.map((user: { name: string }) => user.name)).toEqual(expect.arrayContaining(['Fresh Person', 'After Rename']));
      expect(await readsBy('primary', 'own_write')).toBeGreaterThanOrEqual(ownWritesBefore + 3);

      // Another credential that wrote nothing reads the replica, which has not replayed those writes.
      expect((await h.rest('get', `/users/${freshId}`, { key: other })).status).toBe(404);
      expect((await h.rest('get', `/users/${existing.id}`, { key: other })).body.user.name).toBe('Before Rename');
      expect(await readsBy(replica.name, 'replica')).toBeGreaterThan(replicaBefore);

      // A user made while the replica is behind signs in (the primary) and is shown as itself (the primary too).
      const newcomer = await h.createUser(account, { name: 'New Person' });
      const me = await h.rest('get', '/users/me', { key: newcomer.key });
      expect([me.status, me.body.user?.name]).toEqual([200, 'New Person']);

      await resumeReplay();
      resumed = true;
      await caughtUp();
      const shownToOther = await h.rest('get', `/users/${freshId}`, { key: other });
      expect([shownToOther.status, shownToOther.body.user?.name]).toEqual([200, 'Fresh Person']);
      expect((await h.rest('get', `/users/${existing.id}`, { key: other })).body.user.name).toBe('After Rename');
    } finally {
      if (!resumed) await resumeReplay();
    }
  });
});

describeWithReplica(title('with replay paused, the window of recent writes is shared between instances'), () => {
  (redisUrl ? test : test.skip)('with replay paused, a write answered by one instance is read back through another (the window is shared through Redis, no sticky sessions)', async () => {
    const secondDatabase = await openDatabase({
      databaseUrl: h.database.url,
      replicaUrls: [Object.assign(new URL(replicaServer!), { pathname: new URL(h.database.url!).pathname }).toString()],
      ...REPLICA_OPTIONS,
      dataDir: undefined,
      entities: allEntities(),
      poolMax: 2,
    });
    const logger = createLogger({ logLevel: 'silent' });
    const rateLimiter = createRateLimiter({ perMinute: 1_000_000, logger });
    const second = await createApp({ settings: TEST_SETTINGS, database: secondDatabase, logger, serverSecret: randomBytes(32), rateLimiter });
    try {
      const secondReplica = secondDatabase.readRouting!.replicas.replicas[0]!;
      const account = await h.createAccount();
      const writer = account.key as { token: string };
      await caughtUp();
      await until('the second instance sees the replica', async () => {
        await secondDatabase.readRouting!.replicas.probe();
        return secondReplica.up;
      });
      await pauseReplay();
      try {
        const created = await h.rest('post', '/users', { key: writer, body: { user: { name: 'Written Elsewhere', email: 'elsewhere@example.com' } } });
        expect(created.status).toBe(201);
        const readBack = await supertest(second.app)
          .get(`/users/${created.body.user.id}`)
          .set({ Accept: 'application/vnd.pagerduty+json;version=2', Authorization: `Token token=${writer.token}` });
        expect([readBack.status, readBack.body.user?.name]).toEqual([200, 'Written Elsewhere']);
        // The second instance's replica has not replayed the write: only the shared window sent the read to the primary.
        const other = (await h.accountKey(account)) as { token: string };
        const unseen = await supertest(second.app)
          .get(`/users/${created.body.user.id}`)
          .set({ Accept: 'application/vnd.pagerduty+json;version=2', Authorization: `Token token=${other.token}` });
        expect(unseen.status).toBe(404);
      } finally {
        await resumeReplay();
      }
    } finally {
      await second.stop();
      await rateLimiter.close();
      await secondDatabase.close();
    }
  });
});

describeWithReplica(title('a replica that lags past the bound or stops is skipped, then used again'), () => {
  test('a replica lagging past DATABASE_REPLICA_MAX_LAG_MS is skipped (reads go to the primary), and used again once it has caught up', async () => {
    const MAX_LAG_MS = 400;
    const strict = await startHarness({ replicaServers: [replicaServer!], ...REPLICA_OPTIONS, replicaMaxLagMs: MAX_LAG_MS });
    try {
      const strictReplica = strict.database.readRouting!.replicas.replicas[0]!;
      const account = await strict.createAccount();
      const reader = await strict.accountKey(account, { readOnly: true });
      const writer: Credential = account.key;
      await until('the replica is up and not behind', async () => {
        await strict.database.readRouting!.replicas.probe();
        return strictReplica.up && strictReplica.lagMs === 0;
      });
      // Time without writes of this test's is no lag: the lag is the age of WAL the replica misses, not of its last replayed commit.
      await sleep(3 * MAX_LAG_MS);
      await strict.database.readRouting!.replicas.probe();
      expect(strictReplica.lagMs).toBeLessThan(MAX_LAG_MS);
      await pauseReplay();
      try {
        const created = await strict.rest('post', '/users', { key: writer, body: { user: { name: 'Behind The Lag', email: 'lag@example.com' } } });
        expect(created.status).toBe(201);
        await until('the replica is past the lag bound', async () => {
          await strict.database.readRouting!.replicas.probe();
          return strictReplica.lagMs > MAX_LAG_MS;
        });
        const skippedBefore = await readsBy('primary', 'no_replica');
        // The reader wrote nothing: only the lag bound keeps it off the replica, which has not replayed the user.
        const shown = await strict.rest('get', `/users/${created.body.user.id}`, { key: reader });
        expect([shown.status, shown.body.user?.name]).toEqual([200, 'Behind The Lag']);
        expect(await readsBy('primary', 'no_replica')).toBeGreaterThan(skippedBefore);
      } finally {
        await resumeReplay();
      }
      await until('the replica is back within the bound', async () => {
        await strict.database.readRouting!.replicas.probe();
        return strictReplica.up && strictReplica.lagMs <= MAX_LAG_MS;
      });
      const servedBefore = await readsBy(strictReplica.name, 'replica');
      expect((await strict.rest('get', '/users?limit=25', { key: reader })).status).toBe(200);
      expect(await readsBy(strictReplica.name, 'replica')).toBeGreaterThan(servedBefore);
    } finally {
      await strict.close();
    }
  });

  test('the replica stopped mid-load: no 5xx, reads move to the primary, and return to the replica when it is back', async () => {
    const account = await h.createAccount();
    await h.createUser(account, { name: 'Listed Person' });
    const reader = await h.accountKey(account, { readOnly: true });
    await caughtUp();
    const statuses = new Map<number, number>();
    let loading = true;
    const client = async () => {
      while (loading) {
        const response = await h.rest('get', '/users?limit=25', { key: reader });
        statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
      }
    };
    const load = Promise.all([client(), client(), client()]);
    try {
      await until('the replica serves reads', async () => (await readsBy(replica.name, 'replica')) > 0);
      const primaryBefore = (await readsBy('primary', 'no_replica')) + (await readsBy('primary', 'replica_failed'));
      await execFileAsync(topologyScript, ['replica-stop']);
      await until('reads move to the primary', async () => (await readsBy('primary', 'no_replica')) + (await readsBy('primary', 'replica_failed')) > primaryBefore + 10);
      expect(replica.up).toBe(false);
      await execFileAsync(topologyScript, ['replica-start']);
      await caughtUp();
      const replicaBack = await readsBy(replica.name, 'replica');
      await until('reads return to the replica', async () => (await readsBy(replica.name, 'replica')) > replicaBack + 10);
    } finally {
      loading = false;
      await load;
      await execFileAsync(topologyScript, ['replica-start']).catch(() => {});
    }
    expect([...statuses.keys()]).toEqual([200]);
  });
});

