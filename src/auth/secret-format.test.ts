import { crc32 } from 'node:zlib';
import { mintSecret, scannableSecretKind, SECRET_KINDS, secretPattern, type SecretKind } from './secret-format.js';

const kinds = Object.keys(SECRET_KINDS) as SecretKind[];

describe('scannable secrets', () => {
  it.each(kinds)('a %s secret has its prefix, a 32-character base62 body and a CRC-32 checksum', (kind) => {
    const secret = mintSecret(kind);
    expect(secret).toMatch(new RegExp(`^${SECRET_KINDS[kind]}_[0-9A-Za-z]{38}$`));
    expect(secretPattern(kind).test(`leaked: ${secret} in a log`)).toBe(true);
    expect(scannableSecretKind(secret)).toBe(kind);
    const head = secret.slice(0, -6);
    const alphabet = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
    const decoded = [...secret.slice(-6)].reduce((value, char) => value * 62 + alphabet.indexOf(char), 0);
    expect(decoded).toBe(crc32(Buffer.from(head)) >>> 0);
  });

  it('a changed character fails the checksum; other kinds do not match one pattern', () => {
    const secret = mintSecret('userApiKey');
    const flipped = secret.slice(0, 10) + (secret[10] === 'a' ? 'b' : 'a') + secret.slice(11);
    expect(scannableSecretKind(flipped)).toBeUndefined();
    expect(secretPattern('accountApiKey').test(secret)).toBe(false);
    expect(scannableSecretKind('N0t-a-scannable-key')).toBeUndefined();
  });

  it('draws different bodies', () => {
    const seen = new Set(Array.from({ length: 200 }, () => mintSecret('provisioningToken')));
    expect(seen.size).toBe(200);
  });
});
