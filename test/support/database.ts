import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { allAppReadOnlyTables, allCommitHooks, allEntities } from '../../src/app/features.js';
import { grantAppRole, MIKRO_ORM_MIGRATIONS_TABLE } from '../../src/db/app-role.js';
import { openDatabase, type Database, type DatabaseOptions } from '../../src/db/database.js';
import { DATABASE_POOLERS, type DatabasePooler } from '../../src/db/pooler.js';
import { DEFAULT_TRANSACTION_POLICY } from '../../src/db/transaction.js';

/**
 * A database of the test file's own: with DATABASE_URL, a fresh database on that PostgreSQL
 * server (dropped afterwards); without it, an in-memory PGlite instance. Either way the real
 * migrations run, and parallel workers never share rows.
 *
 * Behind a transaction-pooling PgBouncer (DATABASE_POOLER=pgbouncer-transaction, DATABASE_URL
 * through it; scripts/topology.sh env): creating, migrating and dropping the database go straight to
 * the server (TEST_DATABASE_ADMIN_URL), and the database is given the read timeouts a deployment
 * gives its role (README, "Scaling out") before the app's first connection through PgBouncer.
 *
 * With TEST_DATABASE_APP_ROLE (an existing login role, CI's least-privilege phase), the database is
 * migrated as its owner and the app connects as that role after `accessctl db grant-app-role`'s
 * grants, as a deployment with DATABASE_OWNER_URL does (SPEC section 19).
 */
export type TestDatabaseOptions = Pick<DatabaseOptions, 'onQuery' | 'replicaUrls' | 'lockTimeoutMs' | 'transactionObserver' | 'poolTimeoutMs' | 'statementTimeoutMs' | 'replicaMaxLagMs' | 'replicaProbeIntervalMs' | 'recentWrites'> & {
  /** PostgreSQL only: the app connects to this local port (a proxy the test controls) instead of the server's. */
  throughPort?: number;
  /** Servers streaming from the suite's server (TEST_REPLICA_URL): the app reads the test database on each as a replica. */
  replicaServers?: string[];
};

export type TestDatabase = Database & {
  /** The test database's own URL (PostgreSQL only, straight to the server, as its owner), for a second connection to the same data. */
  url?: string;
  /** The least-privilege role the app connects as (TEST_DATABASE_APP_ROLE), if any. */
  appRole?: string;
};

export async function openTestDatabase(options: TestDatabaseOptions = {}): Promise<TestDatabase> {
  const serverUrl = process.env.DATABASE_URL;
  if (!serverUrl) {
    const database = await openDatabase({ databaseUrl: undefined, dataDir: undefined, entities: allEntities(), commitHooks: allCommitHooks(), onQuery: options.onQuery, lockTimeoutMs: options.lockTimeoutMs, transactionObserver: options.transactionObserver });
    await database.migrate();
    return database;
  }
  const adminUrl = process.env.TEST_DATABASE_ADMIN_URL ?? serverUrl;
  const pooler = testPooler();
  const name = `aag_test_${process.env.JEST_WORKER_ID ?? '0'}_${randomBytes(4).toString('hex')}`;
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  const appRole = process.env.TEST_DATABASE_APP_ROLE;
  try {
    await admin.query(`create database ${name}`);
    if (pooler !== 'none' || appRole) {
      const migrating = await openDatabase({ databaseUrl: url.toString(), dataDir: undefined, entities: allEntities(), poolMax: 1 });
      try {
        await migrating.migrate();
        if (appRole) await grantAppRole(migrating.em(), { role: appRole, readOnlyTables: allAppReadOnlyTables(), migrationTables: [MIKRO_ORM_MIGRATIONS_TABLE] });
      } finally {
        await migrating.close();
      }
    }
    if (pooler !== 'none') {
      // Integers from the test's own options: safe to inline (ALTER DATABASE takes no bind parameters).
      await admin.query(`alter database ${name} set lock_timeout = ${options.lockTimeoutMs ?? DEFAULT_TRANSACTION_POLICY.lockTimeoutMs}`);
      if (options.statementTimeoutMs) await admin.query(`alter database ${name} set statement_timeout = ${options.statementTimeoutMs}`);
    }
  } finally {
    await admin.end();
  }
  const appUrl = new URL(serverUrl);
  appUrl.pathname = `/${name}`;
  if (appRole) {
    appUrl.username = appRole;
    appUrl.password = process.env.TEST_DATABASE_APP_PASSWORD ?? '';
  }
  if (options.throughPort) appUrl.port = String(options.throughPort);
  const database = await openDatabase({
    databaseUrl: appUrl.toString(),
    pooler,
    // Live updates LISTEN on a direct connection: PgBouncer in transaction mode cannot carry it.
    listenUrl: pooler === 'none' ? undefined : url.toString(),
    replicaUrls: [...(options.replicaUrls ?? []), ...(options.replicaServers ?? []).map((server) => Object.assign(new URL(server), { pathname: `/${name}` }).toString())],
    replicaMaxLagMs: options.replicaMaxLagMs,
    replicaProbeIntervalMs: options.replicaProbeIntervalMs,
    recentWrites: options.recentWrites,
    dataDir: undefined,
    entities: allEntities(),
    commitHooks: allCommitHooks(),
    onQuery: options.onQuery,
    poolMax: 5,
    poolTimeoutMs: options.poolTimeoutMs,
    lockTimeoutMs: options.lockTimeoutMs,
    transactionObserver: options.transactionObserver,
    statementTimeoutMs: options.statementTimeoutMs,
  });
  if (pooler === 'none' && !appRole) await database.migrate();
  return {
    ...database,
    url: url.toString(),
    appRole,
    async close() {
      await database.close();
      const cleanup = new pg.Client({ connectionString: adminUrl });
      await cleanup.connect();
      try {
        await cleanup.query(`drop database if exists ${name} with (force)`);
      } finally {
        await cleanup.end();
      }
    },
  };
}

/** DATABASE_POOLER as the server reads it: what the suite's DATABASE_URL goes through. */
export function testPooler(): DatabasePooler {
  const pooler = process.env.DATABASE_POOLER ?? 'none';
  if (!(DATABASE_POOLERS as readonly string[]).includes(pooler)) throw new Error(`DATABASE_POOLER must be one of ${DATABASE_POOLERS.join(', ')}`);
  return pooler as DatabasePooler;
}
