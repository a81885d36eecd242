import type pg from 'pg';

/**
 * PostgreSQL's answer when a commit's wait for the synchronous standby is cancelled (by
 * `statement_timeout`, or a cancel request): the COMMIT still succeeds, with only a WARNING saying
 * the transaction "has already committed locally, but might not have been replicated to the standby".
 * On a cluster that runs with Patroni's `synchronous_mode_strict` (SPEC 21) that is exactly the
 * commit a failover could lose, so it must not be acknowledged.
 */
const SYNCHRONOUS_WAIT_CANCELLED = /cancel(l)?ing (the )?wait for synchronous replication/i;
const COMMIT = /^\s*commit\b/i;

/** A COMMIT that holds on this server but that no synchronous standby confirmed: answered as "unavailable", never as done. */
export class UnconfirmedCommitError extends Error {
  constructor() {
    super('commit not confirmed by a synchronous standby (its wait was cancelled): the write may not survive a failover');
    this.name = 'UnconfirmedCommitError';
  }
}

type Query = pg.PoolClient['query'];
type Release = pg.PoolClient['release'];

/**
 * What every PostgreSQL pool of the service needs to meet a failover (SPEC 21), installed once per
 * pool when MikroORM creates it (`onPoolCreated`): commits without the standby's confirmation are
 * refused, and connections that die while checked out go back to the pool to be discarded.
 */
export function guardPool(pool: pg.Pool): void {
  const checkedOut = new WeakSet<pg.PoolClient>();
  pool.on('acquire', (client) => checkedOut.add(client));
  pool.on('connect', (client) => {
    refuseUnconfirmedCommit(client);
    releaseWhenLost(client, checkedOut);
  });
}

/**
 * Makes COMMIT on this connection fail when PostgreSQL reports that its synchronous wait was
 * cancelled. The transaction stays committed on the primary (whole, not half-written), but the
 * request answers 503 instead of acknowledging it.
 */
function refuseUnconfirmedCommit(client: pg.PoolClient): void {
  let cancelledWait = false;
  client.on('notice', (notice) => {
    if (SYNCHRONOUS_WAIT_CANCELLED.test(notice.message ?? '')) cancelledWait = true;
  });
  const query = client.query.bind(client) as (...args: unknown[]) => unknown;
  client.query = ((...args: unknown[]) => {
    const text = typeof args[0] === 'string' ? args[0] : (args[0] as { text?: unknown } | undefined)?.text;
    if (typeof text !== 'string' || !COMMIT.test(text) || args.some((arg) => typeof arg === 'function')) return query(...args);
    cancelledWait = false;
    return (query(...args) as Promise<unknown>).then((result) => {
      if (cancelledWait) throw new UnconfirmedCommitError();
      return result;
    });
  }) as Query;
}

/**
 * A connection whose server died while it was checked out (the primary killed mid-transaction) is
 * released to the pool with the error, so the pool discards it and may open another. Without this
 * it would stay checked out for ever when the holder's own release is skipped: Kysely releases a
 * transaction's connection only after a COMMIT or ROLLBACK that succeeded, and on a dead connection
 * neither can, so each transaction cut by a failover would shrink the pool by one until none is left.
 * The holder's later release (if any) is then a no-op, not pg-pool's "released twice" error.
 */
function releaseWhenLost(client: pg.PoolClient, checkedOut: WeakSet<pg.PoolClient>): void {
  let release: Release | undefined;
  // pg-pool assigns `client.release` anew at each checkout (a release-once closure): each one is wrapped.
  Object.defineProperty(client, 'release', {
    configurable: true,
    get: () => release,
    set(poolRelease: Release) {
      let released = false;
      release = (error?: Error | boolean) => {
        if (released) return;
        released = true;
        checkedOut.delete(client);
        poolRelease(error);
      };
    },
  });
  client.once('end', () => {
    if (checkedOut.has(client)) release?.(new Error('connection lost while checked out'));
  });
}
