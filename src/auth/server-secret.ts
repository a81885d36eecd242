import fs from 'node:fs';
import path from 'node:path';
import { hkdfSync, randomBytes } from 'node:crypto';

export interface ServerSecretSource {
  secretKey: string | undefined;
  dataDir: string | undefined;
}

/**
 * The server secret signs cursors and derives calendar keys. It comes from SECRET_KEY; without
 * one (outside production, which refuses to start) it is generated once and kept in the data
 * directory, so restarts keep issued cursors and feed URLs working.
 */
export function resolveServerSecret(source: ServerSecretSource): Buffer {
  if (source.secretKey) return Buffer.from(source.secretKey, 'utf8');
  if (!source.dataDir) return randomBytes(32);
  const file = path.join(source.dataDir, 'server-secret');
  try {
    return Buffer.from(fs.readFileSync(file, 'utf8').trim(), 'base64');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  fs.mkdirSync(source.dataDir, { recursive: true });
  const secret = randomBytes(32);
  fs.writeFileSync(file, secret.toString('base64'), { mode: 0o600, flag: 'wx' });
  return secret;
}

/** A separate key per purpose, so a leak of one use cannot forge another. */
export function deriveKey(secret: Buffer, purpose: string): Buffer {
  return Buffer.from(hkdfSync('sha256', secret, Buffer.alloc(0), purpose, 32));
}
