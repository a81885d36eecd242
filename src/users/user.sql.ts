import { isoTimestamp } from '../db/read-path.js';
import { USER_FIELDS } from './user.fields.js';

/**
 * SQL about users for every feature: the conditions that say which rows of `users` are users, and
 * the select list of the `User` type's fields. Other features import these from here, never from
 * the users feature's other files.
 */

/**
 * A row of `users` that is a live user: a deleted user's row stays (a tombstone: its id is never
 * reused, and its audit trail still names it), and is nobody's user.
 */
export const LIVE_USER = 'deleted_at is null';

/** A live user who is not suspended, of `users` unaliased. */
export const ACTIVE_USER = `${LIVE_USER} and suspended_at is null`;

/** LIVE_USER of `users` under an alias (or its table name): `liveUser('u')` is `u.deleted_at is null`. */
export function liveUser(alias: string): string {
  return `${alias}.${LIVE_USER}`;
}

/** A live user who is not suspended: one whose credentials and sessions work. */
export function activeUser(alias: string): string {
  return `${liveUser(alias)} and ${alias}.suspended_at is null`;
}

/** Select lists already spelled out, by their fields in order: a route's document asks for the same fields every time. */
const selectLists = new Map<string, string>();
/** The combinations of columns kept in `selectLists`, at most (past it, a list is spelled out each time). */
const MAX_SELECT_LISTS = 256;

/** The select list for the selected fields, aliased to the GraphQL names. */
export function userSelectList(fields: Iterable<string>): string {
  let key = 'id,name';
  for (const field of fields) if (field !== 'id' && field !== 'name' && field in USER_FIELDS) key += `,${field}`;
  let list = selectLists.get(key);
  if (list === undefined) {
    list = [...new Set(key.split(','))].map((field) => {
      const spec: { column: string; timestamp?: true } = USER_FIELDS[field as keyof typeof USER_FIELDS];
      if (spec.timestamp) return isoTimestamp(spec.column, field);
      return spec.column === field ? spec.column : `${spec.column} as "${field}"`;
    }).join(', ');
    if (selectLists.size < MAX_SELECT_LISTS) selectLists.set(key, list);
  }
  return list;
}

/** The select list of every field of `User` that has a column. */
export const EVERY_USER_COLUMN = userSelectList(Object.keys(USER_FIELDS));

/**
 * The text of a statement built around a select list (`userSelectList`), kept in `cache` by that
 * list. The read path finds a statement's prepared form by its text, and finds the same string
 * object at once where a text built afresh costs it a pass over the whole text
 * (docs/BENCHMARKS.md, "Figures the code rests on").
 */
export function statementTextForColumns(cache: Map<string, string>, columns: string, build: (columns: string) => string): string {
  let text = cache.get(columns);
  if (text === undefined) {
    text = build(columns);
    if (cache.size < MAX_SELECT_LISTS) cache.set(columns, text);
  }
  return text;
}
