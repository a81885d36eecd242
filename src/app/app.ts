import { auditCheckpoint, auditCheckpoints, indexAuditRoots, purgeAuditRecords } from '../audit/audit-maintenance.js';
import { checkpointJson, type AuditCheckpoint } from '../audit/audit-chain.js';
import type http from 'node:http';
import { randomUUID } from 'node:crypto';
import express, { type NextFunction, type Request, type Response } from 'express';
import type { oas31 } from 'openapi3-ts';
import { DEFAULT_AUDIT_RETENTION_DAYS, type AppConfig, type LiveUpdateLimits } from '../config/config.js';
import type { Database } from '../db/database.js';
import type { TransactionObserver } from '../db/transaction.js';
import type { Logger } from '../logging/logger.js';
import { credentialUsage } from '../auth/credential-usage.js';
import { authenticate } from '../auth/authenticate.js';
import { browserSessionOf } from '../auth/browser-session.js';
import { deriveKey } from '../auth/server-secret.js';
import { createApolloServer } from '../graphql/apollo.js';
import { apolloHttpHandler } from '../graphql/http-handler.js';
import { createContext, type Context } from '../graphql/context.js';
import { classifyError } from '../graphql/errors.js';
import { sendGraphQLError } from '../graphql/error-response.js';
import { RateLimitedError } from '../errors/domain-errors.js';
import { readTrustedDocuments, trustedDocumentsOnly } from './trusted-documents.js';
import { answerRefusedRequestsWithEnvelope, screenGraphQLRequest, requestRejection } from './hostile-requests.js';
import { CursorCodec } from '../graphql/cursor.js';
import { buildAppSchema } from '../graphql/schema.js';
import { sendError, sendJson } from '../rest/envelopes.js';
import { prepareRoutes, restRouter } from '../rest/executor.js';
import { acceptVersioning, requireJsonBody } from '../rest/negotiation.js';
import { buildOpenApiDocument } from '../rest/openapi-document.js';
import { apiDocsPageRoutes, openApiDocumentRoutes } from '../rest/openapi-routes.js';
import type { RateLimiter } from '../auth/rate-limit.js';
import { redactPath } from '../logging/redact-path.js';
import { throttledWarning, type ThrottledWarning } from '../logging/throttled-log.js';
import { operationObservabilityPlugin } from '../observability/graphql.js';
import { graphqlOperationScope, metricsEndpoint, observeRequests } from '../observability/http.js';
import { rateLimitDecisions, reportRateLimitStore } from '../observability/metrics.js';
import { corsAllowList } from './cors.js';
import { createManagedHttpServer, type HttpServerLimits, type StopOutcome } from './http-server.js';
import { idempotentWrites } from './idempotency.js';
import { inSequence } from './in-sequence.js';
import { IdempotencyStore } from './idempotency-store.js';
import { features } from './features.js';
import { DEFAULT_LIVE_LIMITS, startLiveUpdates, type LiveUpdates } from '../live-updates/live-socket-server.js';
import { isScimPath, scimFaceRoutes, scimOpenApiRoute } from '../scim/scim.face.js';
import type { Runtime } from './runtime.js';

export type AppSettings = Pick<
  AppConfig,
  'publicApiUrl' | 'publicWebUrl' | 'publicFeedUrl' | 'apiVendor' | 'introspection' | 'landingPage' | 'corsOrigins' | 'graphqlMaxDepth' | 'graphqlMaxCost'
> &
  /** Unset: the document is served, the page is not; no proxy is trusted. */
  Partial<Pick<AppConfig, 'openapiDocument' | 'apiDocsPage' | 'trustProxy' | 'auditRetentionDays' | 'nodeEnv' | 'graphqlTrustedDocuments'>>;

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
  /** Between the logged audit checkpoints of every account; hourly when unset (SPEC section 19). */
  auditCheckpointIntervalMs?: number;
  /** How often the roots index of the audit trail catches up with the chains (per-user reads read past it meanwhile). */
  auditRootIndexIntervalMs?: number;
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

/** Between purges of idempotency keys older than a day. */
const IDEMPOTENCY_PURGE_INTERVAL_MS = 10 * 60_000;
/** SPEC section 19: one signed checkpoint per account each hour (and after each purge). */
const AUDIT_CHECKPOINT_INTERVAL_MS = 3_600_000;
const AUDIT_ROOT_INDEX_INTERVAL_MS = 500;

const REQUEST_ID_PATTERN = /^[A-Za-z0-9._-]{1,64}$/;

export function buildRuntime(settings: AppSettings, serverSecret: Buffer): Runtime {
  return {
    urls: { api: settings.publicApiUrl, web: settings.publicWebUrl, feed: settings.publicFeedUrl },
    trustProxy: settings.trustProxy ?? false,
    serverSecret,
    production: settings.nodeEnv === 'production',
    cursors: new CursorCodec(deriveKey(serverSecret, 'pagination-cursor')),
    credentialResolvers: features.flatMap((feature) => feature.credentialResolvers ?? []),
    userDeletedHooks: features.flatMap((feature) => (feature.onUserDeleted ? [feature.onUserDeleted] : [])),
    signInMethods: features.flatMap((feature) => (feature.signInMethod ? [feature.signInMethod] : [])),
    userSuspendedHooks: features.flatMap((feature) => (feature.onUserSuspended ? [feature.onUserSuspended] : [])),
  };
}

/**
 * Contention is a normal event, not a defect: retries are debug lines, and a write that gives up
 * (answered 503 busy) is a warning with the request id the client can quote.
 */
function transactionLog(logger: Logger, requestId: string): TransactionObserver {
  return {
    retrying: (event) => logger.debug({ requestId, ...event }, 'write transaction retried after a conflict'),
    gaveUp: (event) => logger.warn({ requestId, ...event }, 'write transaction gave up: answered busy'),
  };
}

/** Both faces on one Express 5 app: `/graphql` (Apollo Server 5) and the v2 REST route table. */
export async function createApp(options: AppOptions): Promise<App> {
  const { settings, database, logger } = options;
  const schema = await buildAppSchema();
  const runtime = buildRuntime(settings, options.serverSecret);
  const routes = prepareRoutes(schema, features.flatMap((feature) => feature.routes));
  const openApiDocument = buildOpenApiDocument(
    {
      routes: features.flatMap((feature) => feature.routes),
      schemas: Object.assign({}, ...features.map((feature) => feature.schemas ?? {})),
      plainOperations: features.flatMap((feature) => feature.httpRouteDescriptions ?? []),
    },
    settings,
  );

  const app = express();
  const managedServer = createManagedHttpServer(app, options.http);
  const httpServer = managedServer.server;
  const outages = throttledWarning(logger, options.outageLogIntervalMs);
  const idempotencyStore = new IdempotencyStore(database);
  const idempotency = { store: idempotencyStore, sealingKey: deriveKey(options.serverSecret, 'idempotency-responses'), logger };
  // Read at start: a manifest that cannot be read stops the server rather than serving without it.
  const trustedDocuments = settings.graphqlTrustedDocuments ? readTrustedDocuments(settings.graphqlTrustedDocuments) : undefined;
  const apollo = createApolloServer({
    schema,
    logger,
    outages,
    introspection: settings.introspection,
    landingPage: settings.landingPage,
    limits: { maxDepth: settings.graphqlMaxDepth, maxCost: settings.graphqlMaxCost },
    plugins: [operationObservabilityPlugin()],
  });
  await apollo.start();
  const live = await startLiveUpdates({
    httpServer,
    schema,
    database,
    runtime,
    rateLimiter: options.rateLimiter,
    logger,
    limits: options.liveUpdates ?? DEFAULT_LIVE_LIMITS,
    queryLimits: { maxDepth: settings.graphqlMaxDepth, maxCost: settings.graphqlMaxCost },
    trustedDocuments,
    hideSchemaDetails: !settings.introspection,
    // The upgrade request never passes Express: its address is read as Express reads every request's (`req.ip`, TRUST_PROXY).
    clientAddressOf: (request) => (Object.assign(Object.create(app.request), { headers: request.headers, socket: request.socket }) as Request).ip,
  });

  app.disable('x-powered-by');
  app.set('query parser', 'simple');
  // Who the client is (req.ip) for every limit keyed by address, and its scheme: only as far as TRUST_PROXY says.
  app.set('trust proxy', runtime.trustProxy);

  // A client's X-Request-Id is believed only from a proxy TRUST_PROXY names (it carries the id the
  // edge gave the request); anyone else gets the server's own, which the audit trail records.
  const trustsPeer = app.get('trust proxy fn') as (address: string, hop: number) => boolean;
  const requestIds = (req: Request, res: Response, next: NextFunction) => {
    const given = req.get('x-request-id');
    const believed = given && REQUEST_ID_PATTERN.test(given) && trustsPeer(req.socket.remoteAddress ?? '', 0);
    res.locals.requestId = believed ? given : randomUUID();
    res.set('X-Request-Id', res.locals.requestId);
    next();
  };
  // Credentials' last uses are written off the request path; a failed write is only logged.
  credentialUsage.reportTo(logger);
  reportRateLimitStore(() => ({ memory: undefined, up: 1, down: 0 })[options.rateLimiter.storeState()]);

  // One line per request: no query string; the calendar key inside feed URLs and sign-in interaction ids are redacted.
  // Its fields are strings and numbers the line names itself (none of them a header or a credential
  // field), so it skips the logger's redaction, which otherwise runs on every field of every line.
  const accessLog = logger.child({}, { redact: [] });
  const accessLogLine = (req: Request, res: Response, next: NextFunction) => {
    const started = process.hrtime.bigint();
    // Read now: inside a mounted router (`/graphql`) Express shows the path relative to the mount.
    const path = redactPath(req.path);
    res.on('finish', () => {
      accessLog.info({
        requestId: res.locals.requestId,
        method: req.method,
        path,
        status: res.statusCode,
        durationMs: Number((process.hrtime.bigint() - started) / 1000n) / 1000,
        traceId: res.locals.traceId,
      }, 'request');
    });
    next();
  };
  // What every request passes first, as one layer of the router (see inSequence).
  app.use(inSequence(requestIds, observeRequests(), corsAllowList(settings.corsOrigins), accessLogLine));

  if (options.metricsToken) app.get('/metrics', metricsEndpoint(options.metricsToken));
  app.get('/healthz', (_req, res) => sendJson(res, 200, { status: 'ok' }));
  app.get('/readyz', async (_req, res) => {
    // From SIGTERM on, load balancers must stop routing here while in-flight work finishes.
    if (managedServer.draining) return sendJson(res, 503, { status: 'draining', database: database.kind });
    try {
      await database.ping();
      // Redis down is degraded, not unready: limits then hold per instance (see createRateLimiter).
      const redis = options.rateLimiter.storeState();
      sendJson(res, 200, { status: redis === 'down' ? 'degraded' : 'ok', database: database.kind, ...(redis === 'memory' ? {} : { redis }) });
    } catch (error) {
      logger.warn({ err: error }, 'readiness check failed');
      sendJson(res, 503, { status: 'unavailable', database: database.kind });
    }
  });

  // Features' plain HTTP routes (the iCal feed): no credentials and no v2 Accept versioning. They and
  // the self-descriptions below go on the app's own router, not on routers of their own: every
  // request passes here, and each nested router would cost it a dispatch of its own.
  const plainRoutes = app.router;
  // Unauthenticated, and some write (a sign-in starts a row): each client address has the anonymous budget.
  const limitPerAddress = async (req: Request, res: Response, next: NextFunction) => {
    try {
      const decision = await options.rateLimiter.consume(`address:${req.ip}`);
      rateLimitDecisions.inc({ decision: decision.allowed ? 'allowed' : 'limited', store: decision.store });
      if (decision.allowed) return next();
      res.set('Retry-After', String(decision.resetSeconds));
      sendError(res, 'rate_limited', 'Rate Limit Exceeded', [`Rate limit of ${decision.limit} requests per minute from this address exceeded; retry in ${decision.resetSeconds} seconds.`]);
    } catch (error) {
      next(error);
    }
  };
  for (const feature of features) feature.httpRoutes?.(plainRoutes, { database, runtime, logger, limitPerAddress });

  // The REST face's self-description: public, before credentials and rate limits.
  if (settings.openapiDocument ?? true) openApiDocumentRoutes(app.router, openApiDocument);
  if (settings.apiDocsPage ?? false) apiDocsPageRoutes(app.router, settings.publicApiUrl);
  if (settings.openapiDocument ?? true) scimOpenApiRoute(app.router, settings);

  // One context per request, shared by GraphQL and the REST facade.
  const requestContext = async (req: Request, res: Response, next: NextFunction) => {
    try {
      const em = database.em();
      const face = isScimPath(req.path) ? 'scim' : req.path === '/graphql' ? 'graphql' : 'rest';
      const authentication = await authenticate(em, req.get('authorization'), runtime.credentialResolvers, face);
      // Authentication above read the primary; presenting reads after it may use a replica.
      database.readRouting?.attach(em, authentication.status === 'authenticated' ? authentication.principal.credentialId : undefined);
      const requestId = res.locals.requestId as string;
      // Derived from the socket and forwarding headers on each read: read once.
      const clientAddress = req.ip;
      const transactions = database.transactions.observedBy(transactionLog(logger, requestId)).onBehalfOf({
        face,
        principal: authentication.status === 'authenticated' ? authentication.principal : undefined,
        requestId,
        remoteAddress: clientAddress,
        description: `${req.method} ${req.path}`,
      });
      res.locals.context = createContext({ em, authentication, requestId, runtime, transactions, clientAddress: clientAddress ?? 'unknown', browserSession: browserSessionOf(req.get('cookie')) });
      next();
    } catch (error) {
      next(error);
    }
  };

  // Every API request draws on its credential's budget (a user's keys and tokens share one);
  // requests without a valid credential draw on their client address's.
  const rateLimit = async (req: Request, res: Response, next: NextFunction) => {
    try {
      const { authentication } = res.locals.context as Context;
      const key = authentication.status === 'authenticated' ? authentication.principal.rateLimitKey : `address:${req.ip}`;
      const decision = await options.rateLimiter.consume(key);
      rateLimitDecisions.inc({ decision: decision.allowed ? 'allowed' : 'limited', store: decision.store });
      res.set({ 'ratelimit-limit': String(decision.limit), 'ratelimit-remaining': String(decision.remaining), 'ratelimit-reset': String(decision.resetSeconds) });
      if (decision.allowed) return next();
      res.set('Retry-After', String(decision.resetSeconds));
      const detail = `Rate limit of ${decision.limit} requests per minute exceeded; retry in ${decision.resetSeconds} seconds.`;
      if (req.path === '/graphql') {
        return sendGraphQLError(res, 'rate_limited', detail);
      }
      if (isScimPath(req.path)) return scimFaceRoutes.fail(res, new RateLimitedError(decision.resetSeconds));
      sendError(res, 'rate_limited', 'Rate Limit Exceeded', [detail]);
    } catch (error) {
      next(error);
    }
  };
  app.use(inSequence(requestContext, rateLimit));

  app.use(scimFaceRoutes.path, scimFaceRoutes.router(schema, logger, outages));

  app.use(
    '/graphql',
    inSequence(
      graphqlOperationScope(),
      express.json({ limit: '1mb' }),
      screenGraphQLRequest,
      ...(trustedDocuments ? [trustedDocumentsOnly(trustedDocuments)] : []),
      idempotentWrites('graphql', idempotency),
      apolloHttpHandler(apollo, { context: async ({ res }) => res.locals.context as Context }),
    ),
  );

  app.use(inSequence(
    acceptVersioning(settings.apiVendor),
    requireJsonBody,
    express.json({ limit: '1mb', type: ['application/json', 'application/*+json'] }),
    idempotentWrites('rest', idempotency),
    restRouter(routes, schema, logger, outages),
  ));

  app.use((_req: Request, res: Response) => sendError(res, 'not_found', 'Not Found', ['No such route.']));
  // Errors outside a route's own handling (body parsing, path decoding, authentication), answered
  // in the shape of the face the request was for.
  app.use((error: unknown, req: Request, res: Response, _next: NextFunction) => {
    const graphql = req.path === '/graphql';
    if (isScimPath(req.path)) return scimFaceRoutes.fail(res, error, logger);
    const rejection = requestRejection(error);
    if (rejection) {
      const { kind, detail } = rejection;
      if (graphql) return sendGraphQLError(res, kind, detail);
      return sendError(res, kind, kind === 'invalid_input' ? 'Invalid Input Provided' : 'Unsupported Media Type', [detail]);
    }
    // Authentication, idempotency and the rate limit read the database too: an outage there is a 503 like anywhere else.
    if (classifyError(error).kind === 'unavailable') return answerUnavailable(req, res, error, outages);
    logger.error({ err: error, requestId: res.locals.requestId, path: redactPath(req.originalUrl) }, 'unhandled error');
    if (graphql) {
      return sendGraphQLError(res, 'internal', 'Internal server error', { requestId: res.locals.requestId });
    }
    sendError(res, 'internal', 'Internal Server Error', [`Quote request id ${res.locals.requestId} when reporting this error.`]);
  });
  answerRefusedRequestsWithEnvelope(httpServer);

  const purgeTimer = setInterval(() => {
    idempotencyStore.purgeExpired().then(
      (purged) => purged && logger.debug({ purged }, 'purged expired idempotency keys'),
      (error: unknown) => outages.warn({ err: error }, 'idempotency key purge failed'),
    );
    // The audit trail's retention, as the server goes: each purge is a recorded write of its own.
    const retention = database.transactions.onBehalfOf({ face: 'server', description: 'audit retention purge' });
    const onPurged = async (accountId: string) => {
      const checkpoint = await auditCheckpoint(database.em(), accountId);
      if (checkpoint) logCheckpoint(checkpoint);
    };
    purgeAuditRecords(database.em(), retention, { retentionDays: settings.auditRetentionDays ?? DEFAULT_AUDIT_RETENTION_DAYS, onPurged }).then(
      (purged) => purged && logger.info({ purged }, 'purged audit records past retention'),
      (error: unknown) => outages.warn({ err: error }, 'audit record purge failed'),
    );
  }, IDEMPOTENCY_PURGE_INTERVAL_MS);
  purgeTimer.unref();
  // Signed heads in the log, which lives outside the database: a tail removed later shows against them (`audit verify --checkpoint`).
  const logCheckpoint = (checkpoint: AuditCheckpoint) => logger.info({ checkpoint: checkpointJson(checkpoint) }, 'audit checkpoint');
  // One round at a time: a database slower than the interval skips ticks instead of piling up reads.
  let checkpointsInFlight: Promise<void> | undefined;
  const checkpointTimer = setInterval(() => {
    checkpointsInFlight ??= auditCheckpoints(database.em()).then(
      (checkpoints) => checkpoints.forEach(logCheckpoint),
      (error: unknown) => outages.warn({ err: error }, 'audit checkpoints not logged'),
    ).finally(() => {
      checkpointsInFlight = undefined;
    });
  }, options.auditCheckpointIntervalMs ?? AUDIT_CHECKPOINT_INTERVAL_MS);
  checkpointTimer.unref();
  // The per-user index of the trail, filled after commit off the writes' path (migration 20261126030000).
  let rootIndexInFlight: Promise<void> | undefined;
  const rootIndexTimer = setInterval(() => {
    rootIndexInFlight ??= indexAuditRoots(database.em()).then(
      () => undefined,
      (error: unknown) => outages.warn({ err: error }, 'audit roots index not brought up to date'),
    ).finally(() => {
      rootIndexInFlight = undefined;
    });
  }, options.auditRootIndexIntervalMs ?? AUDIT_ROOT_INDEX_INTERVAL_MS);
  rootIndexTimer.unref();

  return {
    app,
    httpServer,
    runtime,
    idempotencyStore,
    openApiDocument,
    live,
    beginDraining: () => {
      managedServer.beginDraining();
      live.beginDraining();
    },
    async stop(graceMs = 10_000) {
      clearInterval(purgeTimer);
      clearInterval(checkpointTimer);
      clearInterval(rootIndexTimer);
      // A round under way finishes before the database it reads is closed (after stop).
      const lastCheckpoints = checkpointsInFlight;
      const lastRootIndex = rootIndexInFlight;
      // After the drain: subscribers are told to go (1001) and reconnect elsewhere; then HTTP stops.
      await live.close();
      const outcome = await managedServer.stop(graceMs);
      logger.debug(outcome, 'HTTP connections closed');
      // Apollo last: it refuses operations once stopping, and none may still be on their way.
      await apollo.stop();
      await lastCheckpoints;
      await lastRootIndex;
      return outcome;
    },
  };
}

/** A dependency is away: 503 with Retry-After on each face's own shape, one warn line per interval. */
function answerUnavailable(req: Request, res: Response, error: unknown, outages: ThrottledWarning): void {
  outages.warn({ err: error, requestId: res.locals.requestId, path: redactPath(req.originalUrl) }, 'database unavailable: answering 503');
  const detail = 'The database is unavailable or busy; retry shortly.';
  if (req.path === '/graphql') {
    res.set('Retry-After', '1');
    return sendGraphQLError(res, 'unavailable', detail);
  }
  sendError(res, 'unavailable', 'Service Unavailable', [detail]);
}
