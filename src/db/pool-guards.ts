import pg from 'pg';

/**
 * PostgreSQL's answer when a commit's wait for the synchronous standby is cancelled (by a cancel
 * request; `statement_timeout` is switched off before a COMMIT starts waiting): the COMMIT still succeeds, with only a WARNING saying
 * the transaction "has already committed locally, but might not have been replicated to the standby".
 * On a cluster that runs with Patroni's `synchronous_mode_strict` that is exactly the
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
 * What every PostgreSQL pool of the service needs to meet a failover, installed once per
 * pool when MikroORM creates it (`onPoolCreated`): commits without the standby's confirmation are
 * refused, and connections that die while checked out go back to the pool to be discarded.
 */
export function guardPool(pool: pg.Pool, options: { commitTimeoutMs: number }): void {
  const checkedOut = new WeakSet<pg.PoolClient>();
  pool.on('acquire', (client) => checkedOut.add(client));
  pool.on('connect', (client) => {
    refuseUnconfirmedCommit(client, options.commitTimeoutMs);
    releaseWhenLost(client, checkedOut);
  });
}

/**
 * Bounds COMMIT on this connection and makes it fail when its synchronous wait was cancelled.
 * PostgreSQL lets a COMMIT wait for the synchronous standby without any timeout (with
 * `synchronous_mode_strict` and no standby left, for ever), so past `commitTimeoutMs` the wait is
 * cancelled with a cancel request. PostgreSQL then ends the COMMIT "successfully" with a WARNING:
 * the transaction stays committed on the primary (whole, not half-written), and the request
 * answers 503 instead of acknowledging what a failover could lose.
 */
function refuseUnconfirmedCommit(client: pg.PoolClient, commitTimeoutMs: number): void {
  let cancelledWait = false;
  client.on('notice', (notice) => {
    if (SYNCHRONOUS_WAIT_CANCELLED.test(notice.message ?? '')) cancelledWait = true;
  });
  const query = client.query.bind(client) as (config: unknown, values?: unknown, callback?: unknown) => unknown;
  // pg's query(config, values, callback) treats an argument given as undefined as one left out,
  // so every statement passes through without an arguments array of its own.
  client.query = ((config: unknown, values?: unknown, callback?: unknown) => {
    const text = typeof config === 'string' ? config : (config as { text?: unknown } | undefined)?.text;
    if (typeof text !== 'string' || !COMMIT.test(text) || typeof values === 'function' || typeof callback === 'function' || typeof (config as { callback?: unknown }).callback === 'function') {
      return query(config, values, callback);
    }
    cancelledWait = false;
    const timer = setTimeout(() => sendCancelRequest(client), commitTimeoutMs);
    return (query(config, values, callback) as Promise<unknown>).then(
      (result) => {
        clearTimeout(timer);
        if (cancelledWait) throw new UnconfirmedCommitError();
        return result;
      },
      (error: unknown) => {
        clearTimeout(timer);
        throw error;
      },
    );
  }) as Query;
}

/** PostgreSQL's cancel request for the statement running on `client` (a new connection to the same address, as psql's Ctrl-C). */
function sendCancelRequest(client: pg.PoolClient): void {
  const { host, port, processID, secretKey } = client as unknown as { host: string; port: number; processID: number; secretKey: number };
  // pg's protocol connection (its types omit these two methods, which pg's own Client#cancel uses).
  const connection = new pg.Connection() as pg.Connection & { connect(port: number, host: string): void; cancel(processID: number, secretKey: number): void };
  connection.on('error', () => {});
  connection.once('connect', () => {
    connection.cancel(processID, secretKey);
    connection.end();
  });
  connection.connect(port, host);
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
