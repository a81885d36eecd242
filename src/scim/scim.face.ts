import { Router, type Response } from 'express';
import type { Logger } from '../logging/logger.js';
import { sendScimError } from './scim.errors.js';
import { buildScimOpenApiDocument } from './scim.openapi.js';
import { scimRouter } from './scim.router.js';
import { scimUserRoutes } from './scim.routes.js';
import { SCIM_BASE_PATH } from './scim.user.js';

export function isScimPath(path: string): boolean {
  return path === SCIM_BASE_PATH || path.startsWith(`${SCIM_BASE_PATH}/`);
}

/** What app.ts needs of the SCIM face: where it is mounted, its router, and its answers outside the router. */
export const scimFaceRoutes = {
  path: SCIM_BASE_PATH,
  router: scimRouter,
  /** Errors before the router (rate limit, authentication's database reads), in SCIM's shape. */
  fail(res: Response, error: unknown, logger?: Logger): void {
    const translated = sendScimError(res, error);
    if (translated.kind === 'internal') logger?.error({ err: error, requestId: res.locals.requestId }, 'unhandled error');
  },
};

/** `GET /scim/v2/openapi.json`: public, like /openapi.json. */
export function scimOpenApiRoute(router: Router, settings: { publicApiUrl: string }): Router {
  const document = JSON.stringify(buildScimOpenApiDocument(scimUserRoutes, settings.publicApiUrl));
  router.get(`${SCIM_BASE_PATH}/openapi.json`, (_req, res) => {
    res.type('application/json; charset=utf-8').send(document);
  });
  return router;
}
