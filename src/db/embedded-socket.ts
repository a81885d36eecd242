import fs from 'node:fs';
import path from 'node:path';
import type { PGlite } from '@electric-sql/pglite';
import { PGLiteSocketServer } from '@electric-sql/pglite-socket';

/** Unix domain socket paths are limited to about 107 bytes. */
const MAX_SOCKET_PATH = 100;
const SOCKET_PORT = 5432;

/** Where the running server serves its embedded database to local processes (PostgreSQL's socket naming, so `pg` finds it from a directory). */
export function embeddedSocketDirectory(dataDir: string): string {
  return path.join(dataDir, 'socket');
}

function socketPath(dataDir: string): string {
  return path.join(embeddedSocketDirectory(dataDir), `.s.PGSQL.${SOCKET_PORT}`);
}

export function embeddedSocketExists(dataDir: string): boolean {
  try {
    return fs.statSync(socketPath(dataDir)).isSocket();
  } catch {
    return false;
  }
}

/** Connection options for a PostgreSQL client reaching the socket (user and database as PGlite names them). */
export function embeddedSocketClientOptions(dataDir: string): { host: string; port: number; user: string; dbName: string } {
  return { host: embeddedSocketDirectory(dataDir), port: SOCKET_PORT, user: 'postgres', dbName: 'postgres' };
}

/** One PostgreSQL wire-protocol simple query, for statements the facade must run while it holds the session. */
function simpleQueryMessage(sql: string): Uint8Array {
  const text = Buffer.from(`${sql}\0`, 'utf8');
  const message = Buffer.alloc(5 + text.length);
  message.write('Q', 0, 'ascii');
  message.writeInt32BE(4 + text.length, 1);
  text.copy(message, 5);
  return message;
}

/** Listeners of notifications that statements of socket clients raise (`pg_notify` in a CLI's transaction). */
const socketNotificationListeners = new WeakMap<PGlite, Set<(channel: string, payload: string) => void>>();

/**
 * PGlite hands its own `listen` callbacks only the notifications of statements it parsed itself;
 * those of a socket client's transaction go out in that client's protocol stream. This registers
 * for them (src/db/notification-listener.ts listens to both).
 */
export function onSocketNotification(pglite: PGlite, listener: (channel: string, payload: string) => void): () => void {
  const listeners = socketNotificationListeners.get(pglite) ?? new Set();
  socketNotificationListeners.set(pglite, listeners);
  listeners.add(listener);
  return () => listeners.delete(listener);
}

/**
 * Reads NotificationResponse messages ('A': pid, channel, payload) out of a backend protocol
 * stream that arrives in chunks of any size; other messages are skipped without being copied.
 */
export function notificationScanner(deliver: (channel: string, payload: string) => void): (chunk: Uint8Array) => void {
  let header = Buffer.alloc(0);
  let skipping = 0;
  let body: Buffer[] | undefined;
  let bodyLeft = 0;
  return (chunk) => {
    let data = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    while (data.length > 0) {
      if (skipping > 0) {
        const skipped = Math.min(skipping, data.length);
        skipping -= skipped;
        data = data.subarray(skipped);
        continue;
      }
      if (body) {
        const taken = data.subarray(0, bodyLeft);
        body.push(Buffer.from(taken));
        bodyLeft -= taken.length;
        data = data.subarray(taken.length);
        if (bodyLeft === 0) {
          const message = Buffer.concat(body);
          body = undefined;
          const channelEnd = message.indexOf(0, 4);
          const payloadEnd = message.indexOf(0, channelEnd + 1);
          if (channelEnd > 0 && payloadEnd > channelEnd) deliver(message.toString('utf8', 4, channelEnd), message.toString('utf8', channelEnd + 1, payloadEnd));
        }
        continue;
      }
      const needed = 5 - header.length;
      header = Buffer.concat([header, data.subarray(0, needed)]);
      data = data.subarray(Math.min(needed, data.length));
      if (header.length < 5) continue;
      const type = header[0];
      const length = header.readInt32BE(1) - 4;
      header = Buffer.alloc(0);
      if (type === 0x41 && length > 0) {
        body = [];
        bodyLeft = length;
      } else {
        skipping = Math.max(0, length);
      }
    }
  };
}

/**
 * PGlite is one session shared by the server's ORM and the socket's clients. Its own transactions
 * hold PGlite's transaction lock, but the socket server only takes the per-statement lock, so
 * without this facade a CLI statement could land inside a server transaction (and a CLI
 * transaction could swallow the server's statements). The facade takes the transaction lock for
 * each socket message and keeps it while the socket client's transaction is open.
 */
function sessionGuard(pglite: PGlite): PGlite {
  const internals = pglite as unknown as { _runExclusiveTransaction<T>(fn: () => Promise<T>): Promise<T> };
  let releaseSession: (() => void) | undefined;

  const takeSession = () =>
    new Promise<void>((acquired) => {
      void internals._runExclusiveTransaction(
        () =>
          new Promise<void>((release) => {
            releaseSession = release;
            acquired();
          }),
      );
    });
  const giveBackIfIdle = () => {
    if (releaseSession && !pglite.isInTransaction()) {
      releaseSession();
      releaseSession = undefined;
    }
  };

  const facade = {
    get waitReady() {
      return pglite.waitReady;
    },
    isInTransaction: () => pglite.isInTransaction(),
    // The socket clients' output, watched for the notifications their commits raise.
    execProtocolRawStream(message: Uint8Array, options: { onRawData: (data: Uint8Array) => void } & Record<string, unknown>) {
      const scan = notificationScanner((channel, payload) => {
        for (const listener of socketNotificationListeners.get(pglite) ?? []) listener(channel, payload);
      });
      return pglite.execProtocolRawStream(message, {
        ...options,
        onRawData: (data: Uint8Array) => {
          scan(data);
          options.onRawData(data);
        },
      });
    },
    async runExclusive<T>(fn: () => Promise<T>): Promise<T> {
      if (!releaseSession) await takeSession();
      try {
        return await pglite.runExclusive(fn);
      } finally {
        giveBackIfIdle();
      }
    },
    /** Used by the socket server to roll back a client that left mid-transaction. */
    async exec(sql: string): Promise<void> {
      await facade.runExclusive(() => pglite.execProtocolRawStream(simpleQueryMessage(sql), { onRawData: () => {} }));
    },
  };
  return facade as unknown as PGlite;
}

export interface EmbeddedSocket {
  close(): Promise<void>;
}

/**
 * Serves the embedded database on a Unix socket inside the data directory, so `accessctl` can run
 * while the server holds it. Only the owner can reach it: the directory is 0700 and the socket 0600.
 * The caller holds the data directory's lock, so a socket file found here is a crashed server's.
 */
export async function serveEmbeddedSocket(pglite: PGlite, dataDir: string): Promise<EmbeddedSocket | undefined> {
  const directory = embeddedSocketDirectory(dataDir);
  const file = socketPath(dataDir);
  if (file.length > MAX_SOCKET_PATH) return undefined;
  fs.mkdirSync(directory, { recursive: true, mode: 0o700 });
  fs.chmodSync(directory, 0o700);
  fs.rmSync(file, { force: true });
  const server = new PGLiteSocketServer({ db: sessionGuard(pglite), path: file, maxConnections: 8 });
  await server.start();
  fs.chmodSync(file, 0o600);
  return {
    async close() {
      await server.stop();
      fs.rmSync(file, { force: true });
    },
  };
}
