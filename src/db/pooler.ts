/**
 * What stands between the instances and PostgreSQL (DATABASE_POOLER), and so what a connection may
 * rely on between two transactions. The one place to consult before relying on session state
 * (startup parameters, a session `SET`, a named prepared statement, a session advisory lock, `LISTEN`).
 *
 * - `none`: each pooled connection is one server session for its whole life.
 * - `pgbouncer-transaction`: PgBouncer with `pool_mode = transaction`; consecutive transactions of
 *   one client connection may run on different server sessions, and PgBouncer (1.18) refuses
 *   startup parameters other than a few it tracks (`statement_timeout` among the refused).
 */
export const DATABASE_POOLERS = ['none', 'pgbouncer-transaction'] as const;
export type DatabasePooler = (typeof DATABASE_POOLERS)[number];

/** False behind a transaction pooler: only what a transaction sets for itself (`SET LOCAL`) holds. */
export function sessionStateSurvives(pooler: DatabasePooler): boolean {
  return pooler === 'none';
}
