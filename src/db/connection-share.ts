import type { EntityManager } from '@mikro-orm/sql';
import { ServiceUnavailableError } from '../errors/domain-errors.js';

/**
 * Pooled connections one request may hold at once by default (GRAPHQL_MAX_DB_CONNECTIONS_PER_REQUEST).
 * GraphQL resolves sibling fields in parallel, so without a share one request of many aliased root
 * fields checks out the whole pool and every other caller waits behind it.
 */
export const DEFAULT_DB_CONNECTIONS_PER_REQUEST = 2;

/**
 * A request's share of the pool: at most `max` of its statements (or transactions) hold a
 * connection at once; the others queue here, in order, instead of in the pool, where they would
 * take connections other requests need. Taking a free place is synchronous, so an uncontended
 * statement pays a counter, not a promise.
 *
 * A wait is bounded by the pool's own timeout: work that holds every place and waits for another
 * (a transaction reading outside itself while a sibling does the same) answers 503, as an
 * exhausted pool does, instead of hanging.
 */
export class ConnectionShare {
  private held = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(
    readonly max: number,
    private readonly waitTimeoutMs: number,
  ) {
    if (!Number.isSafeInteger(max) || max < 1) throw new RangeError('a request must be allowed at least one connection');
  }

  /** Runs `work` holding one place of the share: now when one is free, else when one is released. */
  async run<T>(work: () => Promise<T>): Promise<T> {
    const waiting = this.enter();
    if (waiting) await waiting;
    try {
      return await work();
    } finally {
      this.leave();
    }
  }

  /**
   * Takes a place: `undefined` when one was free (taken already, nothing to wait for), else a
   * promise settled when a place is handed over. Every place taken is given back with `leave`.
   */
  enter(): Promise<void> | undefined {
    if (this.held < this.max) {
      this.held++;
      return undefined;
    }
    return this.queue();
  }

  private queue(): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const granted = () => {
        clearTimeout(timer);
        resolve();
      };
      const timer = setTimeout(() => {
        this.waiting.splice(this.waiting.indexOf(granted), 1);
        reject(new ServiceUnavailableError(`The request waited more than ${this.waitTimeoutMs} ms for one of its ${this.max} database connections; retry shortly.`));
      }, this.waitTimeoutMs);
      this.waiting.push(granted);
    });
  }

  /** Hands the place to the next waiting statement (the count stays), or frees it. */
  leave(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.held--;
  }
}

/** Each request's share, by the entity manager forked for it (the one its resolvers and services use). */
const shares = new WeakMap<EntityManager, ConnectionShare>();

type DriverCall = (...args: unknown[]) => Promise<unknown>;
const inOptions = (position: number) => (args: unknown[]) => (args[position] as { ctx?: unknown } | undefined)?.ctx;
const positional = (position: number) => (args: unknown[]) => args[position];

/**
 * The driver's methods that run a statement (what `em.find`, `em.findOne`, `em.count`, `em.execute`
 * and the native writes end in), each with where its call names a transaction: a statement inside
 * one runs on the transaction's connection, which its transaction's place already holds.
 */
const STATEMENT_METHODS: Record<string, (args: unknown[]) => unknown> = {
  find: inOptions(2),
  findOne: inOptions(2),
  findVirtual: inOptions(2),
  count: inOptions(2),
  countVirtual: inOptions(2),
  nativeInsert: inOptions(2),
  nativeInsertMany: inOptions(2),
  nativeDelete: inOptions(2),
  nativeUpdate: inOptions(3),
  nativeUpdateMany: inOptions(3),
  nativeClone: inOptions(3),
  loadFromPivotTable: positional(4),
  execute: positional(3),
};

const SHARE = Symbol('connection share');

/**
 * For each driver, the prototype of its per-request views: the driver itself underneath (every
 * other property is read from it), and each statement method run within the view's share unless
 * its call names a transaction. The methods run on the shared driver itself, so a method calling
 * another takes no second place. Built once per driver, so a request's view costs one object.
 */
const requestViews = new WeakMap<object, object>();

function requestViewOf(driver: object): object {
  let view = requestViews.get(driver);
  if (view) return view;
  view = Object.create(driver) as object;
  for (const [method, transactionOf] of Object.entries(STATEMENT_METHODS)) {
    const call = (driver as Record<string, DriverCall>)[method];
    if (typeof call !== 'function') continue;
    Object.defineProperty(view, method, {
      value: function runWithinShare(this: { [SHARE]: ConnectionShare }, ...args: unknown[]) {
        return transactionOf(args) ? call.apply(driver, args) : this[SHARE].run(() => call.apply(driver, args));
      },
    });
  }
  requestViews.set(driver, view);
  return view;
}

/** The driver as one request sees it: its statements outside a transaction run within `share`. */
function driverWithin(driver: object, share: ConnectionShare): object {
  const view = Object.create(requestViewOf(driver)) as { [SHARE]: ConnectionShare };
  view[SHARE] = share;
  return view;
}

/**
 * Gives a request's entity manager its share of the pool (`max` connections, waits bounded by
 * `waitTimeoutMs`): its statements through the ORM (and forks of it), the read path's and its
 * write transactions then run within it. Returns the entity manager.
 */
export function withConnectionShare(em: EntityManager, max: number, waitTimeoutMs: number): EntityManager {
  const share = new ConnectionShare(max, waitTimeoutMs);
  shares.set(em, share);
  const withDriver = em as unknown as { driver: object };
  withDriver.driver = driverWithin(withDriver.driver, share);
  return em;
}

/** The request's share, if its entity manager has one (a job's or the CLI's has none and uses the pool as it is). */
export function connectionShareOf(em: EntityManager): ConnectionShare | undefined {
  return shares.get(em);
}
