import type { ReadPath } from '../../db/read-path.js';
import type { UserRow } from '../user.reads.js';
import type { Statement } from './search-conditions.js';
import { SEARCH_ALWAYS_INDEXED, SEARCH_WALK_BUDGET, firstMatchAt, searchIndexedCap, useIndexedSearch, walkSkips } from './search-planner.js';
import { MATCHES, WALKED, type UserListOptions, type UserListStatements } from './user-list-statements.js';

/** One page's users and whether more follow. */
export interface UserSlice {
  items: UserRow[];
  hasNextPage: boolean;
}

/**
 * The rows of one listing page, from its statements (`userListStatements`). Without a term, or for
 * a term no index can serve, `page` is the answer. A search term takes the planner's estimates (the
 * statistics of `search_text`) of how many users match and how many the account has:
 * - up to SEARCH_ALWAYS_INDEXED expected matches go to the trigram index;
 * - more first get the bounded walk (SEARCH_WALK_BUDGET entries of the name order, perhaps from
 *   the first initial holding a match): a full page, or the end of the account within the budget,
 *   is the answer;
 * - otherwise the cheaper of two exact paths (`useIndexedSearch`), from the estimates and from
 *   where in the name order the first match lies (`firstMatchAt`, from the histogram bounds the
 *   read path keeps a minute): the indexed path, which gives way to the unbounded walk when it
 *   finds more matches than `searchIndexedCap` (the estimate was wrong), or the walk itself.
 */
export async function readUserSlice(
  reads: ReadPath,
  statement: UserListStatements,
  options: UserListOptions,
  read: (step: Statement) => Promise<UserRow[]>,
): Promise<UserSlice> {
  const page = (rows: UserRow[]) => ({ items: rows.slice(0, options.first), hasNextPage: rows.length > options.first });
  if (statement.estimate && statement.indexed && statement.bounded) {
    const [matches, users] = await reads.estimate(statement.estimate, { replica: true });
    // Few expected matches go straight to the trigram index; only many may fill a page early.
    const many = matches! > SEARCH_ALWAYS_INDEXED;
    const bounds = many ? await reads.histogram('users', 'search_text') : [];
    if (many) {
      const skips = walkSkips(options.query!, bounds, users!, options.after?.name);
      const answer: (UserRow & { [WALKED]?: number | string | null })[] = await read(statement.bounded(skips));
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
}
