import { Algorithm, hash, verify } from '@node-rs/argon2';
import type { EntityManager } from '@mikro-orm/sql';
import { PUBLIC_ID_PATTERN } from '../db/public-id.js';
import type { UserPrincipal } from '../auth/principal.js';
import type { TransactionRunner } from '../db/transaction.js';
import { recordChange } from '../db/change-journal.js';
import { ForbiddenError, InvalidInputError, NotFoundError, RateLimitedError } from '../errors/domain-errors.js';
import { lockLiveUser } from '../users/user-locks.js';
import { beginSignInAttempt, type SignInLimits } from './sign-in-limiter.js';
import { endUserAccess } from '../oauth-delegations/user-access.js';
import { activeUser, LIVE_USER, liveUser as liveUserCondition } from '../users/user.sql.js';

/** OWASP's argon2id baseline: 19 MiB, 2 passes, 1 lane. */
const ARGON2_OPTIONS = { algorithm: Algorithm.Argon2id, memoryCost: 19_456, timeCost: 2, parallelism: 1 } as const;
export const PASSWORD_MIN_LENGTH = 12;
export const PASSWORD_MAX_LENGTH = 256;

let decoyHash: Promise<string> | undefined;
/** Verified against when no account matches, so a wrong email costs what a wrong password costs. */
const decoy = (): Promise<string> => (decoyHash ??= hashPassword('decoy password for unknown accounts'));

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
  const [row] = await em.execute<LiveUserRow[]>(`select id, account_id from users where id = ? and ${LIVE_USER}`, [userId]);
  return row;
}

/**
 * An operator sets (or resets) a live user's password; only the argon2id hash is stored. A reset
 * is what follows a suspected takeover, so it also ends the user's sessions and grants, as a
 * change by the user does. The record of the change says that it changed, never what to.
 */
export async function setPassword(em: EntityManager, transactions: TransactionRunner, userId: string, password: string): Promise<void> {
  validatePassword(password);
  const user = await liveUser(em, userId);
  if (!user) throw new NotFoundError('user');
  const stored = await hashPassword(password);
  await transactions.run(em, async (tx) => {
    if (!(await lockLiveUser(tx, user.account_id, userId))) throw new NotFoundError('user');
    await tx.execute(
      `insert into user_passwords (user_id, password_hash, updated_at) values (?, ?, now())
       on conflict (user_id) do update set password_hash = excluded.password_hash, updated_at = excluded.updated_at`,
      [userId, stored],
    );
    recordChange(tx, { accountId: user.account_id, action: 'set_password', resource: { type: 'user', id: userId }, userId, fields: [{ name: 'password' }] });
    await endUserAccess(tx, { accountId: user.account_id, userId }, { reason: 'password_changed' });
  }, 'passwords.set');
}

export interface PasswordChange {
  em: EntityManager;
  transactions: TransactionRunner;
  principal: UserPrincipal;
  /** The client address, for the same attempt limits as the sign-in form. */
  address: string;
  currentPassword: string;
  newPassword: string;
  limits?: SignInLimits;
}

/**
 * A user changing their own password: only through a credential that may write the
 * user and is the user's own or a first-party app's (never a third-party app's or an integration's
 * token, which could otherwise guess the password and take the account over); the current password
 * is checked under the sign-in form's limits (a wrong one counts as a failed sign-in of that email);
 * a change signs the user out of every other session and grant (not the API keys).
 */
export async function changeOwnPassword(change: PasswordChange): Promise<void> {
  const { em, principal } = change;
  if (principal.kind === 'oauth' && !principal.firstParty) {
    throw new ForbiddenError('A third-party app\'s or an integration\'s token may not change the user\'s password; use a first-party app or an API key.');
  }
  try {
    validatePassword(change.newPassword);
  } catch (error) {
    if (!(error instanceof InvalidInputError)) throw error;
    throw InvalidInputError.ofFields([{ path: ['input', 'newPassword'], code: 'INVALID', message: `newPassword: ${error.details[0]}` }]);
  }
  const [row] = await em.execute<{ email: string; password_hash: string | null }[]>(
    `select u.email, p.password_hash from users u left join user_passwords p on p.user_id = u.id where u.id = ? and u.account_id = ? and ${liveUserCondition('u')}`,
    [principal.userId, principal.accountId],
  );
  if (!row) throw new NotFoundError('user');
  const attempt = await beginSignInAttempt(em, row.email, change.address, change.limits);
  if (!attempt.allowed) throw new RateLimitedError(attempt.retryAfterSeconds);
  if (!(await verifyPassword(row.password_hash ?? (await decoy()), change.currentPassword)) || row.password_hash === null) {
    // A form's mistake, not a lack of rights: the field to correct, as every other input problem.
    throw InvalidInputError.ofFields([{ path: ['input', 'currentPassword'], code: 'INCORRECT', message: 'currentPassword is not correct.' }]);
  }
  await attempt.succeeded();
  // Hashed before the transaction: the user's row lock is not held through argon2's work.
  const stored = await hashPassword(change.newPassword);
  await change.transactions.run(em, async (tx) => {
    if (!(await lockLiveUser(tx, principal.accountId, principal.userId))) throw new NotFoundError('user');
    await tx.execute('update user_passwords set password_hash = ?, updated_at = now() where user_id = ?', [stored, principal.userId], 'run');
    recordChange(tx, { accountId: principal.accountId, action: 'change_password', resource: { type: 'user', id: principal.userId }, userId: principal.userId, fields: [{ name: 'password' }] });
    await endUserAccess(tx, principal, { principal, reason: 'password_changed' }, { keepDelegationId: principal.kind === 'oauth' ? principal.credentialId : undefined });
  }, 'passwords.change');
}

/**
 * The user of this account with this email and password, or undefined. Whether the email is
 * unknown, has no password or the password is wrong, the caller learns the same and waits as long.
 */
export async function checkSignIn(em: EntityManager, accountId: string, email: string, password: string): Promise<string | undefined> {
  const [row] = await em.execute<{ id: string; password_hash: string }[]>(
    `select u.id, p.password_hash from users u join user_passwords p on p.user_id = u.id
      where u.account_id = ? and lower(u.email) = lower(?) and ${activeUser('u')}`,
    [accountId, email],
  );
  if (!row) {
    await verifyPassword(await decoy(), password);
    return undefined;
  }
  return (await verifyPassword(row.password_hash, password)) ? row.id : undefined;
}
