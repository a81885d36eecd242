import path from 'node:path';
import { MikroORM, type Options, type Logger as OrmLogger, type LoggerNamespace } from '@mikro-orm/core';
import { ReflectMetadataProvider } from '@mikro-orm/decorators/legacy';
import { Migrator } from '@mikro-orm/migrations';
import { PostgreSqlDriver } from '@mikro-orm/postgresql';
import { PgliteDriver } from '@mikro-orm/pglite';
import type { EntityManager } from '@mikro-orm/sql';
import { PGlite } from '@electric-sql/pglite';
import { pg_trgm } from '@electric-sql/pglite/contrib/pg_trgm';
import { migrationsList } from './migrations/index.js';
import { acquireEmbeddedLock } from './embedded-lock.js';

export type { EntityManager };

export interface DatabaseOptions {
  /** `postgres://...`; unset means embedded PGlite. */
  databaseUrl: string | undefined;
  /** Where embedded PGlite keeps its files; unset (with no URL) means in memory, for tests. */
  dataDir: string | undefined;
  entities: Function[];
  /** Receives every SQL statement; tests count queries with it. */
  onQuery?: (sql: string) => void;
  poolMax?: number;
}

export interface Database {
  orm: MikroORM;
  kind: 'embedded' | 'postgresql';
  em(): EntityManager;
  migrate(): Promise<string[]>;
  ping(): Promise<void>;
  close(): Promise<void>;
}

function queryLoggerFactory(onQuery: (sql: string) => void): () => OrmLogger {
  const isQuery = (namespace: string) => namespace === 'query';
  return () => ({
    log: (namespace: LoggerNamespace | string, message: string) => {
      if (isQuery(namespace)) onQuery(message);
    },
    error: () => {},
    warn: () => {},
    logQuery: (context: { query: string }) => onQuery(context.query),
    setDebugMode: () => {},
    isEnabled: (namespace: LoggerNamespace | string) => isQuery(namespace),
  });
}

export async function openDatabase(options: DatabaseOptions): Promise<Database> {
  const common: Partial<Options> = {
    entities: options.entities,
    metadataProvider: ReflectMetadataProvider,
    extensions: [Migrator],
    migrations: { migrationsList, transactional: true, allOrNothing: true, snapshot: false, silent: true },
    allowGlobalContext: false,
    ...(options.onQuery ? { debug: ['query'], loggerFactory: queryLoggerFactory(options.onQuery) } : { debug: false }),
  };

  let orm: MikroORM;
  let kind: Database['kind'];
  let releaseLock: () => void = () => {};
  let pglite: PGlite | undefined;

  if (options.databaseUrl) {
    kind = 'postgresql';
    orm = await MikroORM.init({
      ...common,
      driver: PostgreSqlDriver,
      clientUrl: options.databaseUrl,
      pool: { max: options.poolMax ?? 10 },
    } as Options);
  } else {
    kind = 'embedded';
    if (options.dataDir) releaseLock = acquireEmbeddedLock(options.dataDir);
    try {
      pglite = await PGlite.create({
        dataDir: options.dataDir ? path.join(options.dataDir, 'pgdata') : undefined,
        extensions: { pg_trgm },
      });
      const instance = pglite;
      orm = await MikroORM.init({
        ...common,
        driver: PgliteDriver,
        dbName: 'embedded',
        driverOptions: { pglite: () => instance },
      } as Options);
    } catch (error) {
      await pglite?.close().catch(() => {});
      releaseLock();
      throw error;
    }
  }

  const em = () => orm.em.fork() as EntityManager;
  return {
    orm,
    kind,
    em,
    async migrate() {
      const applied = await orm.migrator.up();
      return applied.map((migration) => migration.name);
    },
    async ping() {
      await em().execute('select 1');
    },
    async close() {
      await orm.close(true);
      await pglite?.close();
      releaseLock();
    },
  };
}
