import type { EntityManager } from '@mikro-orm/sql';
import { CompiledQuery } from 'kysely';

/**
 * How the read path's and the write path's SQL carries its values: `?` in the text, each value a
 * bind parameter (a list is one parameter: `= any(?)`), never written into the text. The read path
 * sends such statements on its own connections; inside a write they go on the transaction's
 * connection (`transactionRows`). MikroORM's `execute` would instead inline every value as an escaped
 * literal, built a character at a time (for a bulk update's patches, 10 KB of JSON per 100 users),
 * so each write would send a text of its own, and a value would become SQL text.
 */
export interface BoundStatement {
  /** The text with `$1`, `$2`, ... for the `?` placeholders. */
  text: string;
  parameters: number;
  /** Set by the read path for a prepared statement: derived from the text, so it is the same on every connection and every instance. */
  name?: string;
}

/** Statement texts whose `$n` form is kept (converting is a scan of the text); past it, converted each time. */
const MAX_KEPT_STATEMENTS = 2_000;
const kept = new Map<string, BoundStatement>();

/** The `$n` form of a statement text, kept for the next use while there is room. */
function boundStatement(sql: string): BoundStatement {
  return keptStatement(sql) ?? numberedPlaceholders(sql);
}

/** The one `$n` form kept for a statement text (made now if there is room), or undefined once the store is full. */
export function keptStatement(sql: string): BoundStatement | undefined {
  let statement = kept.get(sql);
  if (!statement && kept.size < MAX_KEPT_STATEMENTS) kept.set(sql, (statement = numberedPlaceholders(sql)));
  return statement;
}

/**
 * `?` placeholders (outside quoted literals and identifiers) as PostgreSQL's `$1`, `$2`, ...; `\?`
 * is a literal question mark, as in MikroORM's `execute`.
 */
export function numberedPlaceholders(sql: string): BoundStatement {
  let text = '';
  let parameters = 0;
  let quote: string | undefined;
  for (let i = 0; i < sql.length; i++) {
    const char = sql[i]!;
    if (quote !== undefined) {
      // A doubled quote inside a literal closes and reopens it: the same text either way.
      if (char === quote) quote = undefined;
      text += char;
    } else if (char === "'" || char === '"') {
      quote = char;
      text += char;
    } else if (char === '\\' && sql[i + 1] === '?') {
      text += '?';
      i++;
    } else if (char === '?') {
      if (sql[i + 1] === '?') throw new Error('bound statement: `??` (an identifier placeholder) is not a bind parameter');
      text += `$${++parameters}`;
    } else {
      text += char;
    }
  }
  return { text, parameters };
}

/**
 * Rows of a statement run on the connection of the transaction `tx` belongs to, its values bound.
 * The statement is unnamed (no server-side prepared statement outlives it, as a transaction pooler
 * requires), reported to MikroORM's logger like its own (statement counts and traces see it), and
 * a failure is converted as `em.execute` converts it, so callers classify it the same.
 */
export async function transactionRows<T extends object>(tx: EntityManager, sql: string, params: readonly unknown[]): Promise<T[]> {
  const statement = boundStatement(sql);
  if (statement.parameters !== params.length) throw new Error(`bound statement: ${statement.parameters} placeholders, ${params.length} values`);
  const logger = tx.config.getLogger();
  const started = performance.now();
  try {
    const { rows } = await tx.getKysely().executeQuery<T>(CompiledQuery.raw(statement.text, [...params]));
    logger.logQuery({ query: sql, params: [...params], took: performance.now() - started, results: rows.length, level: 'info' });
    return rows as T[];
  } catch (error) {
    logger.logQuery({ query: sql, params: [...params], took: performance.now() - started, level: 'error' });
    throw tx.getDriver().convertException(error as Error);
  }
}
