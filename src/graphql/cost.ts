import { createRequire } from 'node:module';
import { GraphQLError, Kind, type DocumentNode, type FragmentDefinitionNode, type GraphQLSchema, type SelectionSetNode } from 'graphql';
import type { ComplexityEstimator, getComplexity as GetComplexity } from 'graphql-query-complexity';
import { QUERY_LIMIT_EXTENSION } from './limits.js';

// Its CommonJS build: the ES module build imports `graphql/index.mjs`, a second copy of graphql
// beside the `graphql` (CommonJS) this app's schema comes from, which refuses the schema's types.
const { getComplexity } = createRequire(import.meta.url)('graphql-query-complexity') as { getComplexity: typeof GetComplexity };

/**
 * The default bound of an operation's cost. A settings area's pages pass with room to spare
 * (50 users, each with 50 delegations and 50 subscriptions, about 51,000; the audit log at 100
 * records a page, about 3,000; the benchmark's nested page of 25 users with their counts, about
 * 2,900); a page that can return 10 times as many values does not.
 */
export const DEFAULT_MAX_COST = 100_000;

/**
 * What a `totalCount` weighs: it reads every row of the list it counts, not a page of it, so it is
 * charged as this many rows whatever `first` says (a list of an account's users, its audit window).
 */
export const COUNTED_ROWS = 100;
/**
 * A search (a connection given a `query` text or a `filter`) examines candidates it does not return
 * (trigram index matches rechecked, a time window filtered): its rows read, and a count under it,
 * weigh this many times more.
 */
export const SEARCH_FACTOR = 10;
/** Connection arguments that make it a search when given. */
const SEARCH_ARGUMENTS = ['query', 'filter'] as const;

type Fragments = ReadonlyMap<string, FragmentDefinitionNode>;

/** How many `totalCount`s (by response key, through fragments) a connection's selection asks for. */
function countsSelected(selectionSet: SelectionSetNode | undefined, fragments: Fragments, keys = new Set<string>(), seen = new Set<string>()): number {
  for (const selection of selectionSet?.selections ?? []) {
    if (selection.kind === Kind.FIELD) {
      if (selection.name.value === 'totalCount') keys.add(selection.alias?.value ?? 'totalCount');
    } else if (selection.kind === Kind.INLINE_FRAGMENT) {
      countsSelected(selection.selectionSet, fragments, keys, seen);
    } else if (!seen.has(selection.name.value)) {
      seen.add(selection.name.value);
      countsSelected(fragments.get(selection.name.value)?.selectionSet, fragments, keys, seen);
    }
  }
  return keys.size;
}

const positive = (value: unknown): number => (typeof value === 'number' && Number.isFinite(value) && value > 0 ? value : 0);
const isSearch = (args: Record<string, unknown>) => SEARCH_ARGUMENTS.some((name) => (name === 'query' ? typeof args.query === 'string' && args.query.length > 0 : args[name] != null));

/**
 * The cost of a field is the rows it may touch and the values it may put in the response:
 * - any field: 1, plus what it selects;
 * - a connection (a field taking `first`): 1, plus the rows it reads (`first`, plus an `offset`'s
 *   skipped rows), plus `first` times what it selects (each element), plus `COUNTED_ROWS` for each
 *   `totalCount` it selects; a search multiplies its rows read and its counts by `SEARCH_FACTOR`;
 * - `totalCount` itself: nothing more (its connection weighs it);
 * - introspection: nothing (explorers and codegen need it).
 * `first` counts the same whether it is a literal, a variable, a variable's default or the
 * argument's default (the library coerces all of them like execution does).
 */
function rowsTouched(fragments: Fragments): ComplexityEstimator {
  return ({ field, args, childComplexity, node }) => {
    if (field.name.startsWith('__') || field.name === 'totalCount') return 0;
    if (!('first' in args)) return 1 + childComplexity;
    const page = Math.max(1, positive(args.first));
    const factor = isSearch(args) ? SEARCH_FACTOR : 1;
    const rowsRead = (page + positive(args.offset)) * factor;
    return 1 + rowsRead + page * childComplexity + countsSelected(node.selectionSet, fragments) * COUNTED_ROWS * factor;
  };
}

/** Costs by document and variables: the same page asked again (as clients do) is not walked again. */
const knownCosts = new WeakMap<DocumentNode, Map<string, number>>();
const MAX_COSTS_PER_DOCUMENT = 64;

/** What an operation can cost with these variables (see `rowsTouched`). */
export function operationCost(schema: GraphQLSchema, document: DocumentNode, operationName: string | null | undefined, variables: Record<string, unknown> | null | undefined): number {
  let byVariables = knownCosts.get(document);
  if (!byVariables) knownCosts.set(document, (byVariables = new Map()));
  const key = `${operationName ?? ''}\u0000${variables ? JSON.stringify(variables) : ''}`;
  const known = byVariables.get(key);
  if (known !== undefined) return known;
  const fragments = new Map(document.definitions.filter((definition) => definition.kind === Kind.FRAGMENT_DEFINITION).map((fragment) => [fragment.name.value, fragment]));
  const cost = getComplexity({ schema, query: document, variables: variables ?? {}, operationName: operationName ?? undefined, estimators: [rowsTouched(fragments)] });
  if (byVariables.size >= MAX_COSTS_PER_DOCUMENT) byVariables.clear();
  byVariables.set(key, cost);
  return cost;
}

/**
 * Operation cost per point of the rate budget, as GitHub's GraphQL API charges points by the nodes a
 * query may touch: an operation draws `ratePointsOf(cost)` points. `{ viewer { id } }` draws 1,
 * the benchmark's nested page of 25 users 3, a settings page of 50 users with 50 delegations and 50
 * subscriptions each 51, the largest operation the default cost limit lets through 100.
 */
export const COST_PER_RATE_POINT = 1_000;

/** The rate points an operation of this cost draws: at least 1, as every request. */
export function ratePointsOf(cost: number): number {
  return Math.max(1, Math.ceil(cost / COST_PER_RATE_POINT));
}

/** Refuses (BAD_USER_INPUT, `queryLimit: "cost"`) an operation whose cost with these variables is over `maxCost`; returns its cost. */
export function assertOperationCostWithin(maxCost: number, schema: GraphQLSchema, document: DocumentNode, operationName: string | null | undefined, variables: Record<string, unknown> | null | undefined): number {
  const cost = operationCost(schema, document, operationName, variables);
  if (cost <= maxCost) return cost;
  throw new GraphQLError(`The operation may cost ${cost}, more than the limit of ${maxCost}: each field costs 1, times the \`first\` of the connections around it; a connection adds the rows it reads, a \`totalCount\` ${COUNTED_ROWS} rows, a search ${SEARCH_FACTOR} times as many. Ask for smaller pages, fewer counts or narrower searches.`, {
    extensions: { [QUERY_LIMIT_EXTENSION]: 'cost', http: { status: 400 } },
  });
}
