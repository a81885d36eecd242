import type { Express, Router } from 'express';
import type { GraphQLSchema } from 'graphql';
import type { FailureLog } from '../../http/answer-error.js';
import type { Face } from '../../http/face.js';
import { sendScimError } from '../../scim/scim.errors.js';
import { buildScimOpenApiDocument } from '../../scim/scim.openapi.js';
import type { ScimRoute } from '../../scim/scim.route-row.js';
import { SCIM_BASE_PATH } from '../../scim/scim.user.js';
import { scimRouter } from './scim-router.js';

/** The SCIM face: everything under `/scim/v2`, errors in SCIM's error schema. */
export const scimFace: Face = {
  name: 'scim',
  matches: (path) => path === SCIM_BASE_PATH || path.startsWith(`${SCIM_BASE_PATH}/`),
  answer(res, error) {
    sendScimError(res, error);
  },
};

/** Mounts `/scim/v2` after the request context and the rate budget. */
export function mountScimFace(app: Express, options: { schema: GraphQLSchema; routes: readonly ScimRoute[]; log: FailureLog }): void {
  app.use(SCIM_BASE_PATH, scimRouter(options.schema, options.routes, options.log));
}

/** `GET /scim/v2/openapi.json`: public, like /openapi.json. */
export function scimOpenApiRoute(router: Router, routes: readonly ScimRoute[], publicApiUrl: string): void {
  const document = JSON.stringify(buildScimOpenApiDocument(routes, publicApiUrl));
  router.get(`${SCIM_BASE_PATH}/openapi.json`, (_req, res) => {
    res.type('application/json; charset=utf-8').send(document);
  });
}
