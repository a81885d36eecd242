import { timingSafeEqual, createHash } from 'node:crypto';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/**
 * The process's Prometheus instruments. One registry per process (like the process metrics it
 * carries); several apps in one test process share it, so tests compare before/after values.
 *
 * No label ever carries an id, key or token: REST routes are labelled by their template
 * (`/users/{id}`), GraphQL operations by a bounded set of names, errors by their code.
 */
export const metricsRegistry = new Registry();
collectDefaultMetrics({ register: metricsRegistry });

const LATENCY_BUCKETS = [0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

export const httpRequests = new Counter({
  name: 'http_requests_total',
  help: 'HTTP requests answered, by method, route template and status.',
  labelNames: ['method', 'route', 'status'] as const,
  registers: [metricsRegistry],
});

export const httpRequestDuration = new Histogram({
  name: 'http_request_duration_seconds',
  help: 'Time from receiving a request to finishing its response, by method and route template.',
  labelNames: ['method', 'route'] as const,
  buckets: LATENCY_BUCKETS,
  registers: [metricsRegistry],
});

export const graphqlOperations = new Counter({
  name: 'graphql_operations_total',
  help: 'GraphQL operations executed, by face (graphql or rest), operation type, name and outcome.',
  labelNames: ['face', 'type', 'operation', 'outcome'] as const,
  registers: [metricsRegistry],
});

export const graphqlOperationDuration = new Histogram({
  name: 'graphql_operation_duration_seconds',
  help: 'Execution time of GraphQL operations, by face, operation name and outcome.',
  labelNames: ['face', 'operation', 'outcome'] as const,
  buckets: LATENCY_BUCKETS,
  registers: [metricsRegistry],
});

export const apiErrors = new Counter({
  name: 'api_errors_total',
  help: 'Errors answered, by face and code (v2 API code on REST, extensions.code on GraphQL).',
  labelNames: ['face', 'code'] as const,
  registers: [metricsRegistry],
});

export const rateLimitDecisions = new Counter({
  name: 'rate_limit_decisions_total',
  help: 'Rate-limit decisions, by decision (allowed or limited) and the store that took it (memory, redis, insurance).',
  labelNames: ['decision', 'store'] as const,
  registers: [metricsRegistry],
});

export const delegationsRevoked = new Counter({
  name: 'oauth_delegations_revoked_total',
  help: 'OAuth delegations revoked, by reason.',
  labelNames: ['reason'] as const,
  registers: [metricsRegistry],
});

export const dbPoolAcquireDuration = new Histogram({
  name: 'db_pool_acquire_duration_seconds',
  help: 'Time waited for a PostgreSQL pool connection (PostgreSQL only).',
  buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5],
  registers: [metricsRegistry],
});

export const databasePresentingReads = new Counter({
  name: 'db_presenting_reads_total',
  help: 'Presenting reads that may use a read replica, by where they ran (primary, replica-N) and why (replica, no_replica, own_write, replica_failed).',
  labelNames: ['target', 'reason'] as const,
  registers: [metricsRegistry],
});

export const replicaLag = new Gauge({
  name: 'db_replica_lag_seconds',
  help: 'How far each read replica (replica-N, in DATABASE_REPLICA_URLS order) is behind the primary: the age of the oldest primary WAL position it has not replayed.',
  labelNames: ['replica'] as const,
  registers: [metricsRegistry],
});

export const replicaUp = new Gauge({
  name: 'db_replica_up',
  help: '1 when a read replica answered its last probe, 0 when it did not.',
  labelNames: ['replica'] as const,
  registers: [metricsRegistry],
});

export interface PoolStats {
  max: number;
  total: number;
  idle: number;
  waiting: number;
}

let poolStats: (() => PoolStats | undefined) | undefined;
let rateLimitStoreUp: (() => number | undefined) | undefined;

new Gauge({
  name: 'db_pool_connections',
  help: 'PostgreSQL pool connections by state (max, total, idle, in_use, waiting clients). Absent on the embedded database.',
  labelNames: ['state'] as const,
  registers: [metricsRegistry],
  collect() {
    this.reset();
    const stats = poolStats?.();
    if (!stats) return;
    this.set({ state: 'max' }, stats.max);
    this.set({ state: 'total' }, stats.total);
    this.set({ state: 'idle' }, stats.idle);
    this.set({ state: 'in_use' }, stats.total - stats.idle);
    this.set({ state: 'waiting' }, stats.waiting);
  },
});

new Gauge({
  name: 'redis_up',
  help: '1 while Redis (role rate_limit: the shared rate-limit counters) is connected, 0 while limits fall back to per-instance memory. Absent without REDIS_URL.',
  labelNames: ['role'] as const,
  registers: [metricsRegistry],
  collect() {
    this.reset();
    const up = rateLimitStoreUp?.();
    if (up !== undefined) this.set({ role: 'rate_limit' }, up);
  },
});

/** The latest opened database's pool is the one reported (one server per process). */
export function reportPoolStats(source: () => PoolStats | undefined): void {
  poolStats = source;
}

export function reportRateLimitStore(source: () => number | undefined): void {
  rateLimitStoreUp = source;
}

const MAX_OPERATION_NAMES = 200;
const OPERATION_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;
const reservedOperationNames = new Set<string>();
const seenOperationNames = new Set<string>();

/** The server's own operations (the REST facade's documents) always keep their names, however many clients invent. */
export function reserveOperationName(name: string | undefined): void {
  if (name && OPERATION_NAME.test(name)) reservedOperationNames.add(name);
}

/**
 * Client-chosen operation names become labels only while there are few of them: the first
 * 200 distinct well-formed names are kept, later ones count as `(other)`, so no client can make
 * the series count grow without bound.
 */
export function operationLabel(name: string | null | undefined): string {
  if (!name) return '(anonymous)';
  if (reservedOperationNames.has(name) || seenOperationNames.has(name)) return name;
  if (!OPERATION_NAME.test(name) || seenOperationNames.size >= MAX_OPERATION_NAMES) return '(other)';
  seenOperationNames.add(name);
  return name;
}

const routeTemplates = new Map<string, string>();

/** Express route path (`/users/:id`) to the label form (`/users/{id}`); route paths are few, so each is converted once. */
export function routeTemplate(path: string): string {
  let template = routeTemplates.get(path);
  if (template === undefined) {
    template = path.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
    routeTemplates.set(path, template);
  }
  return template;
}

/** Compares a presented bearer token with the configured one without leaking its length or content through timing. */
export function metricsTokenMatches(configured: string, authorization: string | undefined): boolean {
  const presented = /^Bearer\s+(\S+)$/i.exec(authorization ?? '')?.[1];
  if (!presented) return false;
  const digest = (value: string) => createHash('sha256').update(value).digest();
  return timingSafeEqual(digest(presented), digest(configured));
}

export const liveConnections = new Gauge({
  name: 'live_connections',
  help: 'Open GraphQL-over-WebSocket connections (acknowledged: their credential was accepted).',
  registers: [metricsRegistry],
});

export const liveSubscriptions = new Gauge({
  name: 'live_subscriptions',
  help: 'Active GraphQL subscriptions, over all connections.',
  registers: [metricsRegistry],
});

export const liveEventsSent = new Counter({
  name: 'live_events_sent_total',
  help: 'Subscription events sent to clients, by subscription field.',
  labelNames: ['field'] as const,
  registers: [metricsRegistry],
});

export const liveEventsDropped = new Counter({
  name: 'live_events_dropped_total',
  help: 'Subscription events not delivered, by reason (slow_client: the connection was closed for not reading; undecodable; overflow).',
  labelNames: ['reason'] as const,
  registers: [metricsRegistry],
});
