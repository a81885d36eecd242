import type { MikroORM } from '@mikro-orm/core';
import type { Pool } from 'pg';
import { dbPoolAcquireDuration, reportPoolStats } from '../observability/metrics.js';

/**
 * Reports the PostgreSQL pool behind MikroORM (its `pg` Pool, reached through the connection's
 * native client): connection counts on every scrape, and the wait of every `connect()` (how the
 * query builder checks a connection out). The embedded database has no pool.
 */
export async function observePool(orm: MikroORM, max: number): Promise<void> {
  const connection = orm.em.getConnection() as unknown as { getNativeClient(): Promise<Pool> };
  const pool = await connection.getNativeClient();
  const connect = pool.connect.bind(pool) as () => Promise<unknown>;
  (pool as { connect: unknown }).connect = (...args: unknown[]) => {
    if (args.length) return (connect as (...rest: unknown[]) => unknown)(...args);
    const started = process.hrtime.bigint();
    return connect().finally(() => dbPoolAcquireDuration.observe(Number(process.hrtime.bigint() - started) / 1e9));
  };
  reportPoolStats(() => (pool.ending ? undefined : { max, total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount }));
}
