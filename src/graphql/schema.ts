import 'reflect-metadata';
import { buildSchema, type NonEmptyArray } from 'type-graphql';
import { lexicographicSortSchema, printSchema, type GraphQLObjectType, type GraphQLSchema } from 'graphql';
import { DateTimeResolver } from 'graphql-scalars';
import { ACCESS_TABLE } from '../auth/access-table.js';
import { assertAccess } from '../auth/auth-checker.js';
import { installAccessChecks } from './access-checks.js';
import { unboundedStringInputs } from './input-bounds.js';
import { installPlainResolvers } from './plain-resolvers.js';
import { contextOnlyPubSub } from './live-session.js';
import { RateLimitResolver } from './rate-limit.resolver.js';

/**
 * The schema every face executes against, from the resolvers given (every feature's), each operation
 * guarded by its row of the access table: refused when a string input has no declared length bound,
 * or an operation has no row.
 */
export function buildAppSchema(resolvers: readonly Function[]): Promise<GraphQLSchema> {
  return buildSchema({
    // The rate budget is plumbing, not a feature's: every schema answers `rateLimit`.
    resolvers: [RateLimitResolver, ...resolvers] as NonEmptyArray<Function>,
    validate: false,
    scalarsMap: [{ type: Date, scalar: DateTimeResolver }],
    pubSub: contextOnlyPubSub,
  }).then((schema) => {
    const unbounded = unboundedStringInputs(schema);
    if (unbounded.length) throw new Error(`String inputs without a declared length bound (@MaxLength): ${unbounded.join(', ')}`);
    installPlainResolvers(schema);
    installAccessChecks(schema, ACCESS_TABLE, assertAccess);
    describeRootTypes(schema);
    return schema;
  });
}

/** type-graphql names the root types without a description; every type of the schema has one. */
function describeRootTypes(schema: GraphQLSchema): void {
  const descriptions: [GraphQLObjectType | null | undefined, string][] = [
    [schema.getQueryType(), 'Reads: the caller\'s user, the account\'s users and what belongs to them.'],
    [schema.getMutationType(), 'Writes: each takes one `input` and returns a payload with what it changed.'],
    [schema.getSubscriptionType(), 'Live updates over WebSocket on /graphql (the graphql-ws protocol).'],
  ];
  for (const [type, description] of descriptions) if (type && !type.description) type.description = description;
}

/** The SDL kept in `schema/schema.graphql`, sorted so it diffs cleanly. */
export function printAppSchema(schema: GraphQLSchema): string {
  return `${printSchema(lexicographicSortSchema(schema))}\n`;
}
