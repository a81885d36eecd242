import { GraphQLScalarType } from 'graphql';
import { TimeZoneResolver, URLResolver } from 'graphql-scalars';

/**
 * graphql-scalars' TimeZone, with its check remembered for names already found valid: the check
 * builds an Intl.DateTimeFormat (about 0.2 ms), once per user per response otherwise. Only valid
 * names are kept, but every capitalization of a name is valid ("america/LIMA"), so what clients
 * send could fill the memo without end: it keeps the first MAX_REMEMBERED_TIME_ZONES names per
 * direction and checks any further one every time.
 */
export const MAX_REMEMBERED_TIME_ZONES = 1_000;
const rememberedOutput = new Set<unknown>();
const rememberedInput = new Set<unknown>();

/** Names the TimeZone scalar remembers, both directions together (at most twice the bound). */
export function rememberedTimeZoneCount(): number {
  return rememberedOutput.size + rememberedInput.size;
}

function rememberingValid<T>(check: (value: T) => unknown, valid: Set<unknown>): (value: T) => unknown {
  return (value: T) => {
    if (valid.has(value)) return value;
    const result = check(value);
    if (valid.size < MAX_REMEMBERED_TIME_ZONES) valid.add(result);
    return result;
  };
}

const base = TimeZoneResolver.toConfig();
export const TimeZoneScalar = new GraphQLScalarType({
  ...base,
  serialize: rememberingValid(base.serialize, rememberedOutput),
  parseValue: rememberingValid(base.parseValue!, rememberedInput),
});

/** `value` from `start` is `/segment/segment…`: unreserved characters, no segment empty or starting with a dot. */
function isPlainPath(value: string, start: number): boolean {
  if (value.charCodeAt(start) !== 47 /* / */) return false;
  let atSegmentStart = true;
  for (let i = start + 1; i < value.length; i++) {
    const code = value.charCodeAt(i);
    if (code === 47) {
      if (atSegmentStart) return false;
      atSegmentStart = true;
    } else if ((code >= 48 && code <= 57) || (code >= 65 && code <= 90) || (code >= 97 && code <= 122) || code === 45 || code === 95 || code === 126) {
      atSegmentStart = false;
    } else if (code !== 46 /* . */ || atSegmentStart) {
      return false;
    }
  }
  return !atSegmentStart;
}

/**
 * graphql-scalars' URL, whose serialize answers `new URL(value).toString()` (about 3 µs; three
 * URLs per user, 75 per page of users). Most values are the server's own links: a configured base
 * followed by a plain path. Such a value serializes to itself whenever its origin part does, so
 * origins whose round trip was checked are remembered (a bounded few) and, for a plain path behind
 * one of them, the parse is skipped. Anything else (queries, fragments, percent signs, dot
 * segments, unknown origins) takes the full parse, so the output is the same byte for byte.
 * Inputs are still parsed in full.
 */
const MAX_REMEMBERED_ORIGINS = 16;
const roundTrippingOrigins = new Set<string>();

function serializeUrl(value: unknown): unknown {
  if (typeof value !== 'string') return urlBase.serialize(value);
  // Compared in place: a lookup by the sliced origin costs more than the few comparisons.
  for (const origin of roundTrippingOrigins) {
    if (value.charCodeAt(origin.length) === 47 /* / */ && value.startsWith(origin) && isPlainPath(value, origin.length)) return value;
  }
  const serialized = urlBase.serialize(value);
  const schemeEnd = value.indexOf('://');
  const pathStart = schemeEnd < 0 ? -1 : value.indexOf('/', schemeEnd + 3);
  if (pathStart > 0 && serialized === value && roundTrippingOrigins.size < MAX_REMEMBERED_ORIGINS) {
    const origin = value.slice(0, pathStart);
    if (urlBase.serialize(`${origin}/`) === `${origin}/`) roundTrippingOrigins.add(origin);
  }
  return serialized;
}

const urlBase = URLResolver.toConfig();
export const URLScalar = new GraphQLScalarType({ ...urlBase, serialize: serializeUrl });
