import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { deriveKey } from '../auth/server-secret.js';

/**
 * AES-256-GCM with a key derived from the server secret for one purpose. What the authorization
 * server must be able to read back (token payloads, client secrets, signing keys) is kept sealed;
 * a sealed value is `base64url(iv | tag | ciphertext)`, and tampering fails the tag check.
 */
export class Sealer {
  private readonly key: Buffer;

  constructor(serverSecret: Buffer, purpose: string) {
    this.key = deriveKey(serverSecret, `oauth-server:${purpose}`);
  }

  seal(plaintext: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64url');
  }

  unseal(sealed: string): string {
    const raw = Buffer.from(sealed, 'base64url');
    const decipher = createDecipheriv('aes-256-gcm', this.key, raw.subarray(0, 12));
    decipher.setAuthTag(raw.subarray(12, 28));
    return Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8');
  }
}
