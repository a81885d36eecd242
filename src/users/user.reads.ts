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

/** Select lists already spelled out, by their fields in order: a route's document asks for the same fields every time. */
const selectLists = new Map<string, string>();
/** The combinations of columns kept in `selectLists`, at most (past it, a list is spelled out each time). */
const MAX_SELECT_LISTS = 256;

/** The select list for the selected fields, aliased to the GraphQL names. */
export function userSelectList(fields: Iterable<string>): string {
  let key = 'id,name';
  for (const field of fields) if (field !== 'id' && field !== 'name' && field in USER_COLUMNS) key += `,${field}`;
  let list = selectLists.get(key);
  if (list === undefined) {
    list = [...new Set(key.split(','))].map((field) => {
      const column = USER_COLUMNS[field as keyof UserRow];
      if (TIMESTAMP_FIELDS.has(field)) return isoTimestamp(column, field);
      return column === field ? column : `${column} as "${field}"`;
    }).join(', ');
    if (selectLists.size < MAX_SELECT_LISTS) selectLists.set(key, list);
  }
  return list;
}

/**
 * Statement texts built around a select list, kept per list (itself kept by `userSelectList`): the
 * read path finds a statement's prepared form by its text, and a text built afresh for each request
 * costs that look-up a pass over all of it (measured: about 1.7 µs per statement, more than the
 * rest of the look-up), where the same string object is found at once.
 */
function textAround(kept: Map<string, string>, columns: string, build: (columns: string) => string): string {
  let text = kept.get(columns);
  if (text === undefined) {
    text = build(columns);
    if (kept.size < MAX_SELECT_LISTS) kept.set(columns, text);
  }
  return text;
}
const LIVE_USERS = 'account_id = ? and deleted_at is null';
const showTexts = new Map<string, string>();
const pageTexts = new Map<string, string>();
const pageAfterTexts = new Map<string, string>();
const COUNT_LIVE_USERS = `select count(*) as n from users where ${LIVE_USERS}`;

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
 * How a search page is found (docs/rest-api.md, "Searching users"). The planner estimates (statistics of
 * `search_text`) how many users match and how many the account has. Up to SEARCH_ALWAYS_INDEXED
 * expected matches go to the trigram index. More first get the walk, bounded: the first
 * SEARCH_WALK_BUDGET entries of the name order, in the btree that carries `search_text`, each tested
 * without reading the table row; a full page, or the end of the account within the budget, is the
 * answer. For a term of three characters or more that walk may start at the first initial (first
 * character of the name) under which a user matches, found through the initials index
 * (`skipToFirstMatchingInitial`, when `skipsInitials`): a long stretch of the name order without a
 * match, before a cluster, costs a look-up or two per initial instead of one entry per user.
 * Otherwise the cheaper of two exact paths is taken, from the estimates and from where in
 * the name order the first match lies (`firstMatchAt`: the first histogram bound
 * of `search_text` holding the term; the bounds are table-wide, read once a minute, ReadPath.histogram). The indexed path: a trigram index finds
 * every match and only (id, name) of each are ordered (its cost grows with the matches; it reads at
 * most `searchIndexedCap` of them, so a wrong estimate costs that many, then the walk). The walk,
 * unbounded: its cost grows with the users before the page's last match, which a cluster of matches
 * late in the name order makes nearly the whole account. `search_text` is
 * `lower(name || chr(1) || email)`: a term is a substring of the name or the email exactly when its
 * lower-cased form is one of that string (chr(1) cannot occur in such a term, so no match spans
 * both); for terms of one or two characters the index tests that string with every character
 * tripled, where "zq" occurs exactly when "zzzqqq" does.
 */
export const SEARCH_INDEXED_CAP = 10_000;
/** Entries of the name order a search walks before it asks the planner (0.5-1 ms; the runs: `git show b6e136f:docs/BENCHMARKS.md`). */
export const SEARCH_WALK_BUDGET = 2_000;
/**
 * Cost of one match on the indexed path, in entries walked (measured at 1M users in one run,
 * `git show b6e136f:docs/BENCHMARKS.md`, "Round two": an entry walked 1.3 us and a match of a long term 9.3 us on a
 * loaded machine, 7x; a term of one or two characters ~10 us against 0.27 us, whose index recheck
 * runs the character tripling on each row).
 */
const INDEXED_MATCH_COST = { long: 8, short: 40 };
/** Up to this many expected matches the indexed path is taken whatever the walk would cost (about a millisecond). */
export const SEARCH_ALWAYS_INDEXED = 200;
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
/** The entries the bounded walk passed, selected with a short page's rows (removed before they are returned). */
const WALKED = 'searchWalked' as const;
/**
 * Where the first match lies in the order of `search_text` (lower-cased name order), as a fraction:
 * the first histogram bound (ANALYZE keeps 1,000, one per 0.1% of users) holding the term; null
 * when none does. A cluster of matches late in the name order is invisible to the count of matches,
 * and it decides what walking to them costs.
 */
export function firstMatchAt(term: string, bounds: readonly string[]): number | null {
  const needle = term.trim().toLowerCase();
  const position = bounds.findIndex((bound) => bound.includes(needle));
  return position < 0 ? null : position / bounds.length;
}

/**
 * Whether the bounded walk first skips the initials under which no user matches
 * (skipToFirstMatchingInitial). It can pass only the initials before the one under which the first
 * match lies, and asking the initials index about that one builds a bitmap of every candidate under
 * it (2-4 ms for the 7,800 users named "Ada Lovelace" at 1,000,000 users, `git show b6e136f:docs/BENCHMARKS.md`). So not
 * when the statistics put the first match under the initial the page starts with (the cursor's, or
 * the first histogram bound's), where there is nothing to pass; otherwise, and without statistics,
 * yes. A guess either way costs time, never exactness.
 */
export function skipsInitials(term: string, bounds: readonly string[], pageStart?: string): boolean {
  const needle = term.trim().toLowerCase();
  if ([...needle].length < 3) return false;
  const firstMatching = bounds.find((bound) => bound.includes(needle));
  const start = pageStart?.toLowerCase() ?? bounds[0];
  if (firstMatching === undefined || start === undefined) return true;
  return [...firstMatching][0] !== [...start][0];
}

/** Entries at the start of an initial's stretch tested on the name order's index before the initials index is asked. */
const INITIAL_HEAD = 32;
/**
 * Whether `name` is ordered by code point (the C collation, libc's C.*): then the users sharing an
 * initial are one stretch of the name order, and every name from an initial on sorts at or after it.
 * Any other collation (ICU, or a language's order, where "b" sorts before "C") gets no skip.
 */
const CODE_POINT_ORDER = `(select (datcollate in ('C', 'POSIX') or datcollate like 'C.%') and coalesce(to_jsonb(d) ->> 'datlocprovider', 'c') = 'c'
   from pg_database d where datname = current_database())`;

/**
 * The walk's start for a term of three characters or more (migration
 * Migration20261124050000_search_initials): the initials of the page's users are visited in order,
 * the next one found in the name order's index, and the first whose stretch holds a match (the
 * initials index has every key of the term under it, and one of those users matches) is where the
 * walk begins; a stretch without a match is skipped whole. No initial holding a match: the walk
 * starts nowhere, and the page is empty. Shorter terms hold no three-character key (`skipsInitials`
 * never asks for them) and walk from the page's start, as does every term under a collation that is
 * not ordered by code point.
 */
function skipToFirstMatchingInitial(
  sql: { live: string; after: string; walked: string },
  values: { accountId: string; afterParams: unknown[]; term: string },
): { with: string; condition: string; params: unknown[] } {
  const { live, after, walked } = sql;
  const { accountId, afterParams, term } = values;
  // The stretch's first entries first: a cluster that starts the stretch is found without the
  // initials index, whose answer (a bitmap of every candidate under the initial) grows with the cluster.
  const holdsMatch = `exists (select 1 from (select search_text from users where ${live}${after} and name >= next_user.initial order by name, id limit ${INITIAL_HEAD}) head where ${walked})
      or exists (select 1 from users where ${live}${after} and ${walked} and user_search_keys(name, search_text) @> user_search_probe(next_user.initial, lower(?)))`;
  // From the page's start, then from the character after the last initial: past U+D7FF comes
  // U+E000 (no character is a surrogate), past U+10FFFF nothing.
  const from = `case when initials.initial is null then '' else chr(case ascii(initials.initial) when 55295 then 57344 when 1114111 then null else ascii(initials.initial) + 1 end) end`;
  return {
    // The first row stands before every initial; under another collation it is the start itself.
    with: `recursive initials(initial, matched) as (
              select case when ordered then null else '' end, not ordered from (select ${CODE_POINT_ORDER} as ordered) as name_order
            union all
              select next_user.initial, ${holdsMatch}
                from initials cross join lateral
                     (select left(name, 1) as initial from users where ${live}${after} and name >= ${from} order by name, id limit 1) next_user
               where not initials.matched),
          `,
    condition: ' and name >= (select initial from initials where matched limit 1)',
    params: [accountId, ...afterParams, term, accountId, ...afterParams, term, term, accountId, ...afterParams],
  };
}

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
): {
  bounded?: (skipInitials: boolean) => Statement;
  estimate?: [matches: Statement, users: Statement];
  indexed?: (cap: number) => Statement;
  page: Statement;
  count: Statement;
} {
  const columns = userSelectList(fields);
  const live = LIVE_USERS;
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
      page: {
        sql: textAround(options.after ? pageAfterTexts : pageTexts, columns, (list) => `select ${list} from users where ${live}${after} order by name, id limit ? offset ?`),
        params: [accountId, ...afterParams, ...window],
        prepared: true,
      },
      count: { sql: COUNT_LIVE_USERS, params: [accountId], prepared: true },
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
  const boundedWalk = (skip: { with: string; condition: string; params: unknown[] }): Statement => {
    const firstEntries = `select id, name, search_text from users where ${live}${after}${skip.condition} order by name, id limit ?`;
    const firstEntriesParams = [accountId, ...afterParams, SEARCH_WALK_BUDGET];
    return {
      sql: `with ${skip.with}page as materialized (
              select id from (${firstEntries}) first_entries where ${walked} order by name, id limit ? offset ?)
            select listed.*, short."${WALKED}"
              from (select case when (select count(*) from page) < ? then (select count(*) from (${firstEntries}) counted) end as "${WALKED}") short
              -- One row even for an empty page (its columns null), so the walked count always comes back.
              left join lateral (select ${columns} from users where id in (select id from page) offset 0) listed on true
             order by listed.name, listed.id`,
      params: [...skip.params, ...firstEntriesParams, term, ...window, options.first + 1, ...firstEntriesParams],
    };
  };
  return {
    // The page from the first SEARCH_WALK_BUDGET entries of the name order from the page's start, or
    // from the first initial holding a match (`skipInitials`); when it comes back short, how many
    // entries there were (fewer than the budget: the walk reached the end, so the page is exact).
    bounded: (skipInitials) =>
      boundedWalk(skipInitials ? skipToFirstMatchingInitial({ live, after, walked }, { accountId, afterParams, term }) : { with: '', condition: '', params: [] }),
    estimate: [
      { sql: `select 1 from users where ${live} and ${walked}`, params: [accountId, term] },
      { sql: `select 1 from users where ${live}`, params: [accountId] },
    ],
    // Materialized: the planner finds the matches through the index, then orders only them.
    // Only (id, name) of each match is kept and ordered (top-N); the page's rows are read by primary key.
    indexed: (cap) => ({
      sql: `with matches as materialized (select id, name from users where ${live}${after} and ${indexed.sql} limit ?)
            select ${columns}, (select count(*) from matches) as "${MATCHES}" from users
             where id in (select id from matches order by name, id limit ? offset ?) order by name, id`,
      params: [accountId, ...afterParams, ...indexed.params, cap + 1, ...window],
    }),
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
export function useIndexedSearch(
  term: string,
  estimated: { matches: number; users: number; firstMatchAt?: number | null },
  options: UserListOptions,
): boolean {
  const windowEnd = (options.after ? 0 : options.offset ?? 0) + options.first + 1;
  if (windowEnd > SEARCH_INDEXED_CAP) return false;
  const matches = Math.max(1, estimated.matches);
  if (matches <= SEARCH_ALWAYS_INDEXED) return true;
  const spread = (windowEnd * estimated.users) / matches;
  const walked = Math.min(estimated.users, Math.max(spread, (estimated.firstMatchAt ?? 0) * estimated.users));
  const perMatch = [...term.trim()].length <= 2 ? INDEXED_MATCH_COST.short : INDEXED_MATCH_COST.long;
  // No cap on the estimate itself: the indexed path reads up to searchIndexedCap(matches), which is always above it.
  return matches * perMatch <= walked;
}

/**
 * How many matches the indexed path reads before it gives way to the walk: a wrong estimate costs at
 * most this many (twice the estimate, at least SEARCH_INDEXED_CAP).
 */
export function searchIndexedCap(estimatedMatches: number): number {
  return Math.max(SEARCH_INDEXED_CAP, 2 * estimatedMatches);
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
      ? await this.rows(
          textAround(showTexts, userSelectList(fields), (columns) => `select ${columns} from users where id = ? and account_id = ? and deleted_at is null`),
          [id, this.principal.accountId],
          { ...options, prepared: true },
        )
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
        if (statement.estimate && statement.indexed && statement.bounded) {
          const [matches, users] = await this.reads.estimate(statement.estimate, { replica: true });
          // Few expected matches go straight to the trigram index; only many may fill a page early.
          const many = matches! > SEARCH_ALWAYS_INDEXED;
          const bounds = many ? await this.reads.histogram('users', 'search_text') : [];
          if (many) {
            const skip = skipsInitials(options.query!, bounds, options.after?.name);
            const answer: (UserRow & { [WALKED]?: number | string | null })[] = await read(statement.bounded(skip));
            const walked = answer[0]?.[WALKED];
            for (const row of answer) delete row[WALKED];
            const rows = answer.filter((row) => row.id != null);
            // A full page, or the end of the name order within the budget: exact without the trigram indexes.
            if (rows.length > options.first || (walked != null && Number(walked) < SEARCH_WALK_BUDGET)) return page(rows);
          }
          const first = many ? firstMatchAt(options.query!, bounds) : null;
          if (useIndexedSearch(options.query!, { matches: matches!, users: users!, firstMatchAt: first }, options)) {
            const cap = searchIndexedCap(matches!);
            const rows: (UserRow & { [MATCHES]?: number | string })[] = await read(statement.indexed(cap));
            const found = Number(rows[0]?.[MATCHES] ?? 0);
            for (const row of rows) delete row[MATCHES];
            // More matches than the index path orders: the estimate was wrong, and the walk serves the term.
            if (found <= cap) return page(rows);
          }
        }
        return page(await read(statement.page));
      },
      countTotal: () => this.reads.count(statement.count.sql, statement.count.params, { replica: true, prepared: statement.count.prepared }),
    };
  }
}
