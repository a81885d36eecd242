import type { Router } from 'express';
import type { RateLimiter } from '../auth/rate-limit.js';
import type { Database } from '../db/database.js';
import type { Logger } from '../logging/logger.js';
import { metricsEndpoint } from '../observability/http.js';
import { sendJson } from '../rest/envelopes.js';

export interface HealthDeps {
  database: Database;
  rateLimiter: RateLimiter;
  logger: Logger;
  /** From SIGTERM on: load balancers must stop routing here while in-flight work finishes. */
  draining(): boolean;
  /** Serves `GET /metrics` to `Authorization: Bearer <token>`; unset, there is no metrics endpoint. */
  metricsToken?: string;
}

/** `/healthz` (the process answers), `/readyz` (it should be sent requests) and `/metrics`. */
export function healthRoutes(router: Router, deps: HealthDeps): void {
  const { database, rateLimiter, logger } = deps;
  if (deps.metricsToken) router.get('/metrics', metricsEndpoint(deps.metricsToken));
  router.get('/healthz', (_req, res) => sendJson(res, 200, { status: 'ok' }));
  router.get('/readyz', async (_req, res) => {
    if (deps.draining()) return sendJson(res, 503, { status: 'draining', database: database.kind });
    try {
      await database.ping();
      // Redis down is degraded, not unready: limits then hold per instance (see createRateLimiter).
      const redis = rateLimiter.storeState();
      sendJson(res, 200, { status: redis === 'down' ? 'degraded' : 'ok', database: database.kind, ...(redis === 'memory' ? {} : { redis }) });
    } catch (error) {
      logger.warn({ err: error }, 'readiness check failed');
      sendJson(res, 503, { status: 'unavailable', database: database.kind });
    }
  });
}
