import type { EntityManager } from '@mikro-orm/sql';
import { databasePresentingReads } from '../observability/metrics.js';
import { isDatabaseUnavailable } from './database-errors.js';
import type { RecentWrites } from './recent-writes.js';
import { parseLsn, UNKNOWN_WRITE_POSITION, type ReplicaSet, type StatementConnection } from './replicas.js';
import { sqlStateOf } from './transaction.js';

const QUERY_CANCELED = '57014';

/**
 * Which server each presenting read of a request runs on. Only reads that ask
 * for it (`readPath(...).rows(..., { replica: true })`, outside any transaction) may go to a
 * replica; authentication, every statement of a write and everything else use the primary. A
 * credential that wrote within the window reads from a replica only once that replica has replayed
 * the write's commit position; a replica that is down, lags past the bound, or fails a read is
 * skipped, and the primary serves.
 */
export class ReadRouting {
  constructor(
    readonly replicas: ReplicaSet,
    private readonly recentWrites: RecentWrites,
  ) {}

  /**
   * A request's entity manager (the one its context carries): presenting reads through it are
   * routed for `credentialId`, and writes run through it keep their position for that credential.
   * Attached to the entity manager rather than to an async context, which body parsers' stream
   * events do not carry. Any other entity manager reads the primary.
   */
  attach(em: EntityManager, credentialId: string | undefined): void {
    requests.set(em, new RequestReads(this, credentialId));
  }

  /** After a commit through `em`: where it ended, kept for the credential of the request that wrote. */
  async afterCommit(em: EntityManager): Promise<void> {
    const request = requests.get(em);
    if (!request || request.routing !== this || request.credentialId === undefined) return;
    const primary = em.getConnection('write') as StatementConnection;
    let position = UNKNOWN_WRITE_POSITION;
    try {
      // Taken after the commit returned: at or past the commit record, which is what a replica must replay.
      const [row] = await primary.execute<{ lsn: string }[]>('select pg_current_wal_lsn()::text as lsn', [], 'all');
      position = parseLsn(row!.lsn);
    } catch {
      // Unknown: the credential reads from the primary for the whole window.
    }
    await request.wrote(position);
  }

  async close(): Promise<void> {
    await this.replicas.stop();
    await this.recentWrites.close?.();
  }

  /** @internal */
  positionOf(credentialId: string): Promise<bigint | undefined> {
    return this.recentWrites.positionOf(credentialId);
  }

  /** @internal */
  record(credentialId: string, position: bigint): Promise<void> {
    return this.recentWrites.record(credentialId, position);
  }
}

const requests = new WeakMap<EntityManager, RequestReads>();

class RequestReads {
  private waitFor: Promise<bigint | undefined> | undefined;

  constructor(
    readonly routing: ReadRouting,
    readonly credentialId: string | undefined,
  ) {}

  async wrote(position: bigint): Promise<void> {
    const higher = (previous: bigint | undefined) => (previous !== undefined && previous > position ? previous : position);
    this.waitFor = this.waitFor ? this.waitFor.then(higher) : Promise.resolve(position);
    await this.routing.record(this.credentialId!, position);
  }

  /** Looked up once per request; a store that cannot answer sends the request's reads to the primary. */
  position(): Promise<bigint | undefined> {
    if (this.credentialId === undefined) return Promise.resolve(undefined);
    this.waitFor ??= this.routing.positionOf(this.credentialId).catch(() => UNKNOWN_WRITE_POSITION);
    return this.waitFor;
  }
}

/**
 * Runs one presenting read: on a replica when the request's routing allows one, else on `primary`.
 * A replica that fails as if away is marked down and the read runs again on the primary (a read
 * has no side effects), so a replica stopping mid-load costs no request an error.
 */
export async function routePresentingRead<T>(em: EntityManager, primary: StatementConnection, read: (connection: StatementConnection) => Promise<T>): Promise<T> {
  const request = requests.get(em);
  if (!request) return read(primary);
  const { replicas } = request.routing;
  const choice = replicas.choose(await request.position());
  if (!choice.replica) {
    databasePresentingReads.inc({ target: 'primary', reason: choice.reason });
    return read(primary);
  }
  try {
    const result = await read(choice.replica.connection);
    databasePresentingReads.inc({ target: choice.replica.name, reason: 'replica' });
    return result;
  } catch (error) {
    // A statement timeout is the statement's fault, not the replica's; a conflict with recovery (40001) is a retry, not an outage.
    const sqlState = sqlStateOf(error);
    if (sqlState === QUERY_CANCELED || (sqlState !== '40001' && !isDatabaseUnavailable(error))) throw error;
    if (sqlState !== '40001') replicas.markDown(choice.replica);
    databasePresentingReads.inc({ target: 'primary', reason: 'replica_failed' });
    return read(primary);
  }
}
