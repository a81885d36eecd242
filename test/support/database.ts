import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { allCommitHooks, allEntities } from '../../src/app/features.js';
import { openDatabase, type Database, type DatabaseOptions } from '../../src/db/database.js';

/**
 * A database of the test file's own: with DATABASE_URL, a fresh database on that PostgreSQL
 * server (dropped afterwards); without it, an in-memory PGlite instance. Either way the real
 * migrations run, and parallel workers never share rows.
 */
export type TestDatabaseOptions = Pick<DatabaseOptions, 'onQuery' | 'replicaUrls' | 'lockTimeoutMs' | 'transactionObserver' | 'poolTimeoutMs' | 'statementTimeoutMs'> & {
  /** PostgreSQL only: the app connects to this local port (a proxy the test controls) instead of the server's. */
  throughPort?: number;
};

export type TestDatabase = Database & {
  /** The test database's own URL (PostgreSQL only), for a second connection to the same data. */
  url?: string;
};

export async function openTestDatabase(options: TestDatabaseOptions = {}): Promise<TestDatabase> {
  const serverUrl = process.env.DATABASE_URL;
  if (!serverUrl) {
    const database = await openDatabase({ databaseUrl: undefined, dataDir: undefined, entities: allEntities(), commitHooks: allCommitHooks(), onQuery: options.onQuery, lockTimeoutMs: options.lockTimeoutMs, transactionObserver: options.transactionObserver });
    await database.migrate();
    return database;
  }
  const name = `aag_test_${process.env.JEST_WORKER_ID ?? '0'}_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  try {
    await admin.query(`create database ${name}`);
  } finally {
    await admin.end();
  }
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  const appUrl = new URL(url);
  if (options.throughPort) appUrl.port = String(options.throughPort);
  const database = await openDatabase({
    databaseUrl: appUrl.toString(),
    replicaUrls: options.replicaUrls,
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
  await database.migrate();
  return {
    ...database,
    url: url.toString(),
    async close() {
      await database.close();
      const cleanup = new pg.Client({ connectionString: serverUrl });
      await cleanup.connect();
      try {
        await cleanup.query(`drop database if exists ${name} with (force)`);
      } finally {
        await cleanup.end();
      }
    },
  };
}
