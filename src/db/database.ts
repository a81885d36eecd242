import path from 'node:path';
import { MikroORM, type Options, type Logger as OrmLogger, type LoggerNamespace, type LogContext } from '@mikro-orm/core';
import { ReflectMetadataProvider } from '@mikro-orm/decorators/legacy';
import { Migrator } from '@mikro-orm/migrations';
import { PostgreSqlDriver } from '@mikro-orm/postgresql';
import { PgliteDriver } from '@mikro-orm/pglite';
import type { EntityManager } from '@mikro-orm/sql';
import { PGlite } from '@electric-sql/pglite';
import { pg_trgm } from '@electric-sql/pglite/contrib/pg_trgm';
import { migrationsList } from './migrations/index.js';
import { acquireEmbeddedLock, EmbeddedDatabaseBusyError } from './embedded-lock.js';
import { embeddedSocketClientOptions, embeddedSocketExists, serveEmbeddedSocket } from './embedded-socket.js';
import { recordSqlSpan } from '../observability/tracing.js';
import { observePool } from './pool-metrics.js';
import { guardPool } from './pool-guards.js';
import { DEFAULT_TRANSACTION_POLICY, TransactionRunner, type TransactionObserver } from './transaction.js';
import type { CommitHook } from './change-journal.js';
import { namedStatementsAllowed, sessionStateSurvives, type DatabasePooler, type PreparedStatementsSetting } from './pooler.js';
import { configureReadPath } from './read-path.js';
import { DEFAULT_REPLICA_MAX_LAG_MS, ReplicaSet, type StatementConnection } from './replicas.js';
import { ReadRouting } from './read-routing.js';
import { MemoryRecentWrites, type RecentWrites } from './recent-writes.js';
import { listenOnPglite, listenOnPostgres, type NotificationHandlers, type NotificationListener } from './notification-listener.js';

export type { EntityManager };

export interface DatabaseOptions {
  /** `postgres://...`; unset means embedded PGlite. */
  databaseUrl: string | undefined;
  /** Read replicas (PostgreSQL only). */
  replicaUrls?: string[];
  /** A replica further behind the primary than this serves no reads (DATABASE_REPLICA_MAX_LAG_MS). */
  replicaMaxLagMs?: number;
  /** How often replicas' replay positions are read. */
  replicaProbeIntervalMs?: number;
  /**
   * Where credentials' recent write positions are kept (`windowMs` of them is `recentWriteWindowMs`):
   * Redis-shared in a deployment of several instances; this process's memory when unset.
   */
  recentWrites?: (windowMs: number) => RecentWrites;
  /** What sits between this process and PostgreSQL (DATABASE_POOLER, src/db/pooler.ts). */
  pooler?: DatabasePooler;
  /**
   * Whether the read path's hot statements go as named prepared statements (DATABASE_PREPARED_STATEMENTS,
   * default `auto`: PostgreSQL without a transaction pooler). Embedded, never: the socket a CLI
   * joins through shares one session among all its clients.
   */
  preparedStatements?: PreparedStatementsSetting;
  /**
   * PostgreSQL only: where the one listening connection (`LISTEN`) goes, when the pool's URL
   * leads through a transaction-pooling PgBouncer (`DATABASE_LISTEN_URL`); unset, `databaseUrl`.
   */
  listenUrl?: string;
  /**
   * PostgreSQL only: the schema's owner (DATABASE_OWNER_URL), which runs the migrations when
   * `databaseUrl` is a least-privilege app role (`accessctl db grant-app-role`).
   */
  ownerUrl?: string;
  /** Where embedded PGlite keeps its files; unset (with no URL) means in memory, for tests. */
  dataDir: string | undefined;
  /**
   * Embedded in memory only: start from this copy of a data directory (PGlite's `dumpDataDir`)
   * instead of an empty cluster. The tests start each file from one migrated copy: creating a
   * cluster (initdb) and migrating it cost far more than loading it.
   */
  embeddedImage?: Blob;
  entities: Function[];
  /** Run in every write transaction that recorded changes, before it commits (the features' `commitHooks`). */
  commitHooks?: CommitHook[];
  /** Receives every SQL statement; tests count queries with it. */
  onQuery?: (sql: string) => void;
  poolMax?: number;
  /**
   * `lock_timeout` of every write transaction (DATABASE_LOCK_TIMEOUT_MS). PostgreSQL: a startup
   * parameter of every pooled connection, so reads waiting on a lock (behind DDL) are bounded
   * too; PGlite: `SET LOCAL` in each write transaction.
   */
  lockTimeoutMs?: number;
  /** Sees every retried and abandoned write transaction; tests count retries with it. */
  transactionObserver?: TransactionObserver;
  /** How long a query waits for a pooled (or new) connection before failing, so an outage answers fast. */
  poolTimeoutMs?: number;
  /**
   * PostgreSQL: `statement_timeout` of every pooled connection (replicas included), so no
   * statement of a request runs unbounded; a cancelled one (SQLSTATE 57014) is answered 503.
   * Migrations run without it. PGlite accepts the setting but cannot enforce it (it runs
   * in-process without timer interrupts), so it is not applied there.
   */
  statementTimeoutMs?: number;
  /**
   * Embedded only. `serve`: the server, which takes the data directory and serves it on a local
   * socket. `join` (the CLI): takes the data directory if free, else uses the running server's socket.
   */
  embeddedAccess?: 'serve' | 'join';
}

export interface Database {
  orm: MikroORM;
  kind: 'embedded' | 'postgresql';
  em(): EntityManager;
  /** How long a statement waits for a pooled connection (DATABASE_POOL_TIMEOUT_MS); a request's wait for its share is bounded alike. */
  poolTimeoutMs: number;
  /** Every write goes through it: lock timeout, bounded retries of deadlocks and serialization failures. */
  transactions: TransactionRunner;
  /** With read replicas: where each request's presenting reads go (the app attaches every request's entity manager to it). */
  readRouting?: ReadRouting;
  migrate(): Promise<string[]>;
  /** Notifications sent on `channel` (`pg_notify`), delivered at commit: a dedicated connection on PostgreSQL, the single one on PGlite. */
  listen(channel: string, handlers: NotificationHandlers): Promise<NotificationListener>;
  ping(): Promise<void>;
  close(): Promise<void>;
}

/**
 * MikroORM reports every statement here, with placeholders rather than values: tests count them
 * through `onQuery`, and (when tracing is on) each becomes a span under the current operation.
 */
function queryLoggerFactory(onQuery: ((sql: string) => void) | undefined): () => OrmLogger {
  const isQuery = (namespace: string) => namespace === 'query' && onQuery !== undefined;
  return () => ({
    log: (namespace: LoggerNamespace | string, message: string) => {
      if (isQuery(namespace)) onQuery?.(message);
    },
    error: () => {},
    warn: () => {},
    logQuery: (context: LogContext) => {
      if (context.query === undefined) return;
      onQuery?.(context.query);
      recordSqlSpan(context.query, context.took, context.level === 'error');
    },
    setDebugMode: () => {},
    isEnabled: (namespace: LoggerNamespace | string) => isQuery(namespace),
  });
}

/** What every connection shares: entities, metadata from decorators, the checked-in migrations. */
export function baseOrmOptions(entities: Function[], onQuery?: (sql: string) => void): Partial<Options> {
  return {
    entities,
    metadataProvider: ReflectMetadataProvider,
    extensions: [Migrator],
    migrations: { migrationsList, transactional: true, allOrNothing: true, snapshot: false, silent: true },
    allowGlobalContext: false,
    debug: onQuery ? ['query'] : false,
    loggerFactory: queryLoggerFactory(onQuery),
  };
}

/**
 * Replicas get a pool each here but serve only what src/db/read-routing.ts sends them (presenting
 * reads outside writes); everything else, credential look-ups and every read a write depends on
 * included, uses the primary, so a revoked token is never accepted from a lagging replica.
 */
export interface PostgresConnectionOptions {
  poolMax?: number;
  replicaUrls?: readonly string[];
  poolTimeoutMs?: number;
  statementTimeoutMs?: number;
  lockTimeoutMs?: number;
  pooler?: DatabasePooler;
}

export function postgresOrmOptions(databaseUrl: string, connection: PostgresConnectionOptions = {}): Partial<Options> {
  const { poolMax = 10, replicaUrls = [], poolTimeoutMs = DEFAULT_POOL_TIMEOUT_MS, lockTimeoutMs, pooler = 'none' } = connection;
  // Startup parameters are session state: a transaction-pooling PgBouncer refuses them (write
  // transactions set both with SET LOCAL instead; reads get the role's or database's settings).
  const statementTimeoutMs = sessionStateSurvives(pooler) ? connection.statementTimeoutMs : undefined;
  return {
    driver: PostgreSqlDriver,
    clientUrl: databaseUrl,
    pool: { max: poolMax },
    driverOptions: {
      // pg's wait for a connection, from the pool or newly opened; without it a request hangs as long as the outage.
      connectionTimeoutMillis: poolTimeoutMs,
      // pg sends it as a startup parameter of each connection: no extra round trip per request.
      ...(statementTimeoutMs ? { statement_timeout: statementTimeoutMs } : {}),
      // A startup parameter, not a SET LOCAL per transaction: that statement cost as much CPU as a small write (docs/BENCHMARKS.md).
      ...(lockTimeoutMs && sessionStateSurvives(pooler) ? { lock_timeout: lockTimeoutMs } : {}),
      // Failover: no commit acknowledged without its standby's confirmation, no dead connection kept checked out.
      onPoolCreated: (pool: Parameters<typeof guardPool>[0]) => guardPool(pool, { commitTimeoutMs: connection.statementTimeoutMs || poolTimeoutMs }),
    },
    ...(replicaUrls.length ? { replicas: replicaUrls.map((clientUrl) => ({ clientUrl })), preferReadReplicas: false } : {}),
  };
}

export const DEFAULT_POOL_TIMEOUT_MS = 3_000;

export interface EmbeddedConnection {
  options: Partial<Options>;
  /** The database itself, when this process opened it (not when it joined a running server). */
  pglite?: PGlite;
  /** Set when this process uses the running server's socket instead of opening the files. */
  joined?: { dataDir: string; pid: number };
  close(): Promise<void>;
}

/**
 * PGlite with pg_trgm, persisted under `dataDir` (in memory without one). Takes the data
 * directory's single-process lock first, so a second process fails fast instead of sharing files.
 */
export async function openEmbedded(dataDir: string | undefined, access?: DatabaseOptions['embeddedAccess'], image?: Blob): Promise<EmbeddedConnection> {
  let releaseLock: () => void = () => {};
  if (dataDir) {
    try {
      releaseLock = acquireEmbeddedLock(dataDir);
    } catch (error) {
      if (access === 'join' && error instanceof EmbeddedDatabaseBusyError) return joinRunningServer(dataDir, error);
      throw error;
    }
  }
  try {
    const pglite = await PGlite.create({ dataDir: dataDir ? path.join(dataDir, 'pgdata') : undefined, extensions: { pg_trgm }, loadDataDir: dataDir ? undefined : image });
    const socket = dataDir && access === 'serve' ? await serveEmbeddedSocket(pglite, dataDir) : undefined;
    return {
      options: { driver: PgliteDriver, dbName: 'embedded', driverOptions: { pglite: () => pglite } },
      pglite,
      async close() {
        await socket?.close();
        await pglite.close();
        releaseLock();
      },
    };
  } catch (error) {
    releaseLock();
    throw error;
  }
}

/** The data directory is the running server's: reach its database through the socket it serves there. */
function joinRunningServer(dataDir: string, busy: EmbeddedDatabaseBusyError): EmbeddedConnection {
  if (!embeddedSocketExists(dataDir)) throw busy;
  // One connection: this process's statements run one after another, and the server's socket serves every local client.
  return { options: { driver: PostgreSqlDriver, ...embeddedSocketClientOptions(dataDir), pool: { min: 0, max: 1 } }, joined: { dataDir, pid: busy.pid }, close: async () => {} };
}

export async function openDatabase(options: DatabaseOptions): Promise<Database> {
  const base = baseOrmOptions(options.entities, options.onQuery);
  const lockTimeoutMs = options.lockTimeoutMs ?? DEFAULT_TRANSACTION_POLICY.lockTimeoutMs;
  const pooler = options.databaseUrl ? options.pooler ?? 'none' : 'none';
  // Checked before anything opens: `on` behind a transaction pooler is a configuration error.
  const namedStatements = options.databaseUrl !== undefined && namedStatementsAllowed(options.preparedStatements ?? 'auto', pooler);
  let orm: MikroORM;
  let embedded: EmbeddedConnection | undefined;
  if (options.databaseUrl) {
    orm = await MikroORM.init({ ...base, ...postgresOrmOptions(options.databaseUrl, { ...options, lockTimeoutMs, pooler }) } as Options);
  } else {
    embedded = await openEmbedded(options.dataDir, options.embeddedAccess, options.embeddedImage);
    try {
      orm = await MikroORM.init({ ...base, ...embedded.options } as Options);
    } catch (error) {
      await embedded.close().catch(() => {});
      if (embedded.joined) throw new EmbeddedDatabaseBusyError(embedded.joined.dataDir, embedded.joined.pid, `and its socket in socket/ did not answer (${(error as Error).message})`);
      throw error;
    }
  }
  const kind: Database['kind'] = embedded ? 'embedded' : 'postgresql';
  if (!embedded) await observePool(orm, options.poolMax ?? 10);
  configureReadPath(orm.em as EntityManager, { namedStatements });

  const em = () => orm.em.fork() as EntityManager;
  const onConnection = kind === 'postgresql' && sessionStateSurvives(pooler);
  let transactions = new TransactionRunner(
    {
      ...DEFAULT_TRANSACTION_POLICY,
      lockTimeoutMs,
      lockTimeoutOnConnection: onConnection,
      ...(kind === 'postgresql' && !onConnection && options.statementTimeoutMs ? { statementTimeoutMs: options.statementTimeoutMs } : {}),
    },
    options.transactionObserver ? [options.transactionObserver] : [],
  ).withCommitHooks(options.commitHooks ?? []);
  const readRouting = options.replicaUrls?.length && kind === 'postgresql' ? await startReadRouting(orm, options) : undefined;
  if (readRouting) transactions = transactions.withAfterCommit((em) => readRouting.afterCommit(em));
  return {
    orm,
    kind,
    em,
    poolTimeoutMs: options.poolTimeoutMs ?? DEFAULT_POOL_TIMEOUT_MS,
    transactions,
    readRouting,
    async migrate() {
      // A migration (an index build on a large table) may rightly run for minutes: it gets a
      // short-lived connection of its own without the requests' statement timeout.
      // With an owner role, the app role may not change the schema: the owner migrates.
      if (!options.databaseUrl || (!options.statementTimeoutMs && !options.ownerUrl)) return (await orm.migrator.up()).map((migration) => migration.name);
      const migrating = await MikroORM.init({ ...base, ...postgresOrmOptions(options.ownerUrl ?? options.databaseUrl, { poolMax: 1, pooler }) } as Options);
      try {
        return (await migrating.migrator.up()).map((migration) => migration.name);
      } finally {
        await migrating.close(true);
      }
    },
    async listen(channel, handlers) {
      if (options.databaseUrl) return listenOnPostgres(options.listenUrl ?? options.databaseUrl, channel, handlers);
      if (!embedded?.pglite) throw new Error('this process joined a running embedded server and cannot listen on its database');
      return listenOnPglite(embedded.pglite, channel, handlers);
    },
    async ping() {
      await em().execute('select 1');
    },
    async close() {
      await readRouting?.close();
      await orm.close(true);
      await embedded?.close();
    },
  };
}

export const DEFAULT_REPLICA_PROBE_INTERVAL_MS = 250;

/**
 * How long a credential's write keeps its reads off replicas that have not replayed it. Past the
 * lag bound plus two probes, any replica still within the bound has replayed it (its lag is the age
 * of the oldest primary position it misses, and a probe after the commit saw a position past it).
 */
export function recentWriteWindowMs(maxLagMs: number, probeIntervalMs: number): number {
  return maxLagMs + 2 * probeIntervalMs + 1_000;
}

async function startReadRouting(orm: MikroORM, options: DatabaseOptions): Promise<ReadRouting> {
  const maxLagMs = options.replicaMaxLagMs ?? DEFAULT_REPLICA_MAX_LAG_MS;
  const probeIntervalMs = options.replicaProbeIntervalMs ?? DEFAULT_REPLICA_PROBE_INTERVAL_MS;
  // MikroORM opened one pool per replica (same options as the primary's); the routing picks among them.
  const driver = orm.em.getDriver() as unknown as { replicas: StatementConnection[] };
  const replicas = new ReplicaSet(orm.em.getConnection('write') as StatementConnection, driver.replicas, { maxLagMs, probeIntervalMs });
  await replicas.start();
  const windowMs = recentWriteWindowMs(maxLagMs, probeIntervalMs);
  return new ReadRouting(replicas, options.recentWrites?.(windowMs) ?? new MemoryRecentWrites(windowMs));
}
