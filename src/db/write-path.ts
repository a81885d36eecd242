import type { EntityManager } from '@mikro-orm/sql';
import { CompiledQuery } from 'kysely';
import { transactionRows } from './bound-statements.js';

/**
 * The one place that decides how bulk writes reach the database without the unit of work. A
 * write that checks a batch and changes it (updating up to 100 users) runs plain statements on
 * the transaction's connection: the lock statement reads only the columns the checks need, and
 * one UPDATE applies every element's own changes and returns the rows to present. No entity is
 * built, registered or compared. Writes that create rows or cascade through features keep
 * entities; every write still runs inside `TransactionRunner.run` (lock timeout, retries).
 *
 * Why plain statements: loading 100 entities, computing their change sets and batching the flush
 * cost more CPU than the statements themselves (docs/BENCHMARKS.md, the write path).
 */
export interface WritePath {
  /**
   * Rows of a statement run in the transaction `tx` belongs to. `?` marks each parameter, bound
   * rather than written into the text (src/db/bound-statements.ts); a list is one parameter (`= any(?)`).
   */
  rows<T extends object>(sql: string, params: readonly unknown[]): Promise<T[]>;
}

export function writePath(tx: EntityManager): WritePath {
  return {
    rows: <T extends object>(sql: string, params: readonly unknown[]) => transactionRows<T>(tx, sql, params),
  };
}

/** A plain update of many rows by key, each row with its own subset of columns to change. */
export interface PatchUpdate {
  table: string;
  /** The key column, matched against each patch's `key` field. */
  key: string;
  /** Patch field -> column. A field absent from a patch keeps the column; a null clears it. */
  columns: Readonly<Record<string, string>>;
  /** Patches: the key field plus the fields to change, values as the column stores them (text). */
  patches: readonly Readonly<Record<string, unknown>>[];
  /** Further conditions on the target rows (e.g. the account), with their parameters. */
  where: { sql: string; params: readonly unknown[] };
  /** A timestamp column set to now() on the rows whose values change, and only on those. */
  touched?: string;
  /**
   * Patch field -> column (and its SQL type, the JSON text cast to it), written like `columns` but
   * not a change of the row's values: `touched` stays as they leave it (bookkeeping about a field,
   * such as who set it).
   */
  bookkeeping?: Readonly<Record<string, { column: string; type: string }>>;
  /** The RETURNING list (columns of the table: the new values). */
  returning: string;
}

/**
 * One UPDATE ... FROM a JSON array of the patches: a field absent from a patch is not a key of its
 * JSON object (`->` is SQL NULL), a null is JSON null (`->>` is SQL NULL). The patches travel
 * as one parameter, whatever their number, so the statement text does not grow with the batch.
 */
export function patchUpdateStatement(update: PatchUpdate): { sql: string; params: unknown[] } {
  const given = (field: string) => `patch.value -> ${quoteLiteral(field)} is not null`;
  const value = (field: string) => `patch.value ->> ${quoteLiteral(field)}`;
  const fields = Object.keys(update.columns);
  const assignments = fields.map((field) => {
    const column = update.columns[field]!;
    return `${column} = case when ${given(field)} then ${value(field)} else ${update.table}.${column} end`;
  });
  if (update.touched) {
    const changed = fields.map((field) => `(${given(field)} and ${value(field)} is distinct from ${update.table}.${update.columns[field]})`).join(' or ');
    assignments.push(`${update.touched} = case when ${changed} then now() else ${update.table}.${update.touched} end`);
  }
  const bookkeeping = Object.entries(update.bookkeeping ?? {});
  for (const [field, { column, type }] of bookkeeping) {
    assignments.push(`${column} = case when ${given(field)} then (${value(field)})::${type} else ${update.table}.${column} end`);
  }
  const patches = update.patches.map((patch) => {
    const json: Record<string, unknown> = { [update.key]: patch[update.key] };
    for (const field of [...fields, ...bookkeeping.map(([name]) => name)]) if (patch[field] !== undefined) json[field] = patch[field];
    return json;
  });
  // The keys again as a list: with them the planner reaches the rows through the key's index
  // (it cannot look into the JSON to estimate the join, and would scan the table).
  return {
    sql: `update ${update.table} set ${assignments.join(', ')}
           from jsonb_array_elements(?::jsonb) as patch(value)
          where ${update.table}.${update.key} = any(?) and ${update.table}.${update.key} = ${value(update.key)} and ${update.where.sql}
          returning ${update.returning}`,
    params: [JSON.stringify(patches), patches.map((patch) => patch[update.key]), ...update.where.params],
  };
}

/** Field names are ours (code, not input); quoting keeps a stray quote from ending the literal. */
function quoteLiteral(text: string): string {
  return `'${text.replaceAll("'", "''")}'`;
}

/**
 * An argument of a function call, sent as a bound parameter typed by the function's parameter: an
 * array travels as a PostgreSQL array literal, bytes as binary.
 */
export interface BoundArgument {
  value: string | number | boolean | null | readonly string[] | readonly number[] | Uint8Array;
}

/** A call of a database function (of the schema, or built in like `pg_notify`), its arguments bound. */
export interface FunctionCall {
  name: string;
  args: readonly BoundArgument[];
}

const FUNCTION_NAME = /^[a-z_][a-z0-9_]*$/;

function statementText(calls: readonly FunctionCall[]): string {
  let parameter = 0;
  const expressions = calls.map((call) => {
    // Names are the code's, never input: checked so that a slip cannot become SQL.
    if (!FUNCTION_NAME.test(call.name)) throw new Error(`not a function name: ${JSON.stringify(call.name)}`);
    return `${call.name}(${call.args.map(() => `$${++parameter}`).join(', ')})`;
  });
  return `select ${expressions.join(', ')}`;
}

/**
 * Makes `calls`, in order, in one statement on the transaction `tx` belongs to: the write path's
 * commit hooks (live updates' `pg_notify`, the audit trail's append) share one round trip instead
 * of one each. Arguments are bound rather than written into the statement: MikroORM's `execute`
 * inlines every value as an escaped literal, built a character at a time, which for a batch's
 * JSON (60 KB for 100 audit records) costs more than building the batch. The statement is unnamed
 * (no server-side prepared statement survives it, as a transaction pooler requires) and is
 * reported to MikroORM's logger like the others, so statement counts and traces still see it.
 */
export async function callFunctions(tx: EntityManager, calls: readonly FunctionCall[]): Promise<void> {
  if (calls.length === 0) return;
  const query = CompiledQuery.raw(statementText(calls), calls.flatMap((call) => call.args.map((arg) => arg.value)));
  const started = performance.now();
  let failed = false;
  try {
    await tx.getKysely().executeQuery(query);
  } catch (error) {
    failed = true;
    throw error;
  } finally {
    tx.config.getLogger().logQuery({ query: query.sql, params: [...query.parameters], took: performance.now() - started, level: failed ? 'error' : 'info' });
  }
}
