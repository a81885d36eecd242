import { getNamedType, isInputObjectType, isSpecifiedScalarType, typeFromAST, type GraphQLNamedType, type GraphQLSchema, type OperationDefinitionNode } from 'graphql';

/**
 * Whether every variable of the operation is a built-in scalar, or an input object made of nothing
 * else (such as the SCIM look-ups' UserMatchInput). Only such an operation may run graphql-jit
 * compiled with variables graphql-js has already coerced: coercing a built-in scalar's coerced value
 * again leaves it as it is, where a custom scalar's or an enum's would not coerce again (an enum's
 * internal value is not its name).
 */
export function variablesOfBuiltInScalars(schema: GraphQLSchema, operation: OperationDefinitionNode): boolean {
  return (operation.variableDefinitions ?? []).every((variable) => {
    const type = typeFromAST(schema, variable.type);
    return type !== undefined && ofBuiltInScalars(getNamedType(type));
  });
}

function ofBuiltInScalars(type: GraphQLNamedType, seen = new Set<string>()): boolean {
  if (isSpecifiedScalarType(type)) return true;
  if (!isInputObjectType(type) || seen.has(type.name)) return false;
  seen.add(type.name);
  return Object.values(type.getFields()).every((field) => ofBuiltInScalars(getNamedType(field.type), seen));
}
