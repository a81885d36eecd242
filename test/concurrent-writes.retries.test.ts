import type { EntityManager } from '@mikro-orm/sql';
import { Account } from '../src/accounts/account.entity.js';
import { DEFAULT_TRANSACTION_POLICY, TransactionRunner } from '../src/db/transaction.js';
import { ServiceUnavailableError } from '../src/errors/domain-errors.js';
import { startHarness, type Credential, type Harness } from './support/harness.js';
import { onPostgres, postgresOnly, TransactionFigures, useHarnessReportingTo, userFixtures } from './support/concurrent-writes.js';

// Deadlocks, serialization failures and lock timeouts on the write path, and the transaction helper
// that retries them. Writes racing each other through the API: concurrent-writes.test.ts.

let h: Harness;
const figures = new TransactionFigures();
useHarnessReportingTo(figures, (started) => (h = started));
const { createUsers, jobTitles } = userFixtures(() => h);

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
