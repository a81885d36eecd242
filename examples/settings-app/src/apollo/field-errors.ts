import { CombinedGraphQLErrors } from '@apollo/client';

interface FieldProblem { path: (string | number)[]; message: string; code: string }

/**
 * A `BAD_USER_INPUT` answer lists every problem of the input in `extensions.fields`, each with its
 * path from the argument (["input", "jobTitle"]); a form shows each message next to its input.
 * Returns the messages by input field, and what is left for the form as a whole.
 */
export function fieldErrorsOf(error: unknown): { byField: Record<string, string>; other?: string } {
  if (!CombinedGraphQLErrors.is(error)) return { byField: {}, other: error instanceof Error ? error.message : String(error) };
  const byField: Record<string, string> = {};
  const unplaced: string[] = [];
  for (const graphqlError of error.errors) {
    const problems = (graphqlError.extensions?.fields ?? []) as FieldProblem[];
    for (const problem of problems) byField[String(problem.path[problem.path.length - 1])] = problem.message;
    if (problems.length === 0) unplaced.push(graphqlError.message);
  }
  return { byField, ...(unplaced.length ? { other: unplaced.join(' ') } : {}) };
}
