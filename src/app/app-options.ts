import type http from 'node:http';
import type express from 'express';
import type { oas31 } from 'openapi3-ts';
import type { RateLimiter } from '../auth/rate-limit.js';
import { deriveKey } from '../auth/server-secret.js';
import type { AppConfig, LiveUpdateLimits } from '../config/config.js';
import type { Database } from '../db/database.js';
import type { LiveUpdates } from '../faces/ws/socket-server.js';
import { CursorCodec } from '../graphql/cursor.js';
import type { IdempotencyStore } from '../http/idempotency-store.js';
import type { HttpServerLimits, StopOutcome } from '../http/managed-server.js';
import type { Runtime } from '../http/runtime.js';
import type { Logger } from '../logging/logger.js';
import type { JobDeps } from './feature.js';
import { features } from './features.js';

/** A browser sign-in older than this manages no credential until the user signs in again (STEP_UP_MAX_AGE_SECONDS). */
const DEFAULT_STEP_UP_MAX_AGE_SECONDS = 600;

export type AppSettings = Pick<
  AppConfig,
  'publicApiUrl' | 'publicWebUrl' | 'publicFeedUrl' | 'apiVendor' | 'introspection' | 'landingPage' | 'corsOrigins' | 'graphqlMaxDepth' | 'graphqlMaxCost'
> &
  /** Unset: the document is served, the page is not; no proxy is trusted. */
  Partial<Pick<AppConfig, 'openapiDocument' | 'apiDocsPage' | 'trustProxy' | 'auditRetentionDays' | 'nodeEnv' | 'graphqlTrustedDocuments' | 'stepUpMaxAgeSeconds' | 'graphqlMaxRootFields' | 'graphqlMaxDbConnectionsPerRequest'>>;

export interface AppOptions {
  settings: AppSettings;
  database: Database;
  logger: Logger;
  serverSecret: Buffer;
  rateLimiter: RateLimiter;
  /** Timeouts and per-connection bounds of the HTTP server; safe defaults when unset. */
  http?: HttpServerLimits;
  /** At most one warn line per this interval while a dependency is away (default 10 s). */
  outageLogIntervalMs?: number;
  /** Serves `GET /metrics` to `Authorization: Bearer <token>`; unset, there is no metrics endpoint. */
  metricsToken?: string;
  /** Bounds of subscriptions over WebSocket; defaults when unset. */
  liveUpdates?: LiveUpdateLimits;
  /** Between the logged audit checkpoints of every account; hourly when unset. */
  auditCheckpointIntervalMs?: JobDeps['settings']['auditCheckpointIntervalMs'];
  /** How often the roots index of the audit trail catches up with the chains (per-user reads read past it meanwhile). */
  auditRootIndexIntervalMs?: JobDeps['settings']['auditRootIndexIntervalMs'];
}

export interface App {
  app: express.Express;
  httpServer: http.Server;
  runtime: Runtime;
  idempotencyStore: IdempotencyStore;
  /** The REST face's OpenAPI document, as `/openapi.json` serves it. */
  openApiDocument: oas31.OpenAPIObject;
  /** GraphQL subscriptions over WebSocket on `/graphql`. */
  live: LiveUpdates;
  /** Shutdown, step one: `/readyz` answers 503 and every response carries `Connection: close`. */
  beginDraining(): void;
  /** Closes the listener, lets accepted requests finish (at most `graceMs`), then stops Apollo. */
  stop(graceMs?: number): Promise<StopOutcome>;
}

/** What every request shares and no request changes, from the settings and every feature's contributions. */
export function buildRuntime(settings: AppSettings, serverSecret: Buffer): Runtime {
  return {
    urls: { api: settings.publicApiUrl, web: settings.publicWebUrl, feed: settings.publicFeedUrl },
    trustProxy: settings.trustProxy ?? false,
    serverSecret,
    production: settings.nodeEnv === 'production',
    stepUpMaxAgeSeconds: settings.stepUpMaxAgeSeconds ?? DEFAULT_STEP_UP_MAX_AGE_SECONDS,
    cursors: new CursorCodec(deriveKey(serverSecret, 'pagination-cursor')),
    credentialResolvers: features.flatMap((feature) => feature.credentialResolvers ?? []),
    userDeletedHooks: features.flatMap((feature) => (feature.onUserDeleted ? [feature.onUserDeleted] : [])),
    signInMethods: features.flatMap((feature) => (feature.signInMethod ? [feature.signInMethod] : [])),
    userSuspendedHooks: features.flatMap((feature) => (feature.onUserSuspended ? [feature.onUserSuspended] : [])),
  };
}
