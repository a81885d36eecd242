import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import pg from 'pg';
import { ConnectionShare } from '../src/db/connection-share.js';
import { ServiceUnavailableError } from '../src/errors/domain-errors.js';
import { startHarness, type Harness, type TestAccount, type TestUser } from './support/harness.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('a request\'s share of the pool', () => {
  test('at most `max` works hold a place at once; the others run, in order, as places are given back', async () => {
    const share = new ConnectionShare(2, 1_000);
    let holding = 0;
    let most = 0;
    const order: number[] = [];
    const work = (n: number) => share.run(async () => {
      most = Math.max(most, ++holding);
      await sleep(5);
      order.push(n);
      holding--;
      return n;
    });
    expect(await Promise.all([1, 2, 3, 4, 5, 6].map(work))).toEqual([1, 2, 3, 4, 5, 6]);
    expect(most).toBe(2);
    expect(order.slice(2)).toEqual([3, 4, 5, 6]);
    // A failed work gives its place back too.
    await expect(share.run(() => Promise.reject(new Error('failed')))).rejects.toThrow('failed');
    expect(await Promise.all([7, 8].map(work))).toEqual([7, 8]);
  });

  test('a wait longer than the pool\'s timeout is answered as unavailable, not a hang', async () => {
    const share = new ConnectionShare(1, 50);
    let release = () => {};
    const holder = share.run(() => new Promise<void>((resolve) => (release = resolve)));
    await expect(share.run(async () => 'never')).rejects.toBeInstanceOf(ServiceUnavailableError);
    release();
    await holder;
    expect(await share.run(async () => 'after')).toBe('after');
  });
});

describe('one caller\'s many parallel root fields cannot starve another caller', () => {
  let h: Harness;
  let account: TestAccount;
  let heavy: TestUser;
  let other: TestUser;
  let pool: pg.Pool;
  let checkedOut = 0;
  let mostCheckedOut = 0;
  beforeAll(async () => {
    h = await startHarness();
    account = await h.createAccount();
    heavy = await h.createUser(account);
    other = await h.createUser(account);
    pool = await (h.database.orm.em.getConnection() as unknown as { getNativeClient(): Promise<pg.Pool> }).getNativeClient();
    pool.on('acquire', () => (mostCheckedOut = Math.max(mostCheckedOut, ++checkedOut)));
    pool.on('release', () => checkedOut--);
  });
  afterAll(async () => {
    await h?.close();
  });

  /**
   * Sessions of the test's database waiting for a lock (the heavy request's statements, held up
   * below), seen from a session outside any transaction: inside one, pg_stat_activity is a snapshot.
   */
  async function waitingOnLocks(observer: pg.Client): Promise<number> {
    const { rows } = await observer.query<{ n: string }>("select count(*) as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'");
    return Number(rows[0]!.n);
  }

  test('20 parallel searches hold 2 connections; the other caller\'s `{ viewer { id } }` is answered meanwhile', async () => {
    const admin = new pg.Client({ connectionString: h.database.url });
    const observer = new pg.Client({ connectionString: h.database.url });
    await admin.connect();
    await observer.connect();
    try {
      // Every search of the heavy request waits behind this lock, holding whatever connection it took.
      await admin.query('begin');
      await admin.query('lock table subscribables in access exclusive mode');
      mostCheckedOut = checkedOut;
      const searches = Array.from({ length: 20 }, (_, i) => `s${i}: subscribables(query: "incident", first: 10) { totalCount }`).join(' ');
      const heavyRequest = h.graphql(`{ ${searches} }`, {}, heavy.key);
      for (let tries = 0; (await waitingOnLocks(observer)) < 2 && tries < 200; tries++) await sleep(10);
      await sleep(300);
      // The pool holds 5: without a share the searches would take them all and the viewer would wait for the lock.
      expect(await waitingOnLocks(observer)).toBe(2);
      expect(mostCheckedOut).toBe(2);

      const started = Date.now();
      const viewer = await Promise.race([h.graphql('{ viewer { id } }', {}, other.key), sleep(1_500).then(() => 'starved' as const)]);
      expect(viewer).not.toBe('starved');
      expect(viewer).toMatchObject({ status: 200, data: { viewer: { id: other.id } } });
      expect(Date.now() - started).toBeLessThan(1_500);

      await admin.query('commit');
      const answered = await heavyRequest;
      expect(answered.errors).toBeUndefined();
      expect(Object.keys(answered.data ?? {})).toHaveLength(20);
    } finally {
      await admin.query('rollback').catch(() => {});
      await admin.end();
      await observer.end();
    }
  });

  test('GRAPHQL_MAX_DB_CONNECTIONS_PER_REQUEST sets the share; writes still run, one transaction holding one place', async () => {
    const single = await startHarness({ settings: { graphqlMaxDbConnectionsPerRequest: 1 } });
    try {
      const singleAccount = await single.createAccount();
      const singlePool = await (single.database.orm.em.getConnection() as unknown as { getNativeClient(): Promise<pg.Pool> }).getNativeClient();
      let now = 0;
      let most = 0;
      singlePool.on('acquire', () => (most = Math.max(most, ++now)));
      singlePool.on('release', () => now--);
      const reads = await single.graphql(`{ ${Array.from({ length: 10 }, (_, i) => `u${i}: users(first: 5) { totalCount nodes { id } }`).join(' ')} }`, {}, singleAccount.key);
      expect(reads.errors).toBeUndefined();
      expect(most).toBe(1);
      const created = await single.graphql('mutation { createUser(input: { name: "Shared Pool", email: "shared-pool@example.com" }) { user { id name } } }', {}, singleAccount.key);
      expect(created.errors).toBeUndefined();
      expect(created.data?.createUser.user.name).toBe('Shared Pool');
      expect(most).toBe(1);
    } finally {
      await single.close();
    }
  });
});
