import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { apiErrors, httpRequestDuration, httpRequests, metricsRegistry, metricsTokenMatches, routeTemplate } from './metrics.js';
import { endHttpSpan, endOperationSpan, runInContext, startHttpSpan, startOperationSpan } from './tracing.js';

/** The route label: the matched template, `/graphql`, or one bucket for everything unmatched. */
function routeOf(req: Request, res: Response): string {
  if (req.route?.path) return routeTemplate(`${req.baseUrl}${String(req.route.path)}`);
  if (res.locals.routeLabel || req.originalUrl.split('?', 1)[0] === '/graphql') return '/graphql';
  return res.statusCode === 404 ? '(unmatched)' : '(other)';
}

/**
 * Counts and times every request by route template, counts REST error codes, and (when tracing
 * is on) wraps the request in a server span whose trace id the access log line carries.
 */
export function observeRequests(): RequestHandler {
  return (req: Request, res: Response, next: NextFunction) => {
    const started = process.hrtime.bigint();
    const traced = startHttpSpan(req.method, req.headers);
    if (traced) res.locals.traceId = traced.span.spanContext().traceId;
    res.once('close', () => {
      const route = routeOf(req, res);
      httpRequests.inc({ method: req.method, route, status: String(res.statusCode) });
      httpRequestDuration.observe({ method: req.method, route }, Number(process.hrtime.bigint() - started) / 1e9);
      const errorCode = res.locals.errorCode as number | undefined;
      if (errorCode !== undefined) apiErrors.inc({ face: 'rest', code: String(errorCode) });
      if (traced) endHttpSpan(traced.span, req.method, route, res.statusCode);
    });
    if (traced) return runInContext(traced.context, next);
    next();
  };
}

/**
 * Opens the GraphQL operation's span before Apollo Server runs it, so resolvers' statements are its
 * children; the Apollo plugin names it once the operation is known.
 */
export function graphqlOperationScope(): RequestHandler {
  return (_req: Request, res: Response, next: NextFunction) => {
    res.locals.routeLabel = '/graphql';
    const traced = startOperationSpan('graphql');
    if (!traced) return next();
    res.locals.operationSpan = traced.span;
    res.once('close', () => endOperationSpan(traced.span, res.statusCode >= 500));
    runInContext(traced.context, next);
  };
}

/** `GET /metrics` in Prometheus text format, for holders of the metrics token only. */
export function metricsEndpoint(token: string): RequestHandler {
  return async (req: Request, res: Response) => {
    if (!metricsTokenMatches(token, req.get('authorization'))) {
      res.status(401).set('WWW-Authenticate', 'Bearer realm="metrics"').type('text/plain').send('A valid metrics token is required.\n');
      return;
    }
    res.type(metricsRegistry.contentType).send(await metricsRegistry.metrics());
  };
}
