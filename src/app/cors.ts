import type { NextFunction, Request, Response } from 'express';

/**
 * Browsers on the listed origins may call both faces; any other origin gets no CORS headers
 * (and so no access from a browser). Preflights are answered here.
 */
export function corsAllowList(origins: readonly string[]) {
  const allowed = new Set(origins.map((origin) => origin.replace(/\/+$/, '')));
  return (req: Request, res: Response, next: NextFunction) => {
    const origin = req.get('origin');
    if (!origin || !allowed.has(origin)) return next();
    res.set({ 'Access-Control-Allow-Origin': origin, 'Access-Control-Expose-Headers': 'ratelimit-limit, ratelimit-remaining, ratelimit-reset, x-request-id, deprecation, link' });
    res.vary('Origin');
    if (req.method !== 'OPTIONS' || !req.get('access-control-request-method')) return next();
    res.set({
      'Access-Control-Allow-Methods': 'GET, POST, PUT, DELETE, OPTIONS',
      'Access-Control-Allow-Headers': 'Authorization, Content-Type, Accept, X-Request-Id, apollo-require-preflight, x-apollo-operation-name',
      'Access-Control-Max-Age': '600',
    });
    res.status(204).end();
  };
}
