import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { allEntities } from '../../src/app/features.js';
import { openDatabase, type Database } from '../../src/db/database.js';

/**
 * A database of the test file's own: with DATABASE_URL, a fresh database on that PostgreSQL
 * server (dropped afterwards); without it, an in-memory PGlite instance. Either way the real
 * migrations run, and parallel workers never share rows.
 */
export async function openTestDatabase(options: { onQuery?: (sql: string) => void; replicaUrls?: string[]; statementTimeoutMs?: number } = {}): Promise<Database> {
  const serverUrl = process.env.DATABASE_URL;
  if (!serverUrl) {
    const database = await openDatabase({ databaseUrl: undefined, dataDir: undefined, entities: allEntities(), onQuery: options.onQuery });
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
  const database = await openDatabase({ databaseUrl: url.toString(), replicaUrls: options.replicaUrls, dataDir: undefined, entities: allEntities(), onQuery: options.onQuery, poolMax: 5, statementTimeoutMs: options.statementTimeoutMs });
  await database.migrate();
  return {
    ...database,
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
