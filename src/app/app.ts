import http from 'node:http';
import { randomUUID } from 'node:crypto';
import express, { Router, type NextFunction, type Request, type Response } from 'express';
import { expressMiddleware } from '@as-integrations/express5';
import type { AppConfig } from '../config/config.js';
import type { Database } from '../db/database.js';
import type { Logger } from '../logging/logger.js';
import { authenticate } from '../auth/authenticate.js';
import { deriveKey } from '../auth/server-secret.js';
import { createApolloServer } from '../graphql/apollo.js';
import { createContext, type Context } from '../graphql/context.js';
import { graphqlErrorBody } from '../graphql/errors.js';
import { CursorCodec } from '../graphql/cursor.js';
import { buildAppSchema } from '../graphql/schema.js';
import { sendError, sendJson } from '../rest/envelopes.js';
import { prepareRoutes, restRouter } from '../rest/executor.js';
import { acceptVersioning, requireJsonBody } from '../rest/negotiation.js';
import type { RateLimiter } from '../auth/rate-limit.js';
import { corsAllowList } from './cors.js';
import { features } from './features.js';
import type { Runtime } from './runtime.js';

export type AppSettings = Pick<
  AppConfig,
  'publicApiUrl' | 'publicWebUrl' | 'publicFeedUrl' | 'apiVendor' | 'introspection' | 'landingPage' | 'corsOrigins' | 'graphqlMaxDepth' | 'graphqlMaxCost'
>;

export interface AppOptions {
  settings: AppSettings;
  database: Database;
  logger: Logger;
  serverSecret: Buffer;
  rateLimiter: RateLimiter;
}

export interface App {
  app: express.Express;
  httpServer: http.Server;
  runtime: Runtime;
  stop(): Promise<void>;
}

const REQUEST_ID_PATTERN = /^[A-Za-z0-9._-]{1,64}$/;

export function buildRuntime(settings: AppSettings, serverSecret: Buffer): Runtime {
  return {
    urls: { api: settings.publicApiUrl, web: settings.publicWebUrl, feed: settings.publicFeedUrl },
    serverSecret,
    cursors: new CursorCodec(deriveKey(serverSecret, 'pagination-cursor')),
    credentialResolvers: features.flatMap((feature) => feature.credentialResolvers ?? []),
    userDeletedHooks: features.flatMap((feature) => (feature.onUserDeleted ? [feature.onUserDeleted] : [])),
  };
}

/** Both faces on one Express 5 app: `/graphql` (Apollo Server 5) and the v2 REST route table. */
export async function createApp(options: AppOptions): Promise<App> {
  const { settings, database, logger } = options;
  const schema = await buildAppSchema();
  const runtime = buildRuntime(settings, options.serverSecret);
  const routes = prepareRoutes(schema, features.flatMap((feature) => feature.routes));

  const app = express();
  const httpServer = http.createServer(app);
  const apollo = createApolloServer({
    schema,
    logger,
    httpServer,
    introspection: settings.introspection,
    landingPage: settings.landingPage,
    limits: { maxDepth: settings.graphqlMaxDepth, maxCost: settings.graphqlMaxCost },
  });
  await apollo.start();

  app.disable('x-powered-by');
  app.set('query parser', 'simple');

  app.use((req: Request, res: Response, next: NextFunction) => {
    const given = req.get('x-request-id');
    res.locals.requestId = given && REQUEST_ID_PATTERN.test(given) ? given : randomUUID();
    res.set('X-Request-Id', res.locals.requestId);
    next();
  });

  app.use(corsAllowList(settings.corsOrigins));

  // One line per request: no query string; the calendar key inside feed URLs and sign-in interaction ids are redacted.
  app.use((req: Request, res: Response, next: NextFunction) => {
    const started = process.hrtime.bigint();
    res.on('finish', () => {
      logger.info({
        requestId: res.locals.requestId,
        method: req.method,
        path: req.path.replace(/^\/private\/[^/]+/, '/private/[redacted]').replace(/^\/oauth\/(interaction|authorize)\/[^/]+/, '/oauth/$1/[redacted]'),
        status: res.statusCode,
        durationMs: Number((process.hrtime.bigint() - started) / 1000n) / 1000,
      }, 'request');
    });
    next();
  });

  app.get('/healthz', (_req, res) => sendJson(res, 200, { status: 'ok' }));
  app.get('/readyz', async (_req, res) => {
    try {
      await database.ping();
      sendJson(res, 200, { status: 'ok', database: database.kind });
    } catch (error) {
      logger.warn({ err: error }, 'readiness check failed');
      sendJson(res, 503, { status: 'unavailable', database: database.kind });
    }
  });

  // Features' plain HTTP routes (the iCal feed): no credentials and no v2 Accept versioning.
  const plainRoutes = Router();
  for (const feature of features) feature.httpRoutes?.(plainRoutes, { database, runtime, logger });
  app.use(plainRoutes);

  // One context per request, shared by GraphQL and the REST facade.
  app.use(async (req: Request, res: Response, next: NextFunction) => {
    try {
      const em = database.em();
      const authentication = await authenticate(em, req.get('authorization'), runtime.credentialResolvers);
      res.locals.context = createContext({ em, authentication, requestId: res.locals.requestId as string, runtime });
      next();
    } catch (error) {
      next(error);
    }
  });

  // Every API request draws on its credential's budget (a user's keys and tokens share one);
  // requests without a valid credential draw on their client address's.
  app.use(async (req: Request, res: Response, next: NextFunction) => {
    try {
      const { authentication } = res.locals.context as Context;
      const key = authentication.status === 'authenticated' ? authentication.principal.rateLimitKey : `address:${req.ip}`;
      const decision = await options.rateLimiter.consume(key);
      res.set({ 'ratelimit-limit': String(decision.limit), 'ratelimit-remaining': String(decision.remaining), 'ratelimit-reset': String(decision.resetSeconds) });
      if (decision.allowed) return next();
      res.set('Retry-After', String(decision.resetSeconds));
      const detail = `Rate limit of ${decision.limit} requests per minute exceeded; retry in ${decision.resetSeconds} seconds.`;
      if (req.path === '/graphql') {
        return sendJson(res, 429, graphqlErrorBody('rate_limited', detail));
      }
      sendError(res, 'rate_limited', 'Rate Limit Exceeded', [detail]);
    } catch (error) {
      next(error);
    }
  });

  app.use(
    '/graphql',
    express.json({ limit: '1mb' }),
    expressMiddleware(apollo, { context: async ({ res }) => res.locals.context as Context }),
  );

  app.use(acceptVersioning(settings.apiVendor), requireJsonBody, express.json({ limit: '1mb', type: ['application/json', 'application/*+json'] }));
  app.use(restRouter(routes, schema, logger));

  app.use((_req: Request, res: Response) => sendError(res, 'not_found', 'Not Found', ['No such route.']));
  app.use((error: unknown, req: Request, res: Response, _next: NextFunction) => {
    const type = (error as { type?: string }).type;
    if (type === 'entity.parse.failed') return sendError(res, 'invalid_input', 'Invalid Input Provided', ['The request body is not valid JSON.']);
    if (type === 'entity.too.large') return sendError(res, 'invalid_input', 'Invalid Input Provided', ['The request body is larger than 1 MB.']);
    if (type === 'encoding.unsupported' || type === 'charset.unsupported') return sendError(res, 'unsupported_media_type', 'Unsupported Media Type', ['Request bodies must be UTF-8 JSON.']);
    logger.error({ err: error, requestId: res.locals.requestId }, 'unhandled error');
    if (req.path === '/graphql') {
      return sendJson(res, 500, graphqlErrorBody('internal', 'Internal server error', { requestId: res.locals.requestId }));
    }
    sendError(res, 'internal', 'Internal Server Error', [`Quote request id ${res.locals.requestId} when reporting this error.`]);
  });

  return {
    app,
    httpServer,
    runtime,
    async stop() {
      logger.debug('stopping Apollo Server and draining HTTP connections');
      await apollo.stop();
      logger.debug('Apollo Server stopped');
      if (httpServer.listening) await new Promise<void>((resolve) => httpServer.close(() => resolve()));
    },
  };
}
