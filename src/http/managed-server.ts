import http, { type IncomingMessage, type RequestListener, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { HttpServerLimits } from '../config/config.js';

export type { HttpServerLimits };

export const DEFAULT_HTTP_LIMITS: HttpServerLimits = {
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  keepAliveTimeoutMs: 65_000,
  maxUnreadResponseBytes: 1_048_576,
  stalledClientTimeoutMs: 30_000,
};

/** Requests parsed on one connection and waiting for their turn; a client that pipelines more is cut off. */
export const MAX_QUEUED_REQUESTS_PER_CONNECTION = 64;
/** After the listener closes, a connection that has not sent its first request yet gets this long to do so. */
export const FRESH_CONNECTION_GRACE_MS = 1_000;

interface Connection {
  socket: Socket;
  /** Requests parsed but not yet handed to the app, in arrival order. */
  queue: Array<() => void>;
  busy: boolean;
  /** The response of the request being handled. */
  current?: ServerResponse;
  served: number;
  /** `socket.bytesRead` when the connection last became idle: more means a request is arriving. */
  bytesReadWhenIdle: number;
  stallTimer?: NodeJS.Timeout;
}

export interface StopOutcome {
  /** Requests still running when the grace period ran out (their connections were cut). */
  abandoned: number;
}

export interface ManagedHttpServer {
  server: http.Server;
  /** From now on every response carries `Connection: close`. */
  beginDraining(): void;
  readonly draining: boolean;
  /**
   * Closes the listener, lets every accepted request finish (also those accepted but not yet
   * read), closes idle keep-alive connections, and resolves when no request runs any more or
   * after `graceMs`, when what is left is cut.
   */
  stop(graceMs: number): Promise<StopOutcome>;
}

/** Calls `listener` once, the first time the response's body is complete (`res.end`), even if the client left. */
function onEnd(res: ServerResponse, listener: () => void): void {
  const end = res.end;
  let called = false;
  res.end = function (this: ServerResponse, ...args: Parameters<ServerResponse['end']>) {
    const result = end.apply(this, args);
    if (!called) {
      called = true;
      listener();
    }
    return result;
  } as ServerResponse['end'];
}

/**
 * The HTTP server with the limits one client must not exceed, and the lifecycle a deploy needs.
 *
 * Requests on one connection run one at a time, in order (HTTP/1.1 answers pipelined requests in
 * order anyway): the next one starts only when the previous response is complete and the client
 * has read all but `maxUnreadResponseBytes` of what was sent. A client that pipelines without
 * reading therefore holds at most one response's worth of memory, and is cut off when it stays
 * stalled for `stalledClientTimeoutMs` or queues more than `MAX_QUEUED_REQUESTS_PER_CONNECTION`.
 */
export function createManagedHttpServer(handler: RequestListener, limits: HttpServerLimits = DEFAULT_HTTP_LIMITS): ManagedHttpServer {
  return new ConnectionTurns(handler, limits);
}

class ConnectionTurns implements ManagedHttpServer {
  readonly server: http.Server;
  private readonly connections = new Map<Socket, Connection>();
  private isDraining = false;
  private stopping = false;
  private running = 0;
  private readonly idleWaiters = new Set<() => void>();
  /** Set while stopping: closes the listener at the next accepted connection or I/O poll. */
  private closeListener: (() => void) | undefined;

  constructor(private readonly handler: RequestListener, private readonly limits: HttpServerLimits) {
    this.server = http.createServer(
      {
        headersTimeout: limits.headersTimeoutMs,
        requestTimeout: limits.requestTimeoutMs,
        keepAliveTimeout: limits.keepAliveTimeoutMs,
        // How often Node enforces the two timeouts above; its default (30 s) would let a slow body live twice as long.
        connectionsCheckingInterval: Math.max(50, Math.min(1_000, Math.floor(limits.headersTimeoutMs / 4))),
      },
      (req, res) => this.enqueue(req, res),
    );
    // Closing a listening socket resets the connections still in the kernel's accept queue. Closing it
    // right after an accept, or right after an I/O poll, keeps that window small; the drain (readiness
    // failing, so the load balancer sends no new connections) is what empties it.
    this.server.on('connection', (socket: Socket) => {
      this.closeListener?.();
      const connection: Connection = { socket, queue: [], busy: false, served: 0, bytesReadWhenIdle: 0 };
      this.connections.set(socket, connection);
      socket.once('close', () => {
        clearTimeout(connection.stallTimer);
        this.connections.delete(socket);
        this.notifyIfIdle();
      });
    });
    // Node's own close() drops every connection without a request in progress, including those
    // accepted but not yet read: their requests would be reset. `stop` closes idle ones itself.
    this.server.closeIdleConnections = () => {};
  }

  get draining(): boolean {
    return this.isDraining;
  }

  beginDraining(): void {
    this.isDraining = true;
    // Responses already being prepared say it too, so their keep-alive clients reconnect elsewhere.
    for (const { current } of this.connections.values()) {
      if (current && !current.headersSent) current.setHeader('Connection', 'close');
    }
  }

  async stop(graceMs: number): Promise<StopOutcome> {
    this.isDraining = true;
    this.stopping = true;
    if (this.server.listening) await this.closeListenerSoon();
    for (const connection of this.connections.values()) {
      if (connection.served > 0) this.closeIfIdleWhileStopping(connection);
      else this.endIfStillUnused(connection, Math.min(FRESH_CONNECTION_GRACE_MS, graceMs));
    }
    const settled = await this.idleWithin(graceMs);
    const abandoned = this.running;
    if (!settled) for (const connection of this.connections.values()) connection.socket.destroy();
    return { abandoned };
  }

  private notifyIfIdle(): void {
    if (this.running === 0 && this.connections.size === 0) for (const wake of this.idleWaiters) wake();
  }

  private isIdle(connection: Connection): boolean {
    return !connection.busy && connection.queue.length === 0 && connection.socket.bytesRead === connection.bytesReadWhenIdle;
  }

  // end(), not destroy(): the last response may still sit in the socket's buffer, and must reach the client.
  private closeIfIdleWhileStopping(connection: Connection): void {
    if (this.stopping && connection.served > 0 && this.isIdle(connection)) connection.socket.end();
  }

  /** A connection accepted but with no request yet gets `graceMs` to send one. */
  private endIfStillUnused(connection: Connection, graceMs: number): void {
    const fresh = setTimeout(() => {
      if (this.isIdle(connection) && connection.socket.bytesRead === 0) connection.socket.end();
    }, graceMs);
    fresh.unref();
    connection.socket.once('close', () => clearTimeout(fresh));
  }

  /** True (and a cut-off armed) while the client leaves more than the bound unread. */
  private stalled(connection: Connection): boolean {
    if (connection.socket.writableLength <= this.limits.maxUnreadResponseBytes) return false;
    if (!connection.stallTimer) {
      connection.stallTimer = setTimeout(() => connection.socket.destroy(), this.limits.stalledClientTimeoutMs);
      connection.socket.once('drain', () => {
        clearTimeout(connection.stallTimer);
        connection.stallTimer = undefined;
        this.pump(connection);
      });
    }
    return true;
  }

  private pump(connection: Connection): void {
    if (connection.busy || connection.queue.length === 0 || connection.socket.destroyed) return;
    if (this.stalled(connection)) return;
    connection.busy = true;
    connection.queue.shift()!();
  }

  /** A parsed request waits for its connection's turn; past the queue's bound the connection is cut. */
  private enqueue(req: IncomingMessage, res: ServerResponse): void {
    const connection = this.connections.get(req.socket);
    if (!connection) return this.handler(req, res);
    if (connection.queue.length >= MAX_QUEUED_REQUESTS_PER_CONNECTION) {
      connection.socket.destroy();
      return;
    }
    connection.queue.push(() => this.serveInTurn(connection, req, res));
    this.pump(connection);
  }

  private serveInTurn(connection: Connection, req: IncomingMessage, res: ServerResponse): void {
    this.running++;
    connection.current = res;
    if (this.isDraining) res.setHeader('Connection', 'close');
    onEnd(res, () => {
      this.running--;
      // A response larger than the client reads completes ('finish') only once it reads; until then it is watched.
      this.stalled(connection);
      this.notifyIfIdle();
    });
    let finishedOnce = false;
    const finished = () => {
      // 'finish' and 'close' both come; the second must not end the next request's turn.
      if (finishedOnce) return;
      finishedOnce = true;
      connection.busy = false;
      connection.current = undefined;
      connection.served++;
      connection.bytesReadWhenIdle = connection.socket.bytesRead;
      this.pump(connection);
      this.closeIfIdleWhileStopping(connection);
    };
    res.once('finish', finished);
    res.once('close', finished);
    this.handler(req, res);
  }

  private closeListenerSoon(): Promise<void> {
    return new Promise<void>((resolve) => {
      this.closeListener = () => {
        if (!this.closeListener) return;
        this.closeListener = undefined;
        this.server.close();
        resolve();
      };
      // No connection arriving: close just after an I/O poll, when the accept queue has just been emptied.
      setTimeout(() => setImmediate(() => this.closeListener?.()), 20);
    });
  }

  /** Resolves true once no request runs and no connection is open, false when `graceMs` ran out first. */
  private async idleWithin(graceMs: number): Promise<boolean> {
    let graceTimer: NodeJS.Timeout | undefined;
    const settled = await new Promise<boolean>((resolve) => {
      this.idleWaiters.add(() => resolve(true));
      graceTimer = setTimeout(() => resolve(false), graceMs);
      this.notifyIfIdle();
    });
    clearTimeout(graceTimer);
    this.idleWaiters.clear();
    return settled;
  }
}
