import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import { Redis } from 'ioredis';
import type { Logger } from '../logging/logger.js';

export interface RateDecision {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Seconds until the window resets. */
  resetSeconds: number;
}

export interface RateLimiter {
  consume(key: string): Promise<RateDecision>;
  close(): Promise<void>;
}

export interface RateLimiterOptions {
  perMinute: number;
  /** Shared counters for every instance; unset keeps them in this process's memory. */
  redisUrl?: string;
  keyPrefix?: string;
  /** The window; one minute in production, shorter in tests that watch it reset. */
  windowSeconds?: number;
  logger: Logger;
}

/**
 * Fixed one-minute windows per credential budget. With Redis, every instance draws on the same
 * counters; if Redis cannot be reached the request is let through and the failure logged, so a
 * cache outage does not become an API outage.
 */
export function createRateLimiter(options: RateLimiterOptions): RateLimiter {
  const keyPrefix = options.keyPrefix ?? 'aag-rate';
  const windowSeconds = options.windowSeconds ?? 60;
  let redis: Redis | undefined;
  let limiter: RateLimiterAbstract;
  if (options.redisUrl) {
    redis = new Redis(options.redisUrl, { maxRetriesPerRequest: 1, connectTimeout: 2000 });
    redis.on('error', (error: Error) => options.logger.warn({ err: error }, 'rate-limit store unavailable'));
    limiter = new RateLimiterRedis({ storeClient: redis, points: options.perMinute, duration: windowSeconds, keyPrefix });
  } else {
    limiter = new RateLimiterMemory({ points: options.perMinute, duration: windowSeconds, keyPrefix });
  }
  const decision = (result: RateLimiterRes, allowed: boolean): RateDecision => ({
    allowed,
    limit: options.perMinute,
    remaining: Math.max(0, result.remainingPoints),
    resetSeconds: Math.max(1, Math.ceil(result.msBeforeNext / 1000)),
  });

  return {
    async consume(key) {
      try {
        return decision(await limiter.consume(key), true);
      } catch (rejection) {
        if (rejection instanceof RateLimiterRes) return decision(rejection, false);
        options.logger.warn({ err: rejection }, 'rate limit not evaluated: store error');
        return { allowed: true, limit: options.perMinute, remaining: options.perMinute, resetSeconds: windowSeconds };
      }
    },
    async close() {
      if (redis) await redis.quit().catch(() => redis?.disconnect());
    },
  };
}
