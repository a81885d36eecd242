import { hmac, safeEqual } from '../auth/secrets.js';
import { InvalidInputError } from '../errors/domain-errors.js';

/** Cursors this codec makes stay far below this (a sort key of at most a few hundred characters, base64url, and a signature). */
export const CURSOR_MAX_LENGTH = 512;

/**
 * Opaque, tamper-evident cursors: base64url(JSON payload) + "." + truncated HMAC.
 * A cursor made for one list (its `kind`) is refused by another.
 */
export class CursorCodec {
  constructor(private readonly key: Buffer) {}

  encode(kind: string, payload: Record<string, unknown>): string {
    const body = Buffer.from(JSON.stringify({ k: kind, ...payload }), 'utf8').toString('base64url');
    return `${body}.${this.sign(body).toString('base64url')}`;
  }

  decode<T extends Record<string, unknown>>(kind: string, cursor: string, argumentName = 'cursor'): T {
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
    return payload as T;
  }

  private sign(body: string): Buffer {
    return hmac(this.key, body).subarray(0, 16);
  }
}
