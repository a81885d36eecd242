import { randomInt } from 'node:crypto';
import { crc32 } from 'node:zlib';

/**
 * Secrets that a secret scanner (gitleaks, trufflehog, a code host's push protection) recognises
 * without false positives: `<prefix>_<body><checksum>`. The prefix names what leaked, and the
 * checksum lets a scanner tell a real secret from a look-alike string without asking us.
 *
 * - prefix: 1 to 7 lower-case letters, one per kind of secret (SECRET_KINDS);
 * - body: 32 base62 characters drawn uniformly (32 * log2(62) = 190.5 bits);
 * - checksum: CRC-32 (IEEE) of everything before it, in base62, left-padded with '0' to 6.
 */
export const SECRET_KINDS = {
  accountApiKey: 'aagak',
  accountReadOnlyApiKey: 'aagro',
  userApiKey: 'aaguk',
  provisioningToken: 'aagpt',
  appClientSecret: 'aagcs',
} as const;

export type SecretKind = keyof typeof SECRET_KINDS;

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const BODY_LENGTH = 32;
const CHECKSUM_LENGTH = 6;

function base62(value: number, width: number): string {
  let text = '';
  let rest = value;
  do {
    text = BASE62[rest % 62] + text;
    rest = Math.floor(rest / 62);
  } while (rest > 0);
  return text.padStart(width, '0');
}

function checksumOf(text: string): string {
  return base62(crc32(Buffer.from(text, 'utf8')) >>> 0, CHECKSUM_LENGTH);
}

/** A new secret of this kind, shown once to its holder and stored only as a digest. */
export function mintSecret(kind: SecretKind): string {
  let body = '';
  for (let index = 0; index < BODY_LENGTH; index++) body += BASE62[randomInt(62)];
  const head = `${SECRET_KINDS[kind]}_${body}`;
  return head + checksumOf(head);
}

/** The kind of a well-formed secret whose checksum matches; undefined for anything else (older keys included). */
export function scannableSecretKind(secret: string): SecretKind | undefined {
  const match = /^([a-z]{1,7})_([0-9A-Za-z]{38,})$/.exec(secret);
  if (!match) return undefined;
  const kind = (Object.keys(SECRET_KINDS) as SecretKind[]).find((name) => SECRET_KINDS[name] === match[1]);
  if (!kind) return undefined;
  const head = secret.slice(0, secret.length - CHECKSUM_LENGTH);
  return checksumOf(head) === secret.slice(-CHECKSUM_LENGTH) ? kind : undefined;
}

/** One regular expression per kind, as the docs and the scanner rule file list them. */
export function secretPattern(kind: SecretKind): RegExp {
  return new RegExp(`\\b${SECRET_KINDS[kind]}_[0-9A-Za-z]{${BODY_LENGTH + CHECKSUM_LENGTH}}\\b`);
}
