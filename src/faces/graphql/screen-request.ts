import type { NextFunction, Request, Response } from 'express';
import { documentShapeProblem } from '../../graphql/limits.js';
import { documentErrorStatus, graphqlResponseType, sendGraphQLError } from './error-response.js';

const SHA256_HEX = /^[0-9a-f]{64}$/i;

/**
 * Screens a GraphQL request before Apollo parses it: a document too large or too deeply nested
 * for the recursive parser is refused cheaply (GRAPHQL_PARSE_FAILED). And automatic persisted
 * queries name a query by its SHA-256: a hash that cannot be one is the client's mistake (400,
 * BAD_USER_INPUT), where a well-formed but unknown one is PERSISTED_QUERY_NOT_FOUND from Apollo,
 * so the client resends the full query.
 */
export function screenGraphQLRequest(req: Request, res: Response, next: NextFunction): void {
  const query = req.method === 'GET' ? req.query.query : (req.body as { query?: unknown } | undefined)?.query;
  const shapeProblem = typeof query === 'string' ? documentShapeProblem(query) : undefined;
  if (shapeProblem) return sendGraphQLError(res, 'invalid_input', shapeProblem, { code: 'GRAPHQL_PARSE_FAILED' }, documentErrorStatus(graphqlResponseType(res)));
  let extensions: unknown = req.method === 'GET' ? req.query.extensions : (req.body as { extensions?: unknown } | undefined)?.extensions;
  if (typeof extensions === 'string') {
    try {
      extensions = JSON.parse(extensions);
    } catch {
      return next(); // Apollo answers an unreadable extensions parameter itself.
    }
  }
  const persisted = typeof extensions === 'object' && extensions !== null ? (extensions as { persistedQuery?: unknown }).persistedQuery : undefined;
  if (typeof persisted !== 'object' || persisted === null) return next();
  const hash = (persisted as { sha256Hash?: unknown }).sha256Hash;
  if (typeof hash === 'string' && SHA256_HEX.test(hash)) return next();
  sendGraphQLError(res, 'invalid_input', 'extensions.persistedQuery.sha256Hash must be the 64 hexadecimal digits of a SHA-256 hash.');
}
