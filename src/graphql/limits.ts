import { GraphQLError, Kind, Lexer, Source, TokenKind, type ASTVisitor, type SelectionSetNode, type ValidationContext, type ValidationRule } from 'graphql';
import { maxDepthRule } from '@escape.tech/graphql-armor-max-depth';

export interface QueryLimits {
  maxDepth: number;
  maxCost: number;
  /** Root fields one operation may select (GRAPHQL_MAX_ROOT_FIELDS); unset, `DEFAULT_MAX_ROOT_FIELDS`. */
  maxRootFields?: number;
}

/**
 * Root fields an operation may select by default. Each root field is resolved in parallel with its
 * siblings, so aliases multiply the work of one request; a settings page needs a handful.
 */
export const DEFAULT_MAX_ROOT_FIELDS = 20;

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
 * The response keys an operation's root selection resolves (an alias is a field of its own; the same
 * key twice is merged by execution and resolved once), through fragments. Introspection
 * (`__typename`, `__schema`, `__type`) reads no data and is not counted.
 */
function rootResponseKeys(context: ValidationContext, selectionSet: SelectionSetNode, keys: Set<string>, seenFragments: Set<string>): Set<string> {
  for (const selection of selectionSet.selections) {
    if (selection.kind === Kind.FIELD) {
      if (!selection.name.value.startsWith('__')) keys.add(selection.alias?.value ?? selection.name.value);
    } else if (selection.kind === Kind.INLINE_FRAGMENT) {
      rootResponseKeys(context, selection.selectionSet, keys, seenFragments);
    } else if (!seenFragments.has(selection.name.value)) {
      seenFragments.add(selection.name.value);
      const fragment = context.getFragment(selection.name.value);
      if (fragment) rootResponseKeys(context, fragment.selectionSet, keys, seenFragments);
    }
  }
  return keys;
}

/** Refuses an operation selecting more than `max` root fields, before anything runs. */
function maxRootFieldsRule(max: number): ValidationRule {
  return (context: ValidationContext): ASTVisitor => ({
    OperationDefinition(operation) {
      const count = rootResponseKeys(context, operation.selectionSet, new Set(), new Set()).size;
      if (count <= max) return;
      const name = operation.name ? `Operation "${operation.name.value}"` : 'The operation';
      context.reportError(new GraphQLError(`${name} selects ${count} root fields, more than the limit of ${max} (aliases count as fields): split it into several requests.`, {
        nodes: [operation],
        extensions: { [QUERY_LIMIT_EXTENSION]: 'rootFields' },
      }));
    },
  });
}

/**
 * The depth and root-field limits for client operations (introspection is exempt, so explorers such as GraphiQL work). The
 * cost limit depends on the variables (`first`), so it is checked once they are known
 * (`assertOperationCostWithin`, src/graphql/cost.ts), not by a validation rule.
 */
export function queryLimitRules(limits: QueryLimits): ValidationRule[] {
  return [
    maxDepthRule({ n: limits.maxDepth, exposeLimits: true, ignoreIntrospection: true, ...reportAs('depth') }) as unknown as ValidationRule,
    maxRootFieldsRule(limits.maxRootFields ?? DEFAULT_MAX_ROOT_FIELDS),
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
