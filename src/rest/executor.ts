import { Router, type Request, type Response } from 'express';
import { execute, getOperationAST, parse, validate, type DocumentNode, type GraphQLSchema } from 'graphql';
import type { Logger } from '../logging/logger.js';
import type { ThrottledWarning } from '../logging/throttled-log.js';
import { requirePrincipal, type Context } from '../graphql/context.js';
import { classifyError } from '../graphql/errors.js';
import { DomainError, InvalidInputError } from '../errors/domain-errors.js';
import { assertOperationInputsAcceptable } from '../graphql/input-bounds.js';
import { unstorableStrings } from './params.js';
import { observeRestOperation } from '../observability/graphql.js';
import { reserveOperationName } from '../observability/metrics.js';
import { sendError, sendJson } from './envelopes.js';
import type { RestRequest, RestRoute } from './route.js';
import { validateDescribedInput } from './description.js';

interface PreparedRoute {
  route: RestRoute;
  document: DocumentNode;
  operation: { type: string; name: string | undefined };
}

/** Parses and validates every route's document once, at start: a broken row stops the server from starting. */
export function prepareRoutes(schema: GraphQLSchema, routes: readonly RestRoute[]): PreparedRoute[] {
  return routes.map((route) => {
    const where = `${route.method.toUpperCase()} ${route.path} (${route.operation.files.join(', ')})`;
    const document = parse(route.operation.source);
    const errors = validate(schema, document);
    if (errors.length) throw new Error(`REST route ${where} has an invalid GraphQL document: ${errors.map((e) => e.message).join('; ')}`);
    const definition = getOperationAST(document);
    reserveOperationName(definition?.name?.value);
    return { route, document, operation: { type: definition?.operation ?? 'unknown', name: definition?.name?.value } };
  });
}

/**
 * Mounts the route table: each request is authenticated (by the shared context), mapped to
 * variables, executed against the same schema, and shaped into the REST envelope. Errors
 * go through the same error table as GraphQL's.
 */
export function restRouter(prepared: readonly PreparedRoute[], schema: GraphQLSchema, logger: Logger, outages?: ThrottledWarning): Router {
  const router = Router();
  for (const { route, document, operation } of prepared) {
    router[route.method](route.path, async (req: Request, res: Response) => {
      const context = res.locals.context as Context;
      const deprecation = route.successor ? deprecationHeaders(route.successor, context) : {};
      res.set(deprecation);
      const fail = (error: unknown) => {
        const classified = classifyError(error);
        if (classified.kind === 'internal') {
          logger.error({ err: error, requestId: context.requestId, route: `${route.method.toUpperCase()} ${route.path}` }, 'unhandled error in REST route');
          return sendError(res, 'internal', 'Internal Server Error', [`Quote request id ${context.requestId} when reporting this error.`]);
        }
        if (classified.kind === 'unavailable') {
          outages?.warn({ err: error, requestId: context.requestId, route: `${route.method.toUpperCase()} ${route.path}` }, 'database unavailable: answering 503');
        }
        sendError(res, classified.kind, classified.message, classified.details);
      };
      try {
        const principal = requirePrincipal(context);
        const raw = { params: req.params as Record<string, string>, query: req.query as RestRequest['query'], body: req.body };
        const unstorable = unstorableStrings(raw);
        if (unstorable.length) throw new InvalidInputError(unstorable);
        const request: RestRequest = { ...raw, principal };
        validateDescribedInput(route.description, request);
        const variableValues = route.variables(request);
        // The same bounds as on /graphql, on the variables the row made, before any SQL runs.
        assertOperationInputsAcceptable(schema, document, undefined, variableValues);
        const result = await observeRestOperation(operation.type, operation.name, () => execute({ schema, document, contextValue: context, variableValues }));
        if (result.errors?.length) {
          // A domain error says the most; otherwise the first error stands for the request.
          const chosen = result.errors.find((error) => error.originalError instanceof DomainError) ?? result.errors[0];
          return fail(chosen);
        }
        const response = route.respond(result.data, request);
        sendJson(res, response.status, response.body, response.headers);
      } catch (error) {
        fail(error);
      }
    });
  }
  return router;
}

function deprecationHeaders(successor: string, context: Context): Record<string, string> {
  const [, path = '/'] = successor.split(' ');
  return {
    Deprecation: 'true',
    Link: `<${context.runtime.urls.api}${path}>; rel="successor-version"; title="${successor}"`,
  };
}
