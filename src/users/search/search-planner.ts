import type { UserListOptions } from './user-list-statements.js';
import type { WalkSkips } from './walk-start.js';

/**
 * Which path finds a search page (docs/rest-api.md, "Searching users"), chosen in the service from
 * the planner's statistics; no statement counts the matches first. The reasoning behind each
 * constant, and the runs it rests on, are in docs/BENCHMARKS.md ("Figures the code rests on").
 */

/** The least number of matches the indexed path reads before it gives way to the walk (`searchIndexedCap`). */
export const SEARCH_INDEXED_CAP = 10_000;
/**
 * Entries of the name order the bounded walk reads before the planner is asked: walk at most this
 * many, so the walk stays cheap; beyond that, the indexed path may be cheaper.
 */
export const SEARCH_WALK_BUDGET = 2_000;
/**
 * Cost of one match on the indexed path, in entries of the name order walked: a match of a long
 * term costs several entries, and a term of one or two characters (whose index recheck runs the
 * character tripling on each row) several times more.
 */
const INDEXED_MATCH_COST = { long: 8, short: 40 };
/** Up to this many expected matches the indexed path is taken whatever the walk would cost: so few are cheap to order. */
export const SEARCH_ALWAYS_INDEXED = 200;

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
 * (walk-start.ts). It can pass only the initials before the one under which the first match
 * lies, and asking the initials index about that one builds a bitmap of every candidate under it,
 * which grows with the users sharing that initial. So not when the statistics put the first match
 * under the initial the page starts with (the cursor's, or the first histogram bound's), where
 * there is nothing to pass; otherwise, and without statistics, yes. A guess either way costs time,
 * never exactness.
 */
export function skipsInitials(term: string, bounds: readonly string[], pageStart?: string): boolean {
  const needle = term.trim().toLowerCase();
  return initialsSkipped(needle, bounds, bounds.findIndex((bound) => bound.includes(needle)), pageStart);
}

/** `skipsInitials` for a lower-cased term whose first bound holding it (or -1) is already known. */
function initialsSkipped(needle: string, bounds: readonly string[], matchAt: number, pageStart?: string): boolean {
  if ([...needle].length < 3) return false;
  const start = pageStart?.toLowerCase() ?? bounds[0];
  if (matchAt < 0 || start === undefined) return true;
  return bounds[matchAt]!.codePointAt(0) !== start.codePointAt(0);
}

/**
 * Users the walk is expected to pass before the first match, past which it first skips the name
 * prefixes holding no match. A prefix visited costs about as much as walking 80 users (a few index
 * look-ups), and reaching the first match takes a visit per prefix before it: at 10,000 users,
 * "an" (first match 440 users in, 12 prefixes) walked in 0.5-0.9 ms and skipped in 2.0 ms; at
 * 1,000,000 users (44,000 in) the bounded walk spent its budget without a match (2.7 ms) before the
 * unbounded walk (55 ms), and the skip filled the page in 1.2 ms.
 */
export const PREFIX_SKIP_DISTANCE = 500;

/**
 * What the bounded walk skips before it starts: the initials when `skipsInitials` says so; the
 * six-character name prefixes holding no match for a term of two characters or more, when the
 * statistics put its first match more than PREFIX_SKIP_DISTANCE users after where the walk would
 * start (the page's start, or the start of the first match's initial when initials are skipped), or
 * have no bound holding the term.
 */
export function walkSkips(term: string, bounds: readonly string[], users: number, pageStart?: string): WalkSkips {
  const needle = term.trim().toLowerCase();
  const matchAt = bounds.findIndex((bound) => bound.includes(needle));
  const initials = initialsSkipped(needle, bounds, matchAt, pageStart);
  if ([...needle].length < 2) return { initials, prefixes: false };
  if (matchAt < 0) return { initials, prefixes: true };
  // Compared as code points, never by splitting each of the thousand bounds into characters.
  const initial = bounds[matchAt]!.codePointAt(0);
  // A cursor past every bound: where the first match lies after it is unknown, and nothing is skipped.
  const cursor = pageStart?.toLowerCase();
  const cursorAt = cursor === undefined ? 0 : bounds.findIndex((bound) => bound >= cursor);
  const start = cursorAt < 0 ? bounds.length : cursorAt;
  const stretchStart = initials ? bounds.findIndex((bound) => bound.codePointAt(0) === initial) : 0;
  const before = ((matchAt - Math.max(start, stretchStart)) / bounds.length) * users;
  return { initials, prefixes: before > PREFIX_SKIP_DISTANCE };
}
