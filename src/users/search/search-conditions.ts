/** `prepared`: a statement whose plan does not depend on its values (ReadOptions.prepared). */
export type Statement = { sql: string; params: unknown[]; prepared?: boolean };

/** Users with all of the given values (emails compared ignoring case): the SCIM face's `eq` filters. */
export interface UserMatch {
  id?: string | null;
  email?: string | null;
  externalId?: string | null;
}

/**
 * `search_text`'s expression: a term is a substring of the name or the email exactly when its
 * lower-cased form is one of this string (chr(1) cannot occur in such a term, so no match spans both).
 */
const SEARCH_TEXT = 'lower(name || chr(1) || email)';
/** Must stay the expression of `users_search_short_terms_idx`, character for character. */
const tripled = (text: string) => `regexp_replace(${text}, '(.)', '\\1\\1\\1', 'g')`;
/** A LIKE pattern built in SQL, so the term is lower-cased by the same lower() as the indexes. */
export const likePattern = (term: string) => `'%' || replace(replace(replace(${term}, '\\', '\\\\'), '%', '\\%'), '_', '\\_') || '%'`;

/**
 * The trigram indexes' condition; it names the expression they index, so only they can serve it.
 * For terms of one or two characters the index tests that string with every character tripled,
 * where "zq" occurs exactly when "zzzqqq" does.
 */
export function indexedCondition(term: string): { sql: string; params: unknown[] } {
  if ([...term].length <= 2) {
    return { sql: `${tripled(SEARCH_TEXT)} like ${likePattern(tripled('lower(?)'))}`, params: [term] };
  }
  return { sql: `${SEARCH_TEXT} like ${likePattern('lower(?)')}`, params: [term] };
}

/**
 * `(a and b) or (c)`: each term names the columns of a unique index of live users (the primary key,
 * lower(email), external_id), so the planner answers each with one index look-up.
 */
export function matchCondition(match: readonly UserMatch[]): Statement {
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
