import { GraphQLError, Lexer, Source, TokenKind, type ValidationContext, type ValidationRule } from 'graphql';
import { maxDepthRule } from '@escape.tech/graphql-armor-max-depth';

export interface QueryLimits {
  maxDepth: number;
  maxCost: number;
}

/** Marks an error as a query-limit rejection, answered as BAD_USER_INPUT rather than a schema mismatch. */
export const QUERY_LIMIT_EXTENSION = 'queryLimit';

/** Reports the rejection as a validation error of the operation instead of throwing out of validation. */
function reportAs(limit: 'depth') {
  return {
    propagateOnRejection: false,
    onReject: [
      (context: ValidationContext | null, error: GraphQLError) =>
        context?.reportError(new GraphQLError(error.message.replace(/^Syntax Error: /, ''), { extensions: { [QUERY_LIMIT_EXTENSION]: limit } })),
    ],
  };
}

/**
 * The depth limit for client operations (introspection is exempt, so explorers such as GraphiQL work). The
 * cost limit depends on the variables (`first`), so it is checked once they are known
 * (`assertOperationCostWithin`, src/graphql/cost.ts), not by a validation rule.
 */
export function queryLimitRules(limits: QueryLimits): ValidationRule[] {
  return [
    maxDepthRule({ n: limits.maxDepth, exposeLimits: true, ignoreIntrospection: true, ...reportAs('depth') }) as unknown as ValidationRule,
  ];
}

/**
 * Lexer tokens a document may hold. The product's own operations are a few hundred tokens; the
 * bound stops the work a huge document costs, and Apollo's parser enforces it too (`maxTokens`).
 */
export const GRAPHQL_MAX_TOKENS = 5_000;
/** Brackets (`{`, `[`, `(`) open at once; far above the depth limit, far below what exhausts the recursive parser's stack. */
export const GRAPHQL_MAX_NESTING = 100;

/**
 * Why a document must not reach the parser, or `undefined`. graphql-js parses recursively, and
 * a list literal costs one token per level, so a token bound alone still lets a 2,000-level
 * `[[[...` overflow the stack; this pass only runs the lexer, which does not recurse.
 */
export function documentShapeProblem(source: string): string | undefined {
  const lexer = new Lexer(new Source(source));
  let depth = 0;
  try {
    for (let tokens = 0; ; tokens++) {
      const token = lexer.advance();
      if (token.kind === TokenKind.EOF) return undefined;
      if (tokens >= GRAPHQL_MAX_TOKENS) return `The document has more than ${GRAPHQL_MAX_TOKENS} tokens.`;
      if (token.kind === TokenKind.BRACE_L || token.kind === TokenKind.BRACKET_L || token.kind === TokenKind.PAREN_L) {
        if (++depth > GRAPHQL_MAX_NESTING) return `The document nests deeper than ${GRAPHQL_MAX_NESTING} levels.`;
      } else if (token.kind === TokenKind.BRACE_R || token.kind === TokenKind.BRACKET_R || token.kind === TokenKind.PAREN_R) {
        depth--;
      }
    }
  } catch {
    return undefined; // A lexical error: the parser reports it with its own location.
  }
}
