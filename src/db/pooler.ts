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

/**
 * DATABASE_PREPARED_STATEMENTS: whether the hot reads (src/db/read-path.ts) go as named prepared
 * statements, parsed and planned once per server session. `auto` is on wherever a session outlives
 * a transaction; PgBouncer 1.18 in transaction mode carries no named statement from one transaction
 * to the next (no `max_prepared_statements` before 1.21), so there every statement stays unnamed,
 * values still sent as bind parameters.
 */
export const PREPARED_STATEMENTS_SETTINGS = ['auto', 'on', 'off'] as const;
export type PreparedStatementsSetting = (typeof PREPARED_STATEMENTS_SETTINGS)[number];

/** The setting's problem for this pooler, if any: `on` behind a transaction pooler would fail at the second transaction. */
export function preparedStatementsProblem(setting: PreparedStatementsSetting, pooler: DatabasePooler): string | undefined {
  return setting === 'on' && !sessionStateSurvives(pooler)
    ? `DATABASE_PREPARED_STATEMENTS=on cannot work with DATABASE_POOLER=${pooler}: a named prepared statement does not outlive the transaction (use auto or off)`
    : undefined;
}

/** Whether named prepared statements are sent, for a setting that passed `preparedStatementsProblem`. */
export function namedStatementsAllowed(setting: PreparedStatementsSetting, pooler: DatabasePooler): boolean {
  const problem = preparedStatementsProblem(setting, pooler);
  if (problem) throw new Error(problem);
  return setting === 'on' || (setting === 'auto' && sessionStateSurvives(pooler));
}
