import { ApolloServer, HeaderMap, type ApolloServerPlugin } from '@apollo/server';
import { ApolloServerPluginCacheControlDisabled, ApolloServerPluginLandingPageDisabled } from '@apollo/server/plugin/disabled';
import { InMemoryLRUCache } from '@apollo/utils.keyvaluecache';
import { GraphQLError, type DocumentNode, type GraphQLSchema } from 'graphql';
import { reportFailure, type FailureLog } from '../../http/answer-error.js';
import type { Context } from '../../graphql/context.js';
import { classifyError, formatGraphQLError } from '../../graphql/errors.js';
import { InvalidInputError, RateLimitedError } from '../../errors/domain-errors.js';
import { acceptableOperationInputs, inputProblemsAsGraphQLError } from '../../graphql/input-bounds.js';
import { GRAPHQL_MAX_TOKENS, queryLimitRules, type QueryLimits } from '../../graphql/limits.js';
import { assertOperationCostWithin, ratePointsOf } from '../../graphql/cost.js';
import { budgetHeaders } from '../../http/rate-budget.js';
import { markDocumentError } from './error-response.js';
import { localSchemaGateway, rememberAcceptedVariables } from './compiled-queries.js';

/**
 * Draws the rest of the operation's cost from the request's rate budget (one point was drawn at the
 * door), before anything runs, and says where the budget stands in the `ratelimit-*` headers. An
 * operation costing more than remains is refused: 429 with `Retry-After`, and its points are not spent.
 */
async function chargeOperation(context: Context, cost: number, headers: HeaderMap): Promise<void> {
  const budget = context.rateBudget;
  if (!budget) return;
  const points = ratePointsOf(cost);
  const decision = await budget.chargeUpTo(points);
  const reported = Object.entries(budgetHeaders(decision));
  for (const [name, value] of reported) headers.set(name, value);
  if (decision.allowed) return;
  const refusal = new RateLimitedError(decision.resetSeconds, `This operation costs ${points} points of the rate budget and ${decision.remaining} remain; retry in ${decision.resetSeconds} seconds or ask for less.`);
  throw new GraphQLError(refusal.details[0]!, {
    originalError: refusal,
    extensions: { http: { status: 429, headers: new HeaderMap([...reported, ['retry-after', String(decision.resetSeconds)]]) } },
  });
}

/**
 * Refuses unstorable or over-long strings in arguments and variables after validation, before
 * any resolver (and so any SQL) runs; the REST executor makes the same check. Then refuses an
 * operation that costs too much with these variables, and charges its cost to the rate budget (the
 * REST and SCIM faces run their own bounded documents through their executor, not through Apollo).
 */
function inputBoundsAndCost(maxCost: number): ApolloServerPlugin<Context> {
  return {
    async requestDidStart() {
      return {
        async didResolveOperation({ schema, document, operation, operationName, request, contextValue, response }) {
          try {
            if (operation) rememberAcceptedVariables(contextValue, acceptableOperationInputs(schema, document, operation, request.variables, { production: contextValue.runtime.production }));
          } catch (error) {
            if (error instanceof InvalidInputError) throw inputProblemsAsGraphQLError(error);
            throw error;
          }
          const cost = assertOperationCostWithin(maxCost, schema, document, operationName, request.variables);
          await chargeOperation(contextValue, cost, response.http.headers);
        },
      };
    },
  };
}

/** Subscriptions run over WebSocket (src/live-updates); over HTTP they are the client's mistake, answered 400. */
function subscriptionsOverWebSocketOnly(): ApolloServerPlugin<Context> {
  return {
    async requestDidStart() {
      return {
        async didResolveOperation({ operation }) {
          if (operation?.operation !== 'subscription') return;
          throw inputProblemsAsGraphQLError(new InvalidInputError('Subscriptions are served over WebSocket on /graphql (the graphql-ws protocol), not over HTTP.'));
        },
      };
    },
  };
}

/**
 * Runs the request's work left for its answer (`Context.beforeAnswer`) once execution is over and
 * before any response hook, when the answer carries data: with none, nothing was shown. If that work
 * fails, the answer is replaced by the error (logged as any other), so nothing it guarded is sent.
 */
function workBeforeAnswer(log: FailureLog): ApolloServerPlugin<Context> {
  return {
    async requestDidStart() {
      return {
        async executionDidStart({ response, contextValue }) {
          return {
            async executionDidEnd(executionError) {
              const { body } = response;
              if (executionError || !contextValue.beforeAnswer || body?.kind !== 'single' || body.singleResult.data == null) return;
              try {
                await contextValue.beforeAnswer.run();
              } catch (failure) {
                const error = new GraphQLError('The answer could not be given', { originalError: failure instanceof Error ? failure : new Error(String(failure)) });
                reportFailure(log, error, { requestId: contextValue.requestId }, failure);
                response.body = { kind: 'single', singleResult: { errors: [formatGraphQLError(error.toJSON(), error)] } };
                response.http.status = classifyError(error).kind === 'unavailable' ? 503 : 500;
              }
            },
          };
        },
      };
    },
  };
}

/**
 * Reports what the answer will carry (a masked defect with the request id the masked error carries
 * to the client; an outage, throttled). A dependency outage is an answer, not a defect:
 * `Retry-After`, and HTTP 503 when nothing else came back (a partial result keeps GraphQL's 200).
 */
function failuresReported(log: FailureLog): ApolloServerPlugin<Context> {
  return {
    async requestDidStart() {
      return {
        async didEncounterErrors({ errors, contextValue }) {
          for (const error of errors) reportFailure(log, error, { requestId: contextValue.requestId }, error.originalError ?? error);
        },
        async willSendResponse({ response, contextValue }) {
          if (response.body.kind !== 'single') return;
          const { errors, data } = response.body.singleResult;
          for (const error of errors ?? []) {
            if (error.extensions?.code === 'INTERNAL_SERVER_ERROR') (error.extensions as Record<string, unknown>).requestId = contextValue.requestId;
          }
          const stepUp = errors?.find((error) => error.extensions?.code === 'INSUFFICIENT_USER_AUTHENTICATION');
          if (stepUp) {
            // RFC 9470: the challenge says how recent a sign-in the operation needs; the app signs in again with that max_age.
            response.http.status = 401;
            response.http.headers.set('www-authenticate', `Bearer error="insufficient_user_authentication", error_description="A more recent sign-in is required", max_age=${Number(stepUp.extensions?.maxAge)}`);
          }
          if (!errors?.some((error) => error.extensions?.code === 'SERVICE_UNAVAILABLE')) return;
          response.http.headers.set('retry-after', '1');
          if (!data || Object.values(data).every((value) => value === null)) response.http.status = 503;
        },
      };
    },
  };
}

/**
 * Every GraphQL response over HTTP says `Cache-Control: no-store`, as Apollo's default cache-control
 * plugin answers for a schema without cache hints (this one declares none). That plugin is off:
 * to compute the hints it hooks every field of every operation, which makes Apollo wrap every
 * resolver of the schema in a per-field dispatcher (measured: a large share of executing a
 * 25-user page with nested counts).
 */
function uncacheableResponses(): ApolloServerPlugin<Context> {
  return {
    async requestDidStart() {
      return {
        async willSendResponse({ response }) {
          if (!response.http.headers.has('cache-control')) response.http.headers.set('cache-control', 'no-store');
        },
      };
    },
  };
}

/**
 * Marks the answers to documents the server could not run (a 400 without `data` from the
 * pipeline), which the HTTP handler answers 200 under `application/json` (GraphQL over HTTP).
 */
function documentErrorsMarked(): ApolloServerPlugin<Context> {
  return {
    async requestDidStart() {
      return {
        async willSendResponse({ request, response }) {
          if (response.http.status !== 400 || response.body.kind !== 'single' || 'data' in response.body.singleResult) return;
          if (request.http) markDocumentError(request.http);
        },
      };
    },
  };
}

export interface ApolloOptions {
  schema: GraphQLSchema;
  log: FailureLog;
  introspection: boolean;
  limits: QueryLimits;
  plugins?: ApolloServerPlugin<Context>[];
}

/**
 * Parsed and validated documents are kept by hash of their text, up to this many bytes of their
 * JSON. Apollo's default, 30 MiB, is about four times that in heap (the tokens and locations stay
 * with each document: measured 11 KB of heap per 2.7 KB document), so clients that write literals
 * instead of variables could make it hold some 120 MB. Real clients send few distinct documents;
 * 2 MiB keeps several hundred.
 */
export const DOCUMENT_STORE_MAX_BYTES = 2 * 1024 * 1024;

/** Apollo Server over the schema, started (its plugins' start hooks run): mounted by the GraphQL face. */
export async function startApolloServer(options: ApolloOptions): Promise<ApolloServer<Context>> {
  const server = new ApolloServer<Context>({
    // The schema comes through Apollo's gateway interface, the one way it takes its own executor: repeated queries run compiled.
    gateway: localSchemaGateway(options.schema),
    documentStore: new InMemoryLRUCache<DocumentNode>({ maxSize: DOCUMENT_STORE_MAX_BYTES }),
    introspection: options.introspection,
    csrfPrevention: true,
    // main.ts owns SIGTERM/SIGINT (src/http/shutdown.ts): it drains HTTP, stops Apollo, then closes the database.
    stopOnTerminationSignals: false,
    includeStacktraceInErrorResponses: false,
    parseOptions: { maxTokens: GRAPHQL_MAX_TOKENS },
    // Without introspection, "Did you mean ...?" would leak the schema field by field.
    hideSchemaDetailsFromClientErrors: !options.introspection,
    validationRules: queryLimitRules(options.limits),
    formatError: formatGraphQLError,
    plugins: [
      ApolloServerPluginCacheControlDisabled(),
      uncacheableResponses(),
      documentErrorsMarked(),
      // The explorer is served by the GraphQL face itself, from this server's own files (explorer.ts).
      ApolloServerPluginLandingPageDisabled(),
      workBeforeAnswer(options.log),
      failuresReported(options.log),
      inputBoundsAndCost(options.limits.maxCost),
      subscriptionsOverWebSocketOnly(),
      ...(options.plugins ?? []),
    ],
  });
  await server.start();
  return server;
}
