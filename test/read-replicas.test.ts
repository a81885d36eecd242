import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import pg from 'pg';
import { databasePresentingReads } from '../src/observability/metrics.js';
import { issueDelegation } from '../src/oauth-delegations/oauth-delegation.service.js';
import { parseLsn, type Replica } from '../src/db/replicas.js';
import { startHarness, type Credential, type Harness } from './support/harness.js';

/**
 * Against the streaming replica of scripts/topology.sh (TEST_REPLICA_URL: the replica server of
 * DATABASE_URL's server). The test database is created on the primary and reaches the replica by
 * streaming, like every row the tests write; pausing replay on the replica makes its lag as long as
 * the test needs. Without that topology the tests report as skipped, with the reason in their name.
 */
const replicaServer = process.env.TEST_REPLICA_URL;
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

describeWithReplica(title('read replicas (streaming, scripts/topology.sh)'), () => {
  let h: Harness;
  let replica: Replica;
  /** Up, within the lag bound, and has replayed everything the primary had written when asked. */
  const caughtUp = async () => {
    const [{ lsn }] = (await h.database.em().execute<{ lsn: string }[]>('select pg_current_wal_lsn()::text as lsn')) as [{ lsn: string }];
    await until('the replica has replayed the primary', async () => {
      await h.database.readRouting!.replicas.probe();
      return replica.up && replica.replayed >= parseLsn(lsn) && replica.lagMs === 0;
    });
  };

  beforeAll(async () => {
    // A lag bound longer than any test here: a paused replica keeps serving, as a slow one within the bound would.
    h = await startHarness({ replicaServers: [replicaServer!], replicaMaxLagMs: 120_000, replicaProbeIntervalMs: 100 });
    replica = h.database.readRouting!.replicas.replicas[0]!;
    await caughtUp();
  });
  afterAll(async () => {
    await resumeReplay().catch(() => {});
    await h?.close();
  });

  async function bearer(userId: string): Promise<Credential> {
    const { accessToken } = await h.database.transactions.run(h.database.em(), (tx) => issueDelegation(tx, { userId, type: 'mobile', scopes: 'users.read users.write' }));
    return { bearer: accessToken };
  }

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

