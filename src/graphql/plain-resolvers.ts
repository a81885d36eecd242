import { Extensions } from 'type-graphql';
import { isObjectType, type GraphQLSchema } from 'graphql';

const PLAIN_RESOLVER = 'plainResolver';

/**
 * Computes a field of an object type with a plain function of its source and the request context,
 * installed on the built schema as the field's own GraphQL resolver. type-graphql's field
 * resolvers run a per-call pipeline (resolver data, container lookup, parameter mapping), which
 * a list page pays for every row and field: measured, the three URL fields of a 25-user page cost
 * about a sixth of executing the page. For derived values that need neither arguments nor
 * middleware (a row of the access table still guards the field). Works for any source that has the fields the function reads.
 */
export function PlainResolver<TSource, TContext>(resolve: (source: TSource, context: TContext) => unknown): MethodDecorator & PropertyDecorator {
  return Extensions({ [PLAIN_RESOLVER]: resolve });
}

/** Installs the `PlainResolver`s of every object type as their fields' resolvers. */
export function installPlainResolvers(schema: GraphQLSchema): void {
  for (const type of Object.values(schema.getTypeMap())) {
    if (!isObjectType(type)) continue;
    for (const field of Object.values(type.getFields())) {
      const resolve = field.extensions?.[PLAIN_RESOLVER] as ((source: unknown, context: unknown) => unknown) | undefined;
      if (resolve) field.resolve = (source, _args, context) => resolve(source, context);
    }
  }
}
