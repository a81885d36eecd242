import { digestSecret } from './secrets.js';

export type PresentedCredential =
  | { scheme: 'token'; digest: string; secret: string }
  | { scheme: 'bearer'; digest: string; secret: string }
  | { scheme: 'malformed' };

/**
 * Parses `Authorization: Token token=<key>` and `Authorization: Bearer <token>`.
 * Returns undefined when no credential is presented at all.
 */
export function parseAuthorizationHeader(header: string | undefined): PresentedCredential | undefined {
  if (header === undefined || header.trim() === '') return undefined;
  const token = /^Token\s+token=("?)([A-Za-z0-9_\-+/=.~]{8,200})\1\s*$/i.exec(header.trim());
  if (token) return { scheme: 'token', digest: digestSecret(token[2]!), secret: token[2]! };
  const bearer = /^Bearer\s+([A-Za-z0-9_\-+/=.~]{8,500})\s*$/i.exec(header.trim());
  if (bearer) return { scheme: 'bearer', digest: digestSecret(bearer[1]!), secret: bearer[1]! };
  return { scheme: 'malformed' };
}

/** The last 4 characters of a presented key or token: enough to tell credentials apart in an audit record, never enough to use one. */
export function credentialTail(secret: string): string {
  return secret.slice(-4);
}
