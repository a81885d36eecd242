import path from 'node:path';
import { isIP } from 'node:net';
import { DATABASE_POOLERS, PREPARED_STATEMENTS_SETTINGS, preparedStatementsProblem, type DatabasePooler, type PreparedStatementsSetting } from '../db/pooler.js';
import { DEFAULT_REPLICA_MAX_LAG_MS } from '../db/replicas.js';
import { DEFAULT_MAX_COST } from '../graphql/cost.js';

export type NodeEnv = 'development' | 'production' | 'test';
const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/**
 * Which proxies in front of the server are trusted to say who the client is (`X-Forwarded-For`)
 * and which scheme it used: none, the nearest N hops, or the proxies' addresses, subnets and names
 * (`loopback`, `linklocal`, `uniquelocal`). Express's `trust proxy` setting takes each form as is.
 */
export type TrustProxy = false | number | string[];

const TRUSTED_PROXY_NAMES = ['loopback', 'linklocal', 'uniquelocal'];

/** `TRUST_PROXY`: unset, `false` or `0`: no proxy; `1`..`10`: hops; else a comma-separated list. */
export function parseTrustProxy(raw: string | undefined): { value: TrustProxy; problem?: string } {
  if (raw === undefined || raw === 'false' || raw === '0') return { value: false };
  if (/^\d+$/.test(raw)) {
    const hops = Number(raw);
    return hops <= 10 ? { value: hops } : { value: false, problem: `TRUST_PROXY as a hop count must be 0 to 10 (got "${raw}")` };
  }
  if (raw === 'true') {
    return { value: false, problem: 'TRUST_PROXY=true would believe any X-Forwarded-For a client sends: give the number of proxies (e.g. 1) or their addresses' };
  }
  const entries = raw.split(',').map((entry) => entry.trim()).filter(Boolean);
  const bad = entries.filter((entry) => {
    if (TRUSTED_PROXY_NAMES.includes(entry)) return false;
    const [address, prefix, ...rest] = entry.split('/');
    const family = isIP(address ?? '');
    if (family === 0 || rest.length) return true;
    return prefix !== undefined && !(/^\d+$/.test(prefix) && Number(prefix) <= (family === 4 ? 32 : 128));
  });
  if (entries.length === 0 || bad.length) {
    return { value: false, problem: `TRUST_PROXY must be a hop count or a comma-separated list of addresses, subnets (CIDR) and ${TRUSTED_PROXY_NAMES.join('/')} (bad entries: ${bad.join(', ') || raw})` };
  }
  return { value: entries };
}

export interface AppConfig {
  /** The proxies trusted for the client's address and scheme (Express, the authorization server, every limit keyed by address). */
  trustProxy: TrustProxy;
  port: number;
  /** Unset means the embedded PGlite database under `dataDir`. */
  databaseUrl: string | undefined;
  /** DATABASE_OWNER_URL: the schema's owner, for migrations; DATABASE_URL may then be a least-privilege app role. */
  databaseOwnerUrl: string | undefined;
  /** Read replicas of `databaseUrl`; presenting reads may go there, credentials never do. */
  databaseReplicaUrls: string[];
  /** A replica further behind the primary than this serves no reads. */
  databaseReplicaMaxLagMs: number;
  /** What sits between the instances and PostgreSQL: `none` or `pgbouncer-transaction` (src/db/pooler.ts). */
  databasePooler: DatabasePooler;
  /** A direct connection for the one `LISTEN` of live updates, when `databaseUrl` goes through a transaction-pooling PgBouncer. */
  databaseListenUrl: string | undefined;
  /** Hot reads as named prepared statements: `auto` (unless behind a transaction pooler), `on` or `off` (src/db/pooler.ts). */
  databasePreparedStatements: PreparedStatementsSetting;
  /** How long a write waits for a row lock before answering 503 busy (`SET LOCAL lock_timeout`). */
  databaseLockTimeoutMs: number;
  dataDir: string;
  publicApiUrl: string;
  publicWebUrl: string;
  publicFeedUrl: string;
  apiVendor: string;
  nodeEnv: NodeEnv;
  logLevel: LogLevel;
  /** Unset outside production means a secret generated once and kept in `dataDir`. */
  secretKey: string | undefined;
  /** AUDIT_CHAIN_KEY: keys the audit chain and its checkpoints; unset, derived from the server secret. */
  auditChainKey: string | undefined;
  rateLimitPerMinute: number;
  redisUrl: string | undefined;
  /** How long one Redis command may take before the in-memory insurance limiter answers instead. */
  redisCommandTimeoutMs: number;
  /** Bearer token for `GET /metrics`; unset means no metrics endpoint. */
  metricsToken: string | undefined;
  corsOrigins: string[];
  introspection: boolean;
  landingPage: boolean;
  graphqlMaxDepth: number;
  graphqlMaxCost: number;
  /** An Apollo persisted-query manifest: `/graphql` then runs only its operations. Unset: any operation. */
  graphqlTrustedDocuments?: string;
  /** PostgreSQL only: any statement running longer is cancelled and the request answered 503. */
  databaseStatementTimeoutMs: number;
  /** Audit records older than this many days are purged (by the server as it goes, and `accessctl audit purge`). */
  auditRetentionDays: number;
  /** After SIGTERM: how long `/readyz` fails while the server keeps serving, so load balancers stop routing here. */
  shutdownDrainMs: number;
  /** After the drain: how long in-flight requests may take to finish before their connections are cut. */
  shutdownGraceMs: number;
  /** How long a request may wait for a pooled database connection before it answers 503. */
  databasePoolTimeoutMs: number;
  http: HttpServerLimits;
  /** `GET /openapi.json` / `.yaml`: the REST face's OpenAPI 3.1 document (on unless OPENAPI_DOCUMENT=false). */
  openapiDocument: boolean;
  /** `GET /docs`: the API reference page (off in production unless enabled). */
  apiDocsPage: boolean;
  liveUpdates: LiveUpdateLimits;
}

/** Bounds of GraphQL subscriptions over WebSocket (SPEC section 14). */
export interface LiveUpdateLimits {
  /** Open WebSocket connections one credential may hold on one instance. */
  maxConnectionsPerCredential: number;
  /** Subscriptions active at once on one connection. */
  maxSubscriptionsPerConnection: number;
  /** Bytes a connection may leave unsent (a client that does not read): above it, the connection is closed. */
  maxBufferedBytes: number;
  /** Between keep-alive pings; a connection that does not answer one before the next is closed. */
  keepAliveMs: number;
}

export interface HttpServerLimits {
  /** Time to receive a request's headers. */
  headersTimeoutMs: number;
  /** Time to receive a whole request, body included: the slow-body cut-off. */
  requestTimeoutMs: number;
  /** How long an idle keep-alive connection stays open; above load balancers' idle timeouts (often 60 s). */
  keepAliveTimeoutMs: number;
  /** Bytes of responses a client may leave unread on one connection before its next request waits. */
  maxUnreadResponseBytes: number;
  /** A connection whose unread responses stay above that bound this long is closed. */
  stalledClientTimeoutMs: number;
}

/** Far above any statement of a request (a few milliseconds each), far below a client's patience. */
export const DEFAULT_STATEMENT_TIMEOUT_MS = 5_000;

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n  - ${problems.join('\n  - ')}`);
    this.name = 'ConfigError';
  }
}

type Env = Record<string, string | undefined>;

/** Reads and validates the whole environment at once, so a bad deployment lists every problem, not the first. */
/** `AUDIT_RETENTION_DAYS` unless configured. */
export const DEFAULT_AUDIT_RETENTION_DAYS = 365;

export function loadConfig(env: Env = process.env): AppConfig {
  const problems: string[] = [];
  const read = (name: string) => {
    const value = env[name]?.trim();
    return value === undefined || value === '' ? undefined : value;
  };

  const integer = (name: string, fallback: number, min: number, max: number) => {
    const raw = read(name);
    if (raw === undefined) return fallback;
    const value = Number(raw);
    if (!/^\d+$/.test(raw) || value < min || value > max) {
      problems.push(`${name} must be an integer from ${min} to ${max} (got "${raw}")`);
      return fallback;
    }
    return value;
  };

  const url = (name: string, fallback: string, protocols: string[]) => {
    const raw = read(name) ?? fallback;
    try {
      const parsed = new URL(raw);
      if (!protocols.includes(parsed.protocol)) throw new Error('protocol');
      return raw.replace(/\/+$/, '');
    } catch {
      problems.push(`${name} must be a ${protocols.join(' or ')} URL (got "${raw}")`);
      return fallback;
    }
  };

  const boolean = (name: string, fallback: boolean) => {
    const raw = read(name);
    if (raw === undefined) return fallback;
    if (['true', '1', 'yes'].includes(raw.toLowerCase())) return true;
    if (['false', '0', 'no'].includes(raw.toLowerCase())) return false;
    problems.push(`${name} must be true or false (got "${raw}")`);
    return fallback;
  };

  const nodeEnvRaw = read('NODE_ENV') ?? 'development';
  let nodeEnv: NodeEnv = 'development';
  if (nodeEnvRaw === 'development' || nodeEnvRaw === 'production' || nodeEnvRaw === 'test') nodeEnv = nodeEnvRaw;
  else problems.push(`NODE_ENV must be development, production or test (got "${nodeEnvRaw}")`);
  const production = nodeEnv === 'production';

  const logLevelRaw = read('LOG_LEVEL') ?? (nodeEnv === 'test' ? 'silent' : 'info');
  let logLevel: LogLevel = 'info';
  if ((LOG_LEVELS as readonly string[]).includes(logLevelRaw)) logLevel = logLevelRaw as LogLevel;
  else problems.push(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')} (got "${logLevelRaw}")`);

  const port = integer('PORT', 4000, 0, 65535);
  const databaseUrl = read('DATABASE_URL');
  if (databaseUrl !== undefined) url('DATABASE_URL', 'postgres://localhost/postgres', ['postgres:', 'postgresql:']);

  // The role that owns the schema and runs migrations, when DATABASE_URL is a least-privilege app role (SPEC section 19).
  const databaseOwnerUrl = read('DATABASE_OWNER_URL');
  if (databaseOwnerUrl !== undefined) {
    url('DATABASE_OWNER_URL', 'postgres://localhost/postgres', ['postgres:', 'postgresql:']);
    if (databaseUrl === undefined) problems.push('DATABASE_OWNER_URL needs DATABASE_URL (the app role the server serves with)');
  }

  const databaseListenUrl = read('DATABASE_LISTEN_URL');
  if (databaseListenUrl !== undefined) {
    url('DATABASE_LISTEN_URL', 'postgres://localhost/postgres', ['postgres:', 'postgresql:']);
    if (databaseUrl === undefined) problems.push('DATABASE_LISTEN_URL needs DATABASE_URL (the embedded database listens on its own connection)');
  }

  const databaseReplicaUrls = (read('DATABASE_REPLICA_URLS') ?? '').split(',').map((entry) => entry.trim()).filter(Boolean);
  for (const replica of databaseReplicaUrls) {
    if (!/^postgres(ql)?:\/\//.test(replica) || !URL.canParse(replica)) problems.push(`DATABASE_REPLICA_URLS must be a comma-separated list of postgres:// URLs (bad entry "${replica}")`);
  }
  if (databaseReplicaUrls.length && databaseUrl === undefined) problems.push('DATABASE_REPLICA_URLS needs DATABASE_URL (the embedded database has no replicas)');

  const poolerRaw = read('DATABASE_POOLER') ?? 'none';
  let databasePooler: DatabasePooler = 'none';
  if ((DATABASE_POOLERS as readonly string[]).includes(poolerRaw)) databasePooler = poolerRaw as DatabasePooler;
  else problems.push(`DATABASE_POOLER must be one of ${DATABASE_POOLERS.join(', ')} (got "${poolerRaw}")`);
  if (databasePooler !== 'none' && databaseUrl === undefined) problems.push('DATABASE_POOLER needs DATABASE_URL (the embedded database has no pooler)');
  // A transaction pooler hands each transaction any server connection: a LISTEN through it hears nothing reliably.
  if (databasePooler === 'pgbouncer-transaction' && databaseUrl !== undefined && databaseListenUrl === undefined) problems.push('DATABASE_POOLER=pgbouncer-transaction needs DATABASE_LISTEN_URL: a direct connection to the primary for the LISTEN of live updates');

  const preparedRaw = read('DATABASE_PREPARED_STATEMENTS') ?? 'auto';
  let databasePreparedStatements: PreparedStatementsSetting = 'auto';
  if ((PREPARED_STATEMENTS_SETTINGS as readonly string[]).includes(preparedRaw)) databasePreparedStatements = preparedRaw as PreparedStatementsSetting;
  else problems.push(`DATABASE_PREPARED_STATEMENTS must be one of ${PREPARED_STATEMENTS_SETTINGS.join(', ')} (got "${preparedRaw}")`);
  const preparedProblem = preparedStatementsProblem(databasePreparedStatements, databasePooler);
  if (preparedProblem) problems.push(preparedProblem);

  const apiVendor = read('API_VENDOR') ?? 'pagerduty';
  if (!/^[a-z0-9][a-z0-9.-]*$/i.test(apiVendor)) problems.push(`API_VENDOR must be a plain vendor name such as "pagerduty" (got "${apiVendor}")`);

  const secretKey = read('SECRET_KEY');
  if (secretKey !== undefined && secretKey.length < 32) problems.push('SECRET_KEY must be at least 32 characters');
  if (production && secretKey === undefined) problems.push('SECRET_KEY is required when NODE_ENV=production');
  const auditChainKey = read('AUDIT_CHAIN_KEY');
  if (auditChainKey !== undefined && auditChainKey.length < 32) problems.push('AUDIT_CHAIN_KEY must be at least 32 characters');

  const metricsToken = read('METRICS_TOKEN');
  if (metricsToken !== undefined && !/^[\x21-\x7e]{24,}$/.test(metricsToken)) problems.push('METRICS_TOKEN must be at least 24 printable characters without spaces');

  const corsOrigins = (read('CORS_ORIGINS') ?? '').split(',').map((origin) => origin.trim()).filter(Boolean);
  for (const origin of corsOrigins) {
    try {
      new URL(origin);
    } catch {
      problems.push(`CORS_ORIGINS must be a comma-separated list of origins (bad entry "${origin}")`);
    }
  }

  const trustProxy = parseTrustProxy(read('TRUST_PROXY'));
  if (trustProxy.problem) problems.push(trustProxy.problem);

  const config: AppConfig = {
    trustProxy: trustProxy.value,
    port,
    databaseUrl,
    databaseOwnerUrl,
    databaseReplicaUrls,
    databaseReplicaMaxLagMs: integer('DATABASE_REPLICA_MAX_LAG_MS', DEFAULT_REPLICA_MAX_LAG_MS, 10, 3_600_000),
    databasePooler,
    databaseListenUrl,
    databasePreparedStatements,
    databaseLockTimeoutMs: integer('DATABASE_LOCK_TIMEOUT_MS', 5_000, 1, 600_000),
    dataDir: path.resolve(read('DATA_DIR') ?? '.data'),
    publicApiUrl: url('PUBLIC_API_URL', `http://localhost:${port}`, ['http:', 'https:']),
    publicWebUrl: url('PUBLIC_WEB_URL', `http://localhost:${port}`, ['http:', 'https:']),
    publicFeedUrl: url('PUBLIC_FEED_URL', `http://localhost:${port}`, ['http:', 'https:']),
    apiVendor,
    nodeEnv,
    logLevel,
    secretKey,
    auditChainKey,
    rateLimitPerMinute: integer('RATE_LIMIT_PER_MINUTE', 960, 1, 1_000_000),
    redisUrl: read('REDIS_URL'),
    redisCommandTimeoutMs: integer('REDIS_COMMAND_TIMEOUT_MS', 30, 5, 10_000),
    metricsToken,
    corsOrigins,
    introspection: boolean('GRAPHQL_INTROSPECTION', !production),
    landingPage: boolean('GRAPHQL_LANDING_PAGE', !production),
    graphqlMaxDepth: integer('GRAPHQL_MAX_DEPTH', 12, 1, 100),
    graphqlMaxCost: integer('GRAPHQL_MAX_COST', DEFAULT_MAX_COST, 1, 10_000_000),
    graphqlTrustedDocuments: read('GRAPHQL_TRUSTED_DOCUMENTS') || undefined,
    shutdownDrainMs: integer('SHUTDOWN_DRAIN_MS', 5_000, 0, 300_000),
    shutdownGraceMs: integer('SHUTDOWN_GRACE_MS', 10_000, 0, 300_000),
    databasePoolTimeoutMs: integer('DATABASE_POOL_TIMEOUT_MS', 3_000, 100, 120_000),
    http: {
      headersTimeoutMs: integer('HTTP_HEADERS_TIMEOUT_MS', 10_000, 100, 600_000),
      requestTimeoutMs: integer('HTTP_REQUEST_TIMEOUT_MS', 30_000, 100, 3_600_000),
      keepAliveTimeoutMs: integer('HTTP_KEEP_ALIVE_TIMEOUT_MS', 65_000, 1_000, 3_600_000),
      maxUnreadResponseBytes: integer('HTTP_MAX_UNREAD_RESPONSE_BYTES', 1_048_576, 16_384, 1_073_741_824),
      stalledClientTimeoutMs: integer('HTTP_STALLED_CLIENT_TIMEOUT_MS', 30_000, 100, 3_600_000),
    },
    openapiDocument: boolean('OPENAPI_DOCUMENT', true),
    apiDocsPage: false,
    liveUpdates: {
      maxConnectionsPerCredential: integer('LIVE_MAX_CONNECTIONS_PER_CREDENTIAL', 10, 1, 10_000),
      maxSubscriptionsPerConnection: integer('LIVE_MAX_SUBSCRIPTIONS_PER_CONNECTION', 20, 1, 1_000),
      maxBufferedBytes: integer('LIVE_MAX_BUFFERED_BYTES', 262_144, 1_024, 67_108_864),
      keepAliveMs: integer('LIVE_KEEP_ALIVE_MS', 12_000, 1_000, 600_000),
    },
    databaseStatementTimeoutMs: integer('DATABASE_STATEMENT_TIMEOUT_MS', DEFAULT_STATEMENT_TIMEOUT_MS, 100, 600_000),
    auditRetentionDays: integer('AUDIT_RETENTION_DAYS', DEFAULT_AUDIT_RETENTION_DAYS, 1, 36_500),
  };
  // The page renders /openapi.json: by default it follows the document; asked for without it is a mistake.
  config.apiDocsPage = boolean('API_DOCS_PAGE', !production && config.openapiDocument);
  if (config.apiDocsPage && !config.openapiDocument) problems.push('API_DOCS_PAGE needs OPENAPI_DOCUMENT (the page renders /openapi.json)');
  if (config.http.requestTimeoutMs < config.http.headersTimeoutMs) problems.push('HTTP_REQUEST_TIMEOUT_MS must be at least HTTP_HEADERS_TIMEOUT_MS');
  if (config.redisUrl !== undefined) url('REDIS_URL', 'redis://localhost', ['redis:', 'rediss:']);
  if (problems.length > 0) throw new ConfigError(problems);
  return config;
}
