import fc from 'fast-check';

/** The codes the REST conventions allow in a 4xx envelope (docs/rest-api.md). */
export const REST_CLIENT_ERROR_CODES = new Set([2001, 2003, 2006, 2010, 2100, 2020]);

/** The codes a GraphQL client may get for bad input (never INTERNAL_SERVER_ERROR, never SERVICE_UNAVAILABLE). */
export const GRAPHQL_CLIENT_ERROR_CODES = new Set([
  'UNAUTHENTICATED',
  'FORBIDDEN',
  'NOT_FOUND',
  'BAD_USER_INPUT',
  'RATE_LIMITED',
  'GRAPHQL_PARSE_FAILED',
  'GRAPHQL_VALIDATION_FAILED',
  'PERSISTED_QUERY_NOT_FOUND',
]);

/**
 * A value nested `levels` deep, as arrays or objects. It stands in as a marker string that
 * `toJson` expands, so neither fast-check's reporting nor JSON.stringify recurses 10,000 levels.
 */
export function deeplyNested(levels: number, kind: 'array' | 'object'): string {
  return `@@deep:${kind}:${levels}@@`;
}

/** JSON.stringify, with deeply nested markers expanded into their JSON text. */
export function toJson(value: unknown): string {
  return (JSON.stringify(value) ?? 'null').replace(/"@@deep:(array|object):(\d+)@@"/g, (_match, kind: 'array' | 'object', levels: string) => deeplyNestedJson(Number(levels), kind));
}

/** The same, as JSON text (built without recursion, so the test itself never overflows). */
export function deeplyNestedJson(levels: number, kind: 'array' | 'object'): string {
  return kind === 'array' ? `${'['.repeat(levels)}"bottom"${']'.repeat(levels)}` : `${'{"a":'.repeat(levels)}"bottom"${'}'.repeat(levels)}`;
}

const HUGE_LENGTHS = [101, 256, 1_025, 20_000, 100_000];

/** Strings a hostile client sends: NUL, lone surrogates, huge, odd Unicode, injection-looking text. */
export const hostileString: fc.Arbitrary<string> = fc.oneof(
  fc.string({ maxLength: 12 }),
  fc.string({ maxLength: 12, unit: 'binary' }),
  fc.string({ maxLength: 8 }).map((text) => `${text}\u0000${text}`),
  fc.string({ maxLength: 8 }).map((text) => `${text}\ud800`),
  fc.string({ maxLength: 8 }).map((text) => `\udc00${text}`),
  fc.constantFrom(...HUGE_LENGTHS).map((length) => 'x'.repeat(length)),
  fc.constantFrom("'; drop table users; --", '%ff', '%', '../../etc/passwd', '\u202e\u200b', '😀'.repeat(60), '   ', ''),
);

/** Anything at all where a particular type was expected. */
export const hostileAny: fc.Arbitrary<unknown> = fc.oneof(
  hostileString,
  fc.integer(),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
  fc.constant({}),
  fc.constant([]),
  fc.constantFrom(10_000).map((levels) => deeplyNested(levels, 'array')),
  fc.constantFrom(10_000).map((levels) => deeplyNested(levels, 'object')),
  fc.array(fc.string({ maxLength: 3 }), { minLength: 101, maxLength: 101 }),
);

/** Percent-encoding; a lone surrogate (which encodeURIComponent refuses) goes as its CESU-8 bytes, which do not decode. */
function encodeOnTheWire(text: string): string {
  try {
    return encodeURIComponent(text);
  } catch {
    return `${encodeURIComponent(text.replace(/[\ud800-\udfff]/g, ''))}%ED%A0%80`;
  }
}

/**
 * Path segments as sent on the wire: real ids, hostile text percent-encoded, and escapes that do
 * not decode (a lone `%`, invalid UTF-8, an encoded lone surrogate).
 */
export function hostileSegment(realIds: readonly string[]): fc.Arbitrary<string> {
  return fc.oneof(
    { weight: 3, arbitrary: fc.constantFrom(...realIds) },
    { weight: 2, arbitrary: hostileString.filter((text) => text.length < 4_000 && text !== '').map(encodeOnTheWire) },
    { weight: 2, arbitrary: fc.constantFrom('%ff', '%', '%E0%A4%A', '%ED%A0%80', '%C0%AF', '%00', 'P%00AAAAA', `${'%41'.repeat(1_000)}`) },
  );
}

/** A query-string value on the wire: encoded hostile text, or an escape that does not decode. */
export const hostileQueryValue: fc.Arbitrary<string> = fc.oneof(
  { weight: 3, arbitrary: hostileString.filter((text) => text.length < 4_000).map(encodeOnTheWire) },
  { weight: 1, arbitrary: fc.constantFrom('%ff', '%', '%ED%A0%80', '%00', '1', '0', '-1', '101', '10001', 'true', '2026-01-01T00:00:00Z', 'web', 'mobile', 'q'.repeat(20_000)) },
);

export function snakeCase(name: string): string {
  return name.replace(/[A-Z]/g, (letter) => `_${letter.toLowerCase()}`);
}
