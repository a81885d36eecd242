import 'reflect-metadata';
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { bootstrapAccount } from '../src/accounts/bootstrap.js';
import { isDatabaseUnavailable } from '../src/db/database-errors.js';
import { issueDelegation } from '../src/oauth-delegations/oauth-delegation.service.js';
import { ProvisioningTokensService } from '../src/scim/provisioning-tokens.service.js';
import {
  clusterEnvironment,
  createClusterDatabase,
  dropClusterDatabase,
  leaderIndex,
  POOL_TIMEOUT_MS,
  startInstances,
  STATEMENT_TIMEOUT_MS,
  synchronousStandby,
  topology,
  withDatabase,
  type Instance,
} from './support/ha-cluster.js';
import { LiveTestClient } from './support/live-client.js';

/**
 * Surviving the loss of the primary, on a real Patroni cluster (scripts/topology.sh ha start; CI's ha phase): two instances
 * under a mixed load of writes, revocations and reads, the leader's postmaster killed with SIGKILL.
 * Runs only with TEST_HA_TOPOLOGY=1 (it kills a node of a cluster it expects to exist).
 */
const withCluster = process.env.TEST_HA_TOPOLOGY === '1';
const onCluster = withCluster ? describe : describe.skip;
/** No request may take longer: waiting for a connection plus one statement's timeout, and some slack. */
const HANG_LIMIT_MS = POOL_TIMEOUT_MS + STATEMENT_TIMEOUT_MS + 1_000;
const RECOVERY_LIMIT_MS = 5_000;
const V2 = 'application/vnd.pagerduty+json;version=2';

interface Outcome {
  instance: 'a' | 'b';
  what: string;
  status: number;
  retryAfter: string | null;
  ms: number;
  at: number;
  error?: string;
}

let cluster: Record<string, string> = {};
/** Ends the load's loops, also when an expectation failed midway (afterAll sets it). */
let stopping = false;
const name = `aag_ha_${randomBytes(4).toString('hex')}`;
const instances: Instance[] = [];

/** A database of the test's own on the cluster, and two instances of the service on it. */
async function startOnCluster(): Promise<void> {
  cluster = clusterEnvironment();
  await createClusterDatabase(cluster, name);
  instances.push(...(await startInstances(cluster, name)));
}

async function stopOnCluster(): Promise<void> {
  stopping = true;
  for (const instance of instances) {
    await instance.app.stop(1_000);
    // Closing waits for every checked-out connection: a connection lost in the failover and kept checked out would hang here.
    await instance.database.close();
  }
  await dropClusterDatabase(cluster, name);
}

// The cluster's database and instances, once for the file, only where the cluster is (the blocks below are skipped otherwise).
if (withCluster) {
  beforeAll(startOnCluster, 60_000);
  afterAll(stopOnCluster, 60_000);
}

onCluster('commits the synchronous standby does not confirm', () => {
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
});

/** An account with 60 users, each with a web delegation, and a SCIM provisioning token, made through instance `a`. */
async function seedAccount(a: Instance) {
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
  return {
    accountKey,
    scimToken: scim.token,
    writtenUsers: users.slice(0, 8),
    probeUser: users[8]!,
    watchedUser: users[9]!,
    readerTokens: users.slice(10, 14).map((user) => user.token),
    revocable: users.slice(14),
  };
}

type Seeded = Awaited<ReturnType<typeof seedAccount>>;

/** Every request the load made, and what the service acknowledged, to look for after the failover. */
interface LoadRecord {
  outcomes: Outcome[];
  fetchErrors: string[];
  createdEmails: string[];
  lastAckedTitle: Map<string, number>;
  revokedAt: Map<string, number>;
  refusedAt: Map<string, number>;
  acceptedAfterRevocation: string[];
  /** One read and one write after another, every 100 ms: when each instance is back for both. */
  probes: Record<'a' | 'b', Outcome[]>;
}

const newLoadRecord = (): LoadRecord => ({
  outcomes: [], fetchErrors: [], createdEmails: [], lastAckedTitle: new Map(), revokedAt: new Map(), refusedAt: new Map(), acceptedAfterRevocation: [], probes: { a: [], b: [] },
});

/** Requests that record their outcome, and never take longer than the hang limit and some slack. */
function requestsRecordedIn(record: LoadRecord, accountKey: string) {
  const call = async (instance: Instance, what: string, pathAndQuery: string, init: RequestInit & { headers: Record<string, string> }): Promise<Outcome> => {
    const started = Date.now();
    try {
      const response = await fetch(instance.base + pathAndQuery, { ...init, signal: AbortSignal.timeout(HANG_LIMIT_MS + 5_000) });
      await response.arrayBuffer();
      const outcome: Outcome = { instance: instance.name, what, status: response.status, retryAfter: response.headers.get('retry-after'), ms: Date.now() - started, at: Date.now() };
      record.outcomes.push(outcome);
      return outcome;
    } catch (error) {
      const outcome: Outcome = { instance: instance.name, what, status: 0, retryAfter: null, ms: Date.now() - started, at: Date.now(), error: String(error) };
      record.fetchErrors.push(`${what} on ${instance.name}: ${String(error)}`);
      record.outcomes.push(outcome);
      return outcome;
    }
  };
  const rest = (instance: Instance, what: string, method: string, pathAndQuery: string, authorization: string, body?: unknown) =>
    call(instance, what, pathAndQuery, { method, headers: { Accept: V2, Authorization: authorization, ...(body ? { 'Content-Type': 'application/json' } : {}) }, body: body ? JSON.stringify(body) : undefined });
  const graphql = (instance: Instance, query: string) => call(instance, 'graphql', '/graphql', { method: 'POST', headers: { 'Content-Type': 'application/json', Authorization: accountKey }, body: JSON.stringify({ query }) });
  return { call, rest, graphql };
}

type Requests = ReturnType<typeof requestsRecordedIn>;

/** On both instances until `stopping`: writers, revokers checking on the other instance, readers of every kind, and probes. */
function startLoad([a, b]: [Instance, Instance], seeded: Seeded, record: LoadRecord, { call, rest, graphql }: Requests): Promise<void>[] {
  const { accountKey } = seeded;
  const writer = async (instance: Instance, own: { id: string }[], index: number) => {
    for (let seq = 1; !stopping; seq++) {
      if (seq % 2) {
        const email = `ha-new-${index}-${seq}-${name}@example.com`;
        const outcome = await rest(instance, 'create user', 'POST', '/users', accountKey, { user: { name: `New ${index}-${seq}`, email } });
        if (outcome.status === 201) record.createdEmails.push(email);
      } else {
        const user = own[seq % own.length]!;
        const outcome = await rest(instance, 'update user', 'PUT', `/users/${user.id}`, accountKey, { user: { job_title: `w${seq}` } });
        if (outcome.status === 200) record.lastAckedTitle.set(user.id, seq);
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
      record.revokedAt.set(user.token, Date.now());
      const check = await rest(other, 'revoked token', 'GET', '/users/me', `Bearer ${user.token}`);
      if (check.status === 401) record.refusedAt.set(user.token, Date.now());
      else if (check.status !== 503) record.acceptedAfterRevocation.push(`${user.id}: ${check.status}`);
      await sleep(150);
    }
  };
  const reader = async (instance: Instance, index: number) => {
    for (let seq = 0; !stopping; seq++) {
      const token = seeded.readerTokens[(index + seq) % seeded.readerTokens.length]!;
      if (seq % 4 === 0) await rest(instance, 'list users', 'GET', '/users?limit=5', accountKey);
      else if (seq % 4 === 1) await rest(instance, 'current user', 'GET', '/users/me', `Bearer ${token}`);
      else if (seq % 4 === 2) await graphql(instance, '{ users(first: 3) { totalCount } }');
      else await call(instance, 'scim list', '/scim/v2/Users?count=2', { method: 'GET', headers: { Accept: 'application/scim+json', Authorization: `Bearer ${seeded.scimToken}` } });
      await sleep(25);
    }
  };
  const prober = async (instance: Instance) => {
    for (let seq = 0; !stopping; seq++) {
      const outcome = seq % 2
        ? await rest(instance, 'probe write', 'PUT', `/users/${seeded.probeUser.id}`, accountKey, { user: { job_title: `probe ${instance.name} ${seq}` } })
        : await rest(instance, 'probe read', 'GET', `/users/${seeded.probeUser.id}`, accountKey);
      record.probes[instance.name].push(outcome);
      await sleep(100);
    }
  };
  const { writtenUsers, revocable } = seeded;
  const half = Math.ceil(revocable.length / 2);
  return [
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
}

/**
 * Kills the leader's postmaster, then asks Patroni's REST API every 100 ms until another node
 * answers /primary (promoted). Meanwhile, a WebSocket connection_init on each instance: acknowledged,
 * or refused as "try again later" (1013), never 4500; the close codes seen are returned.
 */
async function killLeaderUntilPromotion(accountKey: string) {
  const leaderBefore = await leaderIndex();
  const killedAt = Date.now();
  const killed = topology('failover').trim();
  expect(killed).toBe(`killed=node${leaderBefore}`);

  let promotedAt: number | undefined;
  let newLeader: number | undefined;
  const promotion = (async () => {
    while (promotedAt === undefined && Date.now() - killedAt < 60_000) {
      const leader = await leaderIndex();
      if (leader !== undefined && leader !== leaderBefore) [promotedAt, newLeader] = [Date.now(), leader];
      else await sleep(100);
    }
  })();
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
  return { killed, killedAt, promotedAt: promotedAt!, newLeader, gapSocketCloses };
}

type Failover = Awaited<ReturnType<typeof killLeaderUntilPromotion>>;

/** When the instance last failed a probe after the kill (the kill itself if it never did). */
function lastFailureOf(record: LoadRecord, instance: 'a' | 'b', killedAt: number): number {
  return Math.max(killedAt, ...record.probes[instance].filter((outcome) => outcome.at >= killedAt && outcome.status !== 200).map((outcome) => outcome.at));
}

/** The run's figures, logged before the final checks. */
function failoverFigures(record: LoadRecord, { killed, newLeader, promotedAt, killedAt, gapSocketCloses }: Failover, refusedBeforeKill: string[]) {
  const recoveredAt = (instance: 'a' | 'b') => record.probes[instance].find((outcome) => outcome.at > lastFailureOf(record, instance, killedAt) && outcome.status === 200)?.at;
  const { outcomes } = record;
  return {
    killed,
    newLeader: `node${newLeader}`,
    promotionMs: promotedAt - killedAt,
    recoveryAfterPromotionMs: { a: (recoveredAt('a') ?? Infinity) - promotedAt, b: (recoveredAt('b') ?? Infinity) - promotedAt },
    gapMs: { a: (recoveredAt('a') ?? Infinity) - killedAt, b: (recoveredAt('b') ?? Infinity) - killedAt },
    requests: outcomes.length,
    unavailable503: outcomes.filter((outcome) => outcome.status === 503).length,
    otherFailures: outcomes.filter((outcome) => outcome.status >= 500 && outcome.status !== 503).length,
    slowestMs: Math.max(...outcomes.map((outcome) => outcome.ms)),
    acknowledgedCreates: record.createdEmails.length,
    acknowledgedUpdates: record.lastAckedTitle.size,
    acknowledgedRevocations: record.revokedAt.size,
    refusedBeforeKill: refusedBeforeKill.length,
    gapSocketCloses: [...new Set(gapSocketCloses)],
    lostAcknowledgedWrites: 0,
    revivedCredentials: 0,
  };
}

/** Every acknowledged write is on the new primary (what is missing counts in the figures). */
async function expectAcknowledgedWritesKept(record: LoadRecord, revocable: Seeded['revocable'], figures: ReturnType<typeof failoverFigures>): Promise<void> {
  const { createdEmails, lastAckedTitle, revokedAt } = record;
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
}

/** Every credential refused before the kill (and every acknowledged revocation) must be refused on both instances: those that were not. */
async function revivedCredentials(record: LoadRecord, refusedBeforeKill: string[], rest: Requests['rest']): Promise<string[]> {
  const revived: string[] = [...record.acceptedAfterRevocation];
  for (const token of new Set([...refusedBeforeKill, ...record.revokedAt.keys()])) {
    for (const instance of instances) {
      const outcome = await rest(instance, 'revoked token after failover', 'GET', '/users/me', `Bearer ${token}`);
      if (outcome.status !== 401) revived.push(`${instance.name}: ${outcome.status}`);
    }
  }
  return revived;
}

/** Live updates: each instance's listener came back through the router and told its subscribers RESYNC, then hears again. */
async function expectLiveUpdatesResume(watchers: LiveTestClient[], a: Instance, { accountKey, watchedUser }: Seeded, rest: Requests['rest']): Promise<void> {
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
}

onCluster('failover of the Patroni leader under load', () => {
  test('nothing acknowledged is lost, no revocation undone, 503 with Retry-After in the gap, both instances back within 5 s of the promotion', async () => {
    const [a, b] = instances as [Instance, Instance];
    const seeded = await seedAccount(a);
    const { accountKey } = seeded;
    const record = newLoadRecord();
    stopping = false;
    const requests = requestsRecordedIn(record, accountKey);

    const watchers = await Promise.all(instances.map((instance) => LiveTestClient.connect(instance.app.httpServer, accountKey)));
    for (const watcher of watchers) watcher.subscribe('watched', 'subscription ($id: ID!) { userChanged(id: $id) { kind changedFields } }', { id: seeded.watchedUser.id });

    const workers = startLoad([a, b], seeded, record, requests);
    // At least 3 s of load, and revocations seen refused on the other instance (slower on a busy machine).
    const loadStarted = Date.now();
    while (Date.now() - loadStarted < 3_000 || (record.refusedAt.size < 4 && Date.now() - loadStarted < 60_000)) await sleep(100);
    expect(record.outcomes.filter((outcome) => outcome.status >= 500 || outcome.status === 0)).toEqual([]);
    const refusedBeforeKill = [...record.refusedAt.keys()];
    expect(refusedBeforeKill.length).toBeGreaterThan(3);

    const failover = await killLeaderUntilPromotion(accountKey);
    const { killedAt, promotedAt } = failover;

    // Load goes on until both instances have answered every probe for 3 s (or 20 s have passed).
    while (Date.now() - promotedAt < 20_000 && (Date.now() - lastFailureOf(record, 'a', killedAt) < 3_000 || Date.now() - lastFailureOf(record, 'b', killedAt) < 3_000)) await sleep(200);
    stopping = true;
    await Promise.all(workers);

    const figures = failoverFigures(record, failover, refusedBeforeKill);
    await expectAcknowledgedWritesKept(record, seeded.revocable, figures);
    const revived = await revivedCredentials(record, refusedBeforeKill, requests.rest);
    figures.revivedCredentials = revived.length;
    await expectLiveUpdatesResume(watchers, a, seeded, requests.rest);

    console.info(`ha failover figures: ${JSON.stringify(figures)}`);
    const { outcomes } = record;
    expect(revived).toEqual([]);
    expect(record.fetchErrors).toEqual([]);
    expect(outcomes.filter((outcome) => outcome.status >= 500 && outcome.status !== 503)).toEqual([]);
    expect(outcomes.filter((outcome) => outcome.status === 503 && outcome.retryAfter === null)).toEqual([]);
    expect(outcomes.filter((outcome) => outcome.ms > HANG_LIMIT_MS)).toEqual([]);
    expect(figures.unavailable503).toBeGreaterThan(0);
    expect(failover.gapSocketCloses.filter((code) => code !== 1013)).toEqual([]);
    expect(figures.recoveryAfterPromotionMs.a).toBeLessThanOrEqual(RECOVERY_LIMIT_MS);
    expect(figures.recoveryAfterPromotionMs.b).toBeLessThanOrEqual(RECOVERY_LIMIT_MS);
    expect([...a.errorLogs, ...b.errorLogs]).toEqual([]);
  }, 180_000);
});
