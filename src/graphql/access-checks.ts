import { defaultFieldResolver, isObjectType, type GraphQLFieldResolver, type GraphQLSchema } from 'graphql';

/** Checks one operation's row against the request's context; throws the refusal. */
export type AccessCheck<TRow> = (row: TRow, context: unknown) => void;

const ROOT_TYPES = ['Query', 'Mutation', 'Subscription'] as const;

/**
 * Installs the access table on the built schema: every field the table names runs its row's check
 * before its resolver (a subscription's, before its stream opens), on every face that executes the
 * schema (POST /graphql, the REST and SCIM rows, the WebSocket). Refuses to start when a root field
 * has no row, or a row names no field: an operation nobody declared is never served.
 */
export function installAccessChecks<TRow>(schema: GraphQLSchema, table: Readonly<Record<string, TRow>>, check: AccessCheck<TRow>): void {
  const problems: string[] = [];
  for (const rootName of ROOT_TYPES) {
    const root = schema.getType(rootName);
    if (!isObjectType(root)) continue;
    for (const fieldName of Object.keys(root.getFields())) if (!(`${rootName}.${fieldName}` in table)) problems.push(`${rootName}.${fieldName} has no row in the access table`);
  }
  for (const [coordinate, row] of Object.entries(table)) {
    const [typeName, fieldName] = coordinate.split('.') as [string, string];
    const type = schema.getType(typeName);
    const field = isObjectType(type) ? type.getFields()[fieldName] : undefined;
    if (!field) {
      problems.push(`the access table names ${coordinate}, which the schema does not have`);
      continue;
    }
    if (typeName === 'Subscription') {
      const subscribe = field.subscribe;
      if (!subscribe) {
        problems.push(`${coordinate} has no subscribe step to check`);
        continue;
      }
      field.subscribe = (source, args, context, info) => {
        check(row, context);
        return subscribe(source, args, context, info);
      };
      continue;
    }
    const resolve: GraphQLFieldResolver<unknown, unknown> = field.resolve ?? defaultFieldResolver;
    field.resolve = (source, args, context, info) => {
      check(row, context);
      return resolve(source, args, context, info);
    };
  }
  if (problems.length) throw new Error(`The access table does not match the schema: ${problems.join('; ')}`);
}
