import { Redis } from 'ioredis';

/**
 * Where each credential's latest write ended (its commit's WAL position), for a short window: while
 * an entry lives, that credential's presenting reads go only to a replica that has replayed it.
 * Shared through Redis when there is one, so the instance that serves the next request knows
 * what another instance wrote (no sticky sessions).
 */
export interface RecentWrites {
  /** Keeps the higher of the stored and the given position, for `windowMs`. */
  record(credentialId: string, position: bigint): Promise<void>;
  /** The position to wait for, if the credential wrote within the window; rejects when the store cannot answer. */
  positionOf(credentialId: string): Promise<bigint | undefined>;
  close?(): Promise<void>;
}

export class MemoryRecentWrites implements RecentWrites {
  private readonly entries = new Map<string, { position: bigint; expiresAt: number }>();

  constructor(private readonly windowMs: number) {}

  async record(credentialId: string, position: bigint): Promise<void> {
    const now = Date.now();
    const current = this.live(credentialId, now);
    this.entries.set(credentialId, { position: current !== undefined && current > position ? current : position, expiresAt: now + this.windowMs });
    if (this.entries.size > 10_000) for (const [key, entry] of this.entries) if (entry.expiresAt <= now) this.entries.delete(key);
  }

  async positionOf(credentialId: string): Promise<bigint | undefined> {
    return this.live(credentialId, Date.now());
  }

  private live(credentialId: string, now: number): bigint | undefined {
    const entry = this.entries.get(credentialId);
    if (entry && entry.expiresAt > now) return entry.position;
    if (entry) this.entries.delete(credentialId);
    return undefined;
  }
}

// Positions as 16 hex digits compare as strings, so the script keeps the higher one without number conversion.
const RECORD_HIGHER = `
local current = redis.call('GET', KEYS[1])
if (not current) or current < ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
else
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 1`;

/**
 * Redis-shared, with this instance's own memory as well: while Redis cannot answer, a credential's
 * reads go to the primary (never to a replica that may miss its write), and what this instance
 * wrote meanwhile is still known here.
 */
export class RedisRecentWrites implements RecentWrites {
  private readonly local: MemoryRecentWrites;

  constructor(
    private readonly redis: Redis,
    private readonly windowMs: number,
    private readonly keyPrefix = 'aag-recent-write:',
  ) {
    this.local = new MemoryRecentWrites(windowMs);
  }

  async record(credentialId: string, position: bigint): Promise<void> {
    await this.local.record(credentialId, position);
    try {
      await this.redis.eval(RECORD_HIGHER, 1, this.keyPrefix + credentialId, position.toString(16).padStart(16, '0'), String(this.windowMs));
    } catch {
      // Redis is away: the reads of this credential on other instances find no answer there and use the primary.
    }
  }

  async positionOf(credentialId: string): Promise<bigint | undefined> {
    const [shared, local] = await Promise.all([this.redis.get(this.keyPrefix + credentialId), this.local.positionOf(credentialId)]);
    const remote = shared === null ? undefined : BigInt(`0x${shared}`);
    if (remote === undefined) return local;
    return local !== undefined && local > remote ? local : remote;
  }

  async close(): Promise<void> {
    this.redis.disconnect();
  }
}

/** The store for a deployment of several instances: a Redis connection of its own that never queues commands while away. */
export function sharedRecentWrites(redisUrl: string, windowMs: number, commandTimeoutMs: number): RecentWrites {
  const redis = new Redis(redisUrl, { enableOfflineQueue: false, maxRetriesPerRequest: 0, commandTimeout: commandTimeoutMs, connectTimeout: 1_000, lazyConnect: false });
  // Failures answer per call (reads go to the primary); the client reconnects in the background.
  redis.on('error', () => {});
  return new RedisRecentWrites(redis, windowMs);
}
