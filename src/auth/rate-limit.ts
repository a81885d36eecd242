import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import { Redis } from 'ioredis';
import type { Logger } from '../logging/logger.js';

/** Where a decision was taken: this process's memory, the shared Redis counters, or the per-instance fallback while Redis is away. */
export type RateLimitStore = 'memory' | 'redis' | 'insurance';

export interface RateDecision {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Seconds until the window resets. */
  resetSeconds: number;
  store: RateLimitStore;
}

/** `memory`: no Redis configured; `up`/`down`: the shared store's connection. */
export type RateLimitStoreState = 'memory' | 'up' | 'down';

export interface RateLimiter {
  /** Draws `points` (default 1) of `key`'s budget; refused when fewer remain (the points then stay drawn unless refunded). */
  consume(key: string, points?: number): Promise<RateDecision>;
  /** Gives back points a refused draw took, so a request refused for its cost does not spend the budget it could not use. */
  refund(key: string, points: number): Promise<void>;
  storeState(): RateLimitStoreState;
  close(): Promise<void>;
}

export interface RateLimiterOptions {
  perMinute: number;
  /** Shared counters for every instance; unset keeps them in this process's memory. */
  redisUrl?: string;
  keyPrefix?: string;
  /** The window; one minute in production, shorter in tests that watch it reset. */
  windowSeconds?: number;
  /** How long one Redis command may take before the insurance limiter answers instead. */
  redisCommandTimeoutMs?: number;
  logger: Logger;
}

const RECONNECT_BACKOFF_MAX_MS = 2_000;
const STORE_ERROR_LOG_INTERVAL_MS = 30_000;
const FIRST_CONNECTION_WAIT_MS = 1_000;
const FAILURES_BEFORE_RECONNECT = 3;

/**
 * Marks the results it produced, so a decision can say which store took it, and tells the owner
 * each time it had to answer (a Redis command failed or timed out).
 */
class InsuranceLimiter extends RateLimiterMemory {
  static readonly answered = new WeakSet<object>();
  onAnswer: () => void = () => {};

  override async consume(key: string | number, points?: number, options?: { [key: string]: any }): Promise<RateLimiterRes> {
    this.onAnswer();
    try {
      const result = await super.consume(key, points, options);
      InsuranceLimiter.answered.add(result);
      return result;
    } catch (rejection) {
      if (rejection instanceof RateLimiterRes) InsuranceLimiter.answered.add(rejection);
      throw rejection;
    }
  }
}

/**
 * Fixed windows per credential budget. With Redis, every instance draws on the same counters.
 *
 * Redis outages degrade to per-instance limits, never to "no limit" and never to "refuse
 * everything": the client does not queue commands while disconnected, a command that takes longer
 * than `redisCommandTimeoutMs` is abandoned, and in both cases the in-memory insurance limiter
 * (same budget, same window) answers at once. Reconnection happens in the background with backoff.
 * With N instances the aggregate limit during an outage is at most N times the budget.
 */
export function createRateLimiter(options: RateLimiterOptions): RateLimiter {
  const keyPrefix = options.keyPrefix ?? 'aag-rate';
  const windowSeconds = options.windowSeconds ?? 60;
  let redis: Redis | undefined;
  let limiter: RateLimiterAbstract;
  let firstConnection: Promise<void> | undefined;
  let consecutiveFailures = 0;
  if (options.redisUrl) {
    let lastErrorLogged = 0;
    redis = new Redis(options.redisUrl, {
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      commandTimeout: options.redisCommandTimeoutMs ?? 30,
      connectTimeout: 1_000,
      retryStrategy: (attempt) => Math.min(100 * 2 ** Math.min(attempt, 6), RECONNECT_BACKOFF_MAX_MS),
    });
    // One line per outage and then one per interval: a store that is down must not flood the log.
    redis.on('error', (error: Error) => {
      if (Date.now() - lastErrorLogged < STORE_ERROR_LOG_INTERVAL_MS) return;
      lastErrorLogged = Date.now();
      options.logger.warn({ err: error }, 'rate-limit store unavailable; limits are enforced per instance until it is back');
    });
    redis.on('ready', () => {
      if (lastErrorLogged) options.logger.info('rate-limit store reachable again; limits are shared');
      lastErrorLogged = 0;
    });
    // Requests arriving while the first connection is being made wait for it (briefly), so a fresh
    // instance shares the budget from its first request; an unreachable Redis ends the wait at once.
    const connecting = redis;
    firstConnection = new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, FIRST_CONNECTION_WAIT_MS);
      const settle = () => {
        clearTimeout(timer);
        resolve();
      };
      connecting.once('ready', settle).once('error', settle).once('end', settle);
    }).then(() => {
      firstConnection = undefined;
    });
    const insurance = new InsuranceLimiter({ points: options.perMinute, duration: windowSeconds, keyPrefix: `${keyPrefix}-insurance` });
    // Commands failing one after another on a "ready" connection mean the link is silently broken
    // (a partition rather than a refusal): drop it, so the following requests go straight to the
    // insurance limiter instead of each waiting out the command timeout, and reconnect in the
    // background. A single slow reply (a busy machine) does not cost the connection.
    const client = redis;
    insurance.onAnswer = () => {
      if (client.status !== 'ready' || ++consecutiveFailures < FAILURES_BEFORE_RECONNECT) return;
      consecutiveFailures = 0;
      client.stream?.destroy();
    };
    limiter = new RateLimiterRedis({
      storeClient: redis,
      points: options.perMinute,
      duration: windowSeconds,
      keyPrefix,
      rejectIfRedisNotReady: true,
      insuranceLimiter: insurance,
    });
  } else {
    limiter = new RateLimiterMemory({ points: options.perMinute, duration: windowSeconds, keyPrefix });
  }
  const store = (result: RateLimiterRes): RateLimitStore => {
    if (!redis) return 'memory';
    if (InsuranceLimiter.answered.has(result)) return 'insurance';
    consecutiveFailures = 0;
    return 'redis';
  };
  const decision = (result: RateLimiterRes, allowed: boolean): RateDecision => ({
    allowed,
    limit: options.perMinute,
    remaining: Math.max(0, result.remainingPoints),
    resetSeconds: Math.max(1, Math.ceil(result.msBeforeNext / 1000)),
    store: store(result),
  });

  return {
    async consume(key, points = 1) {
      if (firstConnection) await firstConnection;
      try {
        return decision(await limiter.consume(key, points), true);
      } catch (rejection) {
        if (rejection instanceof RateLimiterRes) return decision(rejection, false);
        throw rejection;
      }
    },
    async refund(key, points) {
      // Best effort: a store that cannot take the refund keeps the points drawn, never fails the answer.
      await limiter.reward(key, points).catch(() => {});
    },
    storeState() {
      if (!redis) return 'memory';
      return redis.status === 'ready' ? 'up' : 'down';
    },
    async close() {
      if (!redis) return;
      if (redis.status === 'ready') await redis.quit().catch(() => redis?.disconnect());
      else redis.disconnect();
    },
  };
}
