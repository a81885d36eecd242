import type { Database } from '../db/database.js';

/** How long a first outcome is kept, and so how long a retry with its key is answered from it. */
export const IDEMPOTENCY_RETENTION_HOURS = 24;
/**
 * How long a running first request holds its key. Past it the holder is presumed dead (the
 * process crashed mid-request) and a retry with the same request may run again.
 */
export const IDEMPOTENCY_LEASE_SECONDS = 120;

export type Claim =
  | { outcome: 'claimed' }
  | { outcome: 'running' }
  | { outcome: 'different_request' }
  | { outcome: 'completed'; status: number; sealed: Buffer };

interface StoredRow {
  fingerprint: string;
  state: 'running' | 'completed';
  response_status: number | null;
  response_sealed: Uint8Array | null;
}

/** The `idempotency_keys` table, in plain SQL that PostgreSQL and PGlite both run. */
export class IdempotencyStore {
  constructor(private readonly database: Database) {}

  /**
   * Takes the key for this request, or tells what holds it. An expired row, or a running one whose
   * lease ran out for the same request, is taken over.
   */
  async claim(scope: string, key: string, fingerprint: string): Promise<Claim> {
    const em = this.database.em();
    for (let attempt = 0; attempt < 3; attempt++) {
      const claimed = await em.execute(
        `insert into idempotency_keys (scope, key, fingerprint, state, locked_until, expires_at)
         values (?, ?, ?, 'running', now() + make_interval(secs => ?), now() + make_interval(hours => ?))
         on conflict (scope, key) do update set
           fingerprint = excluded.fingerprint, state = 'running', locked_until = excluded.locked_until,
           response_status = null, response_sealed = null, created_at = now(), expires_at = excluded.expires_at
         where idempotency_keys.expires_at <= now()
            or (idempotency_keys.state = 'running' and idempotency_keys.locked_until <= now() and idempotency_keys.fingerprint = excluded.fingerprint)
         returning scope`,
        [scope, key, fingerprint, IDEMPOTENCY_LEASE_SECONDS, IDEMPOTENCY_RETENTION_HOURS],
      );
      if (claimed.length) return { outcome: 'claimed' };
      const [row] = await em.execute<StoredRow[]>(
        'select fingerprint, state, response_status, response_sealed from idempotency_keys where scope = ? and key = ?',
        [scope, key],
      );
      // Purged between the two statements: try again.
      if (!row) continue;
      if (row.fingerprint !== fingerprint) return { outcome: 'different_request' };
      if (row.state === 'running' || row.response_status === null || row.response_sealed === null) return { outcome: 'running' };
      return { outcome: 'completed', status: row.response_status, sealed: Buffer.from(row.response_sealed) };
    }
    return { outcome: 'running' };
  }

  async complete(scope: string, key: string, status: number, sealed: Buffer): Promise<void> {
    await this.database.em().execute(
      `update idempotency_keys set state = 'completed', response_status = ?, response_sealed = ? where scope = ? and key = ? and state = 'running'`,
      [status, sealed, scope, key],
    );
  }

  /** Forgets a running key whose request ended without a final answer (a 5xx), so a retry runs again. */
  async release(scope: string, key: string): Promise<void> {
    await this.database.em().execute(`delete from idempotency_keys where scope = ? and key = ? and state = 'running'`, [scope, key]);
  }

  async purgeExpired(): Promise<number> {
    const deleted = await this.database.em().execute('delete from idempotency_keys where expires_at <= now() returning key');
    return deleted.length;
  }
}
