import type { NextFunction, Request, Response } from 'express';

/** What browser clients send: credentials, idempotent retries, Apollo Client's identification and CSRF headers, trace context. */
const ALLOWED_REQUEST_HEADERS = [
  'Authorization', 'Content-Type', 'Accept', 'X-Request-Id', 'Idempotency-Key',
  'apollographql-client-name', 'apollographql-client-version', 'apollo-require-preflight', 'x-apollo-operation-name',
  'traceparent', 'tracestate',
].join(', ');

/**
 * What browser code may read of an answer: when to retry, whether it was a replay, the request id to
 * quote, the rate budget, and the bearer challenge of a 401 (a step-up names its `max_age` there, on
 * REST as on GraphQL, so a browser app can authorize again with it).
 */
const EXPOSED_HEADERS = 'retry-after, idempotent-replayed, x-request-id, ratelimit-limit, ratelimit-remaining, ratelimit-reset, deprecation, link, www-authenticate';

/**
 * Browsers on the listed origins may call both faces; any other origin gets no CORS headers
 * (and so no access from a browser). Preflights are answered here.
 */
export function corsAllowList(origins: readonly string[]) {
  const allowed = new Set(origins.map((origin) => origin.replace(/\/+$/, '')));
  return (req: Request, res: Response, next: NextFunction) => {
    const origin = req.get('origin');
    if (!origin || !allowed.has(origin)) return next();
    res.set({ 'Access-Control-Allow-Origin': origin, 'Access-Control-Expose-Headers': EXPOSED_HEADERS });
    res.vary('Origin');
    if (req.method !== 'OPTIONS' || !req.get('access-control-request-method')) return next();
    res.set({
      'Access-Control-Allow-Methods': 'GET, POST, PUT, DELETE, OPTIONS',
      'Access-Control-Allow-Headers': ALLOWED_REQUEST_HEADERS,
      'Access-Control-Max-Age': '600',
    });
    res.status(204).end();
  };
}
