import { parse, type Filter } from 'scim2-parse-filter';
import { ScimInputError } from './scim.errors.js';

/** One conjunction of equalities on unique attributes: `UserMatchInput` of the GraphQL schema. */
export interface UserMatchTerm {
  id?: string;
  email?: string;
  externalId?: string;
}

export const MAX_FILTER_LENGTH = 1000;
/** `(a or b) and (c or d) ...` multiplies out; past this many look-ups the filter is refused. */
export const MAX_FILTER_TERMS = 20;

type Dnf = UserMatchTerm[];
const ALWAYS: Dnf = [{}];

const invalid = (detail: string) => new ScimInputError('invalidFilter', detail);

/**
 * A SCIM filter (RFC 7644 section 3.4.2.2) as a list of look-ups any of which matches, or `null`
 * for "every user". The grammar is scim2-parse-filter's; what this product answers is narrower
 * `eq` on `userName`, `externalId`, `id`, `emails.value` (also inside
 * `emails[...]`, where `type eq "work"` and `primary eq true` hold for the one email a user has),
 * joined by `and`/`or`. Everything else is `invalidFilter`, so no filter ever becomes a scan.
 */
export function userFilterLookups(raw: string): UserMatchTerm[] | null {
  if (raw.length > MAX_FILTER_LENGTH) throw invalid(`filter must be at most ${MAX_FILTER_LENGTH} characters`);
  let ast: Filter;
  try {
    ast = parse(raw);
  } catch {
    throw invalid('filter is not a valid SCIM filter expression');
  }
  const terms = toDnf(ast, '');
  return terms.some((term) => Object.keys(term).length === 0) ? null : terms;
}

function toDnf(filter: Filter, prefix: string): Dnf {
  switch (filter.op) {
    case 'or': {
      const terms = filter.filters.flatMap((child) => toDnf(child, prefix));
      if (terms.length > MAX_FILTER_TERMS) throw invalid(`filter needs more than ${MAX_FILTER_TERMS} look-ups`);
      return terms;
    }
    case 'and':
      return filter.filters.reduce<Dnf>((left, child) => conjoin(left, toDnf(child, prefix)), ALWAYS);
    case '[]': {
      if (prefix || filter.attrPath.toLowerCase() !== 'emails') throw invalid(`filtering inside ${filter.attrPath} is not supported; only emails[...]`);
      return toDnf(filter.valFilter, 'emails.');
    }
    case 'eq':
      return equality(`${prefix}${filter.attrPath}`, filter.compValue);
    default:
      throw invalid(`operator "${filter.op}" is not supported; only eq, and, or`);
  }
}

function equality(attrPath: string, value: unknown): Dnf {
  const attribute = attrPath.toLowerCase().replace(/^urn:ietf:params:scim:schemas:core:2\.0:user:/, '');
  const text = () => {
    if (typeof value !== 'string' || value.length === 0) throw invalid(`${attrPath} must be compared with a non-empty string`);
    return value;
  };
  switch (attribute) {
    case 'username':
    case 'emails.value':
      return [{ email: text() }];
    case 'externalid':
      return [{ externalId: text() }];
    case 'id':
      return [{ id: text() }];
    // The one email a user has is their primary work email.
    case 'emails.type':
      return text().toLowerCase() === 'work' ? ALWAYS : [];
    case 'emails.primary':
      return value === true || String(value).toLowerCase() === 'true' ? ALWAYS : [];
    default:
      throw invalid(`filtering on ${attrPath} is not supported; only userName, externalId, id and emails.value`);
  }
}

/** Every pair's union; a pair asking one attribute for two values matches nobody and is dropped. */
function conjoin(left: Dnf, right: Dnf): Dnf {
  const terms: Dnf = [];
  for (const a of left) {
    for (const b of right) {
      const merged = merge(a, b);
      if (merged) terms.push(merged);
      if (terms.length > MAX_FILTER_TERMS) throw invalid(`filter needs more than ${MAX_FILTER_TERMS} look-ups`);
    }
  }
  return terms;
}

function merge(a: UserMatchTerm, b: UserMatchTerm): UserMatchTerm | undefined {
  const merged: UserMatchTerm = { ...a };
  for (const key of ['id', 'email', 'externalId'] as const) {
    const value = b[key];
    if (value === undefined) continue;
    const current = merged[key];
    const same = key === 'email' ? current?.toLowerCase() === value.toLowerCase() : current === value;
    if (current !== undefined && !same) return undefined;
    merged[key] = value;
  }
  return merged;
}
