import 'reflect-metadata';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { Writable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { createApp, type App } from '../src/app/create-app.js';
import { allCommitHooks, allEntities } from '../src/app/features.js';
import { bootstrapAccount } from '../src/accounts/bootstrap.js';
import { createRateLimiter } from '../src/auth/rate-limit.js';
import { openDatabase, type Database } from '../src/db/database.js';
import { isDatabaseUnavailable } from '../src/db/database-errors.js';
import { MemoryRecentWrites } from '../src/db/recent-writes.js';
import { createLogger } from '../src/logging/logger.js';
import { issueDelegation } from '../src/oauth-delegations/oauth-delegation.service.js';
import { ProvisioningTokensService } from '../src/scim/provisioning-tokens.service.js';
import { TEST_SETTINGS } from './support/harness.js';
import { LiveTestClient } from './support/live-client.js';

/**
 * Surviving the loss of the primary, on a real Patroni cluster (scripts/topology.sh ha start; CI's ha phase): two instances
 * under a mixed load of writes, revocations and reads, the leader's postmaster killed with SIGKILL.
 * Runs only with TEST_HA_TOPOLOGY=1 (it kills a node of a cluster it expects to exist).
 */
const onCluster = process.env.TEST_HA_TOPOLOGY === '1' ? describe : describe.skip;
const TOPOLOGY = path.resolve(process.cwd(), 'scripts/topology.sh');
const REST_PORTS = [8008, 8009, 8010];
const POOL_TIMEOUT_MS = 2_000;
const STATEMENT_TIMEOUT_MS = 2_000;
/** No request may take longer: waiting for a connection plus one statement's timeout, and some slack. */
const HANG_LIMIT_MS = POOL_TIMEOUT_MS + STATEMENT_TIMEOUT_MS + 1_000;
const RECOVERY_LIMIT_MS = 5_000;
const V2 = 'application/vnd.pagerduty+json;version=2';

function topology(...args: string[]): string {
  return execFileSync(TOPOLOGY, ['ha', ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
}

function withDatabase(url: string, name: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${name}`;
  return parsed.toString();
}

async function leaderIndex(): Promise<number | undefined> {
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
async function synchronousStandby(): Promise<{ role: string; port: number } | undefined> {
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

interface Outcome {
  instance: 'a' | 'b';
  what: string;
  status: number;
  retryAfter: string | null;
  ms: number;
  at: number;
  error?: string;
}

interface Instance {
  name: 'a' | 'b';
  app: App;
  database: Database;
  base: string;
  errorLogs: string[];
}

onCluster('failover of the Patroni leader under load', () => {
  let cluster: Record<string, string> = {};
  /** Ends the load's loops, also when an expectation failed midway (afterAll sets it). */
  let stopping = false;
  const name = `aag_ha_${randomBytes(4).toString('hex')}`;
  const instances: Instance[] = [];
  const serverSecret = randomBytes(32);
  let recentWrites: MemoryRecentWrites | undefined;

  async function startInstance(instanceName: 'a' | 'b'): Promise<Instance> {
    const database = await openDatabase({
      databaseUrl: withDatabase(cluster.DATABASE_URL!, name),
      replicaUrls: [withDatabase(cluster.DATABASE_REPLICA_URLS!, name)],
      listenUrl: withDatabase(cluster.DATABASE_LISTEN_URL!, name),
      // Two processes would share Redis; two instances in one process share one store.
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
  }

  beforeAll(async () => {
    cluster = Object.fromEntries(
      topology('env')
        .trim()
        .split('\n')
        .map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]),
    );
    const admin = new pg.Client({ connectionString: cluster.DATABASE_URL });
    await admin.connect();
    await admin.query(`create database ${name}`);
    await admin.end();
    const migrating = await openDatabase({ databaseUrl: withDatabase(cluster.DATABASE_URL!, name), dataDir: undefined, entities: allEntities(), poolMax: 1 });
    await migrating.migrate();
    await migrating.close();
    instances.push(await startInstance('a'), await startInstance('b'));
  }, 60_000);

  afterAll(async () => {
    stopping = true;
    for (const instance of instances) {
      await instance.app.stop(1_000);
      // Closing waits for every checked-out connection: a connection lost in the failover and kept checked out would hang here.
      await instance.database.close();
    }
    // The former leader rejoins as a standby on its own; the test database goes, whoever leads now.
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
  }, 60_000);

  test('a commit the synchronous standby does not confirm within the statement timeout is cancelled and refused, not acknowledged', async () => {
    const synchronous = await synchronousStandby();
    expect(synchronous).toBeDefined();
    const standby = new pg.Client({ host: '127.0.0.1', port: synchronous!.port, user: 'postgres', database: 'postgres' });
    await standby.connect();
    const [{ pid }] = (await standby.query<{ pid: number }>('select pid from pg_stat_wal_receiver')).rows as [{ pid: number }];
    // The synchronous standby stalls (its WAL receiver stopped): PostgreSQL would let the COMMIT wait for it without end.
    process.kill(pid, 'SIGSTOP');
    const started = Date.now();
    try {
      const db = instances[0]!.database;
      const outcome = await db.transactions
        .run(db.em(), async (tx) => {
          await tx.execute('create temporary table unconfirmed_commit_probe (x int) on commit drop');
        })
        .then(
          () => 'acknowledged',
          (error: unknown) => (isDatabaseUnavailable(error) ? 'unavailable' : String(error)),
        );
      expect({ outcome, withinTimeout: Date.now() - started < STATEMENT_TIMEOUT_MS + 1_000 }).toEqual({ outcome: 'unavailable', withinTimeout: true });
    } finally {
      process.kill(pid, 'SIGCONT');
      await standby.end();
    }
  }, 90_000);

  test('nothing acknowledged is lost, no revocation undone, 503 with Retry-After in the gap, both instances back within 5 s of the promotion', async () => {
    const [a, b] = instances as [Instance, Instance];
    const db = a.database;
    const setup = await db.transactions.run(db.em(), (tx) => bootstrapAccount(tx, { accountName: 'HA', ownerEmail: `owner-${name}@example.com`, ownerName: 'HA owner' }));
    const accountKey = `Token token=${setup.apiKey}`;
    const scim = await db.transactions.run(db.em(), (tx) => new ProvisioningTokensService(tx).create(setup.account.id, 'ha'));
    const users: { id: string; token: string }[] = [];
    for (let index = 0; index < 60; index++) {
      const created = await fetch(`${a.base}/users`, { method: 'POST', headers: { Accept: V2, Authorization: accountKey, 'Content-Type': 'application/json' }, body: JSON.stringify({ user: { name: `HA user ${index}`, email: `ha-${index}-${name}@example.com` } }) });
      expect(created.status).toBe(201);
      const id = ((await created.json()) as { user: { id: string } }).user.id;
      const { accessToken } = await db.transactions.run(db.em(), (tx) => issueDelegation(tx, { userId: id, type: 'web', scopes: 'users.read' }));
      users.push({ id, token: accessToken });
    }
    // Users 0-7 are written by the writers (two each), 8 by the probes, 9 watched over WebSocket, 10-13 read with their tokens, 14+ revoked.
    const writtenUsers = users.slice(0, 8);
    const probeUser = users[8]!;
    const watchedUser = users[9]!;
    const readerTokens = users.slice(10, 14).map((user) => user.token);
    const revocable = users.slice(14);

    const outcomes: Outcome[] = [];
    const fetchErrors: string[] = [];
    stopping = false;
    const call = async (instance: Instance, what: string, pathAndQuery: string, init: RequestInit & { headers: Record<string, string> }): Promise<Outcome> => {
      const started = Date.now();
      try {
        const response = await fetch(instance.base + pathAndQuery, { ...init, signal: AbortSignal.timeout(HANG_LIMIT_MS + 5_000) });
        await response.arrayBuffer();
        const outcome: Outcome = { instance: instance.name, what, status: response.status, retryAfter: response.headers.get('retry-after'), ms: Date.now() - started, at: Date.now() };
        outcomes.push(outcome);
        return outcome;
      } catch (error) {
        const outcome: Outcome = { instance: instance.name, what, status: 0, retryAfter: null, ms: Date.now() - started, at: Date.now(), error: String(error) };
        fetchErrors.push(`${what} on ${instance.name}: ${String(error)}`);
        outcomes.push(outcome);
        return outcome;
      }
    };
    const rest = (instance: Instance, what: string, method: string, pathAndQuery: string, authorization: string, body?: unknown) =>
      call(instance, what, pathAndQuery, { method, headers: { Accept: V2, Authorization: authorization, ...(body ? { 'Content-Type': 'application/json' } : {}) }, body: body ? JSON.stringify(body) : undefined });
    const graphql = (instance: Instance, query: string) => call(instance, 'graphql', '/graphql', { method: 'POST', headers: { 'Content-Type': 'application/json', Authorization: accountKey }, body: JSON.stringify({ query }) });

    // What the service acknowledged, to look for after the failover.
    const createdEmails: string[] = [];
    const lastAckedTitle = new Map<string, number>();
    const revokedAt = new Map<string, number>();
    const refusedAt = new Map<string, number>();
    const acceptedAfterRevocation: string[] = [];

    const writer = async (instance: Instance, own: { id: string }[], index: number) => {
      for (let seq = 1; !stopping; seq++) {
        if (seq % 2) {
          const email = `ha-new-${index}-${seq}-${name}@example.com`;
          const outcome = await rest(instance, 'create user', 'POST', '/users', accountKey, { user: { name: `New ${index}-${seq}`, email } });
          if (outcome.status === 201) createdEmails.push(email);
        } else {
          const user = own[seq % own.length]!;
          const outcome = await rest(instance, 'update user', 'PUT', `/users/${user.id}`, accountKey, { user: { job_title: `w${seq}` } });
          if (outcome.status === 200) lastAckedTitle.set(user.id, seq);
        }
        await sleep(20);
      }
    };
    const revoker = async (instance: Instance, other: Instance, own: { id: string; token: string }[]) => {
      for (const user of own) {
        if (stopping) return;
        for (;;) {
          const outcome = await rest(instance, 'revoke delegations', 'DELETE', `/oauth_delegations?user_id=${user.id}&type=web`, accountKey);
          if (outcome.status === 200 || stopping) break;
          await sleep(100);
        }
        if (stopping) return;
        revokedAt.set(user.token, Date.now());
        const check = await rest(other, 'revoked token', 'GET', '/users/me', `Bearer ${user.token}`);
        if (check.status === 401) refusedAt.set(user.token, Date.now());
        else if (check.status !== 503) acceptedAfterRevocation.push(`${user.id}: ${check.status}`);
        await sleep(150);
      }
    };
    const reader = async (instance: Instance, index: number) => {
      for (let seq = 0; !stopping; seq++) {
        const token = readerTokens[(index + seq) % readerTokens.length]!;
        if (seq % 4 === 0) await rest(instance, 'list users', 'GET', '/users?limit=5', accountKey);
        else if (seq % 4 === 1) await rest(instance, 'current user', 'GET', '/users/me', `Bearer ${token}`);
        else if (seq % 4 === 2) await graphql(instance, '{ users(first: 3) { totalCount } }');
        else await call(instance, 'scim list', '/scim/v2/Users?count=2', { method: 'GET', headers: { Accept: 'application/scim+json', Authorization: `Bearer ${scim.token}` } });
        await sleep(25);
      }
    };
    // One read and one write after another, every 100 ms: when each instance is back for both.
    const probes: Record<'a' | 'b', Outcome[]> = { a: [], b: [] };
    const prober = async (instance: Instance) => {
      for (let seq = 0; !stopping; seq++) {
        const outcome = seq % 2
          ? await rest(instance, 'probe write', 'PUT', `/users/${probeUser.id}`, accountKey, { user: { job_title: `probe ${instance.name} ${seq}` } })
          : await rest(instance, 'probe read', 'GET', `/users/${probeUser.id}`, accountKey);
        probes[instance.name].push(outcome);
        await sleep(100);
      }
    };

    const watchers = await Promise.all(instances.map((instance) => LiveTestClient.connect(instance.app.httpServer, accountKey)));
    for (const watcher of watchers) watcher.subscribe('watched', 'subscription ($id: ID!) { userChanged(id: $id) { kind changedFields } }', { id: watchedUser.id });

    const half = Math.ceil(revocable.length / 2);
    const workers = [
      writer(a, writtenUsers.slice(0, 2), 0),
      writer(a, writtenUsers.slice(2, 4), 1),
      writer(b, writtenUsers.slice(4, 6), 2),
      writer(b, writtenUsers.slice(6, 8), 3),
      revoker(a, b, revocable.slice(0, half)),
      revoker(b, a, revocable.slice(half)),
      reader(a, 0),
      reader(b, 1),
      prober(a),
      prober(b),
    ];
    // At least 3 s of load, and revocations seen refused on the other instance (slower on a busy machine).
    const loadStarted = Date.now();
    while (Date.now() - loadStarted < 3_000 || (refusedAt.size < 4 && Date.now() - loadStarted < 60_000)) await sleep(100);
    expect(outcomes.filter((outcome) => outcome.status >= 500 || outcome.status === 0)).toEqual([]);
    const refusedBeforeKill = [...refusedAt.keys()];
    expect(refusedBeforeKill.length).toBeGreaterThan(3);

    const leaderBefore = await leaderIndex();
    const killedAt = Date.now();
    const killed = topology('failover').trim();
    expect(killed).toBe(`killed=node${leaderBefore}`);

    // Patroni's REST API asked every 100 ms: when another node answers /primary, it has been promoted.
    let promotedAt: number | undefined;
    let newLeader: number | undefined;
    const promotion = (async () => {
      while (promotedAt === undefined && Date.now() - killedAt < 60_000) {
        const leader = await leaderIndex();
        if (leader !== undefined && leader !== leaderBefore) [promotedAt, newLeader] = [Date.now(), leader];
        else await sleep(100);
      }
    })();
    // Meanwhile, a WebSocket connection_init on each instance: acknowledged, or refused as "try again later" (1013), never 4500.
    const gapSocketCloses: number[] = [];
    while (promotedAt === undefined && Date.now() - killedAt < 60_000) {
      const sockets = await Promise.all(instances.map((instance) => LiveTestClient.open(instance.app.httpServer, accountKey)));
      const answers = await Promise.all(sockets.map((socket) => Promise.race([socket.waitFor((message) => message.type === 'connection_ack', HANG_LIMIT_MS).then(() => 0), socket.closed.then((closed) => closed.code)])));
      gapSocketCloses.push(...answers.filter((code) => code !== 0));
      for (const socket of sockets) socket.close();
      await sleep(100);
    }
    await promotion;
    expect(promotedAt).toBeDefined();

    // Load goes on until both instances have answered every probe for 3 s (or 20 s have passed).
    const lastFailureOf = (instance: 'a' | 'b') => Math.max(killedAt, ...probes[instance].filter((outcome) => outcome.at >= killedAt && outcome.status !== 200).map((outcome) => outcome.at));
    while (Date.now() - promotedAt! < 20_000 && (Date.now() - lastFailureOf('a') < 3_000 || Date.now() - lastFailureOf('b') < 3_000)) await sleep(200);
    stopping = true;
    await Promise.all(workers);

    const recoveredAt = (instance: 'a' | 'b') => probes[instance].find((outcome) => outcome.at > lastFailureOf(instance) && outcome.status === 200)?.at;
    const figures = {
      killed,
      newLeader: `node${newLeader}`,
      promotionMs: promotedAt! - killedAt,
      recoveryAfterPromotionMs: { a: (recoveredAt('a') ?? Infinity) - promotedAt!, b: (recoveredAt('b') ?? Infinity) - promotedAt! },
      gapMs: { a: (recoveredAt('a') ?? Infinity) - killedAt, b: (recoveredAt('b') ?? Infinity) - killedAt },
      requests: outcomes.length,
      unavailable503: outcomes.filter((outcome) => outcome.status === 503).length,
      otherFailures: outcomes.filter((outcome) => outcome.status >= 500 && outcome.status !== 503).length,
      slowestMs: Math.max(...outcomes.map((outcome) => outcome.ms)),
      acknowledgedCreates: createdEmails.length,
      acknowledgedUpdates: lastAckedTitle.size,
      acknowledgedRevocations: revokedAt.size,
      refusedBeforeKill: refusedBeforeKill.length,
      gapSocketCloses: [...new Set(gapSocketCloses)],
      lostAcknowledgedWrites: 0,
      revivedCredentials: 0,
    };

    // Every acknowledged write is on the new primary.
    const check = new pg.Client({ connectionString: withDatabase(cluster.DATABASE_URL!, name) });
    await check.connect();
    try {
      const present = new Set((await check.query<{ email: string }>('select email from users where email = any($1)', [createdEmails])).rows.map((row) => row.email));
      const lostCreates = createdEmails.filter((email) => !present.has(email));
      const titles = new Map((await check.query<{ id: string; job_title: string | null }>('select id, job_title from users where id = any($1)', [[...lastAckedTitle.keys()]])).rows.map((row) => [row.id, row.job_title]));
      // A later write may have committed without its answer (503 in the gap): at least the acknowledged one.
      const lostUpdates = [...lastAckedTitle].filter(([id, seq]) => Number(titles.get(id)?.slice(1) ?? 0) < seq);
      const revokedUserIds = [...revokedAt.keys()].map((token) => revocable.find((user) => user.token === token)!.id);
      const stillIssued = (await check.query<{ n: string }>("select count(*) as n from oauth_delegations where user_id = any($1) and status = 'issued'", [revokedUserIds])).rows[0]!.n;
      figures.lostAcknowledgedWrites = lostCreates.length + lostUpdates.length + Number(stillIssued);
      expect({ lostCreates, lostUpdates, stillIssued: Number(stillIssued) }).toEqual({ lostCreates: [], lostUpdates: [], stillIssued: 0 });
    } finally {
      await check.end();
    }

    // Every credential refused before the kill (and every acknowledged revocation) is refused on both instances.
    const revived: string[] = [...acceptedAfterRevocation];
    for (const token of new Set([...refusedBeforeKill, ...revokedAt.keys()])) {
      for (const instance of instances) {
        const outcome = await rest(instance, 'revoked token after failover', 'GET', '/users/me', `Bearer ${token}`);
        if (outcome.status !== 401) revived.push(`${instance.name}: ${outcome.status}`);
      }
    }
    figures.revivedCredentials = revived.length;

    // Live updates: each instance's listener came back through the router and told its subscribers RESYNC, then hears again.
    for (const watcher of watchers) {
      const resync = await watcher.waitFor((message) => message.id === 'watched' && message.type === 'next' && message.payload.data.userChanged.kind === 'RESYNC', 3_000);
      expect(resync.payload.data.userChanged.changedFields).toEqual([]);
    }
    expect((await rest(a, 'watched write', 'PUT', `/users/${watchedUser.id}`, accountKey, { user: { job_title: 'after failover' } })).status).toBe(200);
    for (const watcher of watchers) {
      const heard = await watcher.waitFor((message) => message.id === 'watched' && message.type === 'next' && message.payload.data.userChanged.kind === 'UPDATED', 3_000);
      expect(heard.payload.data.userChanged.changedFields).toEqual(['jobTitle']);
      watcher.close();
    }

    console.info(`ha failover figures: ${JSON.stringify(figures)}`);
    expect(revived).toEqual([]);
    expect(fetchErrors).toEqual([]);
    expect(outcomes.filter((outcome) => outcome.status >= 500 && outcome.status !== 503)).toEqual([]);
    expect(outcomes.filter((outcome) => outcome.status === 503 && outcome.retryAfter === null)).toEqual([]);
    expect(outcomes.filter((outcome) => outcome.ms > HANG_LIMIT_MS)).toEqual([]);
    expect(figures.unavailable503).toBeGreaterThan(0);
    expect(gapSocketCloses.filter((code) => code !== 1013)).toEqual([]);
    expect(figures.recoveryAfterPromotionMs.a).toBeLessThanOrEqual(RECOVERY_LIMIT_MS);
    expect(figures.recoveryAfterPromotionMs.b).toBeLessThanOrEqual(RECOVERY_LIMIT_MS);
    expect([...a.errorLogs, ...b.errorLogs]).toEqual([]);
  }, 180_000);
});
