import type { EntityManager } from '@mikro-orm/sql';
import { Account } from '../src/accounts/account.entity.js';
import { issueDelegation } from '../src/oauth-delegations/oauth-delegation.service.js';
import { DEFAULT_TRANSACTION_POLICY, TransactionRunner, type TransactionEvent, type TransactionObserver } from '../src/db/transaction.js';
import { ServiceUnavailableError } from '../src/errors/domain-errors.js';
import { startHarness, type Credential, type Harness, type TestAccount } from './support/harness.js';
import { subscriptionFixtures } from './support/subscriptions.js';

// Concurrency needs more than one connection: on embedded PGlite (one connection, one
// transaction at a time) locks are never contended, so the tests that need a second session
// holding a lock report as skipped there. CI sets DATABASE_URL and runs them all.
const onPostgres = Boolean(process.env.DATABASE_URL);
const postgresOnly = onPostgres ? test : test.skip;
if (!onPostgres) console.log('concurrent-writes: DATABASE_URL is unset (embedded PGlite has a single connection): the real deadlock and lock_timeout tests are skipped');

/** Counts what the transaction helper reports, per label. */
class TransactionFigures implements TransactionObserver {
  readonly retries: (TransactionEvent & { delayMs: number })[] = [];
  readonly givenUp: (TransactionEvent & { reason: string })[] = [];
  retrying(event: TransactionEvent & { delayMs: number }) {
    this.retries.push(event);
  }
  gaveUp(event: TransactionEvent & { reason: string }) {
    this.givenUp.push(event);
  }
  reset() {
    this.retries.length = 0;
    this.givenUp.length = 0;
  }
}

/** A small seeded generator (mulberry32), so every run shuffles the same way. */
function seeded(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function shuffled<T>(items: readonly T[], random: () => number): T[] {
  const copy = [...items];
  for (let i = copy.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [copy[i], copy[j]] = [copy[j]!, copy[i]!];
  }
  return copy;
}

/** Runs the tasks with at most `clients` in flight at once, like that many concurrent clients. */
async function withClients<T>(clients: number, tasks: (() => Promise<T>)[]): Promise<T[]> {
  const results: T[] = new Array(tasks.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (next < tasks.length) {
        const index = next++;
        results[index] = await tasks[index]!();
      }
    }),
  );
  return results;
}

function tally(values: readonly (number | string)[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const value of values) counts[value] = (counts[value] ?? 0) + 1;
  return counts;
}

let h: Harness;
const figures = new TransactionFigures();
const fixtures = subscriptionFixtures(() => h);

// Starting embedded PGlite (WASM) can take long on a busy machine.
beforeAll(async () => {
  h = await startHarness({ transactionObserver: figures });
}, 120_000);
afterAll(async () => {
  await h?.close();
});
beforeEach(() => figures.reset());

async function createUsers(account: TestAccount, count: number) {
  const users = [];
  for (let i = 0; i < count; i++) users.push(await h.createUser(account));
  return users;
}

async function jobTitles(ids: readonly string[]): Promise<Map<string, string | null>> {
  const rows = await h.database.em().execute<{ id: string; job_title: string | null }[]>('select id, job_title from users where id in (?)', [[...ids]]);
  return new Map(rows.map((row) => [row.id, row.job_title]));
}

test('overlapping bulk updates in shuffled orders from many concurrent clients: no 5xx, and every row carries one single request\'s value', async () => {
  const USERS = 40;
  const CLIENTS = 8;
  const REQUESTS = 64;
  const random = seeded(14);
  const account = await h.createAccount();
  const users = await createUsers(account, USERS);
  const ids = users.map((user) => user.id);

  const tags = Array.from({ length: REQUESTS }, (_, index) => `storm-${index}`);
  const responses = await withClients(
    CLIENTS,
    tags.map((tag) => {
      const order = shuffled(ids, random);
      return () => h.rest('put', '/users', { key: account.key, body: { users: order.map((id) => ({ id, type: 'user', job_title: tag })) } });
    }),
  );

  const statuses = responses.map((response) => response.status);
  console.log(
    `bulk-update storm: ${REQUESTS} requests x ${USERS} users from ${CLIENTS} concurrent clients; statuses ${JSON.stringify(tally(statuses))}; ` +
      `retries observed ${figures.retries.length} ${JSON.stringify(tally(figures.retries.map((event) => event.sqlState)))}; gave up ${figures.givenUp.length}`,
  );
  expect(statuses.filter((status) => status >= 500)).toEqual([]);
  expect(statuses.every((status) => status === 200)).toBe(true);
  // Each answer shows its own request applied to every user it named...
  responses.forEach((response, index) => {
    expect(new Set(response.body.users.map((user: { job_title: string }) => user.job_title))).toEqual(new Set([tags[index]]));
  });
  // ...and after the storm the whole set carries the value of one single request.
  const finalTitles = new Set((await jobTitles(ids)).values());
  expect(finalTitles.size).toBe(1);
  expect(tags).toContain([...finalTitles][0]);
  expect(figures.givenUp).toEqual([]);
}, 90_000);

test('deletes racing bulk updates, subscription changes, sign-outs and key regenerations: 2xx or documented 4xx, and nothing of a deleted user survives', async () => {
  const USERS = 24;
  const GROUP = 4;
  const random = seeded(1414);
  const account = await h.createAccount();
  const users = await createUsers(account, USERS);
  const ids = users.map((user) => user.id);
  await fixtures.register(account, 'incident', 'PRACE01');
  await fixtures.register(account, 'business_service', 'PRACE02');
  await fixtures.register(account, 'incident', 'PRACE03');
  for (const [index, user] of users.entries()) {
    await h.database.transactions.run(h.database.em(), (tx) => issueDelegation(tx, { userId: user.id, type: 'web', scopes: 'users.read' }));
    await h.database.transactions.run(h.database.em(), (tx) => issueDelegation(tx, { userId: user.id, type: 'mobile', scopes: 'users.read' }));
    const subscribed = await h.rest('post', `/users/${user.id}/notification_subscriptions`, {
      key: account.key,
      body: { subscribables: [{ subscribable_type: 'incident', subscribable_id: 'PRACE01' }, { subscribable_type: 'business_service', subscribable_id: 'PRACE02' }] },
    });
    expect(subscribed.status).toBe(200);
    // Half the users have a calendar key already; the others get one at first read, racing their deletion.
    if (index % 2 === 0) expect((await h.rest('post', `/users/${user.id}/regenerate_private_url_key`, { key: account.key })).status).toBe(200);
  }

  const doomed = new Set(shuffled(ids, random).slice(0, USERS / 2));
  const groups = Array.from({ length: USERS / GROUP }, (_, index) => ids.slice(index * GROUP, (index + 1) * GROUP));
  type Op = { kind: string; allowed: number[]; tag?: string; group?: number; run: () => Promise<{ status: number }> };
  const ops: Op[] = [];
  for (const id of ids) {
    if (doomed.has(id)) ops.push({ kind: 'delete', allowed: [204], run: () => h.rest('delete', `/users/${id}`, { key: account.key }) });
    const items = shuffled(
      [
        { subscribable_type: 'incident', subscribable_id: 'PRACE01' },
        { subscribable_type: 'business_service', subscribable_id: 'PRACE02' },
        { subscribable_type: 'incident', subscribable_id: 'PRACE03' },
      ],
      random,
    );
    ops.push({ kind: 'subscribe', allowed: [200, 404], run: () => h.rest('post', `/users/${id}/notification_subscriptions`, { key: account.key, body: { subscribables: items } }) });
    ops.push({ kind: 'unsubscribe', allowed: [200, 404], run: () => h.rest('post', `/users/${id}/notification_subscriptions/unsubscribe`, { key: account.key, body: { subscribables: items.slice(0, 2) } }) });
    ops.push({ kind: 'regenerate', allowed: [200, 404], run: () => h.rest('post', `/users/${id}/regenerate_private_url_key`, { key: account.key }) });
    ops.push({ kind: 'sign-out', allowed: [200, 400], run: () => h.rest('delete', `/oauth_delegations?user_id=${id}&type=mobile,web`, { key: account.key }) });
    ops.push({ kind: 'show with calendar', allowed: [200, 404], run: () => h.rest('get', `/users/${id}?include[]=calendar_urls`, { key: account.key }) });
  }
  groups.forEach((group, index) => {
    for (const round of [0, 1]) {
      const tag = `race-${index}-${round}`;
      const order = shuffled(group, random);
      ops.push({ kind: 'bulk update', allowed: [200, 400], tag, group: index, run: () => h.rest('put', '/users', { key: account.key, body: { users: order.map((id) => ({ id, type: 'user', job_title: tag })) } }) });
    }
  });

  const plan = shuffled(ops, random);
  const responses = await withClients(8, plan.map((op) => op.run));
  const statuses = responses.map((response) => response.status);
  const byKind: Record<string, Record<string, number>> = {};
  plan.forEach((op, index) => {
    byKind[op.kind] ??= {};
    byKind[op.kind]![statuses[index]!] = (byKind[op.kind]![statuses[index]!] ?? 0) + 1;
  });
  console.log(`delete race: ${plan.length} requests from 8 concurrent clients, ${doomed.size} users deleted; statuses by kind ${JSON.stringify(byKind)}; retries observed ${figures.retries.length}; gave up ${figures.givenUp.length}`);

  expect(statuses.filter((status) => status >= 500)).toEqual([]);
  const unexpected = plan.flatMap((op, index) => (op.allowed.includes(statuses[index]!) ? [] : [`${op.kind} -> ${statuses[index]}`]));
  expect(unexpected).toEqual([]);

  // Nothing of a deleted user remains usable.
  const em = h.database.em();
  const doomedIds = [...doomed];
  const leftovers = async (sql: string) => (await em.execute<{ user_id: string }[]>(sql, [doomedIds])).map((row) => row.user_id);
  expect(await leftovers('select id as user_id from users where id in (?) and deleted_at is null')).toEqual([]);
  expect(await leftovers('select user_id from api_keys where user_id in (?) and revoked_at is null')).toEqual([]);
  expect(await leftovers("select user_id from oauth_delegations where user_id in (?) and status = 'issued'")).toEqual([]);
  expect(await leftovers('select user_id from calendar_feed_keys where user_id in (?)')).toEqual([]);
  expect(await leftovers('select user_id from notification_subscriptions where user_id in (?)')).toEqual([]);
  // Survivors keep their keys and are still whole.
  const survivors = ids.filter((id) => !doomed.has(id));
  expect(await em.execute('select id from users where id in (?) and deleted_at is null', [survivors])).toHaveLength(survivors.length);

  // Bulk updates stayed all-or-nothing: each group carries one single value, that of a request that succeeded (or none).
  const titles = await jobTitles(ids);
  groups.forEach((group, index) => {
    const succeeded = plan.filter((op, at) => op.group === index && statuses[at] === 200).map((op) => op.tag!);
    const values = new Set(group.map((id) => titles.get(id) ?? null));
    expect(values.size).toBe(1);
    expect([...succeeded, ...(succeeded.length ? [] : [null])]).toContain([...values][0]);
  });
}, 90_000);

/** Waits (bounded) until some session of this test's database is blocked on a lock. */
async function untilSomeoneWaitsForALock(): Promise<void> {
  for (let poll = 0; poll < 100; poll++) {
    const [row] = await h.database.em().execute<{ waiting: number | string }[]>(
      "select count(*) as waiting from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'",
    );
    if (Number(row!.waiting) > 0) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error('no session ever waited for a lock');
}

postgresOnly('a calendar key created at first read never outlives a deletion in progress', async () => {
  const account = await h.createAccount();
  const user = await h.createUser(account);
  const deletion = h.database.em();
  await deletion.begin();
  let reading: Promise<{ status: number }> | undefined;
  try {
    // What the deleting transaction does to the user's row and key, held open.
    await deletion.execute('update users set deleted_at = now() where id = ?', [user.id]);
    await deletion.execute('delete from calendar_feed_keys where user_id = ?', [user.id]);
    reading = h.rest('get', `/users/${user.id}?include[]=calendar_urls`, { key: account.key });
    await untilSomeoneWaitsForALock();
    await deletion.commit();
  } catch (error) {
    await deletion.rollback();
    throw error;
  }
  expect((await reading).status).toBe(404);
  expect(await h.database.em().execute('select user_id from calendar_feed_keys where user_id = ?', [user.id])).toEqual([]);
});

describe('deadlocks and serialization failures are retried; exhausted retries answer 503 busy', () => {
  // A test-only trigger feeds the real write path synthetic failures: `deadlock-twice` fails the
  // first two runs of the unit of work (the counter is a sequence, which rollbacks do not undo),
  // `deadlock-always` fails every run, `serialization-once` fails the first run with 40001.
  beforeAll(async () => {
    const em = h.database.em();
    await em.execute('create sequence test_injected_deadlocks');
    await em.execute('create sequence test_injected_serialization_failures');
    await em.execute(`create function test_inject_deadlock() returns trigger language plpgsql as $$
      begin
        if new.job_title = 'deadlock-always' or (new.job_title = 'deadlock-twice' and nextval('test_injected_deadlocks') <= 2) then
          raise exception 'injected by the test' using errcode = '40P01';
        end if;
        if new.job_title = 'serialization-once' and nextval('test_injected_serialization_failures') <= 1 then
          raise exception 'injected by the test' using errcode = '40001';
        end if;
        return new;
      end $$`);
    await em.execute('create trigger test_inject_deadlock before update on users for each row execute function test_inject_deadlock()');
  });

  test('a unit of work that deadlocks twice is rolled back, re-run and answers 200', async () => {
    const account = await h.createAccount();
    const user = await h.createUser(account);
    const response = await h.rest('put', `/users/${user.id}`, { key: account.key, body: { user: { job_title: 'deadlock-twice', name: 'Renamed in the third run' } } });
    expect(response.status).toBe(200);
    expect(response.body.user.job_title).toBe('deadlock-twice');
    expect(figures.retries.map((event) => [event.label, event.attempt, event.sqlState])).toEqual([
      ['users.update', 1, '40P01'],
      ['users.update', 2, '40P01'],
    ]);
    expect((await jobTitles([user.id])).get(user.id)).toBe('deadlock-twice');
  });

  test('a serialization failure is retried too', async () => {
    const account = await h.createAccount();
    const user = await h.createUser(account);
    const response = await h.rest('put', `/users/${user.id}`, { key: account.key, body: { user: { job_title: 'serialization-once' } } });
    expect(response.status).toBe(200);
    expect(figures.retries.map((event) => event.sqlState)).toEqual(['40001']);
  });

  test('exhausted retries: REST 503 with Retry-After and GraphQL SERVICE_UNAVAILABLE, logged at warn with the request id, nothing written', async () => {
    const account = await h.createAccount();
    const [first, second] = await createUsers(account, 2);
    const response = await h.rest('put', '/users', {
      key: account.key,
      body: { users: [{ id: second!.id, type: 'user', job_title: 'would be half-written' }, { id: first!.id, type: 'user', job_title: 'deadlock-always' }] },
    });
    expect(response.status).toBe(503);
    const requestId = response.headers['x-request-id'];
    expect(response.headers['retry-after']).toBe('1');
    expect(response.body.error.code).toBe(2000);
    expect(response.body.error.errors.join(' ')).toMatch(/busy/);
    expect(figures.retries).toHaveLength(DEFAULT_TRANSACTION_POLICY.maxAttempts - 1);
    expect(figures.givenUp).toEqual([expect.objectContaining({ label: 'users.updateMany', attempt: DEFAULT_TRANSACTION_POLICY.maxAttempts, sqlState: '40P01', reason: 'retries_exhausted' })]);
    expect([...(await jobTitles([first!.id, second!.id])).values()]).toEqual([null, null]);

    const lines = h.logs.map((line) => JSON.parse(line)).filter((line) => line.requestId === requestId);
    expect(lines.filter((line) => line.level >= 50)).toEqual([]);
    expect(lines.filter((line) => line.level === 40 && line.msg === 'write transaction gave up: answered busy')).toHaveLength(1);

    const graphql = await h.graphql(`mutation ($input: UpdateUserInput!) { updateUser(input: $input) { user { id } } }`, { input: { id: first!.id, jobTitle: 'deadlock-always' } }, account.key);
    expect(graphql.errors?.[0]?.extensions?.code).toBe('SERVICE_UNAVAILABLE');
    expect(graphql.data).toBeNull();
  });

  postgresOnly('two transactions taking two rows in opposite orders: PostgreSQL picks a victim, the helper re-runs it, both succeed', async () => {
    const account = await h.createAccount();
    const [a, b] = await createUsers(account, 2);
    let arrived = 0;
    let release!: () => void;
    const bothHoldTheirFirstRow = new Promise<void>((resolve) => (release = resolve));
    const lockInOrder = (first: string, second: string, tag: string) => async (tx: EntityManager) => {
      await tx.execute('select id from users where id = ? for update', [first]);
      if (++arrived === 2) release();
      await bothHoldTheirFirstRow;
      await tx.execute('select id from users where id = ? for update', [second]);
      await tx.execute('update users set job_title = ? where id in (?)', [tag, [first, second]]);
      return tag;
    };
    const results = await Promise.all([
      h.database.transactions.run(h.database.em(), lockInOrder(a!.id, b!.id, 'a-then-b'), 'test.aThenB'),
      h.database.transactions.run(h.database.em(), lockInOrder(b!.id, a!.id, 'b-then-a'), 'test.bThenA'),
    ]);
    expect(results).toEqual(['a-then-b', 'b-then-a']);
    expect(figures.retries).toHaveLength(1);
    expect(figures.retries[0]!.sqlState).toBe('40P01');
    const titles = new Set((await jobTitles([a!.id, b!.id])).values());
    expect(titles.size).toBe(1);
  });
});

describe('the transaction helper', () => {
  const failing = (code: string) => Object.assign(new Error(`synthetic ${code}`), { code });

  test('re-runs the unit of work on a fresh, empty identity map after a synthetic 40P01', async () => {
    const runner = new TransactionRunner({ ...DEFAULT_TRANSACTION_POLICY, baseBackoffMs: 1 }, [figures]);
    const account = await h.createAccount();
    const seen: number[] = [];
    const result = await runner.run(h.database.em(), async (tx) => {
      seen.push(tx.getUnitOfWork().getIdentityMap().keys().length);
      const [row] = await tx.execute<{ lock_timeout: string }[]>('show lock_timeout');
      await tx.findOneOrFail(Account, { id: account.id });
      if (seen.length < 3) throw failing('40P01');
      return row!.lock_timeout;
    }, 'test.synthetic');
    expect(seen).toEqual([0, 0, 0]);
    expect(result).toBe(`${DEFAULT_TRANSACTION_POLICY.lockTimeoutMs / 1000}s`);
    expect(figures.retries.map((event) => event.attempt)).toEqual([1, 2]);
  });

  test('gives up after maxAttempts with ServiceUnavailableError; other errors pass through after one run', async () => {
    const runner = new TransactionRunner({ ...DEFAULT_TRANSACTION_POLICY, maxAttempts: 3, baseBackoffMs: 1 }, [figures]);
    let runs = 0;
    await expect(runner.run(h.database.em(), async () => {
      runs++;
      throw failing('40001');
    })).rejects.toBeInstanceOf(ServiceUnavailableError);
    expect(runs).toBe(3);
    expect(figures.givenUp).toEqual([expect.objectContaining({ attempt: 3, sqlState: '40001', reason: 'retries_exhausted' })]);

    runs = 0;
    const unique = failing('23505');
    await expect(runner.run(h.database.em(), async () => {
      runs++;
      throw unique;
    })).rejects.toBe(unique);
    expect(runs).toBe(1);
  });

  test('inside a transaction it joins it: only the outermost run retries', async () => {
    const runner = new TransactionRunner({ ...DEFAULT_TRANSACTION_POLICY, baseBackoffMs: 1 }, [figures]);
    let inner = 0;
    let outer = 0;
    const result = await runner.run(h.database.em(), async (tx) => {
      outer++;
      return runner.run(tx, async () => {
        inner++;
        if (inner === 1) throw failing('40P01');
        return 'done';
      });
    });
    expect(result).toBe('done');
    expect([outer, inner]).toEqual([2, 2]);
    expect(figures.retries).toHaveLength(1);
  });
});

describe('lock_timeout', () => {
  let slow: Harness;
  const lockFigures = new TransactionFigures();
  const LOCK_TIMEOUT_MS = 300;

  beforeAll(async () => {
    if (onPostgres) slow = await startHarness({ lockTimeoutMs: LOCK_TIMEOUT_MS, transactionObserver: lockFigures });
  });
  afterAll(async () => {
    await slow?.close();
  });

  postgresOnly('every pooled connection carries the configured lock_timeout (no SET LOCAL per write transaction)', async () => {
    const [read] = await slow.database.em().execute<{ lock_timeout: string }[]>('show lock_timeout');
    expect(read!.lock_timeout).toBe(`${LOCK_TIMEOUT_MS}ms`);
    const [inWrite] = await slow.database.transactions.run(slow.database.em(), (tx) => tx.execute<{ lock_timeout: string }[]>('show lock_timeout'), 'test.show');
    expect(inWrite!.lock_timeout).toBe(`${LOCK_TIMEOUT_MS}ms`);
  });

  postgresOnly('a write blocked behind a held row lock ends as 503 busy on both faces, then succeeds once the lock is gone', async () => {
    const account = await slow.createAccount();
    const user = await slow.createUser(account);
    const holder = slow.database.em();
    await holder.begin();
    try {
      await holder.execute('select id from users where id = ? for update', [user.id]);
      const key: Credential = account.key;
      const update = await slow.rest('put', `/users/${user.id}`, { key, body: { user: { job_title: 'blocked' } } });
      expect(update.status).toBe(503);
      expect(update.headers['retry-after']).toBe('1');
      expect(update.body.error.errors.join(' ')).toContain(`${LOCK_TIMEOUT_MS} ms`);
      const remove = await slow.rest('delete', `/users/${user.id}`, { key });
      expect(remove.status).toBe(503);
      const subscribe = await slow.graphql(
        `mutation ($input: CreateNotificationSubscriptionsInput!) { createNotificationSubscriptions(input: $input) { subscriptions { result } } }`,
        { input: { userId: user.id, subscribables: [{ subscribableType: 'INCIDENT', subscribableId: 'PNONE01' }] } },
        key,
      );
      expect(subscribe.errors?.[0]?.extensions?.code).toBe('SERVICE_UNAVAILABLE');
      expect(lockFigures.givenUp.map((event) => [event.label, event.sqlState, event.reason])).toEqual([
        ['users.update', '55P03', 'lock_timeout'],
        ['users.delete', '55P03', 'lock_timeout'],
        ['notificationSubscriptions.subscribe', '55P03', 'lock_timeout'],
      ]);
    } finally {
      await holder.rollback();
    }
    const after = await slow.rest('put', `/users/${user.id}`, { key: account.key, body: { user: { job_title: 'unblocked' } } });
    expect(after.status).toBe(200);
    expect(after.body.user.job_title).toBe('unblocked');
  });
});
