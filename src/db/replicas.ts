import { replicaLag, replicaUp } from '../observability/metrics.js';

/** A replica this far behind serves no reads: seconds-old listings go unnoticed, and a credential's own-write window stays short. */
export const DEFAULT_REPLICA_MAX_LAG_MS = 2_000;

/** The part of a MikroORM connection the replica set and the read path use. */
export interface StatementConnection {
  execute<T>(sql: string, params: unknown[], method: 'all'): Promise<T>;
  /** The driver's own client (a `pg` pool, or PGlite): src/db/read-path.ts sends bind parameters and named statements through it. */
  getNativeClient(): Promise<unknown>;
}

/** A WAL position (`pg_lsn`) as a number, so positions compare. */
export function parseLsn(text: string): bigint {
  const [high, low] = text.split('/');
  if (!high || !low || !/^[0-9A-F]{1,8}$/i.test(high) || !/^[0-9A-F]{1,8}$/i.test(low)) throw new Error(`not a WAL position: ${text}`);
  return (BigInt(`0x${high}`) << 32n) | BigInt(`0x${low}`);
}

/** Past any real position: a write whose commit position is unknown keeps its credential on the primary. */
export const UNKNOWN_WRITE_POSITION = (1n << 64n) - 1n;

export interface Replica {
  /** `replica-N`, N its index in DATABASE_REPLICA_URLS: a metrics label that carries no URL. */
  name: string;
  connection: StatementConnection;
  /** Answered its last probe, as a standby. */
  up: boolean;
  /** The WAL position it had replayed at its last probe (positions only grow, so a stale value is a safe one). */
  replayed: bigint;
  /** How long ago the primary had written WAL this replica has not replayed yet; Infinity when unknown. */
  lagMs: number;
}

export type ReplicaChoice = { replica: Replica } | { replica?: undefined; reason: 'no_replica' | 'own_write' };

export interface ReplicaSetOptions {
  /** A replica further behind than this is skipped (DATABASE_REPLICA_MAX_LAG_MS). */
  maxLagMs: number;
  /** How often the primary's WAL position and each replica's replay position are read. */
  probeIntervalMs: number;
}

/**
 * The read replicas and what is known of them. Every probe reads the primary's current WAL
 * position (kept, with the time it was read) and then each replica's replay position. A replica's
 * lag is the age of the oldest kept primary position it has not replayed: it measures what matters
 * (how old the newest data it may be missing is) and, unlike `pg_last_xact_replay_timestamp()`,
 * does not grow while the primary is idle. A replica that fails a probe or a read is down until a
 * probe succeeds again.
 */
export class ReplicaSet {
  readonly replicas: Replica[];
  private readonly primaryPositions: { lsn: bigint; at: number }[] = [];
  private timer: NodeJS.Timeout | undefined;
  private probing: Promise<void> | undefined;
  private next = 0;

  constructor(
    private readonly primary: StatementConnection,
    replicaConnections: readonly StatementConnection[],
    readonly options: ReplicaSetOptions,
  ) {
    this.replicas = replicaConnections.map((connection, index) => ({ name: `replica-${index}`, connection, up: false, replayed: 0n, lagMs: Infinity }));
  }

  /** Probes now, then every `probeIntervalMs` in the background. */
  async start(): Promise<void> {
    await this.probe();
    this.timer = setInterval(() => void this.probe(), this.options.probeIntervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.probing;
    for (const replica of this.replicas) {
      replicaUp.remove({ replica: replica.name });
      replicaLag.remove({ replica: replica.name });
    }
  }

  /** One round of probes; a round still running is joined, not doubled. */
  probe(): Promise<void> {
    this.probing ??= this.probeAll().finally(() => (this.probing = undefined));
    return this.probing;
  }

  /**
   * A replica that is up, within the lag bound and (when `atLeast` is given) has replayed that
   * position; replicas take turns. None: the caller reads the primary.
   */
  choose(atLeast?: bigint): ReplicaChoice {
    const usable = this.replicas.filter((replica) => replica.up && replica.lagMs <= this.options.maxLagMs);
    const caughtUp = atLeast === undefined ? usable : usable.filter((replica) => replica.replayed >= atLeast);
    if (caughtUp.length === 0) return { reason: usable.length ? 'own_write' : 'no_replica' };
    return { replica: caughtUp[this.next++ % caughtUp.length]! };
  }

  /** A read failed on the replica as if it were away: skip it until a probe finds it back. */
  markDown(replica: Replica): void {
    replica.up = false;
    replicaUp.set({ replica: replica.name }, 0);
  }

  private async probeAll(): Promise<void> {
    const now = Date.now();
    try {
      const [row] = await this.primary.execute<{ lsn: string }[]>('select pg_current_wal_lsn()::text as lsn', [], 'all');
      this.primaryPositions.push({ lsn: parseLsn(row!.lsn), at: now });
    } catch {
      // The primary is away: no new position; lags below are computed from the older ones and age with them.
    }
    await Promise.all(this.replicas.map((replica) => this.probeReplica(replica)));
    this.forgetReplayedPositions();
  }

  private async probeReplica(replica: Replica): Promise<void> {
    try {
      const [row] = await replica.connection.execute<{ standby: boolean; lsn: string | null }[]>(
        'select pg_is_in_recovery() as standby, pg_last_wal_replay_lsn()::text as lsn',
        [],
        'all',
      );
      // A promoted server, or a primary listed by mistake, is no replica of this primary.
      if (!row?.standby || row.lsn === null) throw new Error(`${replica.name} is not a streaming standby`);
      replica.replayed = parseLsn(row.lsn);
      replica.up = true;
      const oldestMissing = this.primaryPositions.find((position) => position.lsn > replica.replayed);
      const newest = this.primaryPositions.at(-1);
      // No recent primary position at all (the primary is away): the lag cannot be known.
      replica.lagMs = !newest || Date.now() - newest.at > this.options.maxLagMs ? Infinity : oldestMissing ? Date.now() - oldestMissing.at : 0;
    } catch {
      replica.up = false;
      replica.lagMs = Infinity;
    }
    replicaUp.set({ replica: replica.name }, replica.up ? 1 : 0);
    if (Number.isFinite(replica.lagMs)) replicaLag.set({ replica: replica.name }, replica.lagMs / 1000);
    else replicaLag.remove({ replica: replica.name });
  }

  /** Keeps the positions some replica has not replayed, and always the newest (bounded: one per probe, pruned as replicas replay). */
  private forgetReplayedPositions(): void {
    const slowest = this.replicas.reduce((least, replica) => (replica.replayed < least ? replica.replayed : least), UNKNOWN_WRITE_POSITION);
    while (this.primaryPositions.length > 1 && this.primaryPositions[0]!.lsn <= slowest) this.primaryPositions.shift();
    // A replica that stays away must not grow the list without end: older positions than the lag bound decide nothing new.
    const horizon = Date.now() - 10 * this.options.maxLagMs;
    while (this.primaryPositions.length > 1 && this.primaryPositions[1]!.at < horizon) this.primaryPositions.shift();
  }
}
