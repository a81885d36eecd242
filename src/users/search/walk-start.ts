/** Entries at the start of a stretch tested on the name order's index before a GIN index is asked. */
const STRETCH_HEAD = 32;
/** Characters of a name that key its stretch in the prefixes index (users_search_prefixes_idx). */
export const NAME_PREFIX_LENGTH = 6;
/**
 * Prefixes visited at most before the walk starts anyway (at the last one visited, which is exact:
 * every stretch before it holds no match). Each visit costs a few index look-ups; a name order with
 * thousands of distinct prefixes before its first match should not cost thousands.
 */
export const PREFIX_VISITS = 64;
/**
 * Whether `name` is ordered by code point (the C collation, libc's C.*): then the users sharing an
 * initial, or a prefix, are one stretch of the name order, and every name from an initial on sorts
 * at or after it. Any other collation (ICU, or a language's order, where "b" sorts before "C") gets
 * no skip.
 */
const CODE_POINT_ORDER = `(select (datcollate in ('C', 'POSIX') or datcollate like 'C.%') and coalesce(to_jsonb(d) ->> 'datlocprovider', 'c') = 'c'
   from pg_database d where datname = current_database())`;

/** Which stretches the bounded walk may skip before it starts (search-planner.ts decides). */
export interface WalkSkips {
  /** Initials without a match, through the initials index: terms of three characters or more. */
  initials: boolean;
  /** Six-character name prefixes without a match, through the prefixes index: terms of two characters or more. */
  prefixes: boolean;
}

/** SQL the walk's statement embeds: common table expressions, the condition on `name`, and their values in text order. */
export interface WalkStart {
  with: string;
  condition: string;
  params: unknown[];
}

interface WalkSql {
  live: string;
  after: string;
  walked: string;
}

interface WalkValues {
  accountId: string;
  afterParams: unknown[];
  term: string;
}

/**
 * Where the walk of the name order starts: the page's start, or past the stretches that hold no
 * match. First the initials (every user keyed by initial + each three-character substring of
 * `search_text`): they are visited in order from the page's start, the next one found in the name
 * order's index, and the first whose stretch holds a match (the initials index has every key of the
 * term under it, and one of those users matches) is where the next level begins. Then, from there,
 * the six-character prefixes of the names, the same way, through the prefixes index (keyed by prefix
 * + each two-character substring). No stretch holding a match: the walk starts nowhere, and the page
 * is empty. Under a collation not ordered by code point nothing is skipped.
 */
export function walkStart(sql: WalkSql, values: WalkValues, skips: WalkSkips): WalkStart {
  const initials = skips.initials ? firstMatchingInitial(sql, values) : undefined;
  if (!skips.prefixes) {
    return initials
      ? { with: `recursive ${initials.with}, `, condition: ' and name >= (select initial from initials where matched limit 1)', params: initials.params }
      : { with: '', condition: '', params: [] };
  }
  const prefixes = firstMatchingPrefix(sql, values, initials ? '(select initial from initials where matched limit 1)' : "''");
  return {
    with: `recursive ${initials ? `${initials.with}, ` : ''}${prefixes.with}, `,
    // The stretch that holds a match, or the last one visited; none (no match at all): null, no page.
    condition: ` and name >= (select coalesce(prefix, '') from prefixes where matched or visits = ${PREFIX_VISITS} order by visits limit 1)`,
    params: [...(initials?.params ?? []), ...prefixes.params],
  };
}

/** The stretch of `start` holds a match: among its first entries, or (the GIN index asked) anywhere in it. */
function holdsMatch({ live, after, walked }: WalkSql, start: string, indexed: string): string {
  return `exists (select 1 from (select search_text from users where ${live}${after} and name >= ${start} order by name, id limit ${STRETCH_HEAD}) head where ${walked})
      or exists (select 1 from users where ${live}${after} and ${walked} and ${indexed})`;
}

/** The values of a stretch's recursive step, in text order: `holdsMatch`'s two tests, then the next stretch's look-up. */
function stretchParams({ accountId, afterParams, term }: WalkValues): unknown[] {
  return [accountId, ...afterParams, term, accountId, ...afterParams, term, term, accountId, ...afterParams];
}

/**
 * `initials(initial, matched)`: one row before every initial (under another collation, the start
 * itself, matched), then each initial from the page's start until one holds a match. The stretch's
 * first entries are tested first: a cluster that starts the stretch is found without the initials
 * index, whose answer (a bitmap of every candidate under the initial) grows with the cluster.
 */
function firstMatchingInitial(sql: WalkSql, values: WalkValues): { with: string; params: unknown[] } {
  const { live, after } = sql;
  const matched = holdsMatch(sql, 'next_user.initial', 'user_search_keys(name, search_text) @> user_search_probe(next_user.initial, lower(?))');
  // From the page's start, then from the character after the last initial: past U+D7FF comes
  // U+E000 (no character is a surrogate), past U+10FFFF nothing.
  const from = `case when initials.initial is null then '' else chr(case ascii(initials.initial) when 55295 then 57344 when 1114111 then null else ascii(initials.initial) + 1 end) end`;
  return {
    with: `initials(initial, matched) as (
              select case when ordered then null else '' end, not ordered from (select ${CODE_POINT_ORDER} as ordered) as name_order
            union all
              select next_user.initial, ${matched}
                from initials cross join lateral
                     (select left(name, 1) as initial from users where ${live}${after} and name >= ${from} order by name, id limit 1) next_user
               where not initials.matched)`,
    params: stretchParams(values),
  };
}

/**
 * `prefixes(prefix, matched, visits)`: one row before the first prefix (under another collation
 * matched, with no prefix: the walk starts at `start`), then each six-character prefix from `start`
 * until one holds a match or PREFIX_VISITS have been visited.
 */
function firstMatchingPrefix(sql: WalkSql, values: WalkValues, start: string): { with: string; params: unknown[] } {
  const { live, after } = sql;
  const matched = holdsMatch(sql, 'next_user.prefix', 'user_search_prefix_keys(name, search_text) @> user_search_prefix_probe(next_user.prefix, lower(?))');
  const from = `case when prefixes.visits = 0 then ${start} else user_search_after_prefix(prefixes.prefix) end`;
  return {
    with: `prefixes(prefix, matched, visits) as (
              select null::text, not ordered, 0 from (select ${CODE_POINT_ORDER} as ordered) as name_order
            union all
              select next_user.prefix, ${matched}, prefixes.visits + 1
                from prefixes cross join lateral
                     (select left(name, ${NAME_PREFIX_LENGTH}) as prefix from users where ${live}${after} and name >= ${from} order by name, id limit 1) next_user
               where not prefixes.matched and prefixes.visits < ${PREFIX_VISITS})`,
    params: stretchParams(values),
  };
}
