import { randomBytes } from 'node:crypto';
import { digestSecret, hmac, safeEqual } from '../auth/secrets.js';
import { deriveKey } from '../auth/server-secret.js';

/** 160 bits of HMAC output: the key in a feed URL (27 URL-safe characters). */
const KEY_BYTES = 20;
const NONCE_BYTES = 16;

/**
 * Derives calendar keys: key = HMAC-SHA256(deriveKey(server secret, 'calendar-feed-key'),
 * "<user id>:<nonce>") truncated to 160 bits. Only the random nonce and SHA-256(key) are stored,
 * so the database alone (without the server secret) yields no working key.
 */
export class CalendarKeyCodec {
  private readonly hmacKey: Buffer;
  /** Stands in for a stored row when a presented key matches none, so every miss does the same work. */
  private readonly decoy = { userId: 'P000000', nonce: randomBytes(NONCE_BYTES).toString('base64url') };

  constructor(serverSecret: Buffer) {
    this.hmacKey = deriveKey(serverSecret, 'calendar-feed-key');
  }

  newNonce(): string {
    return randomBytes(NONCE_BYTES).toString('base64url');
  }

  keyFor(userId: string, nonce: string): string {
    return hmac(this.hmacKey, `${userId}:${nonce}`).subarray(0, KEY_BYTES).toString('base64url');
  }

  /** The look-up digest stored for a key. */
  digest(key: string): string {
    return digestSecret(key);
  }

  /**
   * Re-derives the key from a stored row (or from the decoy when there is none) and compares it
   * with the presented one in constant time; a row only counts when it was derived with this
   * server's secret.
   */
  verify(presented: string, row: { userId: string; nonce: string } | undefined): boolean {
    const expected = Buffer.from(this.keyFor((row ?? this.decoy).userId, (row ?? this.decoy).nonce), 'utf8');
    const given = Buffer.alloc(expected.length);
    Buffer.from(presented, 'utf8').copy(given, 0, 0, expected.length);
    const equal = safeEqual(expected, given) && Buffer.byteLength(presented, 'utf8') === expected.length;
    return row !== undefined && equal;
  }
}

const codecs = new WeakMap<Buffer, CalendarKeyCodec>();

/** One codec per server secret (the HKDF step runs once per process). */
export function calendarKeyCodec(serverSecret: Buffer): CalendarKeyCodec {
  let codec = codecs.get(serverSecret);
  if (!codec) {
    codec = new CalendarKeyCodec(serverSecret);
    codecs.set(serverSecret, codec);
  }
  return codec;
}

/** `http_cal_url` and `web_cal_url` for a key, under the configured feed base URL. */
export function calendarUrls(feedBase: string, key: string): { http: string; webcal: string } {
  const http = `${feedBase.replace(/\/+$/, '')}/private/${encodeURIComponent(key)}/feed`;
  return { http, webcal: http.replace(/^https?:/i, 'webcal:') };
}
