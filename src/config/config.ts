import type { DatabasePooler, PreparedStatementsSetting } from '../db/pooler.js';
import { configReader, type Env } from './config-reader.js';
import {
  auditConfig,
  documentsConfig,
  graphqlConfig,
  httpConfig,
  liveUpdatesConfig,
  publicConfig,
  runtimeConfig,
  securityConfig,
  type LogLevel,
  type NodeEnv,
  type TrustProxy,
} from './config-sections.js';
import { databaseConfig } from './database-config.js';

export { DEFAULT_AUDIT_RETENTION_DAYS, parseTrustProxy, type LogLevel, type NodeEnv, type TrustProxy } from './config-sections.js';
export { DEFAULT_STATEMENT_TIMEOUT_MS } from './database-config.js';

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
  /** How old a browser sign-in may be for managing credentials and single sign-on with its token (RFC 9470 step-up). */
  stepUpMaxAgeSeconds: number;
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
  /** Root fields (aliases counted, introspection not) one operation may select. */
  graphqlMaxRootFields: number;
  /** Pooled database connections one request may hold at once; its other statements wait for one of them. */
  graphqlMaxDbConnectionsPerRequest: number;
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

/** Bounds of GraphQL subscriptions over WebSocket. */
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

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n  - ${problems.join('\n  - ')}`);
    this.name = 'ConfigError';
  }
}

/**
 * Reads and validates the whole environment at once, so a bad deployment lists every problem, not
 * the first; the problems are listed section by section.
 */
export function loadConfig(env: Env = process.env): AppConfig {
  const reader = configReader(env);
  const runtime = runtimeConfig(reader);
  const production = runtime.nodeEnv === 'production';
  const http = httpConfig(reader);
  const config: AppConfig = {
    ...runtime,
    ...http,
    ...publicConfig(reader, http.port),
    ...databaseConfig(reader),
    ...securityConfig(reader, production),
    ...graphqlConfig(reader, production),
    ...documentsConfig(reader, production),
    ...liveUpdatesConfig(reader),
    ...auditConfig(reader),
  };
  if (reader.problems.length > 0) throw new ConfigError(reader.problems);
  return config;
}
