import { createHmac, hash, randomBytes, timingSafeEqual } from 'node:crypto';

/** Keys and tokens are 160 random bits, URL-safe. */
export function newSecretToken(bytes = 20): string {
  return randomBytes(bytes).toString('base64url');
}

/** Credentials are stored and looked up by this digest only (every request computes one: the one-shot hash, no Hash object). */
export function digestSecret(secret: string): string {
  return hash('sha256', secret, 'hex');
}

export function hmac(key: Buffer, message: string): Buffer {
  return createHmac('sha256', key).update(message, 'utf8').digest();
}

export function safeEqual(a: Buffer, b: Buffer): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}
