import { Algorithm, hash, verify } from '@node-rs/argon2';
import type { EntityManager } from '@mikro-orm/sql';
import { PUBLIC_ID_PATTERN } from '../db/public-id.js';
import { ForbiddenError, InvalidInputError, NotFoundError } from '../errors/domain-errors.js';

/** OWASP's argon2id baseline: 19 MiB, 2 passes, 1 lane. */
const ARGON2_OPTIONS = { algorithm: Algorithm.Argon2id, memoryCost: 19_456, timeCost: 2, parallelism: 1 } as const;
export const PASSWORD_MIN_LENGTH = 12;
export const PASSWORD_MAX_LENGTH = 256;

/** Verified against when no account matches, so a wrong email costs what a wrong password costs. */
let decoyHash: Promise<string> | undefined;

export function validatePassword(password: string): void {
  if (password.length < PASSWORD_MIN_LENGTH || password.length > PASSWORD_MAX_LENGTH) {
    throw new InvalidInputError(`a password must be ${PASSWORD_MIN_LENGTH} to ${PASSWORD_MAX_LENGTH} characters`);
  }
  if (password.includes('\u0000')) throw new InvalidInputError('a password must not contain NUL characters');
}

export function hashPassword(password: string): Promise<string> {
  return hash(password, ARGON2_OPTIONS);
}

async function verifyPassword(stored: string, password: string): Promise<boolean> {
  try {
    return await verify(stored, password);
  } catch {
    return false;
  }
}

interface LiveUserRow {
  id: string;
  account_id: string;
}

async function liveUser(em: EntityManager, userId: string): Promise<LiveUserRow | undefined> {
  if (!PUBLIC_ID_PATTERN.test(userId)) return undefined;
  const [row] = await em.execute<LiveUserRow[]>('select id, account_id from users where id = ? and deleted_at is null', [userId]);
  return row;
}

/** Sets (or replaces) a live user's password; only the argon2id hash is stored. */
export async function setPassword(em: EntityManager, userId: string, password: string): Promise<void> {
  validatePassword(password);
  if (!(await liveUser(em, userId))) throw new NotFoundError('user');
  const stored = await hashPassword(password);
  await em.execute(
    `insert into user_passwords (user_id, password_hash, updated_at) values (?, ?, now())
     on conflict (user_id) do update set password_hash = excluded.password_hash, updated_at = excluded.updated_at`,
    [userId, stored],
  );
}

/** A user changing their own password proves they know the current one. */
export async function changeOwnPassword(em: EntityManager, userId: string, currentPassword: string, newPassword: string): Promise<void> {
  validatePassword(newPassword);
  const [row] = await em.execute<{ password_hash: string }[]>('select password_hash from user_passwords where user_id = ?', [userId]);
  if (!row || !(await verifyPassword(row.password_hash, currentPassword))) {
    throw new ForbiddenError('The current password is not correct.');
  }
  await setPassword(em, userId, newPassword);
}

/**
 * The user of this account with this email and password, or undefined. Whether the email is
 * unknown, has no password or the password is wrong, the caller learns the same and waits as long.
 */
export async function checkSignIn(em: EntityManager, accountId: string, email: string, password: string): Promise<string | undefined> {
  const [row] = await em.execute<{ id: string; password_hash: string }[]>(
    `select u.id, p.password_hash from users u join user_passwords p on p.user_id = u.id
      where u.account_id = ? and lower(u.email) = lower(?) and u.deleted_at is null and u.suspended_at is null`,
    [accountId, email],
  );
  if (!row) {
    decoyHash ??= hashPassword('decoy password for unknown accounts');
    await verifyPassword(await decoyHash, password);
    return undefined;
  }
  return (await verifyPassword(row.password_hash, password)) ? row.id : undefined;
}
