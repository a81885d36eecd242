import type { EntityManager } from '@mikro-orm/sql';
import { digestSecret } from '../auth/secrets.js';

export interface SignInLimits {
  windowSeconds: number;
  perEmail: number;
  perAddress: number;
}

export const DEFAULT_SIGN_IN_LIMITS: SignInLimits = { windowSeconds: 15 * 60, perEmail: 10, perAddress: 100 };

/**
 * Sign-in attempts counted per email and per client address in fixed windows, in the database so
 * every instance shares the counts. The email is kept as a digest (the table is not a user list).
 * Returns whether this attempt may proceed; an attempt over either limit is not even checked.
 */
export async function allowSignInAttempt(em: EntityManager, email: string, address: string, limits: SignInLimits): Promise<boolean> {
  const buckets: [string, number][] = [
    [`email:${digestSecret(email.trim().toLowerCase())}`, limits.perEmail],
    [`address:${digestSecret(address)}`, limits.perAddress],
  ];
  let allowed = true;
  for (const [bucket, limit] of buckets) {
    const [row] = await em.execute<{ attempts: number }[]>(
      `insert into sign_in_attempts (bucket, window_started_at, attempts) values (?, now(), 1)
       on conflict (bucket) do update set
         attempts = case when sign_in_attempts.window_started_at < now() - make_interval(secs => ?) then 1 else sign_in_attempts.attempts + 1 end,
         window_started_at = case when sign_in_attempts.window_started_at < now() - make_interval(secs => ?) then now() else sign_in_attempts.window_started_at end
       returning attempts`,
      [bucket, limits.windowSeconds, limits.windowSeconds],
    );
    if (Number(row!.attempts) > limit) allowed = false;
  }
  return allowed;
}
