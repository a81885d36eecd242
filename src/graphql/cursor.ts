import { hmac, safeEqual } from '../auth/secrets.js';
import { InvalidInputError } from '../errors/domain-errors.js';

/** Cursors this codec makes stay far below this (a sort key of at most a few hundred characters, base64url, and a signature). */
export const CURSOR_MAX_LENGTH = 512;

/**
 * The arguments that choose a list's members (a search, a filter), as one JSON text whatever
 * their key order, with absent, null and empty-list values left out (they all mean "no filter").
 */
function canonicalScope(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonicalScope);
  if (value instanceof Date) return value.toISOString();
  if (typeof value !== 'object' || value === null) return value;
  const entries = Object.entries(value)
    .filter(([, member]) => member !== undefined && member !== null && !(Array.isArray(member) && member.length === 0))
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([key, member]) => [key, canonicalScope(member)]);
  return Object.fromEntries(entries);
}

/**
 * Opaque, tamper-evident cursors: base64url(JSON payload) + "." + truncated HMAC.
 * A cursor made for one list (its `kind`) is refused by another; a cursor made with a `scope`
 * (the arguments that chose the list's members) is refused with any other scope, so a cursor of
 * a search never pages the unfiltered list.
 */
export class CursorCodec {
  constructor(private readonly key: Buffer) {}

  encode(kind: string, payload: Record<string, unknown>, scope?: unknown): string {
    const scoped = scope === undefined ? {} : { s: this.scopeDigest(scope) };
    const body = Buffer.from(JSON.stringify({ k: kind, ...scoped, ...payload }), 'utf8').toString('base64url');
    return `${body}.${this.sign(body).toString('base64url')}`;
  }

  decode<T extends Record<string, unknown>>(kind: string, cursor: string, argumentName = 'cursor', scope?: unknown): T {
    const invalid = () => new InvalidInputError(`${argumentName} is not a valid cursor for this list`);
    const [body, signature, extra] = cursor.split('.');
    if (!body || !signature || extra !== undefined) throw invalid();
    if (!safeEqual(Buffer.from(signature, 'base64url'), this.sign(body))) throw invalid();
    let payload: unknown;
    try {
      payload = JSON.parse(Buffer.from(body, 'base64url').toString('utf8'));
    } catch {
      throw invalid();
    }
    if (typeof payload !== 'object' || payload === null || (payload as { k?: unknown }).k !== kind) throw invalid();
    if (scope !== undefined && (payload as { s?: unknown }).s !== this.scopeDigest(scope)) {
      throw new InvalidInputError(`${argumentName} is a cursor of the same list with other arguments (search or filter): give the arguments of the page it came from`);
    }
    return payload as T;
  }

  /** 12 bytes of an HMAC of the canonical scope: a cursor stays short, and a client cannot forge a match. */
  private scopeDigest(scope: unknown): string {
    return hmac(this.key, `scope:${JSON.stringify(canonicalScope(scope))}`).subarray(0, 12).toString('base64url');
  }

  private sign(body: string): Buffer {
    return hmac(this.key, body).subarray(0, 16);
  }
}
