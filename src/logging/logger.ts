import { destination as pinoDestination, pino, type Logger, type DestinationStream } from 'pino';
import type { AppConfig } from '../config/config.js';

export type { Logger };

/**
 * Lines are gathered into writes of at least this many bytes: one write system call per some
 * forty access-log lines instead of one per request (a write is among the costliest things a
 * request does on a small machine).
 */
export const LOG_BUFFER_BYTES = 8_192;
/** A line waits at most this long for the buffer to fill: a quiet server's log is still current. */
export const LOG_FLUSH_INTERVAL_MS = 1_000;

/**
 * Standard output, buffered and written asynchronously off the request path: written out when the
 * buffer passes LOG_BUFFER_BYTES, every LOG_FLUSH_INTERVAL_MS, on `flushLog` (graceful shutdown)
 * and synchronously when the process exits any other way (pino flushes its destinations on
 * `exit`, an uncaught exception's included).
 */
export function bufferedStdout(): DestinationStream {
  return pinoDestination({ dest: 1, sync: false, minLength: LOG_BUFFER_BYTES, periodicFlush: LOG_FLUSH_INTERVAL_MS });
}

/**
 * Where a silent logger writes: nowhere. Standard output's stream would still write (nothing) to
 * its descriptor every LOG_FLUSH_INTERVAL_MS, a write in flight that can hold a process (a test
 * worker) past its end.
 */
const DISCARD: DestinationStream = { write: () => {} };

/**
 * Credentials must never reach the logs: headers that carry them are redacted wherever
 * they appear, and request logging records the path without the query string.
 */
export function createLogger(config: Pick<AppConfig, 'logLevel'>, destination?: DestinationStream): Logger {
  return pino(
    {
      level: config.logLevel,
      redact: {
        paths: ['req.headers.authorization', 'headers.authorization', 'authorization', '*.apiKey', '*.api_key', '*.accessToken', '*.access_token', '*.privateUrlKey'],
        censor: '[redacted]',
      },
    },
    destination ?? (config.logLevel === 'silent' ? DISCARD : bufferedStdout()),
  );
}

/** Resolves once every line logged so far has been written (before an orderly `process.exit`). */
export function flushLog(logger: Logger): Promise<void> {
  return new Promise((resolve) => logger.flush(() => resolve()));
}
