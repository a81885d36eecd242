import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/** Keys and tokens are 160 random bits, URL-safe. */
export function newSecretToken(bytes = 20): string {
  return randomBytes(bytes).toString('base64url');
}

/** Credentials are stored and looked up by this digest only. */
export function digestSecret(secret: string): string {
  return createHash('sha256').update(secret, 'utf8').digest('hex');
}

export function hmac(key: Buffer, message: string): Buffer {
  return createHmac('sha256', key).update(message, 'utf8').digest();
}

export function safeEqual(a: Buffer, b: Buffer): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}
