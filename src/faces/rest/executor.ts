import { Router, type Request, type Response } from 'express';
import { execute, getOperationAST, parse, validate, type DocumentNode, type ExecutionResult, type GraphQLSchema, type OperationDefinitionNode } from 'graphql';
import { compileQuery, isCompiledQuery } from 'graphql-jit';
import { createRequire } from 'node:module';
import { answerError, type FailureLog } from '../../http/answer-error.js';
import { requirePrincipal, type Context } from '../../graphql/context.js';
import { DomainError, InvalidInputError } from '../../errors/domain-errors.js';
import { acceptableOperationInputs, type CompiledCoercion } from '../../graphql/input-bounds.js';
import { variablesOfBuiltInScalars } from '../../graphql/compilable.js';
import { unstorableStrings } from '../../rest/params.js';
import { observeRestOperation } from '../../observability/graphql.js';
import { reserveOperationName } from '../../observability/metrics.js';
import { sendJson } from '../../rest/envelopes.js';
import type { OperationDocument, RestRequest, RestRoute } from '../../rest/route.js';
import { validateDescribedInput } from '../../rest/description.js';

/** Runs the document with the variables as the row made them (`raw`) and as the input bounds coerced them. */
type Run = (context: Context, raw: Record<string, unknown>, coerced: Record<string, unknown>) => Promise<ExecutionResult> | ExecutionResult;

/** What a face's route row must say for its document to be prepared: REST's rows, and the SCIM face's. */
export interface ExecutableRow {
  method: string;
  path: string;
  operation: OperationDocument;
}

export interface PreparedRoute<TRow extends ExecutableRow = RestRoute> {
  route: TRow;
  document: DocumentNode;
  /** The document's operation, picked out once at start. */
  definition: OperationDefinitionNode;
  operation: { type: string; name: string | undefined };
  /** The document's variables coerced by graphql-jit, before the input bounds fall back to graphql-js. */
  coerce: CompiledCoercion;
  run: Run;
}

/** Parses, validates and (queries) compiles every route's document once, at start: a broken row stops the server from starting. */
export function prepareRoutes<TRow extends ExecutableRow>(schema: GraphQLSchema, routes: readonly TRow[]): PreparedRoute<TRow>[] {
  return routes.map((route) => {
    const where = `${route.method.toUpperCase()} ${route.path} (${route.operation.files.join(', ')})`;
    const document = parse(route.operation.source);
    const errors = validate(schema, document);
    if (errors.length) throw new Error(`REST route ${where} has an invalid GraphQL document: ${errors.map((e) => e.message).join('; ')}`);
    const definition = getOperationAST(document);
    if (!definition) throw new Error(`REST route ${where} must hold exactly one operation`);
    reserveOperationName(definition.name?.value);
    const run = compilable(schema, definition) ? compiled(schema, document, definition, where) : interpreted(schema, document);
    return { route, document, definition, operation: { type: definition.operation, name: definition.name?.value }, coerce: compiledCoercion(schema, definition), run };
  });
}

// graphql-jit exports its variable coercion only from a module file, whose ES module build does not load (its imports lack file extensions).
const { compileVariableParsing, failToParseVariables } = createRequire(import.meta.url)('graphql-jit/dist/variables') as typeof import('graphql-jit/dist/variables');

/**
 * graphql-jit's coercion of the operation's variables: generated code, several times quicker than
 * graphql-js's walk over 100 bulk-update elements. Where it accepts the raw values it gives what
 * graphql-js would (the same checks, and each scalar's and enum's own parseValue); where it
 * refuses them, the input bounds coerce them again with graphql-js, whose messages are the ones
 * answered. (Rows never put an explicit `undefined` in their variables, as JSON cannot: graphql-jit
 * would make it a null where graphql-js leaves the field out.)
 */
function compiledCoercion(schema: GraphQLSchema, definition: OperationDefinitionNode): CompiledCoercion {
  const coerce = compileVariableParsing(schema, definition.variableDefinitions ?? []);
  return (raw) => {
    const result = coerce(raw);
    return failToParseVariables(result) ? undefined : result.coerced;
  };
}

function interpreted(schema: GraphQLSchema, document: DocumentNode): Run {
  // graphql-js coerces the variables itself, and a custom scalar's coerced value would not coerce again.
  return (contextValue, variableValues) => execute({ schema, document, contextValue, variableValues });
}

/**
 * Mutations, and queries whose variables are all built-in scalars (or input objects of them), run
 * compiled (graphql-jit): the route's fixed document becomes one function, without graphql-js's
 * per-field interpretation (measured: most of the execution cost of a 25-user page). Variables
 * are coerced first by the input bounds, before the run (`compiledCoercion`, graphql-js's where
 * that refuses them), so a bad value fails with graphql-js's own message. A query is handed those coerced values: graphql-jit's
 * re-coercion of a built-in scalar's coerced value leaves it as it is. A mutation is handed the
 * raw ones, which the compiled query coerces again with the same generated code (its run has no way
 * to take values already coerced): its inputs hold custom scalars and enums, whose coerced values
 * would not coerce again (an enum's internal value is not its name).
 */
function compilable(schema: GraphQLSchema, definition: OperationDefinitionNode): boolean {
  return definition.operation === 'mutation' || (definition.operation === 'query' && variablesOfBuiltInScalars(schema, definition));
}

function compiled(schema: GraphQLSchema, document: DocumentNode, definition: OperationDefinitionNode, where: string): Run {
  const query = compileQuery(schema, document, definition.name?.value);
  if (!isCompiledQuery(query)) throw new Error(`REST route ${where} could not be compiled: ${query.errors?.map((e) => e.message).join('; ')}`);
  if (definition.operation === 'mutation') return (context, raw) => query.query(undefined, context, raw) as Promise<ExecutionResult> | ExecutionResult;
  return (context, _raw, coerced) => query.query(undefined, context, coerced) as Promise<ExecutionResult> | ExecutionResult;
}

/**
 * Mounts the route table: each request is authenticated (by the shared context), mapped to
 * variables, executed against the same schema, and shaped into the REST envelope. Errors
 * go through the same error table as GraphQL's.
 */
export function restRouter(prepared: readonly PreparedRoute[], schema: GraphQLSchema, log: FailureLog): Router {
  const router = Router();
  for (const { route, document, definition, operation, coerce, run } of prepared) {
    const where = { route: `${route.method.toUpperCase()} ${route.path}` };
    router[route.method](route.path, async (req: Request, res: Response) => {
      const context = res.locals.context as Context;
      if (route.successor) res.set(deprecationHeaders(route.successor, context));
      try {
        const principal = requirePrincipal(context);
        const raw = { params: req.params as Record<string, string>, query: req.query as RestRequest['query'], body: req.body };
        const unstorable = unstorableStrings(raw);
        if (unstorable.length) throw new InvalidInputError(unstorable);
        const request: RestRequest = { ...raw, principal };
        validateDescribedInput(route.description, request);
        const data = await executePrepared(schema, { document, definition, operation, coerce, run }, context, route.variables(request));
        const response = route.respond(data, request);
        sendJson(res, response.status, response.body, response.headers);
      } catch (error) {
        answerError(res, error, log, where);
      }
    });
  }
  return router;
}

/**
 * Runs a prepared document with the variables a row made, after the same input bounds as on
 * /graphql (before any SQL runs), and answers its data once the work its resolvers left for the
 * answer has run (`Context.beforeAnswer`); an execution error is thrown, a domain error preferred,
 * for the face to translate.
 */
export async function executePrepared(
  schema: GraphQLSchema,
  prepared: Pick<PreparedRoute<ExecutableRow>, 'document' | 'definition' | 'operation' | 'coerce' | 'run'>,
  context: Context,
  variableValues: Record<string, unknown>,
): Promise<any> {
  const coerced = acceptableOperationInputs(schema, prepared.document, prepared.definition, variableValues, { production: context.runtime.production }, prepared.coerce);
  const result = await observeRestOperation(prepared.operation.type, prepared.operation.name, () => prepared.run(context, variableValues, coerced));
  if (result.errors?.length) {
    // A domain error says the most; otherwise the first error stands for the request.
    throw result.errors.find((error) => error.originalError instanceof DomainError) ?? result.errors[0];
  }
  // The data will be answered: the work its resolvers left for that moment is done first.
  await context.beforeAnswer?.run();
  return result.data;
}

function deprecationHeaders(successor: string, context: Context): Record<string, string> {
  const [, path = '/'] = successor.split(' ');
  return {
    Deprecation: 'true',
    Link: `<${context.runtime.urls.api}${path}>; rel="successor-version"; title="${successor}"`,
  };
}
