import { randomInt } from 'node:crypto';

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';

/** Ids in the public API's format: `P` and six upper-case letters or digits. */
export function newPublicId(): string {
  let id = 'P';
  for (let i = 0; i < 6; i++) id += ALPHABET[randomInt(ALPHABET.length)];
  return id;
}

export const PUBLIC_ID_PATTERN = /^P[A-Z0-9]{6}$/;
