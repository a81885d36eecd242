import path from 'node:path';
import { isIP } from 'node:net';
import { DEFAULT_MAX_COST } from '../graphql/cost.js';
import { DEFAULT_MAX_ROOT_FIELDS } from '../graphql/limits.js';
import { DEFAULT_DB_CONNECTIONS_PER_REQUEST } from '../db/connection-share.js';
import type { AppConfig } from './config.js';
import type { ConfigReader } from './config-reader.js';

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


/** `AUDIT_RETENTION_DAYS` unless configured. */
export const DEFAULT_AUDIT_RETENTION_DAYS = 365;

/** What kind of deployment this is, how much it logs, and where it keeps its files. */
export function runtimeConfig(reader: ConfigReader): Pick<AppConfig, 'nodeEnv' | 'logLevel' | 'dataDir'> {
  const nodeEnvRaw = reader.read('NODE_ENV') ?? 'development';
  let nodeEnv: NodeEnv = 'development';
  if (nodeEnvRaw === 'development' || nodeEnvRaw === 'production' || nodeEnvRaw === 'test') nodeEnv = nodeEnvRaw;
  else reader.problems.push(`NODE_ENV must be development, production or test (got "${nodeEnvRaw}")`);
  return {
    nodeEnv,
    logLevel: reader.oneOf('LOG_LEVEL', LOG_LEVELS, nodeEnv === 'test' ? 'silent' : 'info', 'info'),
    dataDir: path.resolve(reader.read('DATA_DIR') ?? '.data'),
  };
}

/** The HTTP server: its port, whom it believes about the client, and how long connections may take. */
export function httpConfig(reader: ConfigReader): Pick<AppConfig, 'port' | 'trustProxy' | 'corsOrigins' | 'http' | 'shutdownDrainMs' | 'shutdownGraceMs'> {
  const port = reader.integer('PORT', 4000, 0, 65535);
  const trustProxy = parseTrustProxy(reader.read('TRUST_PROXY'));
  if (trustProxy.problem) reader.problems.push(trustProxy.problem);
  const corsOrigins = reader.list('CORS_ORIGINS');
  for (const origin of corsOrigins) {
    try {
      new URL(origin);
    } catch {
      reader.problems.push(`CORS_ORIGINS must be a comma-separated list of origins (bad entry "${origin}")`);
    }
  }
  const http = {
    headersTimeoutMs: reader.integer('HTTP_HEADERS_TIMEOUT_MS', 10_000, 100, 600_000),
    requestTimeoutMs: reader.integer('HTTP_REQUEST_TIMEOUT_MS', 30_000, 100, 3_600_000),
    keepAliveTimeoutMs: reader.integer('HTTP_KEEP_ALIVE_TIMEOUT_MS', 65_000, 1_000, 3_600_000),
    maxUnreadResponseBytes: reader.integer('HTTP_MAX_UNREAD_RESPONSE_BYTES', 1_048_576, 16_384, 1_073_741_824),
    stalledClientTimeoutMs: reader.integer('HTTP_STALLED_CLIENT_TIMEOUT_MS', 30_000, 100, 3_600_000),
  };
  if (http.requestTimeoutMs < http.headersTimeoutMs) reader.problems.push('HTTP_REQUEST_TIMEOUT_MS must be at least HTTP_HEADERS_TIMEOUT_MS');
  return {
    port,
    trustProxy: trustProxy.value,
    corsOrigins,
    http,
    shutdownDrainMs: reader.integer('SHUTDOWN_DRAIN_MS', 5_000, 0, 300_000),
    shutdownGraceMs: reader.integer('SHUTDOWN_GRACE_MS', 10_000, 0, 300_000),
  };
}

/** The addresses clients are given (by default this server's own) and the vendor its media types name. */
export function publicConfig(reader: ConfigReader, port: number): Pick<AppConfig, 'publicApiUrl' | 'publicWebUrl' | 'publicFeedUrl' | 'apiVendor'> {
  const apiVendor = reader.read('API_VENDOR') ?? 'pagerduty';
  if (!/^[a-z0-9][a-z0-9.-]*$/i.test(apiVendor)) reader.problems.push(`API_VENDOR must be a plain vendor name such as "pagerduty" (got "${apiVendor}")`);
  return {
    publicApiUrl: reader.url('PUBLIC_API_URL', `http://localhost:${port}`, ['http:', 'https:']),
    publicWebUrl: reader.url('PUBLIC_WEB_URL', `http://localhost:${port}`, ['http:', 'https:']),
    publicFeedUrl: reader.url('PUBLIC_FEED_URL', `http://localhost:${port}`, ['http:', 'https:']),
    apiVendor,
  };
}

/** The server's secret, the metrics endpoint's token, and the rate limit with the Redis that shares it between instances. */
export function securityConfig(reader: ConfigReader, production: boolean): Pick<AppConfig, 'secretKey' | 'metricsToken' | 'rateLimitPerMinute' | 'stepUpMaxAgeSeconds' | 'redisUrl' | 'redisCommandTimeoutMs'> {
  const secretKey = reader.read('SECRET_KEY');
  if (secretKey !== undefined && secretKey.length < 32) reader.problems.push('SECRET_KEY must be at least 32 characters');
  if (production && secretKey === undefined) reader.problems.push('SECRET_KEY is required when NODE_ENV=production');
  const metricsToken = reader.read('METRICS_TOKEN');
  if (metricsToken !== undefined && !/^[\x21-\x7e]{24,}$/.test(metricsToken)) reader.problems.push('METRICS_TOKEN must be at least 24 printable characters without spaces');
  const redisUrl = reader.read('REDIS_URL');
  if (redisUrl !== undefined) reader.url('REDIS_URL', 'redis://localhost', ['redis:', 'rediss:']);
  return {
    secretKey,
    metricsToken,
    rateLimitPerMinute: reader.integer('RATE_LIMIT_PER_MINUTE', 960, 1, 1_000_000),
    stepUpMaxAgeSeconds: reader.integer('STEP_UP_MAX_AGE_SECONDS', 600, 1, 86_400),
    redisUrl,
    redisCommandTimeoutMs: reader.integer('REDIS_COMMAND_TIMEOUT_MS', 30, 5, 10_000),
  };
}

/** The GraphQL endpoint: what it shows outside production, and the bounds of what it runs. */
export function graphqlConfig(
  reader: ConfigReader,
  production: boolean,
): Pick<AppConfig, 'introspection' | 'landingPage' | 'graphqlMaxDepth' | 'graphqlMaxCost' | 'graphqlMaxRootFields' | 'graphqlMaxDbConnectionsPerRequest' | 'graphqlTrustedDocuments'> {
  return {
    introspection: reader.boolean('GRAPHQL_INTROSPECTION', !production),
    landingPage: reader.boolean('GRAPHQL_LANDING_PAGE', !production),
    graphqlMaxDepth: reader.integer('GRAPHQL_MAX_DEPTH', 12, 1, 100),
    graphqlMaxCost: reader.integer('GRAPHQL_MAX_COST', DEFAULT_MAX_COST, 1, 10_000_000),
    graphqlMaxRootFields: reader.integer('GRAPHQL_MAX_ROOT_FIELDS', DEFAULT_MAX_ROOT_FIELDS, 1, 1_000),
    graphqlMaxDbConnectionsPerRequest: reader.integer('GRAPHQL_MAX_DB_CONNECTIONS_PER_REQUEST', DEFAULT_DB_CONNECTIONS_PER_REQUEST, 1, 1_000),
    graphqlTrustedDocuments: reader.read('GRAPHQL_TRUSTED_DOCUMENTS') || undefined,
  };
}

/**
 * The REST face's OpenAPI document and the reference page that renders it: by default the page
 * follows the document (outside production); asked for without the document it is a mistake.
 */
export function documentsConfig(reader: ConfigReader, production: boolean): Pick<AppConfig, 'openapiDocument' | 'apiDocsPage'> {
  const openapiDocument = reader.boolean('OPENAPI_DOCUMENT', true);
  const apiDocsPage = reader.boolean('API_DOCS_PAGE', !production && openapiDocument);
  if (apiDocsPage && !openapiDocument) reader.problems.push('API_DOCS_PAGE needs OPENAPI_DOCUMENT (the page renders /openapi.json)');
  return { openapiDocument, apiDocsPage };
}

/** Bounds of GraphQL subscriptions over WebSocket. */
export function liveUpdatesConfig(reader: ConfigReader): Pick<AppConfig, 'liveUpdates'> {
  return {
    liveUpdates: {
      maxConnectionsPerCredential: reader.integer('LIVE_MAX_CONNECTIONS_PER_CREDENTIAL', 10, 1, 10_000),
      maxSubscriptionsPerConnection: reader.integer('LIVE_MAX_SUBSCRIPTIONS_PER_CONNECTION', 20, 1, 1_000),
      maxBufferedBytes: reader.integer('LIVE_MAX_BUFFERED_BYTES', 262_144, 1_024, 67_108_864),
      keepAliveMs: reader.integer('LIVE_KEEP_ALIVE_MS', 12_000, 1_000, 600_000),
    },
  };
}

/** The audit trail: the key of its chain (unset: derived from the server secret) and how long records are kept. */
export function auditConfig(reader: ConfigReader): Pick<AppConfig, 'auditChainKey' | 'auditRetentionDays'> {
  const auditChainKey = reader.read('AUDIT_CHAIN_KEY');
  if (auditChainKey !== undefined && auditChainKey.length < 32) reader.problems.push('AUDIT_CHAIN_KEY must be at least 32 characters');
  return {
    auditChainKey,
    auditRetentionDays: reader.integer('AUDIT_RETENTION_DAYS', DEFAULT_AUDIT_RETENTION_DAYS, 1, 36_500),
  };
}
