import { ConnectionException, DeadlockException, LockWaitTimeoutException } from '@mikro-orm/core';

/**
 * SQLSTATEs that say "not now" rather than "wrong": the server is shutting down or refusing
 * connections, a statement or lock timeout fired, or contention outlasted its retries.
 */
const TRANSIENT_SQLSTATES = new Set([
  '57014', // query_canceled (statement_timeout)
  '55P03', // lock_not_available (lock_timeout)
  '40001', // serialization_failure
  '40P01', // deadlock_detected
  '53300', // too_many_connections
  '57P01', // admin_shutdown
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now
  '25006', // read_only_sql_transaction: a write reached a server still (or again) in recovery during a failover
]);
const TRANSIENT_NODE_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENOTFOUND']);
const TRANSIENT_MESSAGES = [
  /connection terminated/i, // pg: the server or the network dropped it; also pg-pool's connect timeout
  /timeout exceeded when trying to connect/i, // pg-pool: no connection free within the acquire timeout
  /driver has already been destroyed/i,
  /connection .*(closed|ended)/i,
  /cannot use a pool after calling end/i, // the pool is shutting down
  /is not queryable/i, // pg: a client whose connection broke or closed
  /PGlite is clos(ed|ing)/i, // the embedded database is shutting down
  /commit not confirmed by a synchronous standby/i, // src/db/pool-guards.ts: the standby's confirmation did not come in time
];

/** True when a database error means the database is away or busy, so the request may be retried. */
export function isDatabaseUnavailable(error: unknown): boolean {
  for (let current = error, depth = 0; current instanceof Error && depth < 5; current = current.cause, depth++) {
    if (current instanceof ConnectionException || current instanceof DeadlockException || current instanceof LockWaitTimeoutException) return true;
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string' && (TRANSIENT_SQLSTATES.has(code) || TRANSIENT_NODE_CODES.has(code))) return true;
    if (TRANSIENT_MESSAGES.some((pattern) => pattern.test(current.message))) return true;
  }
  return false;
}
