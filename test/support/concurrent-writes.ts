import { beforeEach, test } from '@jest/globals';
import type { TransactionEvent, TransactionObserver } from '../../src/db/transaction.js';
import type { Harness, TestAccount } from './harness.js';
import { useHarness } from './use-harness.js';

// Concurrency needs more than one connection: on embedded PGlite (one connection, one
// transaction at a time) locks are never contended, so the tests that need a second session
// holding a lock report as skipped there. CI sets DATABASE_URL and runs them all.
export const onPostgres = Boolean(process.env.DATABASE_URL);
export const postgresOnly = onPostgres ? test : test.skip;
if (!onPostgres) console.log('concurrent-writes: DATABASE_URL is unset (embedded PGlite has a single connection): the tests that need a second session holding a lock are skipped');

/** Counts what the transaction helper reports, per label. */
export class TransactionFigures implements TransactionObserver {
  readonly retries: (TransactionEvent & { delayMs: number })[] = [];
  readonly givenUp: (TransactionEvent & { reason: string })[] = [];
  retrying(event: TransactionEvent & { delayMs: number }) {
    this.retries.push(event);
  }
  gaveUp(event: TransactionEvent & { reason: string }) {
    this.givenUp.push(event);
  }
  reset() {
    this.retries.length = 0;
    this.givenUp.length = 0;
  }
}

/** One harness for the file's tests whose transactions report to `figures`, which start empty for each test. */
export function useHarnessReportingTo(figures: TransactionFigures, started: (harness: Harness) => void): void {
  // Starting embedded PGlite (WASM) can take long on a busy machine.
  useHarness({ transactionObserver: figures }, started, 120_000);
  beforeEach(() => figures.reset());
}

/** Users made directly, and their job titles as stored. */
export function userFixtures(harness: () => Harness) {
  return {
    async createUsers(account: TestAccount, count: number) {
      const users = [];
      for (let i = 0; i < count; i++) users.push(await harness().createUser(account));
      return users;
    },
    async jobTitles(ids: readonly string[]): Promise<Map<string, string | null>> {
      const rows = await harness().database.em().execute<{ id: string; job_title: string | null }[]>('select id, job_title from users where id in (?)', [[...ids]]);
      return new Map(rows.map((row) => [row.id, row.job_title]));
    },
  };
}
