import type { Logger } from './logger.js';

export interface ThrottledWarning {
  /** Logs at warn at most once per interval; the next line carries how many were suppressed meanwhile. */
  warn(fields: Record<string, unknown>, message: string): void;
}

/**
 * An outage makes every request fail the same way: one line per interval says so (with the
 * number of failures it stands for) instead of one stack per request drowning real defects.
 */
export function throttledWarning(logger: Logger, intervalMs = 10_000, now: () => number = Date.now): ThrottledWarning {
  let lastLoggedAt = -Infinity;
  let suppressed = 0;
  return {
    warn(fields, message) {
      const at = now();
      if (at - lastLoggedAt < intervalMs) {
        suppressed++;
        return;
      }
      logger.warn({ ...fields, suppressedSinceLastLine: suppressed }, message);
      lastLoggedAt = at;
      suppressed = 0;
    },
  };
}
