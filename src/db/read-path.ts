import { createHash } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/sql';
import { keptStatement, numberedPlaceholders, transactionRows, type BoundStatement } from './bound-statements.js';
import { connectionShareOf } from './connection-share.js';
import { routePresentingRead } from './read-routing.js';
import type { StatementConnection } from './replicas.js';

/**
 * The one place that decides how reads reach the database. Reads that only present data
 * (users list/show/viewer, counts, connection pages) and credential look-ups run one plain SQL
 * statement and get plain objects back: no entity construction, no identity map, no unit of work,
 * only the columns asked for. Writes keep entities and transactions, except the ones
 * src/db/write-path.ts takes.
 *
 * Each statement goes over the extended protocol with its values as bind parameters (never
 * inlined into the text as MikroORM's `execute` does): the text stays the same whatever the
 * values, and a value is data, whatever it contains. Hot statements (`prepared`) go as named
 * prepared statements where DATABASE_PREPARED_STATEMENTS allows (src/db/pooler.ts), so each
 * server session parses and plans them once and then receives only their values.
 *
 * Measured under load (docs/BENCHMARKS.md): entity hydration and the identity map were the largest
 * share of a read request's CPU; a plain row costs a fraction of that. Round two: statements as
 * simple-protocol text with inlined values cost a parse and plan per statement and longer socket
 * writes than a hand-written server's prepared statements.
 */
export interface ReadOptions {
  /**
   * May be served by a read replica (src/db/read-routing.ts decides; never credentials, never inside
   * a write), and so may lag the primary for other clients.
   */
  replica?: boolean;
  /**
   * Run by every request of its kind, with a plan that does not depend on its values (keys, limits;
   * not search terms, whose best plan does): a named prepared statement where allowed.
   */
  prepared?: boolean;
}

export interface ReadPath {
  /** Rows as plain objects. `?` marks each parameter; a list is one parameter (`= any(?)`). */
  rows<T extends object>(sql: string, params: readonly unknown[], options?: ReadOptions): Promise<T[]>;
  /** A `count(*)` (or any single number in column `n`): counts without loading rows. */
  count(sql: string, params: readonly unknown[], options?: ReadOptions): Promise<number>;
  /**
   * How many rows the planner expects each statement to return, from the table statistics, without
   * running them (one round trip): for choosing between strategies that give the same, exact answer.
   * Never prepared: the estimate is for these values.
   */
  estimate(statements: readonly { sql: string; params: readonly unknown[] }[], options?: { replica?: boolean }): Promise<number[]>;
  /**
   * The histogram bounds ANALYZE keeps for a column (pg_stats, as text, in the column's order; empty
   * without statistics), read once per STATISTICS_TTL_MS per database: they change only when the
   * table is analyzed, and reading them costs milliseconds (the array is converted through text).
   */
  histogram(table: string, column: string): Promise<readonly string[]>;
}

/** How an ORM's reads are sent (src/db/database.ts sets it when it opens the database). */
export interface ReadPathSettings {
  /** Hot statements as named prepared statements (PostgreSQL, and no transaction pooler in between). */
  namedStatements: boolean;
}

const settingsByOrm = new WeakMap<object, ReadPathSettings>();

/** Keyed by the ORM's configuration, which every entity manager forked from it shares. */
export function configureReadPath(em: EntityManager, settings: ReadPathSettings): void {
  settingsByOrm.set(em.config, settings);
}

/**
 * Named statements a process gives out, at most: every server session then holds at most this many,
 * whatever combinations of selected fields requests ask for. Past it, statements go unnamed.
 */
export const MAX_NAMED_STATEMENTS = 200;
let namesGiven = 0;

function bound(sql: string, prepared: boolean): BoundStatement {
  const statement = keptStatement(sql);
  // Past the bound a text is converted on each use and never named (names are counted once per kept text).
  if (!statement) return numberedPlaceholders(sql);
  if (prepared && statement.name === undefined && namesGiven < MAX_NAMED_STATEMENTS) {
    statement.name = `aag_${createHash('sha256').update(statement.text).digest('hex').slice(0, 24)}`;
    namesGiven++;
  }
  return statement;
}

/** What the driver's own client offers: `pg`'s pool (a query config with `name` is a named statement) and PGlite. */
interface NativeClient {
  query(config: { text: string; values: unknown[]; name?: string }): Promise<{ rows: unknown[] }>;
  query(text: string, values: unknown[]): Promise<{ rows: unknown[] }>;
}

const clients = new WeakMap<StatementConnection, NativeClient>();

async function nativeClient(connection: StatementConnection): Promise<NativeClient> {
  let client = clients.get(connection);
  if (!client) clients.set(connection, (client = (await connection.getNativeClient()) as NativeClient));
  return client;
}

/** How long histogram bounds are reused before they are read again (autovacuum's ANALYZE runs minutes apart). */
export const STATISTICS_TTL_MS = 60_000;
/** Per database (its primary connection): table.column -> bounds and when they were read. */
const histograms = new WeakMap<object, Map<string, { readAt: number; bounds: Promise<readonly string[]> }>>();

export function readPath(em: EntityManager): ReadPath {
  const named = settingsByOrm.get(em.config)?.namedStatements ?? false;
  const primary = em.getConnection('write') as StatementConnection;
  const logger = em.config.getLogger();
  const run = async <T extends object>(sql: string, params: readonly unknown[], options: ReadOptions): Promise<T[]> => {
    // Inside a write every statement joins its transaction, on the transaction's connection.
    if (em.isInTransaction()) return transactionRows<T>(em, sql, params);
    const statement = bound(sql, Boolean(options.prepared));
    // The name is the statement's; whether it is used is this database's setting (one process may open several).
    const name = named ? statement.name : undefined;
    if (statement.parameters !== params.length) throw new Error(`read path: ${statement.parameters} placeholders, ${params.length} values`);
    const read = async (connection: StatementConnection): Promise<T[]> => {
      const client = await nativeClient(connection);
      const values = [...params];
      const started = Date.now();
      try {
        const { rows } = name
          ? await client.query({ name, text: statement.text, values })
          : await client.query(statement.text, values);
        // Reported like MikroORM's own statements (tests count them, tracing makes spans of them).
        logger.logQuery({ query: sql, params, took: Date.now() - started, results: rows.length, level: 'info' });
        return rows as T[];
      } catch (error) {
        logger.logQuery({ query: sql, params, took: Date.now() - started, level: 'error' });
        // As em.execute reports it (ConnectionException and kin), so callers classify it the same.
        throw em.getDriver().convertException(error as Error);
      }
    };
    // Within the request's share of the pool: parallel resolvers queue here rather than take every pooled connection.
    const share = connectionShareOf(em);
    if (!share) return options.replica ? routePresentingRead(em, primary, read) : read(primary);
    const waiting = share.enter();
    if (waiting) await waiting;
    try {
      return await (options.replica ? routePresentingRead(em, primary, read) : read(primary));
    } finally {
      share.leave();
    }
  };
  return {
    rows<T extends object>(sql: string, params: readonly unknown[], options: ReadOptions = {}) {
      return run<T>(sql, params, options);
    },
    async count(sql: string, params: readonly unknown[], options: ReadOptions = {}) {
      const [row] = await run<{ n: number | string }>(sql, params, options);
      return Number(row?.n ?? 0);
    },
    async estimate(statements: readonly { sql: string; params: readonly unknown[] }[], options: { replica?: boolean } = {}) {
      const sql = statements.map((statement) => `(${statement.sql})`).join(' union all ');
      const [row] = await run<{ 'QUERY PLAN': unknown }>(`explain (format json) ${sql}`, statements.flatMap((statement) => statement.params), { replica: options.replica });
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
      const bounds = run<{ bounds: string[] | null }>(
        'select histogram_bounds::text::text[] as bounds from pg_stats where schemaname = current_schema() and tablename = ? and attname = ?',
        [table, column],
        {},
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

/** Escapes `\`, `%` and `_` so a user's term matches literally inside a LIKE pattern. */
export function escapeLike(value: string): string {
  return value.replace(/[\\%_]/g, (char) => `\\${char}`);
}
