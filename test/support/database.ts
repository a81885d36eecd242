import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { PgliteConnection } from '@mikro-orm/pglite';
import pg from 'pg';
import { allAppReadOnlyTables, allCommitHooks, allEntities } from '../../src/app/features.js';
import { grantAppRole, MIKRO_ORM_MIGRATIONS_TABLE } from '../../src/db/app-role.js';
import { openDatabase, type Database, type DatabaseOptions } from '../../src/db/database.js';
import { DATABASE_POOLERS, type DatabasePooler } from '../../src/db/pooler.js';
import { DEFAULT_TRANSACTION_POLICY } from '../../src/db/transaction.js';

/**
 * A database of the test file's own: with DATABASE_URL, a fresh database on that PostgreSQL
 * server (dropped afterwards); without it, an in-memory PGlite instance. Either way parallel
 * workers never share rows, and the schema is the real migrations' result: they run once into a
 * template (see `migratedTemplateName` and `migratedEmbeddedImage`) that each file's database is
 * copied from, and `migrate()` then finds nothing left to apply.
 *
 * Behind a transaction-pooling PgBouncer (DATABASE_POOLER=pgbouncer-transaction, DATABASE_URL
 * through it; scripts/topology.sh env): creating, migrating and dropping the database go straight to
 * the server (TEST_DATABASE_ADMIN_URL), and the database is given the read timeouts a deployment
 * gives its role (docs/operating.md, "Scaling out") before the app's first connection through PgBouncer.
 *
 * With TEST_DATABASE_APP_ROLE (an existing login role, CI's least-privilege phase), the database is
 * migrated as its owner and the app connects as that role after `accessctl db grant-app-role`'s
 * grants, as a deployment with DATABASE_OWNER_URL does.
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
    const database = await openDatabase({ databaseUrl: undefined, dataDir: undefined, embeddedImage: await migratedEmbeddedImage(), entities: allEntities(), commitHooks: allCommitHooks(), onQuery: options.onQuery, lockTimeoutMs: options.lockTimeoutMs, transactionObserver: options.transactionObserver });
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
    await admin.query(`create database ${name} template ${await migratedTemplateName(admin, adminUrl)}`);
    if (appRole) {
      const owning = await openDatabase({ databaseUrl: url.toString(), dataDir: undefined, entities: allEntities(), poolMax: 1 });
      try {
        await grantAppRole(owning.em(), { role: appRole, readOnlyTables: allAppReadOnlyTables(), migrationTables: [MIKRO_ORM_MIGRATIONS_TABLE] });
      } finally {
        await owning.close();
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

/** Changes whenever a migration does: names the templates below, so a stale one is never used. */
function migrationsFingerprint(...more: string[]): string {
  const directory = path.resolve(import.meta.dirname, '../../src/db/migrations');
  const hash = createHash('sha256');
  for (const file of fs.readdirSync(directory).sort()) hash.update(file).update(fs.readFileSync(path.join(directory, file)));
  for (const file of more) hash.update(fs.readFileSync(file));
  return hash.digest('hex').slice(0, 16);
}

/**
 * A database on the suite's PostgreSQL server that the migrations ran on, for `create database
 * ... template`: made by the first test file that needs it (workers racing to make it agree by
 * renaming into place) and kept, named by the migrations' fingerprint, for later runs.
 */
async function migratedTemplateName(admin: pg.Client, adminUrl: string): Promise<string> {
  const name = `aag_template_${migrationsFingerprint()}`;
  if ((await admin.query('select 1 from pg_database where datname = $1', [name])).rowCount) return name;
  const building = `${name}_${randomBytes(4).toString('hex')}`;
  await admin.query(`create database ${building}`);
  try {
    const url = new URL(adminUrl);
    url.pathname = `/${building}`;
    const migrating = await openDatabase({ databaseUrl: url.toString(), dataDir: undefined, entities: allEntities(), poolMax: 1 });
    try {
      await migrating.migrate();
    } finally {
      await migrating.close();
    }
    await admin.query(`alter database ${building} rename to ${name}`);
  } catch (error) {
    await admin.query(`drop database if exists ${building} with (force)`);
    // duplicate_database: another worker put the same template in place first.
    if ((error as { code?: string }).code === '42P04') return name;
    throw error;
  }
  return name;
}

let embeddedImage: Promise<Blob> | undefined;

/**
 * The embedded database after every migration, as PGlite's data directory archive: made once
 * (by the first test file that needs it) and kept in the temporary directory under the
 * migrations' and PGlite's fingerprint. Starting from it skips initdb and the migrations, which
 * together took most of each test file's set-up.
 */
function migratedEmbeddedImage(): Promise<Blob> {
  embeddedImage ??= loadOrMakeEmbeddedImage();
  return embeddedImage;
}

async function loadOrMakeEmbeddedImage(): Promise<Blob> {
  const file = path.join(os.tmpdir(), `aag-test-pglite-${migrationsFingerprint(path.resolve(import.meta.dirname, '../../node_modules/@electric-sql/pglite/package.json'))}.tar`);
  if (fs.existsSync(file)) return fs.openAsBlob(file);
  const database = await openDatabase({ databaseUrl: undefined, dataDir: undefined, entities: allEntities() });
  try {
    await database.migrate();
    const pglite = await (database.orm.em.getConnection() as unknown as PgliteConnection).getNativeClient();
    // Everything on the files the archive is made of, not only in the WAL.
    await pglite.exec('checkpoint');
    const image = await pglite.dumpDataDir('none');
    const partial = `${file}.${process.pid}-${randomBytes(4).toString('hex')}`;
    fs.writeFileSync(partial, new Uint8Array(await image.arrayBuffer()));
    fs.renameSync(partial, file);
    return image;
  } finally {
    await database.close();
  }
}
