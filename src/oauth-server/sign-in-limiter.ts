import type { EntityManager } from '@mikro-orm/sql';
import { digestSecret } from '../auth/secrets.js';

export interface SignInLimits {
  /** Attempt windows and failure memory: failures older than this (since the last one) are forgotten. */
  windowSeconds: number;
  /** Attempts per client address per window, whatever the email (password spraying). */
  perAddress: number;
  /** Failures of one email from one address before each further attempt waits (1 s, 2 s, 4 s, ...). */
  freeFailuresPerEmailAndAddress: number;
  /** Longest wait of the (email, address) back-off. */
  maxBackoffSeconds: number;
  /** Failures of one email from every address together before attempts on it wait too. */
  freeFailuresPerEmail: number;
  /** Longest wait of the per-email back-off: it slows a distributed guesser, it never locks the owner out. */
  maxEmailBackoffSeconds: number;
}

export const DEFAULT_SIGN_IN_LIMITS: SignInLimits = {
  windowSeconds: 15 * 60,
  perAddress: 100,
  freeFailuresPerEmailAndAddress: 5,
  maxBackoffSeconds: 15 * 60,
  freeFailuresPerEmail: 50,
  maxEmailBackoffSeconds: 60,
};

export type SignInAttempt =
  | { allowed: true; /** The password was right: this attempt's failures are taken back. */ succeeded(): Promise<void> }
  | { allowed: false; retryAfterSeconds: number };

/** Back-off exponents stop here (2^30 s is far beyond any maximum), so the arithmetic never overflows. */
const MAX_EXPONENT = 30;

/**
 * Counts an attempt as a failure before the password is checked, if the bucket allows one now: one
 * statement, so concurrent attempts cannot all slip through before any failure is recorded. Returns
 * false (nothing recorded) while the bucket is backing off.
 */
async function chargeFailure(em: EntityManager, bucket: string, free: number, maxBackoffSeconds: number, windowSeconds: number): Promise<boolean> {
  const rows = await em.execute<{ failures: number }[]>(
    `insert into sign_in_failures (bucket, failures, last_failed_at) values (?, 1, now())
     on conflict (bucket) do update set
       failures = case when sign_in_failures.last_failed_at < now() - make_interval(secs => ?) then 1 else sign_in_failures.failures + 1 end,
       last_failed_at = now()
     where sign_in_failures.last_failed_at < now() - make_interval(secs => ?)
        or sign_in_failures.failures < ?
        or sign_in_failures.last_failed_at
           + make_interval(secs => least(?::float8, power(2::float8, least(sign_in_failures.failures - ?, ?)::float8))) <= now()
     returning failures`,
    [bucket, windowSeconds, windowSeconds, free, maxBackoffSeconds, free, MAX_EXPONENT],
  );
  return rows.length > 0;
}

async function secondsUntilAllowed(em: EntityManager, bucket: string, free: number, maxBackoffSeconds: number): Promise<number> {
  const [row] = await em.execute<{ wait: string | number | null }[]>(
    `select ceil(extract(epoch from (last_failed_at
       + make_interval(secs => least(?::float8, power(2::float8, least(failures - ?, ?)::float8))) - now()))) as wait
       from sign_in_failures where bucket = ?`,
    [maxBackoffSeconds, free, MAX_EXPONENT, bucket],
  );
  return Math.max(1, Number(row?.wait ?? 1));
}

async function refundFailure(em: EntityManager, bucket: string): Promise<void> {
  await em.execute('update sign_in_failures set failures = greatest(failures - 1, 0) where bucket = ?', [bucket], 'run');
}

/** Fixed-window attempt count per client address; true while under the limit. */
async function countAddressAttempt(em: EntityManager, address: string, limits: SignInLimits): Promise<boolean> {
  const [row] = await em.execute<{ attempts: number }[]>(
    `insert into sign_in_attempts (bucket, window_started_at, attempts) values (?, now(), 1)
     on conflict (bucket) do update set
       attempts = case when sign_in_attempts.window_started_at < now() - make_interval(secs => ?) then 1 else sign_in_attempts.attempts + 1 end,
       window_started_at = case when sign_in_attempts.window_started_at < now() - make_interval(secs => ?) then now() else sign_in_attempts.window_started_at end
     returning attempts`,
    [`address:${digestSecret(address)}`, limits.windowSeconds, limits.windowSeconds],
  );
  return Number(row!.attempts) <= limits.perAddress;
}

/**
 * Every check of a user's password (the sign-in form, `changeMyPassword`) goes through here, in the
 * database so every instance shares the counts; emails and addresses are kept as digests.
 *
 * - per client address: at most `perAddress` attempts per window (spraying many emails);
 * - per (email, address): after a few failures each attempt waits twice as long as the one before
 *   (guessing one user's password from one place) -- the owner signing in from elsewhere is not
 *   affected, so nobody can lock a user out by failing on purpose;
 * - per email, from everywhere: after many failures the same back-off, capped low (a distributed
 *   guesser is slowed to about one guess per `maxEmailBackoffSeconds`, the owner waits at most that).
 *
 * An attempt that is refused is not checked at all. A right password takes its failures back.
 */
export async function beginSignInAttempt(em: EntityManager, email: string, address: string, limits: SignInLimits = DEFAULT_SIGN_IN_LIMITS): Promise<SignInAttempt> {
  const emailDigest = digestSecret(email.trim().toLowerCase());
  const pairBucket = `pair:${digestSecret(`${emailDigest}\u0000${address}`)}`;
  const emailBucket = `email:${emailDigest}`;
  if (!(await countAddressAttempt(em, address, limits))) return { allowed: false, retryAfterSeconds: limits.windowSeconds };
  if (!(await chargeFailure(em, pairBucket, limits.freeFailuresPerEmailAndAddress, limits.maxBackoffSeconds, limits.windowSeconds))) {
    return { allowed: false, retryAfterSeconds: await secondsUntilAllowed(em, pairBucket, limits.freeFailuresPerEmailAndAddress, limits.maxBackoffSeconds) };
  }
  if (!(await chargeFailure(em, emailBucket, limits.freeFailuresPerEmail, limits.maxEmailBackoffSeconds, limits.windowSeconds))) {
    await refundFailure(em, pairBucket);
    return { allowed: false, retryAfterSeconds: await secondsUntilAllowed(em, emailBucket, limits.freeFailuresPerEmail, limits.maxEmailBackoffSeconds) };
  }
  return {
    allowed: true,
    async succeeded() {
      await em.execute('delete from sign_in_failures where bucket = ?', [pairBucket], 'run');
      await refundFailure(em, emailBucket);
    },
  };
}
