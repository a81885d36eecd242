import type { IdempotencyStore } from '../http/idempotency-store.js';
import type { Logger } from '../logging/logger.js';
import type { ThrottledWarning } from '../logging/throttled-log.js';
import type { Job } from './feature.js';

export interface RunningJobs {
  /** No new round starts; resolves when the rounds under way have finished. */
  stop(): Promise<void>;
}

/**
 * Runs each job every `everyMs`, one round at a time: a database slower than the interval skips
 * ticks instead of piling up work. A failed round is a throttled warning; the next tick tries again.
 */
export function startJobs(jobs: readonly Job[], outages: ThrottledWarning): RunningJobs {
  const inFlight = new Map<Job, Promise<void>>();
  const timers = jobs.map((job) => {
    const timer = setInterval(() => {
      if (inFlight.has(job)) return;
      inFlight.set(job, job.run().then(
        () => undefined,
        (error: unknown) => outages.warn({ err: error, job: job.name }, job.failure),
      ).finally(() => inFlight.delete(job)));
    }, job.everyMs);
    timer.unref();
    return timer;
  });
  return {
    async stop() {
      for (const timer of timers) clearInterval(timer);
      await Promise.all(inFlight.values());
    },
  };
}

/** Between purges of idempotency keys older than a day. */
const IDEMPOTENCY_PURGE_INTERVAL_MS = 10 * 60_000;

export function idempotencyKeyPurge(store: IdempotencyStore, logger: Logger): Job {
  return {
    name: 'idempotency-keys',
    everyMs: IDEMPOTENCY_PURGE_INTERVAL_MS,
    failure: 'idempotency key purge failed',
    async run() {
      const purged = await store.purgeExpired();
      if (purged) logger.debug({ purged }, 'purged expired idempotency keys');
    },
  };
}
