import type { ApolloServerOptionsWithGateway } from '@apollo/server';
import { execute, GraphQLError, type DocumentNode, type ExecutionResult, type GraphQLSchema, type OperationDefinitionNode } from 'graphql';
import { getVariableValues } from 'graphql/execution/values.js';
import { compileQuery, isCompiledQuery, type CompiledQuery } from 'graphql-jit';
import { variablesOfBuiltInScalars } from '../../graphql/compilable.js';

type Gateway = ApolloServerOptionsWithGateway<Record<string, unknown>>['gateway'];
export type QueryExecutor = NonNullable<Awaited<ReturnType<Gateway['load']>>['executor']>;

/** What the executor knows of one operation of one cached document. */
interface OperationPlan {
  /** Times it ran interpreted since it was last left out of the budget (or ever). */
  runs: number;
  /** The compiled query, or null when the operation never runs compiled (not a query, a variable of another type, too long, or graphql-jit refused it). */
  compiled?: CompiledQuery | null;
  /** Characters of the document's text, what its compiled function is charged against the budget. */
  length: number;
}

/**
 * A query runs interpreted this many times before it is compiled: a document sent once (an
 * explorer's one-off, a client's rare operation) never costs a compilation.
 */
export const RUNS_BEFORE_COMPILING = 1;

/**
 * The compiled functions kept at once, counted in characters of their documents' text. Measured
 * (`bench/compile-cost.ts`), a compiled query keeps 65-220 bytes of heap per character of its
 * document (the benchmarks' nested page, 119 characters, 25 KB; 40 aliased nested pages in 7,633
 * characters, 1.6 MB), far more than Apollo's cache of parsed documents: the budget keeps the worst
 * case near 14 MB. Real clients' few documents fit many times over; past the budget the least
 * recently run one goes back to graphql-js.
 */
export const COMPILED_TEXT_BUDGET = 64 * 1024;
/** A longer document always runs in graphql-js: one alone would take a large share of the budget. */
export const LONGEST_COMPILED_TEXT = COMPILED_TEXT_BUDGET / 8;

/** Each request's variables as the input bounds coerced them before execution, by the request's context. */
const acceptedVariables = new WeakMap<object, Record<string, unknown>>();

/**
 * Hands the executor the variables the input bounds coerced (graphql-js's `getVariableValues`,
 * after validation): a compiled query runs with them instead of coercing them a second time.
 */
export function rememberAcceptedVariables(context: object, variables: Record<string, unknown>): void {
  acceptedVariables.set(context, variables);
}

export interface QueryExecutorOptions {
  /** Told each time an operation is compiled (tests watch it). */
  onCompiled?: (operation: OperationDefinitionNode) => void;
}

/**
 * Executes `/graphql`'s operations, through Apollo's executor hook. A query a client sends again
 * runs as a graphql-jit compiled function, as the REST rows' documents do: graphql-js's per-field
 * interpretation (a promise gathered per object, a resolve info per field) was the largest share of
 * executing a nested page. Apollo's document store hands the same parsed document back for the same
 * text, so a compiled function lives as long as its document stays cached, and no longer.
 *
 * What the client sees does not change. Mutations, operations with a variable of a custom scalar or
 * an enum (`variablesOfBuiltInScalars`), and variables graphql-js refuses all run in graphql-js,
 * which answers its own messages; a compiled query is handed the variables graphql-js coerced (on
 * `/graphql` the input bounds' coercion, `rememberAcceptedVariables`; coerced here otherwise).
 */
export function compiledQueriesExecutor(options: QueryExecutorOptions = {}): QueryExecutor {
  const plans = new WeakMap<DocumentNode, Map<string, OperationPlan>>();
  const kept = new CompiledBudget();
  return async ({ schema, document, source, operation, request, context }) => {
    const variables = request.variables ?? {};
    const plan = planOf(plans, document, operation, source.length);
    if (plan.compiled === undefined && plan.runs >= RUNS_BEFORE_COMPILING) {
      plan.compiled = plan.length > LONGEST_COMPILED_TEXT ? null : compiledOrNull(schema, document, operation);
      if (plan.compiled) {
        kept.add(plan);
        options.onCompiled?.(operation);
      }
    }
    if (plan.compiled) {
      const coerced = acceptedVariables.get(context) ?? getVariableValues(schema, operation.variableDefinitions ?? [], variables).coerced;
      if (coerced) {
        kept.touch(plan);
        return withGraphQLJsErrors((await plan.compiled.query(undefined, context, coerced)) as ExecutionResult);
      }
    }
    plan.runs += 1;
    return execute({ schema, document, contextValue: context, variableValues: variables, operationName: operation.name?.value });
  };
}

/** The compiled plans, least recently run first, within `COMPILED_TEXT_BUDGET`. */
class CompiledBudget {
  private readonly plans = new Set<OperationPlan>();
  private characters = 0;

  add(plan: OperationPlan): void {
    this.plans.add(plan);
    this.characters += plan.length;
    for (const oldest of this.plans) {
      if (this.characters <= COMPILED_TEXT_BUDGET) break;
      this.plans.delete(oldest);
      this.characters -= oldest.length;
      // Back to graphql-js; if it keeps coming, it is compiled again.
      oldest.compiled = undefined;
      oldest.runs = 0;
    }
  }

  touch(plan: OperationPlan): void {
    if (!this.plans.delete(plan)) return;
    this.plans.add(plan);
  }
}

function planOf(plans: WeakMap<DocumentNode, Map<string, OperationPlan>>, document: DocumentNode, operation: OperationDefinitionNode, length: number): OperationPlan {
  let byName = plans.get(document);
  if (!byName) plans.set(document, (byName = new Map()));
  const name = operation.name?.value ?? '';
  let plan = byName.get(name);
  if (!plan) byName.set(name, (plan = { runs: 0, length }));
  return plan;
}

function compiledOrNull(schema: GraphQLSchema, document: DocumentNode, operation: OperationDefinitionNode): CompiledQuery | null {
  if (operation.operation !== 'query' || !variablesOfBuiltInScalars(schema, operation)) return null;
  const compiled = compileQuery(schema, document, operation.name?.value);
  return isCompiledQuery(compiled) ? compiled : null;
}

/**
 * graphql-jit's errors, remade as graphql-js's: its own error object leaves `extensions` undefined
 * when the thrown error has none, where Apollo's formatting reads graphql-js's (always an object).
 * Message, locations, path, extensions and the thrown error carry over unchanged.
 */
function withGraphQLJsErrors(result: ExecutionResult): ExecutionResult {
  if (!result.errors?.length) return result;
  const errors = result.errors.map((error) => {
    const remade = new GraphQLError(error.message, { path: error.path, originalError: error.originalError ?? undefined, extensions: error.extensions ?? undefined });
    // graphql-js computes locations from the AST nodes, which graphql-jit's error does not keep: its own are the same.
    if (error.locations) (remade as { locations?: unknown }).locations = error.locations;
    return remade;
  });
  return { ...result, errors };
}

/**
 * The schema as Apollo's gateway interface hands it over (the one way Apollo Server takes an
 * executor of its own): loaded once, never updated, executed by `compiledQueriesExecutor`. Apollo
 * still parses, validates and caches every document and runs every plugin hook around execution.
 */
export function localSchemaGateway(schema: GraphQLSchema, options: QueryExecutorOptions = {}): Gateway {
  return {
    onSchemaLoadOrUpdate(callback) {
      callback({ apiSchema: schema, coreSupergraphSdl: '' });
      return () => {};
    },
    async load() {
      return { executor: compiledQueriesExecutor(options) };
    },
    async stop() {},
  };
}
