import express, { type Request } from 'express';
import { credentialUsage } from '../auth/credential-usage.js';
import { deriveKey } from '../auth/server-secret.js';
import { startApolloServer } from '../faces/graphql/apollo-server.js';
import { graphqlFace, mountGraphQLFace } from '../faces/graphql/graphql-face.js';
import { mountRestFace, restFace } from '../faces/rest/rest-face.js';
import { mountScimFace, scimFace } from '../faces/scim/scim-face.js';
import { DEFAULT_LIVE_LIMITS, startLiveUpdates } from '../faces/ws/socket-server.js';
import { accessLogLines } from '../http/access-log.js';
import { lastErrorHandler, noSuchRoute, type FailureLog } from '../http/answer-error.js';
import { corsAllowList } from '../http/cors.js';
import { assignFaces } from '../http/face.js';
import { healthRoutes } from '../http/health-routes.js';
import { answerRefusedRequestsWithEnvelope } from '../http/hostile-requests.js';
import { IdempotencyStore } from '../http/idempotency-store.js';
import { inSequence } from '../http/in-sequence.js';
import { createManagedHttpServer } from '../http/managed-server.js';
import { limitPerAddress, limitPerCredential } from '../http/rate-budget.js';
import { requestContext } from '../http/request-context.js';
import { requestIds } from '../http/request-id.js';
import { readTrustedDocuments } from '../http/trusted-documents.js';
import { throttledWarning } from '../logging/throttled-log.js';
import { operationObservabilityPlugin } from '../observability/graphql.js';
import { observeRequests } from '../observability/http.js';
import { reportRateLimitStore } from '../observability/metrics.js';
import { buildRuntime, type App, type AppOptions } from './app-options.js';
import { appSchema, features } from './features.js';
import { DEFAULT_DB_CONNECTIONS_PER_REQUEST } from '../db/connection-share.js';
import { idempotencyKeyPurge, startJobs } from './jobs.js';
import { mountSelfDescriptions, restOpenApiDocument } from './self-description.js';

export type { App, AppOptions, AppSettings } from './app-options.js';

/** Every face on one Express 5 app and one HTTP server: GraphQL (HTTP and WebSocket), REST and SCIM over one schema. */
export async function createApp(options: AppOptions): Promise<App> {
  const { settings, database, logger, rateLimiter } = options;
  const schema = await appSchema();
  const runtime = buildRuntime(settings, options.serverSecret);
  const app = express().disable('x-powered-by').set('query parser', 'simple');
  // Who the client is (req.ip) for every limit keyed by address, and its scheme: only as far as TRUST_PROXY says.
  app.set('trust proxy', runtime.trustProxy);
  const managedServer = createManagedHttpServer(app, options.http);
  const log: FailureLog = { logger, outages: throttledWarning(logger, options.outageLogIntervalMs) };
  const idempotencyStore = new IdempotencyStore(database);
  const idempotency = { store: idempotencyStore, sealingKey: deriveKey(options.serverSecret, 'idempotency-responses'), logger };
  // Read at start: a manifest that cannot be read stops the server rather than serving without it.
  const trustedDocuments = settings.graphqlTrustedDocuments ? readTrustedDocuments(settings.graphqlTrustedDocuments) : undefined;
  const queryLimits = { maxDepth: settings.graphqlMaxDepth, maxCost: settings.graphqlMaxCost, maxRootFields: settings.graphqlMaxRootFields };
  const connectionsPerRequest = settings.graphqlMaxDbConnectionsPerRequest ?? DEFAULT_DB_CONNECTIONS_PER_REQUEST;
  const apollo = await startApolloServer({ schema, log, introspection: settings.introspection, limits: queryLimits, plugins: [operationObservabilityPlugin()] });
  const live = await startLiveUpdates({
    httpServer: managedServer.server, schema, database, runtime, rateLimiter, logger, queryLimits, trustedDocuments,
    limits: options.liveUpdates ?? DEFAULT_LIVE_LIMITS,
    hideSchemaDetails: !settings.introspection,
    // The upgrade request never passes Express: its address is read as Express reads every request's (`req.ip`, TRUST_PROXY).
    clientAddressOf: (request) => (Object.assign(Object.create(app.request), { headers: request.headers, socket: request.socket }) as Request).ip,
  });
  // Credentials' last uses are written off the request path; a failed write is only logged.
  credentialUsage.reportTo(logger);
  reportRateLimitStore(() => ({ memory: undefined, up: 1, down: 0 })[rateLimiter.storeState()]);

  // What every request passes first, as one layer of the router (see inSequence).
  app.use(inSequence(assignFaces([graphqlFace, scimFace], restFace), requestIds(app.get('trust proxy fn')), observeRequests(), corsAllowList(settings.corsOrigins), accessLogLines(logger)));
  // Routes outside the API go on the app's own router, not on routers of their own: every request
  // passes here, and each nested router would cost it a dispatch of its own.
  healthRoutes(app.router, { database, rateLimiter, logger, draining: () => managedServer.draining, metricsToken: options.metricsToken });
  const routeDeps = { database, runtime, logger, limitPerAddress: limitPerAddress(rateLimiter) };
  for (const feature of features) feature.httpRoutes?.(app.router, routeDeps);
  const openApiDocument = restOpenApiDocument(settings);
  mountSelfDescriptions(app.router, openApiDocument, settings);

  app.use(inSequence(requestContext({ database, runtime, logger, connectionsPerRequest }), limitPerCredential(rateLimiter)));
  mountScimFace(app, { schema, routes: features.flatMap((feature) => feature.scimRoutes ?? []), log });
  mountGraphQLFace(app, { apollo, idempotency, trustedDocuments, landingPage: settings.landingPage });
  mountRestFace(app, { schema, routes: features.flatMap((feature) => feature.routes), apiVendor: settings.apiVendor, idempotency, log });
  app.use(noSuchRoute, lastErrorHandler(log));
  answerRefusedRequestsWithEnvelope(managedServer.server);

  const jobDeps = { database, logger, settings: { auditRetentionDays: settings.auditRetentionDays, auditCheckpointIntervalMs: options.auditCheckpointIntervalMs, auditRootIndexIntervalMs: options.auditRootIndexIntervalMs } };
  const jobs = startJobs([idempotencyKeyPurge(idempotencyStore, logger), ...features.flatMap((feature) => feature.jobs?.(jobDeps) ?? [])], log.outages);
  return {
    app, httpServer: managedServer.server, runtime, idempotencyStore, openApiDocument, live,
    beginDraining: () => {
      managedServer.beginDraining();
      live.beginDraining();
    },
    async stop(graceMs = 10_000) {
      const jobsStopped = jobs.stop();
      // After the drain: subscribers are told to go (1001) and reconnect elsewhere; then HTTP stops.
      await live.close();
      const outcome = await managedServer.stop(graceMs);
      logger.debug(outcome, 'HTTP connections closed');
      // Apollo last: it refuses operations once stopping, and none may still be on their way. A job's round under way finishes before the database it reads is closed.
      await apollo.stop();
      await jobsStopped;
      return outcome;
    },
  };
}
