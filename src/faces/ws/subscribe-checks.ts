import { getOperationAST, GraphQLError, parse, specifiedRules, validate, type DocumentNode, type GraphQLSchema, type OperationDefinitionNode } from 'graphql';
import type { SubscribePayload } from 'graphql-ws';
import { InvalidInputError } from '../../errors/domain-errors.js';
import { assertOperationCostWithin } from '../../graphql/cost.js';
import { withoutSuggestions } from '../../graphql/errors.js';
import { assertOperationInputsAcceptable, inputProblemsAsGraphQLError } from '../../graphql/input-bounds.js';
import { GRAPHQL_MAX_TOKENS, documentShapeProblem, queryLimitRules, type QueryLimits } from '../../graphql/limits.js';
import { trustedBody, UNTRUSTED_DOCUMENT, type TrustedDocuments } from '../../http/trusted-documents.js';
import { asGraphQLErrors } from './subscription-runs.js';

export interface SubscribeCheckOptions {
  schema: GraphQLSchema;
  queryLimits: QueryLimits;
  /** `GRAPHQL_TRUSTED_DOCUMENTS`: subscriptions, like POST /graphql, run only the manifest's operations. */
  trustedDocuments?: TrustedDocuments;
  /** Introspection is off: validation errors name nothing of the schema ("Did you mean ...?"), as on HTTP. */
  hideSchemaDetails?: boolean;
}

/** A subscription that passed, with its cost (drawn from the rate budget), or why it was refused. */
export type SubscribeCheck = { document: DocumentNode; operation: OperationDefinitionNode; cost: number } | { refused: readonly GraphQLError[] };

/**
 * A subscribe message's document passes what a POST /graphql passes, in the same order: the
 * trusted-documents manifest, the document's shape, parsing with the token bound, validation with
 * the depth and cost rules, one named subscription, then input bounds and cost with its variables.
 */
export function subscribeChecks(options: SubscribeCheckOptions) {
  const { schema } = options;
  const validationRules = [...specifiedRules, ...queryLimitRules(options.queryLimits)];
  return (payload: SubscribePayload): SubscribeCheck => {
    if (options.trustedDocuments) {
      // Named by id or hash, the listed text is the document.
      const listed = trustedBody(options.trustedDocuments, payload.query || undefined, payload.extensions);
      if (listed === undefined) return { refused: asGraphQLErrors(new GraphQLError(UNTRUSTED_DOCUMENT, { extensions: { code: 'PERSISTED_QUERY_NOT_FOUND' } })) };
      // In place: the payload is what the subscription is grouped by and completed as (onComplete).
      (payload as { query: string }).query = listed;
    }
    const shape = documentShapeProblem(payload.query);
    if (shape) return { refused: asGraphQLErrors(new InvalidInputError(shape)) };
    let document: DocumentNode;
    try {
      document = parse(payload.query, { maxTokens: GRAPHQL_MAX_TOKENS });
    } catch (error) {
      return { refused: asGraphQLErrors(error as Error) };
    }
    const invalid = validate(schema, document, validationRules);
    if (invalid.length) return { refused: options.hideSchemaDetails ? withoutSuggestions(invalid) : invalid };
    const operation = getOperationAST(document, payload.operationName);
    if (!operation) return { refused: asGraphQLErrors(new InvalidInputError('Name the operation to run (operationName).')) };
    if (operation.operation !== 'subscription') {
      return { refused: asGraphQLErrors(new InvalidInputError('Only subscriptions are served over WebSocket; send queries and mutations with POST /graphql.')) };
    }
    try {
      assertOperationInputsAcceptable(schema, document, payload.operationName, payload.variables);
      return { document, operation, cost: assertOperationCostWithin(options.queryLimits.maxCost, schema, document, payload.operationName, payload.variables) };
    } catch (error) {
      if (error instanceof InvalidInputError) return { refused: [inputProblemsAsGraphQLError(error)] };
      if (error instanceof GraphQLError) return { refused: [error] };
      throw error;
    }
  };
}
