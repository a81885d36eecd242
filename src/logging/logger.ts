import { destination as pinoDestination, pino, type Logger, type DestinationStream } from 'pino';
import type { AppConfig } from '../config/config.js';

export type { Logger };

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
    // Synchronous by default: the last lines before process.exit (shutdown, fatal start-up errors) must not be lost.
    destination ?? pinoDestination({ dest: 1, sync: true }),
  );
}
