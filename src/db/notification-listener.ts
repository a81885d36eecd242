import pg from 'pg';
import type { PGlite } from '@electric-sql/pglite';
import { onSocketNotification } from './embedded-socket.js';

/** What a listening instance is told about one channel. */
export interface NotificationHandlers {
  /** One `NOTIFY` payload, in commit order. */
  notification(payload: string): void;
  /**
   * The listening connection was lost and is back: notifications sent meanwhile are gone, so
   * whoever built state from them must start over (live updates tell their clients `resync`).
   */
  reconnected(): void;
  /** The connection was lost (it is being re-opened with backoff). */
  lost?(error: unknown): void;
}

export interface NotificationListener {
  close(): Promise<void>;
}

export interface ListenBackoff {
  initialMs: number;
  maxMs: number;
}

// At most a second between attempts: after a failover the router leads to the new primary within
// seconds, and live updates must resume (RESYNC) within 5 s of the promotion.
export const DEFAULT_LISTEN_BACKOFF: ListenBackoff = { initialMs: 100, maxMs: 1_000 };

const CHANNEL_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

function assertChannel(channel: string): void {
  // LISTEN takes an identifier, not a bind parameter: only plain names are ever inlined.
  if (!CHANNEL_NAME.test(channel)) throw new Error(`not a plain channel name: ${channel}`);
}

/**
 * PostgreSQL: one dedicated connection (never a pooled one: a transaction-pooling PgBouncer would
 * hand LISTEN's session to someone else), re-opened with jittered exponential backoff whenever it
 * is lost (a database restart, a network cut), then `reconnected` is called.
 */
export async function listenOnPostgres(url: string, channel: string, handlers: NotificationHandlers, backoff: ListenBackoff = DEFAULT_LISTEN_BACKOFF): Promise<NotificationListener> {
  assertChannel(channel);
  let closed = false;
  let client: pg.Client | undefined;
  let retryTimer: NodeJS.Timeout | undefined;
  let failures = 0;

  const connect = async (): Promise<void> => {
    const next = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5_000, keepAlive: true });
    next.on('notification', (message) => {
      if (message.channel === channel && message.payload !== undefined) handlers.notification(message.payload);
    });
    // Errors also end the connection; the 'end' listener below schedules the reconnection.
    next.on('error', () => {});
    try {
      await next.connect();
      await next.query(`listen ${channel}`);
    } catch (error) {
      await next.end().catch(() => {});
      throw error;
    }
    next.once('end', () => {
      if (closed || client !== next) return;
      client = undefined;
      handlers.lost?.(new Error('listening connection ended'));
      scheduleReconnect();
    });
    client = next;
  };

  const scheduleReconnect = () => {
    if (closed) return;
    failures++;
    const ceiling = Math.min(backoff.maxMs, backoff.initialMs * 2 ** (failures - 1));
    retryTimer = setTimeout(() => {
      retryTimer = undefined;
      connect().then(
        () => {
          failures = 0;
          if (!closed) handlers.reconnected();
        },
        (error: unknown) => {
          handlers.lost?.(error);
          scheduleReconnect();
        },
      );
    }, ceiling / 2 + Math.random() * (ceiling / 2));
    retryTimer.unref();
  };

  await connect();
  return {
    async close() {
      closed = true;
      clearTimeout(retryTimer);
      const current = client;
      client = undefined;
      await current?.end().catch(() => {});
    },
  };
}

/** Embedded PGlite: its single connection delivers the notifications of the transactions it commits. */
export async function listenOnPglite(pglite: PGlite, channel: string, handlers: NotificationHandlers): Promise<NotificationListener> {
  assertChannel(channel);
  const unlisten = await pglite.listen(channel, (payload) => handlers.notification(payload));
  // Writes of `accessctl` beside the server run on the same session through the embedded socket.
  const stopSocket = onSocketNotification(pglite, (from, payload) => {
    if (from === channel) handlers.notification(payload);
  });
  return {
    async close() {
      stopSocket();
      if (!pglite.closed) await unlisten();
    },
  };
}
