import { isUserPrincipal, type Principal } from '../auth/principal.js';
import { escapeLike, isoTimestamp, toDate, type ReadOptions, type ReadPath } from '../db/read-path.js';
import { PUBLIC_ID_PATTERN } from '../db/public-id.js';
import { InvalidInputError, NotFoundError } from '../errors/domain-errors.js';
import type { UserFields } from './user.validation.js';

/**
 * A user as the presenting reads return it: a plain object with the `User` GraphQL type's field
 * names, holding only the columns the request selected (always `id` and `name`).
 */
export interface UserRow extends UserFields {
  id: string;
  name: string;
  avatarUrl?: string | null;
  invitationSent?: boolean;
  createdViaSso?: boolean;
  createdAt?: Date;
  updatedAt?: Date;
  /** False while suspended. */
  active?: boolean;
  /** Changes with every change of the row (updated_at in microseconds): an optimistic-concurrency token. */
  version?: string;
}

/** GraphQL field -> column of the fields a user's creation or update sets (UserFields). */
export const USER_FIELD_COLUMNS = {
  name: 'name',
  email: 'email',
  timeZone: 'time_zone',
  color: 'color',
  role: 'role',
  description: 'description',
  jobTitle: 'job_title',
  externalId: 'external_id',
} as const satisfies Record<keyof UserFields, string>;

/** `User.version`: what `expectedVersion` is compared with, in the statement that locks the row. */
export const USER_VERSION_SQL = '(floor(extract(epoch from updated_at) * 1000000))::bigint::text';

/** GraphQL field -> column. Fields not listed here (self, htmlUrl, other features' fields) need only `id`. */
const USER_COLUMNS: Record<keyof UserRow, string> = {
  id: 'id',
  ...USER_FIELD_COLUMNS,
  avatarUrl: 'avatar_url',
  invitationSent: 'invitation_sent',
  createdViaSso: 'created_via_sso',
  createdAt: 'created_at',
  updatedAt: 'updated_at',
  active: '(suspended_at is null)',
  version: USER_VERSION_SQL,
};
const TIMESTAMP_FIELDS = new Set<string>(['createdAt', 'updatedAt']);

/** The select list for the selected fields, aliased to the GraphQL names. */
export function userSelectList(fields: Iterable<string>): string {
  const wanted = new Set<string>(['id', 'name']);
  for (const field of fields) if (field in USER_COLUMNS) wanted.add(field);
  return [...wanted].map((field) => {
    const column = USER_COLUMNS[field as keyof UserRow];
    if (TIMESTAMP_FIELDS.has(field)) return isoTimestamp(column, field);
    return column === field ? column : `${column} as "${field}"`;
  }).join(', ');
}

/** Rows selected with `userSelectList`, as the GraphQL `User` type's resolvers take them. */
export async function userRows(selected: Promise<UserRow[]>): Promise<UserRow[]> {
  const rows = await selected;
  for (const row of rows) {
    if (row.createdAt !== undefined) row.createdAt = toDate(row.createdAt);
    if (row.updatedAt !== undefined) row.updatedAt = toDate(row.updatedAt);
  }
  return rows;
}

/** Users with all of the given values (emails compared ignoring case): the SCIM face's `eq` filters. */
export interface UserMatch {
  id?: string | null;
  email?: string | null;
  externalId?: string | null;
}

export interface UserListOptions {
  query?: string | null;
  /** Any of these matches (an empty list matches nobody); each is answered by a unique index. */
  match?: readonly UserMatch[] | null;
  first: number;
  offset?: number;
  after?: { name: string; id: string };
}

/** A page whose statements run only when asked: the rows for nodes/edges/pageInfo, the count for totalCount. */
export interface UserRowPage {
  slice(): Promise<{ items: UserRow[]; hasNextPage: boolean }>;
  countTotal(): Promise<number>;
}

/**
 * How a search page is found (README, "Searching users"). The planner estimates, from the
 * statistics of `search_text`, how many users match and how many the account has; the cheaper of
 * two exact paths is taken. The indexed path: a trigram index finds every match and only they are
 * ordered (its cost grows with the matches; it reads at most SEARCH_INDEXED_CAP of them, so a wrong
 * estimate costs that many, then the walk). The walk: the name order is walked in the btree that
 * carries `search_text`, testing each entry without reading the table row, until the page is full
 * (its cost grows with the users before the page's last match). `search_text` is
 * `lower(name || chr(1) || email)`: a term is a substring of the name or the email exactly when its
 * lower-cased form is one of that string (chr(1) cannot occur in such a term, so no match spans
 * both); for terms of one or two characters the index tests that string with every character
 * tripled, where "zq" occurs exactly when "zzzqqq" does.
 */
export const SEARCH_INDEXED_CAP = 10_000;
/**
 * Cost of one match on the indexed path, in entries walked (measured, docs/BENCHMARKS.md: an entry
 * walked ~0.27 us; a match found through the index and fetched ~4 us; ~10 us for a term of one or
 * two characters, whose index recheck runs the character tripling on each row).
 */
const INDEXED_MATCH_COST = { long: 15, short: 40 };
/** Up to this many expected matches the indexed path is taken whatever the walk would cost (about a millisecond). */
const SEARCH_ALWAYS_INDEXED = 200;
const SEARCH_TEXT = 'lower(name || chr(1) || email)';
/** Must stay the expression of `users_search_short_terms_idx`, character for character. */
const tripled = (text: string) => `regexp_replace(${text}, '(.)', '\\1\\1\\1', 'g')`;
/** A LIKE pattern built in SQL, so the term is lower-cased by the same lower() as the indexes. */
const likePattern = (term: string) => `'%' || replace(replace(replace(${term}, '\\', '\\\\'), '%', '\\%'), '_', '\\_') || '%'`;

/** The trigram indexes' condition; it names the expression they index, so only they can serve it. */
function indexedCondition(term: string): { sql: string; params: unknown[] } {
  if ([...term].length <= 2) {
    return { sql: `${tripled(SEARCH_TEXT)} like ${likePattern(tripled('lower(?)'))}`, params: [term] };
  }
  return { sql: `${SEARCH_TEXT} like ${likePattern('lower(?)')}`, params: [term] };
}

/** `prepared`: a statement whose plan does not depend on its values (ReadOptions.prepared). */
type Statement = { sql: string; params: unknown[]; prepared?: boolean };

/**
 * `(a and b) or (c)`: each term names the columns of a unique index of live users (the primary key,
 * lower(email), external_id), so the planner answers each with one index look-up.
 */
function matchCondition(match: readonly UserMatch[]): Statement {
  const params: unknown[] = [];
  const terms = match.map((term) => {
    const parts: string[] = [];
    if (term.id != null) parts.push('id = ?'), params.push(term.id);
    if (term.email != null) parts.push('lower(email) = lower(?)'), params.push(term.email.trim());
    if (term.externalId != null) parts.push('external_id = ?'), params.push(term.externalId);
    return parts.length ? `(${parts.join(' and ')})` : 'true';
  });
  return { sql: terms.length ? `(${terms.join(' or ')})` : 'false', params };
}

/** The number of matches the indexed path counted, selected with its rows (removed before they are returned). */
const MATCHES = 'searchMatches' as const;

/**
 * The statements of one listing page. `page` gives the page: without a term the name order, with
 * one the walk (a scan of the table rows for a term holding U+0001, which no index can serve and no
 * real name contains). A term also gets `estimate` and `indexed`, which `useIndexedSearch` chooses
 * between. `count` runs only when `totalCount` is selected. Pages read `first + 1` rows, so
 * `hasNextPage` needs no count. Exported so the benchmark can EXPLAIN exactly what runs.
 */
export function userListStatements(
  accountId: string,
  options: UserListOptions,
  fields: Iterable<string>,
): { estimate?: [matches: Statement, users: Statement]; indexed?: Statement; page: Statement; count: Statement } {
  const columns = userSelectList(fields);
  const live = 'account_id = ? and deleted_at is null';
  const after = options.after ? ' and (name, id) > (?, ?)' : '';
  const afterParams = options.after ? [options.after.name, options.after.id] : [];
  const window = [options.first + 1, options.after ? 0 : options.offset ?? 0];
  const term = options.query?.trim();
  if (options.match) {
    const matched = matchCondition(options.match);
    return {
      // Materialized: the unique indexes find the (at most one per look-up) users, then only they are
      // ordered; the planner cannot walk the name order instead, whatever its estimates.
      page: {
        sql: `with matches as materialized (select ${columns} from users where ${live}${after} and ${matched.sql})
              select * from matches order by name, id limit ? offset ?`,
        params: [accountId, ...afterParams, ...matched.params, ...window],
        prepared: true,
      },
      count: { sql: `select count(*) as n from users where ${live} and ${matched.sql}`, params: [accountId, ...matched.params], prepared: true },
    };
  }
  if (!term) {
    return {
      page: { sql: `select ${columns} from users where ${live}${after} order by name, id limit ? offset ?`, params: [accountId, ...afterParams, ...window], prepared: true },
      count: { sql: `select count(*) as n from users where ${live}`, params: [accountId], prepared: true },
    };
  }
  if (term.includes('\u0001')) {
    const pattern = `%${escapeLike(term)}%`;
    const matches = '(name ilike ? or email ilike ?)';
    return {
      page: { sql: `select ${columns} from users where ${live}${after} and ${matches} order by name, id limit ? offset ?`, params: [accountId, ...afterParams, pattern, pattern, ...window] },
      count: { sql: `select count(*) as n from users where ${live} and ${matches}`, params: [accountId, pattern, pattern] },
    };
  }
  const indexed = indexedCondition(term);
  const walked = `search_text like ${likePattern('lower(?)')}`;
  return {
    estimate: [
      { sql: `select 1 from users where ${live} and ${walked}`, params: [accountId, term] },
      { sql: `select 1 from users where ${live}`, params: [accountId] },
    ],
    // Materialized: the planner finds the matches through the index, then orders only them.
    indexed: {
      sql: `with matches as materialized (select ${columns} from users where ${live}${after} and ${indexed.sql} limit ?)
            select *, count(*) over () as "${MATCHES}" from matches order by name, id limit ? offset ?`,
      params: [accountId, ...afterParams, ...indexed.params, SEARCH_INDEXED_CAP + 1, ...window],
    },
    // The walk reads only the index of the name order; the table rows of the page's users come after.
    page: {
      sql: `select ${columns} from users where id in
              (select id from users where ${live}${after} and ${walked} order by name, id limit ? offset ?)
            order by name, id`,
      params: [accountId, ...afterParams, term, ...window],
    },
    count: { sql: `select count(*) as n from users where ${live} and ${indexed.sql}`, params: [accountId, ...indexed.params] },
  };
}

/**
 * Whether a search page is looked up through the trigram indexes, given the planner's estimates of
 * the term's matches and of the account's users. The walk is expected to pass `users / matches`
 * entries per match it needs (the matches spread over the name order); a cluster of matches late in
 * the name order costs it more than that, which is why few matches always go through the index.
 */
export function useIndexedSearch(term: string, estimated: { matches: number; users: number }, options: UserListOptions): boolean {
  const windowEnd = (options.after ? 0 : options.offset ?? 0) + options.first + 1;
  if (windowEnd > SEARCH_INDEXED_CAP) return false;
  const matches = Math.max(1, estimated.matches);
  if (matches <= SEARCH_ALWAYS_INDEXED) return true;
  const walked = Math.min(estimated.users, (windowEnd * estimated.users) / matches);
  const perMatch = [...term.trim()].length <= 2 ? INDEXED_MATCH_COST.short : INDEXED_MATCH_COST.long;
  return matches <= SEARCH_INDEXED_CAP && matches * perMatch <= walked;
}

/** Presenting reads of users: list, show, viewer and counts, as plain rows (see src/db/read-path.ts). */
export class UserReads {
  constructor(
    private readonly reads: ReadPath,
    private readonly principal: Principal,
  ) {}

  private rows(sql: string, params: unknown[], options: ReadOptions = {}): Promise<UserRow[]> {
    return userRows(this.reads.rows<UserRow>(sql, params, options));
  }

  /**
   * A live user of the caller's account; another account's id is indistinguishable from a missing
   * one. A presenting read: a replica may serve it (never to the credential that just wrote).
   */
  get(id: string, fields: Iterable<string>): Promise<UserRow> {
    return this.live(id, fields, { replica: true });
  }

  /**
   * The caller's own user, from the primary: authentication has just found it there, and a replica
   * that has not replayed a new user yet must not answer that the signed-in user does not exist.
   */
  viewer(fields: Iterable<string>): Promise<UserRow> {
    if (!isUserPrincipal(this.principal)) {
      throw new InvalidInputError('This request requires user-level credentials (a user API key or OAuth token); an account API key has no current user.');
    }
    return this.live(this.principal.userId, fields, { replica: false });
  }

  private async live(id: string, fields: Iterable<string>, options: { replica: boolean }): Promise<UserRow> {
    const [user] = PUBLIC_ID_PATTERN.test(id)
      ? await this.rows(`select ${userSelectList(fields)} from users where id = ? and account_id = ? and deleted_at is null`, [id, this.principal.accountId], { ...options, prepared: true })
      : [];
    if (!user) throw new NotFoundError('user');
    return user;
  }

  /**
   * One page in (name, id) order (userListStatements); nothing runs until the connection's fields
   * ask for rows or the count. A replica may serve them.
   */
  list(options: UserListOptions, fields: Iterable<string>): UserRowPage {
    const statement = userListStatements(this.principal.accountId, options, fields);
    return {
      slice: async () => {
        const read = (step: Statement) => this.rows(step.sql, step.params, { replica: true, prepared: step.prepared });
        const page = (rows: UserRow[]) => ({ items: rows.slice(0, options.first), hasNextPage: rows.length > options.first });
        if (statement.estimate && statement.indexed) {
          const [matches, users] = await this.reads.estimate(statement.estimate, { replica: true });
          if (useIndexedSearch(options.query!, { matches: matches!, users: users! }, options)) {
            const rows: (UserRow & { [MATCHES]?: number | string })[] = await read(statement.indexed);
            const found = Number(rows[0]?.[MATCHES] ?? 0);
            for (const row of rows) delete row[MATCHES];
            // More matches than the index path orders: the estimate was wrong, and the walk serves the term.
            if (found <= SEARCH_INDEXED_CAP) return page(rows);
          }
        }
        return page(await read(statement.page));
      },
      countTotal: () => this.reads.count(statement.count.sql, statement.count.params, { replica: true, prepared: statement.count.prepared }),
    };
  }
}
