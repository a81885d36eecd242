import { GraphQLError, type ValidationContext, type ValidationRule } from 'graphql';
import { maxDepthRule } from '@escape.tech/graphql-armor-max-depth';
import { costLimitRule } from '@escape.tech/graphql-armor-cost-limit';

export interface QueryLimits {
  maxDepth: number;
  maxCost: number;
}

/** Marks an error as a query-limit rejection, answered as BAD_USER_INPUT rather than a schema mismatch. */
export const QUERY_LIMIT_EXTENSION = 'queryLimit';

/** Reports the rejection as a validation error of the operation instead of throwing out of validation. */
function reportAs(limit: 'depth' | 'cost') {
  return {
    propagateOnRejection: false,
    onReject: [
      (context: ValidationContext | null, error: GraphQLError) =>
        context?.reportError(new GraphQLError(error.message.replace(/^Syntax Error: /, ''), { extensions: { [QUERY_LIMIT_EXTENSION]: limit } })),
    ],
  };
}

/** Depth and cost limits for client operations (introspection is exempt, so Apollo Sandbox works). */
export function queryLimitRules(limits: QueryLimits): ValidationRule[] {
  return [
    maxDepthRule({ n: limits.maxDepth, exposeLimits: true, ignoreIntrospection: true, ...reportAs('depth') }) as unknown as ValidationRule,
    costLimitRule({ maxCost: limits.maxCost, exposeLimits: true, ignoreIntrospection: true, ...reportAs('cost') }) as unknown as ValidationRule,
  ];
}
