import type http from 'node:http';
import type { Duplex } from 'node:stream';
import { handleProtocols, type Server } from 'graphql-ws';
import { WebSocketServer, type WebSocket } from 'ws';
import type { LiveConnectionSocket } from '../../live-updates/live-hub.js';
import type { Logger } from '../../logging/logger.js';
import { liveEventsDropped } from '../../observability/metrics.js';

/** Closes the socket when handling a client message failed. */
const CLOSE_INTERNAL = 4500;
/** A client message larger than this (a subscribe document is at most 5,000 tokens) closes the socket. */
const MAX_CLIENT_MESSAGE_BYTES = 256 * 1024;
/** After the 1001 close frame, a client that does not answer is cut after this long. */
const CLOSE_HANDSHAKE_MS = 1_000;

/** What each connection carries beside graphql-ws's own state, from the upgrade on. */
export interface SocketExtra {
  socket: WebSocket;
  /** What the hub sends through and closes. */
  liveSocket: LiveConnectionSocket;
  request: http.IncomingMessage;
  /** Derived once, at the upgrade: the client's address as HTTP requests have it. */
  clientAddress: string | undefined;
}

export interface SocketTransportOptions {
  logger: Logger;
  /** A client that stops reading is cut when this much is waiting in its socket's buffer. */
  maxBufferedBytes: number;
  /** Between pings; a socket that has not answered the previous ping is cut. */
  keepAliveMs: number;
  clientAddressOf?: (request: http.IncomingMessage) => string | undefined;
}

/**
 * The `ws` side of the protocol: keep-alive pings, the bound on what a slow reader may leave
 * buffered, the frames of one event written corked, and the messages handed to graphql-ws.
 */
export function serveSocket<E extends SocketExtra>(
  server: Server<E>,
  socket: WebSocket,
  request: http.IncomingMessage,
  transport: Duplex,
  options: SocketTransportOptions,
  extra: (base: SocketExtra) => E,
): void {
  const { logger } = options;
  // A client that stops reading: what we send piles up in the socket's buffer. Past the bound
  // the connection is cut (its events are dropped), so its memory is bounded by the bound.
  const overBuffer = () => {
    if (socket.bufferedAmount <= options.maxBufferedBytes) return false;
    liveEventsDropped.inc({ reason: 'slow_client' });
    socket.terminate();
    return true;
  };
  let pongWaited = false;
  const keepAlive = setInterval(() => {
    if (pongWaited) return socket.terminate();
    pongWaited = true;
    socket.ping();
  }, options.keepAliveMs);
  keepAlive.unref();
  socket.on('pong', () => {
    pongWaited = false;
  });
  socket.on('error', (error) => logger.debug({ err: error }, 'live updates: socket error'));
  const liveSocket: LiveConnectionSocket = {
    close: (code, reason) => socket.close(code, reason),
    sendAll(messages) {
      if (socket.readyState !== socket.OPEN) return;
      // Corked: the frames of one event leave in one write (one system call), not one each.
      transport.cork();
      try {
        for (const message of messages) {
          socket.send(message, { binary: false });
          if (overBuffer()) return;
        }
      } finally {
        transport.uncork();
      }
    },
  };
  const closed = server.opened(
    {
      protocol: socket.protocol,
      send: async (data) => {
        if (socket.readyState !== socket.OPEN) return;
        socket.send(data);
        overBuffer();
      },
      close: (code, reason) => socket.close(code, reason),
      onMessage: (handle) =>
        socket.on('message', (data) => {
          handle(String(data)).catch((error: unknown) => {
            logger.error({ err: error }, 'live updates: message handling failed');
            socket.close(CLOSE_INTERNAL, 'Internal server error');
          });
        }),
    },
    extra({ socket, liveSocket, request, clientAddress: options.clientAddressOf ? options.clientAddressOf(request) : request.socket.remoteAddress }),
  );
  socket.once('close', (code, reason) => {
    clearInterval(keepAlive);
    closed(code, String(reason)).catch((error: unknown) => logger.error({ err: error }, 'live updates: closing a connection failed'));
  });
}

function refuseUpgrade(socket: Duplex, status: number, text: string): void {
  socket.end(`HTTP/1.1 ${status} ${text}\r\nConnection: close\r\nContent-Type: text/plain\r\nContent-Length: ${Buffer.byteLength(text)}\r\n\r\n${text}`);
}

export interface UpgradeHandling {
  /** From now on upgrades are refused (503): clients reconnect to another instance. */
  beginDraining(): void;
  /** Stops taking upgrades, closes every socket with 1001 and waits (briefly) for their close handshakes. */
  close(beforeClosing: () => void): Promise<void>;
}

/** Takes WebSocket upgrades to `path` on the HTTP server (other paths 404, draining 503). */
export function takeUpgrades(httpServer: http.Server, path: string, opened: (socket: WebSocket, request: http.IncomingMessage, transport: Duplex) => void): UpgradeHandling {
  const sockets = new WebSocketServer({ noServer: true, maxPayload: MAX_CLIENT_MESSAGE_BYTES, handleProtocols: (protocols) => handleProtocols(protocols) });
  let draining = false;
  const onUpgrade = (request: http.IncomingMessage, socket: Duplex, head: Buffer) => {
    if ((request.url ?? '').split('?')[0] !== path) return refuseUpgrade(socket, 404, 'Not Found');
    if (draining) return refuseUpgrade(socket, 503, 'Service Unavailable');
    sockets.handleUpgrade(request, socket, head, (ws) => opened(ws, request, socket));
  };
  httpServer.on('upgrade', onUpgrade);
  return {
    beginDraining() {
      draining = true;
    },
    async close(beforeClosing) {
      draining = true;
      httpServer.off('upgrade', onUpgrade);
      const open = [...sockets.clients];
      beforeClosing();
      for (const socket of open) socket.close(1001, 'Going away');
      await Promise.race([
        Promise.all(open.map((socket) => (socket.readyState === socket.CLOSED ? undefined : new Promise((resolve) => socket.once('close', resolve))))),
        new Promise((resolve) => setTimeout(resolve, CLOSE_HANDSHAKE_MS).unref()),
      ]);
      for (const socket of sockets.clients) socket.terminate();
      await new Promise<void>((resolve) => sockets.close(() => resolve()));
    },
  };
}
