import { escapeLike } from '../../db/read-path.js';
import { LIVE_USER, statementTextForColumns, userSelectList } from '../user.sql.js';
import { indexedCondition, likePattern, matchCondition, type Statement, type UserMatch } from './search-conditions.js';
import { walkStart, type WalkSkips, type WalkStart } from './walk-start.js';
import { SEARCH_WALK_BUDGET } from './search-planner.js';

export interface UserListOptions {
  query?: string | null;
  /** Any of these matches (an empty list matches nobody); each is answered by a unique index. */
  match?: readonly UserMatch[] | null;
  first: number;
  offset?: number;
  after?: { name: string; id: string };
}

/** The statements of one listing page; see `userListStatements`. */
export interface UserListStatements {
  bounded?: (skips: WalkSkips) => Statement;
  estimate?: [matches: Statement, users: Statement];
  indexed?: (cap: number) => Statement;
  page: Statement;
  count: Statement;
}

/** The number of matches the indexed path counted, selected with its rows (removed before they are returned). */
export const MATCHES = 'searchMatches' as const;
/** The entries the bounded walk passed, selected with a short page's rows (removed before they are returned). */
export const WALKED = 'searchWalked' as const;

const LIVE_USERS = `account_id = ? and ${LIVE_USER}`;
const COUNT_LIVE_USERS = `select count(*) as n from users where ${LIVE_USERS}`;
const pageTexts = new Map<string, string>();
const pageAfterTexts = new Map<string, string>();

/** What every statement of a page shares: the select list, the cursor's condition and the window. */
interface PageFrame {
  accountId: string;
  columns: string;
  after: string;
  afterParams: unknown[];
  window: number[];
}

/**
 * The statements of one listing page (docs/rest-api.md, "Searching users"). `page` gives the page:
 * without a term the name order, with one the walk (a scan of the table rows for a term holding
 * U+0001, which no index can serve and no real name contains). A term also gets `bounded`,
 * `estimate` and `indexed`, which the planner (search-planner.ts) chooses between. `count` runs
 * only when `totalCount` is selected. Pages read `first + 1` rows, so `hasNextPage` needs no count.
 * Exported so the benchmark can EXPLAIN exactly what runs.
 */
export function userListStatements(accountId: string, options: UserListOptions, fields: Iterable<string>): UserListStatements {
  const frame: PageFrame = {
    accountId,
    columns: userSelectList(fields),
    after: options.after ? ' and (name, id) > (?, ?)' : '',
    afterParams: options.after ? [options.after.name, options.after.id] : [],
    window: [options.first + 1, options.after ? 0 : options.offset ?? 0],
  };
  const term = options.query?.trim();
  if (options.match) return matchStatements(frame, options.match);
  if (!term) return nameOrderStatements(frame, options.after ? pageAfterTexts : pageTexts);
  if (term.includes('\u0001')) return scanStatements(frame, term);
  return searchStatements(frame, term, options.first);
}

/**
 * Materialized: the unique indexes find the (at most one per look-up) users, then only they are
 * ordered; the planner cannot walk the name order instead, whatever its estimates.
 */
function matchStatements({ accountId, columns, after, afterParams, window }: PageFrame, match: readonly UserMatch[]): UserListStatements {
  const matched = matchCondition(match);
  return {
    page: {
      sql: `with matches as materialized (select ${columns} from users where ${LIVE_USERS}${after} and ${matched.sql})
              select * from matches order by name, id limit ? offset ?`,
      params: [accountId, ...afterParams, ...matched.params, ...window],
      prepared: true,
    },
    count: { sql: `select count(*) as n from users where ${LIVE_USERS} and ${matched.sql}`, params: [accountId, ...matched.params], prepared: true },
  };
}

/** The name order from the page's start; its texts are kept per select list (`statementTextForColumns`). */
function nameOrderStatements({ accountId, columns, after, afterParams, window }: PageFrame, texts: Map<string, string>): UserListStatements {
  return {
    page: {
      sql: statementTextForColumns(texts, columns, (list) => `select ${list} from users where ${LIVE_USERS}${after} order by name, id limit ? offset ?`),
      params: [accountId, ...afterParams, ...window],
      prepared: true,
    },
    count: { sql: COUNT_LIVE_USERS, params: [accountId], prepared: true },
  };
}

/** A term no index can serve: a scan of the table rows. */
function scanStatements({ accountId, columns, after, afterParams, window }: PageFrame, term: string): UserListStatements {
  const pattern = `%${escapeLike(term)}%`;
  const matches = '(name ilike ? or email ilike ?)';
  return {
    page: { sql: `select ${columns} from users where ${LIVE_USERS}${after} and ${matches} order by name, id limit ? offset ?`, params: [accountId, ...afterParams, pattern, pattern, ...window] },
    count: { sql: `select count(*) as n from users where ${LIVE_USERS} and ${matches}`, params: [accountId, pattern, pattern] },
  };
}

/** A search term's statements: the bounded walk, the planner's estimates, the indexed path and the unbounded walk. */
function searchStatements(frame: PageFrame, term: string, first: number): UserListStatements {
  const { accountId, columns, after, afterParams, window } = frame;
  const indexed = indexedCondition(term);
  const walked = `search_text like ${likePattern('lower(?)')}`;
  return {
    // The page from the first SEARCH_WALK_BUDGET entries of the name order from the page's start, or
    // past the stretches (initials, name prefixes) that hold no match (`skips`); when it comes back
    // short, how many entries there were (fewer than the budget: the walk reached the end, so the page is exact).
    bounded: (skips) => boundedWalk(frame, term, first, walked, walkStart({ live: LIVE_USERS, after, walked }, { accountId, afterParams, term }, skips)),
    estimate: [
      { sql: `select 1 from users where ${LIVE_USERS} and ${walked}`, params: [accountId, term] },
      { sql: `select 1 from users where ${LIVE_USERS}`, params: [accountId] },
    ],
    // Materialized: the planner finds the matches through the index, then orders only them.
    // Only (id, name) of each match is kept and ordered (top-N); the page's rows are read by primary key.
    indexed: (cap) => ({
      sql: `with matches as materialized (select id, name from users where ${LIVE_USERS}${after} and ${indexed.sql} limit ?)
            select ${columns}, (select count(*) from matches) as "${MATCHES}" from users
             where id in (select id from matches order by name, id limit ? offset ?) order by name, id`,
      params: [accountId, ...afterParams, ...indexed.params, cap + 1, ...window],
    }),
    // The walk reads only the index of the name order; the table rows of the page's users come after.
    page: {
      sql: `select ${columns} from users where id in
              (select id from users where ${LIVE_USERS}${after} and ${walked} order by name, id limit ? offset ?)
            order by name, id`,
      params: [accountId, ...afterParams, term, ...window],
    },
    count: { sql: `select count(*) as n from users where ${LIVE_USERS} and ${indexed.sql}`, params: [accountId, ...indexed.params] },
  };
}

/**
 * The walk over at most SEARCH_WALK_BUDGET entries of the name order, from `skip`'s start, each
 * tested on the index entry (which carries `search_text`) without reading the table row.
 */
function boundedWalk(
  { accountId, columns, after, afterParams, window }: PageFrame,
  term: string,
  first: number,
  walked: string,
  skip: WalkStart,
): Statement {
  const firstEntries = `select id, name, search_text from users where ${LIVE_USERS}${after}${skip.condition} order by name, id limit ?`;
  const firstEntriesParams = [accountId, ...afterParams, SEARCH_WALK_BUDGET];
  return {
    sql: `with ${skip.with}page as materialized (
              select id from (${firstEntries}) first_entries where ${walked} order by name, id limit ? offset ?)
            select listed.*, short."${WALKED}"
              from (select case when (select count(*) from page) < ? then (select count(*) from (${firstEntries}) counted) end as "${WALKED}") short
              -- One row even for an empty page (its columns null), so the walked count always comes back.
              left join lateral (select ${columns} from users where id in (select id from page) offset 0) listed on true
             order by listed.name, listed.id`,
    params: [...skip.params, ...firstEntriesParams, term, ...window, first + 1, ...firstEntriesParams],
  };
}
