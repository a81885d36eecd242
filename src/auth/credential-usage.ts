import type { EntityManager } from '@mikro-orm/sql';

/** How stale a credential's `last_used_at` may be, and how often one instance writes it per credential. */
export const LAST_USED_RESOLUTION_MS = 60_000;

/** Tables whose rows are credentials with a `last_used_at` column (API keys, provisioning tokens). */
export type CredentialTable = 'api_keys' | 'provisioning_tokens';

interface Usage {
  /** When this instance last wrote the credential's use. */
  writtenAt: number;
  /** A use not written yet (it came within a minute of the last write); flushed by `timer`. */
  pending?: Date;
  timer?: NodeJS.Timeout;
  em: EntityManager;
}

type WarnLogger = { warn(object: object, message: string): void };

/**
 * `last_used_at` without a write per request: the first use a process sees is written at once, the
 * later ones at most once a minute per credential (a trailing write carries the latest use), each
 * off the request's path (never awaited; a failure is logged). So the column is at most a minute
 * behind the credential's real last use through this instance, and a key used by every request
 * costs one row update a minute. The update only moves the time forward, so instances that write
 * the same key do not undo each other.
 */
export class CredentialUsage {
  private readonly usages = new Map<string, Usage>();
  private logger: WarnLogger | undefined;

  constructor(private readonly now: () => number = Date.now) {}

  /** Where failed writes are reported (set once by the app). */
  reportTo(logger: WarnLogger): void {
    this.logger = logger;
  }

  noteUse(em: EntityManager, table: CredentialTable, id: string): void {
    const key = `${table}:${id}`;
    const now = this.now();
    const usage = this.usages.get(key);
    if (!usage || now - usage.writtenAt >= LAST_USED_RESOLUTION_MS) {
      if (usage?.timer) clearTimeout(usage.timer);
      if (this.usages.size >= MAX_TRACKED) this.forgetIdle(now);
      this.usages.set(key, { writtenAt: now, em });
      this.write(em, table, id, new Date(now));
      return;
    }
    usage.pending = new Date(now);
    usage.em = em;
    usage.timer ??= setTimeout(() => {
      usage.timer = undefined;
      const pending = usage.pending;
      if (!pending) return;
      usage.pending = undefined;
      usage.writtenAt = this.now();
      this.write(usage.em, table, id, pending);
    }, usage.writtenAt + LAST_USED_RESOLUTION_MS - now).unref();
  }

  private write(em: EntityManager, table: CredentialTable, id: string, at: Date): void {
    em.getConnection().execute(
      `update ${table} set last_used_at = ? where id = ? and (last_used_at is null or last_used_at < ?)`,
      [at, id, at],
      'run',
    ).catch((error: unknown) => this.logger?.warn({ err: error, credential: { table, id } }, 'could not record a credential\'s last use'));
  }

  /** Entries with nothing pending and older than the resolution carry no information any more. */
  private forgetIdle(now: number): void {
    for (const [key, usage] of this.usages) {
      if (!usage.timer && now - usage.writtenAt >= LAST_USED_RESOLUTION_MS) this.usages.delete(key);
    }
  }
}

const MAX_TRACKED = 10_000;

/** The process's tracker: every app instance of the process shares it (an instance is a process in production). */
export const credentialUsage = new CredentialUsage();
