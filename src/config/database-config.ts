import { DATABASE_POOLERS, PREPARED_STATEMENTS_SETTINGS, preparedStatementsProblem } from '../db/pooler.js';
import { DEFAULT_REPLICA_MAX_LAG_MS } from '../db/replicas.js';
import type { AppConfig } from './config.js';
import type { ConfigReader } from './config-reader.js';

/** Far above any statement of a request (a few milliseconds each), far below a client's patience. */
export const DEFAULT_STATEMENT_TIMEOUT_MS = 5_000;

const POSTGRES_PROTOCOLS = ['postgres:', 'postgresql:'];
const ANY_POSTGRES = 'postgres://localhost/postgres';

export type DatabaseConfig = Pick<
  AppConfig,
  | 'databaseUrl'
  | 'databaseOwnerUrl'
  | 'databaseReplicaUrls'
  | 'databaseReplicaMaxLagMs'
  | 'databasePooler'
  | 'databaseListenUrl'
  | 'databasePreparedStatements'
  | 'databaseLockTimeoutMs'
  | 'databasePoolTimeoutMs'
  | 'databaseStatementTimeoutMs'
>;

/**
 * Where the database is and how the server reaches it. Unset DATABASE_URL is the embedded database,
 * which has no owner role, listener, replicas or pooler of its own: each of those needs DATABASE_URL.
 */
export function databaseConfig(reader: ConfigReader): DatabaseConfig {
  const { problems } = reader;
  const databaseUrl = reader.read('DATABASE_URL');
  if (databaseUrl !== undefined) reader.url('DATABASE_URL', ANY_POSTGRES, POSTGRES_PROTOCOLS);

  // The role that owns the schema and runs migrations, when DATABASE_URL is a least-privilege app role.
  const databaseOwnerUrl = reader.read('DATABASE_OWNER_URL');
  if (databaseOwnerUrl !== undefined) {
    reader.url('DATABASE_OWNER_URL', ANY_POSTGRES, POSTGRES_PROTOCOLS);
    if (databaseUrl === undefined) problems.push('DATABASE_OWNER_URL needs DATABASE_URL (the app role the server serves with)');
  }

  const databaseListenUrl = reader.read('DATABASE_LISTEN_URL');
  if (databaseListenUrl !== undefined) {
    reader.url('DATABASE_LISTEN_URL', ANY_POSTGRES, POSTGRES_PROTOCOLS);
    if (databaseUrl === undefined) problems.push('DATABASE_LISTEN_URL needs DATABASE_URL (the embedded database listens on its own connection)');
  }

  const databaseReplicaUrls = reader.list('DATABASE_REPLICA_URLS');
  for (const replica of databaseReplicaUrls) {
    if (!/^postgres(ql)?:\/\//.test(replica) || !URL.canParse(replica)) problems.push(`DATABASE_REPLICA_URLS must be a comma-separated list of postgres:// URLs (bad entry "${replica}")`);
  }
  if (databaseReplicaUrls.length && databaseUrl === undefined) problems.push('DATABASE_REPLICA_URLS needs DATABASE_URL (the embedded database has no replicas)');

  const databasePooler = reader.oneOf('DATABASE_POOLER', DATABASE_POOLERS, 'none', 'none');
  if (databasePooler !== 'none' && databaseUrl === undefined) problems.push('DATABASE_POOLER needs DATABASE_URL (the embedded database has no pooler)');
  // A transaction pooler hands each transaction any server connection: a LISTEN through it hears nothing reliably.
  if (databasePooler === 'pgbouncer-transaction' && databaseUrl !== undefined && databaseListenUrl === undefined) problems.push('DATABASE_POOLER=pgbouncer-transaction needs DATABASE_LISTEN_URL: a direct connection to the primary for the LISTEN of live updates');

  const databasePreparedStatements = reader.oneOf('DATABASE_PREPARED_STATEMENTS', PREPARED_STATEMENTS_SETTINGS, 'auto', 'auto');
  const preparedProblem = preparedStatementsProblem(databasePreparedStatements, databasePooler);
  if (preparedProblem) problems.push(preparedProblem);

  return {
    databaseUrl,
    databaseOwnerUrl,
    databaseReplicaUrls,
    databaseReplicaMaxLagMs: reader.integer('DATABASE_REPLICA_MAX_LAG_MS', DEFAULT_REPLICA_MAX_LAG_MS, 10, 3_600_000),
    databasePooler,
    databaseListenUrl,
    databasePreparedStatements,
    databaseLockTimeoutMs: reader.integer('DATABASE_LOCK_TIMEOUT_MS', 5_000, 1, 600_000),
    databasePoolTimeoutMs: reader.integer('DATABASE_POOL_TIMEOUT_MS', 3_000, 100, 120_000),
    databaseStatementTimeoutMs: reader.integer('DATABASE_STATEMENT_TIMEOUT_MS', DEFAULT_STATEMENT_TIMEOUT_MS, 100, 600_000),
  };
}
