import { createRequire } from 'node:module';
import { GraphQLError, type DocumentNode, type GraphQLSchema } from 'graphql';
import type { ComplexityEstimator, getComplexity as GetComplexity } from 'graphql-query-complexity';
import { QUERY_LIMIT_EXTENSION } from './limits.js';

// Its CommonJS build: the ES module build imports `graphql/index.mjs`, a second copy of graphql
// beside the `graphql` (CommonJS) this app's schema comes from, which refuses the schema's types.
const { getComplexity } = createRequire(import.meta.url)('graphql-query-complexity') as { getComplexity: typeof GetComplexity };

/**
 * The default bound of an operation's cost. A settings area's pages pass with room to spare
 * (50 users, each with 50 delegations and 50 subscriptions, about 40,000; the audit log at 100
 * records a page, about 4,000); a page that can return 10 times as many values does not.
 */
export const DEFAULT_MAX_COST = 100_000;

/**
 * The cost of a field is the number of values it can put in the response: 1 for itself, plus its
 * selections' cost once per element it can return. A field taking `first` (a connection) can
 * return `first` elements, whether `first` is a literal, a variable, a variable's default or the
 * argument's default (the library coerces all of them like execution does); other fields return
 * one. Introspection costs nothing (explorers and codegen need it).
 */
const valuesInResponse: ComplexityEstimator = ({ field, args, childComplexity }) => {
  if (field.name.startsWith('__')) return 0;
  const first = typeof args.first === 'number' && Number.isFinite(args.first) && args.first > 1 ? args.first : 1;
  return 1 + first * childComplexity;
};

/** Costs by document and variables: the same page asked again (as clients do) is not walked again. */
const knownCosts = new WeakMap<DocumentNode, Map<string, number>>();
const MAX_COSTS_PER_DOCUMENT = 64;

/** What an operation can cost with these variables (see `valuesInResponse`). */
export function operationCost(schema: GraphQLSchema, document: DocumentNode, operationName: string | null | undefined, variables: Record<string, unknown> | null | undefined): number {
  let byVariables = knownCosts.get(document);
  if (!byVariables) knownCosts.set(document, (byVariables = new Map()));
  const key = `${operationName ?? ''}\u0000${variables ? JSON.stringify(variables) : ''}`;
  const known = byVariables.get(key);
  if (known !== undefined) return known;
  const cost = getComplexity({ schema, query: document, variables: variables ?? {}, operationName: operationName ?? undefined, estimators: [valuesInResponse] });
  if (byVariables.size >= MAX_COSTS_PER_DOCUMENT) byVariables.clear();
  byVariables.set(key, cost);
  return cost;
}

/** Refuses (BAD_USER_INPUT, `queryLimit: "cost"`) an operation whose cost with these variables is over `maxCost`. */
export function assertOperationCostWithin(maxCost: number, schema: GraphQLSchema, document: DocumentNode, operationName: string | null | undefined, variables: Record<string, unknown> | null | undefined): void {
  const cost = operationCost(schema, document, operationName, variables);
  if (cost <= maxCost) return;
  throw new GraphQLError(`The operation may cost ${cost}, more than the limit of ${maxCost}: each field costs 1, times the \`first\` of the connections around it. Ask for smaller pages.`, {
    extensions: { [QUERY_LIMIT_EXTENSION]: 'cost', http: { status: 400 } },
  });
}
