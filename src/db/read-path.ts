import type { EntityManager } from '@mikro-orm/sql';
import { routePresentingRead } from './read-routing.js';
import type { StatementConnection } from './replicas.js';

/**
 * The one place that decides how presenting reads reach the database. Reads that only present data
 * (users list/show/viewer, counts, connection pages) run one plain SQL statement through the
 * request's connection and get plain objects back: no entity construction, no identity map, no
 * unit of work, only the columns asked for. Writes keep entities and transactions, except the ones
 * src/db/write-path.ts takes.
 *
 * Measured under load (docs/BENCHMARKS.md): entity hydration and the identity map were the largest
 * share of a read request's CPU; a plain row costs a fraction of that.
 */
export interface ReadPath {
  /**
   * Rows as plain objects. `replica` reads may be served by a read replica (src/db/read-routing.ts
   * decides; never credentials, never inside a write) and so may lag the primary for other clients.
   */
  rows<T extends object>(sql: string, params: readonly unknown[], options?: { replica?: boolean }): Promise<T[]>;
  /** A `count(*)` (or any single number in column `n`): counts without loading rows. */
  count(sql: string, params: readonly unknown[], options?: { replica?: boolean }): Promise<number>;
  /**
   * How many rows the planner expects each statement to return, from the table statistics, without
   * running them (one round trip): for choosing between strategies that give the same, exact answer.
   */
  estimate(statements: readonly { sql: string; params: readonly unknown[] }[], options?: { replica?: boolean }): Promise<number[]>;
  /**
   * The histogram bounds ANALYZE keeps for a column (pg_stats, as text, in the column's order; empty
   * without statistics), read once per STATISTICS_TTL_MS per database: they change only when the
   * table is analyzed, and reading them costs milliseconds (the array is converted through text).
   */
  histogram(table: string, column: string): Promise<readonly string[]>;
}

/** How long histogram bounds are reused before they are read again (autovacuum's ANALYZE runs minutes apart). */
export const STATISTICS_TTL_MS = 60_000;
/** Per database (its primary connection): table.column -> bounds and when they were read. */
const histograms = new WeakMap<object, Map<string, { readAt: number; bounds: Promise<readonly string[]> }>>();

export function readPath(em: EntityManager): ReadPath {
  const primary = em.getConnection('write') as StatementConnection;
  const run = <T>(sql: string, params: readonly unknown[], replica: boolean | undefined): Promise<T> => {
    const read = (connection: StatementConnection) => connection.execute<T>(sql, [...params], 'all');
    // Inside a write every statement stays on the primary.
    return replica && !em.isInTransaction() ? routePresentingRead(em, primary, read) : read(primary);
  };
  return {
    rows<T extends object>(sql: string, params: readonly unknown[], options: { replica?: boolean } = {}) {
      return run<T[]>(sql, params, options.replica);
    },
    async count(sql: string, params: readonly unknown[], options: { replica?: boolean } = {}) {
      const [row] = await run<{ n: number | string }[]>(sql, params, options.replica);
      return Number(row?.n ?? 0);
    },
    async estimate(statements: readonly { sql: string; params: readonly unknown[] }[], options: { replica?: boolean } = {}) {
      const sql = statements.map((statement) => `(${statement.sql})`).join(' union all ');
      const [row] = await run<{ 'QUERY PLAN': unknown }[]>(`explain (format json) ${sql}`, statements.flatMap((statement) => statement.params), options.replica);
      type Node = { 'Plan Rows': number; Plans?: Node[] };
      const text = row?.['QUERY PLAN'];
      const [{ Plan: plan }] = (typeof text === 'string' ? JSON.parse(text) : text) as [{ Plan: Node }];
      // One statement is the plan itself; several are the children of its Append.
      return (statements.length === 1 ? [plan] : plan.Plans!).map((node) => Number(node['Plan Rows']));
    },
    histogram(table: string, column: string) {
      let cached = histograms.get(primary);
      if (!cached) histograms.set(primary, (cached = new Map()));
      const key = `${table}.${column}`;
      const hit = cached.get(key);
      if (hit && Date.now() - hit.readAt < STATISTICS_TTL_MS) return hit.bounds;
      const bounds = run<{ bounds: string[] | null }[]>(
        'select histogram_bounds::text::text[] as bounds from pg_stats where schemaname = current_schema() and tablename = ? and attname = ?',
        [table, column],
        false,
      ).then(([row]) => row?.bounds ?? []);
      cached.set(key, { readAt: Date.now(), bounds });
      // A failed read is not kept: the next search asks again.
      bounds.catch(() => cached.delete(key));
      return bounds;
    },
  };
}

/**
 * A timestamptz column selected for a plain row: the driver hands timestamps over as text in the
 * server's format, so select ISO 8601 and turn it into a Date with `toDate`.
 */
export function isoTimestamp(column: string, alias: string): string {
  return `to_json(${column}) #>> '{}' as "${alias}"`;
}

export function toDate(value: Date | string): Date {
  return value instanceof Date ? value : new Date(value);
}

/** `?, ?, ?` for a list of values (em.execute inlines each as an escaped literal). */
export function placeholders(values: readonly unknown[]): string {
  return values.map(() => '?').join(', ');
}

/** Escapes `\`, `%` and `_` so a user's term matches literally inside a LIKE pattern. */
export function escapeLike(value: string): string {
  return value.replace(/[\\%_]/g, (char) => `\\${char}`);
}
