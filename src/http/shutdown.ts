import { setTimeout as sleep } from 'node:timers/promises';
import type { RateLimiter } from '../auth/rate-limit.js';
import type { Database } from '../db/database.js';
import { flushLog, type Logger } from '../logging/logger.js';
import type { StopOutcome } from './managed-server.js';

/** What shutting down needs of the running app: drain, then stop within a grace period. */
export interface Stoppable {
  beginDraining(): void;
  stop(graceMs?: number): Promise<StopOutcome>;
}

export interface ShutdownOptions {
  app: Stoppable;
  rateLimiter: RateLimiter;
  database: Database;
  logger: Logger;
  /** How long the server keeps serving (readiness failing) so load balancers stop routing here. */
  drainMs: number;
  /** How long accepted requests may still take once the listener is closed. */
  graceMs: number;
}

/**
 * A deploy that loses nothing: readiness fails at once and every response says
 * `Connection: close` (keep-alive clients reconnect, to another instance once the load balancer
 * has noticed), then the listener closes, every accepted request finishes, and only then do the
 * rate-limit store and the database close, and the buffered log (every access-log line of the
 * requests answered on the way) is written out. Resolves true when nothing was cut short.
 */
export async function shutdownGracefully(options: ShutdownOptions): Promise<boolean> {
  const { app, logger } = options;
  logger.info({ drainMs: options.drainMs }, 'shutting down: readiness fails, connections drain');
  app.beginDraining();
  await sleep(options.drainMs);
  const { abandoned } = await app.stop(options.graceMs);
  if (abandoned) logger.warn({ abandoned, graceMs: options.graceMs }, 'requests still running after the grace period were cut');
  logger.info('http server stopped');
  await options.rateLimiter.close();
  await options.database.close();
  logger.info('database closed; stopped');
  await flushLog(logger);
  return abandoned === 0;
}
