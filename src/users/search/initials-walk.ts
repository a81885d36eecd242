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
 * The walk's start for a term of three characters or more, through the initials index (every user
 * keyed by initial + each three-character substring of `search_text`): the initials of the page's
 * users are visited in order, the next one found in the name order's index, and the first whose
 * stretch holds a match (the initials index has every key of the term under it, and one of those
 * users matches) is where the walk begins; a stretch without a match is skipped whole. No initial
 * holding a match: the walk starts nowhere, and the page is empty. Shorter terms hold no
 * three-character key (`skipsInitials` never asks for them) and walk from the page's start, as does
 * every term under a collation that is not ordered by code point.
 */
export function skipToFirstMatchingInitial(
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
