import express, { Router, type NextFunction, type Request, type Response } from 'express';
import type { GraphQLSchema } from 'graphql';
import { assertRequirements } from '../../auth/auth-checker.js';
import { requirePrincipal, type Context } from '../../graphql/context.js';
import { NotFoundError, StaleVersionError } from '../../errors/domain-errors.js';
import { answerError, type FailureLog } from '../../http/answer-error.js';
import { executePrepared, prepareRoutes, type PreparedRoute } from '../rest/executor.js';
import { unstorableStrings } from '../../rest/params.js';
import { requestRejection } from '../../http/hostile-requests.js';
import { classifyError } from '../../graphql/errors.js';
import { USER_RESOURCE_TYPE, USER_SCHEMA_RESOURCE, listResponse, serviceProviderConfig } from '../../scim/scim.discovery.js';
import { ScimInputError, sendScim } from '../../scim/scim.errors.js';
import type { ScimRequest, ScimRoute } from '../../scim/scim.route-row.js';
import { scimAccessRow } from '../../auth/access-table.js';

/** A read-modify-write that lost a race (and had no If-Match) reads again, at most this often. */
const STALE_RETRIES = 3;
const BODY_TYPES = ['application/json', 'application/scim+json', 'application/*+json'];

/** `If-Match: W/"1", "2"` -> ["1", "2"]; `*` stays `*`. */
export function parseIfMatch(header: string | undefined): string[] | undefined {
  if (header === undefined || header.trim() === '') return undefined;
  const versions = header.split(',').map((part) => part.trim().replace(/^W\//, '').replace(/^"(.*)"$/, '$1')).filter(Boolean);
  if (versions.length === 0 || versions.length > 20) throw new ScimInputError('invalidValue', 'If-Match must name one or more versions');
  return versions;
}

interface PreparedScimRoute {
  row: PreparedRoute<ScimRoute>;
  current?: PreparedRoute<ScimRoute>;
}

/**
 * The SCIM face: each route row executes its GraphQL document through the same
 * schema and per-request context as REST and GraphQL (src/faces/rest/executor.ts), so authorization,
 * validation and loading exist once; errors are translated once, into SCIM's error schema.
 * Credentials were resolved and the rate limit applied before this router.
 */
export function scimRouter(schema: GraphQLSchema, routes: readonly ScimRoute[], log: FailureLog): Router {
  const rows = prepareRoutes(schema, routes);
  const currents = prepareRoutes(schema, routes.flatMap((route) => (route.current ? [{ ...route, operation: route.current.operation }] : [])));
  const prepared: PreparedScimRoute[] = rows.map((row) => ({ row, current: row.route.current ? currents.find((candidate) => candidate.route.path === row.route.path && candidate.route.method === row.route.method) : undefined }));

  const router = Router();
  router.use((req: Request, _res: Response, next: NextFunction) => {
    // A body must be JSON (SCIM's media type or plain JSON); anything else is refused before parsing.
    const hasBody = (req.headers['content-length'] !== undefined && req.headers['content-length'] !== '0') || req.headers['transfer-encoding'] !== undefined;
    if (hasBody && !req.is(BODY_TYPES)) return next(new ScimInputError('invalidSyntax', 'The request body must be application/scim+json or application/json.'));
    next();
  });
  router.use(express.json({ limit: '1mb', type: BODY_TYPES, strict: false }));

  const fail = (res: Response, error: unknown, route: string) => answerError(res, error, log, { route });

  const scimRequest = (req: Request, context: Context): ScimRequest => {
    const raw = { params: req.params as Record<string, string>, query: req.query as ScimRequest['query'], body: req.body };
    const unstorable = unstorableStrings(raw);
    if (unstorable.length) throw new ScimInputError('invalidValue', unstorable.join('; '));
    return { ...raw, principal: requirePrincipal(context), ifMatch: parseIfMatch(req.get('if-match')), apiUrl: context.runtime.urls.api };
  };

  for (const { row, current } of prepared) {
    const { route } = row;
    const access = scimAccessRow(route.description.operationId);
    const where = `${route.method.toUpperCase()} /scim/v2${route.path}`;
    router[route.method](route.path, async (req: Request, res: Response) => {
      const context = res.locals.context as Context;
      try {
        assertRequirements(requirePrincipal(context), access.requires);
        const request = scimRequest(req, context);
        let data: unknown;
        for (let attempt = 1; ; attempt++) {
          let currentData: unknown;
          if (current && route.current) {
            currentData = await executePrepared(schema, current, context, route.current.variables(request));
            const version = route.current.version(currentData);
            if (request.ifMatch && !request.ifMatch.includes('*') && !request.ifMatch.includes(version)) throw new StaleVersionError();
          }
          try {
            data = await executePrepared(schema, row, context, route.variables(request, currentData));
            break;
          } catch (error) {
            const lostRace = current && !request.ifMatch && classifyError(error).kind === 'conflict' && attempt < STALE_RETRIES;
            if (!lostRace) throw error;
          }
        }
        const response = route.respond(data, request);
        sendScim(res, response.status, response.body, response.headers);
      } catch (error) {
        fail(res, error, where);
      }
    });
  }

  const discovery = (path: string, answer: (req: Request, context: Context) => unknown) => {
    router.get(path, (req: Request, res: Response) => {
      const context = res.locals.context as Context;
      try {
        assertRequirements(requirePrincipal(context), ['users.read']);
        sendScim(res, 200, answer(req, context));
      } catch (error) {
        fail(res, error, `GET /scim/v2${path}`);
      }
    });
  };
  discovery('/ServiceProviderConfig', (_req, context) => serviceProviderConfig(`${context.runtime.urls.api}/scim/v2/openapi.json`));
  discovery('/Schemas', () => listResponse([USER_SCHEMA_RESOURCE], 1));
  discovery('/Schemas/:id', (req) => {
    if (req.params.id !== USER_SCHEMA_RESOURCE.id) throw new NotFoundError('schema');
    return USER_SCHEMA_RESOURCE;
  });
  discovery('/ResourceTypes', () => listResponse([USER_RESOURCE_TYPE], 1));
  discovery('/ResourceTypes/User', () => USER_RESOURCE_TYPE);

  router.use((_req: Request, res: Response) => fail(res, new NotFoundError('SCIM endpoint'), 'SCIM'));
  // Body parsing and anything else outside a route's own handling, in SCIM's shape.
  router.use((error: unknown, _req: Request, res: Response, _next: NextFunction) => {
    const rejection = requestRejection(error);
    if (rejection) {
      const tooLarge = (error as { type?: unknown }).type === 'entity.too.large';
      return fail(res, new ScimInputError(tooLarge ? 'invalidValue' : 'invalidSyntax', rejection.detail), 'SCIM');
    }
    fail(res, error, 'SCIM');
  });
  return router;
}
