import { setTimeout as sleep } from 'node:timers/promises';
import type { EntityManager } from '@mikro-orm/sql';
import { ServiceUnavailableError } from '../errors/domain-errors.js';
import { connectionShareOf } from './connection-share.js';
import { openJournal, type CommitHook, type WriteOrigin } from './change-journal.js';
import { callFunctions } from './write-path.js';

/** How every write transaction behaves under contention. */
export interface TransactionPolicy {
  /** `lock_timeout` of every write transaction: no write waits longer for a row lock. */
  lockTimeoutMs: number;
  /**
   * The connections already carry `lock_timeout = lockTimeoutMs` (a startup parameter of every
   * pooled PostgreSQL connection), so a transaction needs no `SET LOCAL` round trip of its own.
   * False where connections cannot be given it (embedded PGlite, a transaction-pooling PgBouncer)
   * or may hold another value.
   */
  lockTimeoutOnConnection?: boolean;
  /**
   * Set (`SET LOCAL`, with the lock timeout, one statement) at the start of every write transaction:
   * behind a transaction pooler no connection carries it, and only what a transaction sets for
   * itself is certain to hold for its statements.
   */
  statementTimeoutMs?: number;
  /** Attempts in all (the first run included) when PostgreSQL reports a deadlock or a serialization failure. */
  maxAttempts: number;
  /** The backoff before attempt n is drawn uniformly from [0, min(maxBackoffMs, baseBackoffMs * 2^(n-2))]. */
  baseBackoffMs: number;
  maxBackoffMs: number;
}

export const DEFAULT_TRANSACTION_POLICY: TransactionPolicy = {
  lockTimeoutMs: 5_000,
  maxAttempts: 5,
  baseBackoffMs: 10,
  maxBackoffMs: 250,
};

/** SQLSTATEs after which the whole unit of work is re-run: the database rolled it back, nothing of it remains. */
const RETRYABLE_SQLSTATES = new Map([
  ['40P01', 'deadlock_detected'],
  ['40001', 'serialization_failure'],
]);
const LOCK_NOT_AVAILABLE = '55P03';

export interface TransactionEvent {
  /** What the unit of work is (e.g. `users.updateMany`), for logs and test figures. */
  label: string;
  /** 1 for the first run. */
  attempt: number;
  sqlState: string;
}

export interface TransactionObserver {
  /** A run ended in a deadlock or serialization failure and will run again after `delayMs`. */
  retrying?(event: TransactionEvent & { delayMs: number }): void;
  /** The write gives up and the caller gets the busy answer (503 `unavailable`). */
  gaveUp?(event: TransactionEvent & { reason: 'retries_exhausted' | 'lock_timeout' }): void;
}

/** The SQLSTATE of a database error, looking through MikroORM's wrappers. */
export function sqlStateOf(error: unknown): string | undefined {
  for (let current = error, depth = 0; current instanceof Error && depth < 5; current = current.cause, depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code)) return code;
  }
  return undefined;
}

/** What a runner adds to its policy: commit hooks, an after-commit step, the writes' origin. */
interface RunnerExtensions {
  /** Run inside every transaction that recorded changes, before it commits (the audit trail, live updates). */
  commitHooks?: readonly CommitHook[];
  /**
   * Runs after every outermost transaction that committed, before `run` returns: where a write
   * leaves what later reads must respect (the commit's WAL position, for read replicas).
   */
  afterCommit?: (em: EntityManager) => Promise<void>;
  origin?: WriteOrigin;
}

/**
 * The one way a write reaches the database. `run(em, work)` executes `work` in a transaction on a
 * clear fork of `em` (so a re-run starts from an empty identity map, never from the previous run's
 * half-applied entities), under `lock_timeout` (the connection's, else `SET LOCAL`; also `statement_timeout` behind a transaction pooler). A deadlock or serialization failure rolls
 * it back and runs it again, up to `maxAttempts`, after a jittered backoff; `work` must therefore
 * have no side effects outside the transaction. Exhausted retries and a lock timeout end as
 * `ServiceUnavailableError` (the documented 503 busy answer), never as an internal error.
 *
 * Called inside a transaction already (a deletion hook, a service called from another's unit of
 * work), `run` joins it: only the outermost run may retry, because the database aborts the whole
 * transaction, not a part of it.
 *
 * What the work changed it says with `recordChange(tx, change)`; after the work, in the same
 * transaction, the runner hands those changes to its commit hooks (the audit trail, live updates),
 * with the runner's `origin`. This is the one place they are written: a feature cannot forget
 * them, a rolled-back change leaves nothing, and a retried one leaves them once.
 */
export class TransactionRunner {
  private readonly transactionSettings: string | undefined;

  constructor(
    readonly policy: TransactionPolicy,
    private readonly observers: readonly TransactionObserver[] = [],
    private readonly random: () => number = Math.random,
    private readonly extensions: RunnerExtensions = {},
  ) {
    if (!Number.isSafeInteger(policy.lockTimeoutMs) || policy.lockTimeoutMs < 1) throw new RangeError('lockTimeoutMs must be a positive integer');
    if (!Number.isSafeInteger(policy.maxAttempts) || policy.maxAttempts < 1) throw new RangeError('maxAttempts must be a positive integer');
    if (policy.statementTimeoutMs !== undefined && (!Number.isSafeInteger(policy.statementTimeoutMs) || policy.statementTimeoutMs < 0)) throw new RangeError('statementTimeoutMs must be a non-negative integer');
    this.transactionSettings = transactionSettingsStatement(policy);
  }

  /** Where the runner's writes come from (the audit trail's actor and method). */
  get origin(): WriteOrigin {
    return this.extensions.origin ?? { face: 'server' };
  }

  private with(extensions: RunnerExtensions, observers = this.observers): TransactionRunner {
    return new TransactionRunner(this.policy, observers, this.random, { ...this.extensions, ...extensions });
  }

  /** The same policy, also reporting to `observer` (e.g. one that logs with a request's id). */
  observedBy(observer: TransactionObserver): TransactionRunner {
    return this.with({}, [...this.observers, observer]);
  }

  /**
   * The same policy, making the calls of `hooks` before every commit that recorded changes
   * (`recordChange`), after those it already makes; hooks holding a lock to the commit
   * (`locksUntilCommit`) always last.
   */
  withCommitHooks(hooks: readonly CommitHook[]): TransactionRunner {
    const all = [...(this.extensions.commitHooks ?? []), ...hooks];
    return this.with({ commitHooks: [...all.filter((hook) => !hook.locksUntilCommit), ...all.filter((hook) => hook.locksUntilCommit)] });
  }

  /** The same runner, calling `hook` after each commit (set once, when the database opens). */
  withAfterCommit(hook: (em: EntityManager) => Promise<void>): TransactionRunner {
    return this.with({ afterCommit: hook });
  }

  /** The same runner, its writes attributed to `origin` (a request's principal and address, an operator's command). */
  onBehalfOf(origin: WriteOrigin): TransactionRunner {
    return this.with({ origin });
  }

  async run<T>(em: EntityManager, work: (tx: EntityManager) => Promise<T>, label = 'write'): Promise<T> {
    if (em.isInTransaction()) return work(em);
    // A transaction holds one connection from its first statement to its commit: one place of the request's share.
    const share = connectionShareOf(em);
    return share ? share.run(() => this.runOutermost(em, work, label)) : this.runOutermost(em, work, label);
  }

  private async runOutermost<T>(em: EntityManager, work: (tx: EntityManager) => Promise<T>, label: string): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        const result = await em.transactional(
          async (tx) => {
            if (this.transactionSettings) await tx.execute(this.transactionSettings, [], 'run');
            const journal = openJournal(tx);
            const outcome = await work(tx);
            if (journal.changes.length > 0) {
              // Flushed first so hooks read (and lock) what the work wrote, in the same transaction.
              await tx.flush();
              await callFunctions(tx, (this.extensions.commitHooks ?? []).flatMap((hook) => hook.callsBeforeCommit(journal.changes, this.origin)));
            }
            return outcome;
          },
          { clear: true },
        );
        await this.extensions.afterCommit?.(em);
        return result;
      } catch (error) {
        const sqlState = sqlStateOf(error);
        if (sqlState === LOCK_NOT_AVAILABLE) {
          this.notify('gaveUp', { label, attempt, sqlState, reason: 'lock_timeout' });
          throw new ServiceUnavailableError(`The resource is busy: a lock was not granted within ${this.policy.lockTimeoutMs} ms; retry shortly.`);
        }
        const collision = sqlState === undefined ? undefined : RETRYABLE_SQLSTATES.get(sqlState);
        if (sqlState === undefined || collision === undefined) throw error;
        if (attempt >= this.policy.maxAttempts) {
          this.notify('gaveUp', { label, attempt, sqlState, reason: 'retries_exhausted' });
          throw new ServiceUnavailableError(`The resource is busy: concurrent writes collided (${collision}) ${attempt} times; retry shortly.`);
        }
        const delayMs = this.backoff(attempt + 1);
        this.notify('retrying', { label, attempt, sqlState, delayMs });
        await sleep(delayMs);
      }
    }
  }

  private backoff(nextAttempt: number): number {
    const ceiling = Math.min(this.policy.maxBackoffMs, this.policy.baseBackoffMs * 2 ** (nextAttempt - 2));
    return Math.round(this.random() * ceiling);
  }

  private notify<K extends keyof TransactionObserver>(kind: K, event: Parameters<NonNullable<TransactionObserver[K]>>[0]): void {
    for (const observer of this.observers) {
      try {
        (observer[kind] as ((event: unknown) => void) | undefined)?.(event);
      } catch {
        // An observer (a logger, a test counter) never changes the outcome of a write.
      }
    }
  }
}

/** The `SET LOCAL` equivalents a write transaction starts with; none when its connection carries them. */
function transactionSettingsStatement(policy: TransactionPolicy): string | undefined {
  // Integers validated in the constructor: safe to inline (SET takes no bind parameters).
  const settings = [
    ...(policy.lockTimeoutOnConnection ? [] : [`set_config('lock_timeout', '${policy.lockTimeoutMs}ms', true)`]),
    ...(policy.statementTimeoutMs === undefined ? [] : [`set_config('statement_timeout', '${policy.statementTimeoutMs}ms', true)`]),
  ];
  return settings.length ? `select ${settings.join(', ')}` : undefined;
}
