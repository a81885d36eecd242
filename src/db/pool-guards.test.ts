import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { openTestDatabase, type TestDatabase } from '../../test/support/database.js';
import { isDatabaseUnavailable } from './database-errors.js';

const postgresOnly = process.env.DATABASE_URL ? describe : describe.skip;

postgresOnly('a connection that dies inside a transaction (the primary killed mid-write)', () => {
  let database: TestDatabase;
  let admin: pg.Client;
  beforeAll(async () => {
    database = await openTestDatabase({ poolTimeoutMs: 1_000 });
    admin = new pg.Client({ connectionString: database.url });
    await admin.connect();
  });
  afterAll(async () => {
    await admin?.end();
    await database?.close();
  });

  test('is answered as unavailable and leaves the pool, which serves the next request on a new connection', async () => {
    const pool = (await (database.orm.em.getConnection('write') as unknown as { getNativeClient(): Promise<pg.Pool> }).getNativeClient());
    for (let round = 0; round < 3; round++) {
      const failed = database.transactions
        .run(database.em(), async (tx) => {
          const [{ pid }] = await tx.execute<{ pid: number }[]>('select pg_backend_pid() as pid');
          await admin.query('select pg_terminate_backend($1)', [pid]);
          await tx.execute('select 1');
        })
        .then(
          () => 'committed',
          (error: unknown) => (isDatabaseUnavailable(error) ? 'unavailable' : `other: ${String(error)}`),
        );
      expect(await failed).toBe('unavailable');
      // Without the guard, Kysely never releases a transaction's connection whose ROLLBACK failed too: each cut shrinks the pool by one.
      // (The connection's end arrives just after the statement's error.)
      for (let waited = 0; waited < 1_000 && pool.totalCount > pool.idleCount; waited += 20) await sleep(20);
      expect(pool.totalCount - pool.idleCount).toBe(0);
      await expect(database.ping()).resolves.toBeUndefined();
    }
  });
});
