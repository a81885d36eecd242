import type { Response } from 'express';
import type { ErrorKind } from '../../errors/domain-errors.js';
import { ERROR_TABLE } from '../../errors/error-table.js';
import { sendText } from '../../rest/envelopes.js';
import { graphqlErrorBody } from '../../graphql/errors.js';

const GRAPHQL_RESPONSE_JSON = 'application/graphql-response+json; charset=utf-8';
const JSON_TYPE = 'application/json; charset=utf-8';

/**
 * The media type of a GraphQL answer as Apollo negotiates it for its own answers: what the
 * request's `Accept` prefers of `application/json` and `application/graphql-response+json`
 * (ties go to `application/json`, as Apollo's), `application/json` when it accepts neither.
 * Clients such as Apollo Client 4 parse a non-2xx body as a GraphQL response only in the latter.
 */
export function graphqlResponseType(res: Response): string {
  const preferred = res.req.accepts(['application/json', 'application/graphql-response+json']);
  return preferred === 'application/graphql-response+json' ? GRAPHQL_RESPONSE_JSON : JSON_TYPE;
}

/**
 * The status of an answer to a document the server could not run (it does not parse, does not
 * validate, or its variables do not coerce): GraphQL over HTTP has `application/json` answer it
 * 200 (legacy clients read any non-2xx as a transport failure) and
 * `application/graphql-response+json` answer it 400.
 */
export function documentErrorStatus(contentType: string): number {
  return contentType === JSON_TYPE ? 200 : 400;
}

/**
 * The HTTP requests whose answer Apollo's request pipeline ended with a 400 and no `data`: a
 * document that did not parse, validate or coerce. Refusals before the pipeline (the CSRF
 * prevention, a body that is not a GraphQL request) never get here and keep their 400.
 */
const documentErrorRequests = new WeakSet<object>();

export function markDocumentError(httpRequest: object): void {
  documentErrorRequests.add(httpRequest);
}

export function isDocumentError(httpRequest: object): boolean {
  return documentErrorRequests.has(httpRequest);
}

/**
 * Answers `/graphql` with a GraphQL error response (`{"errors": [...]}` with `extensions.code`)
 * in the negotiated media type: for refusals before or outside Apollo (rate limit, idempotency,
 * document screening, a crash before execution).
 */
export function sendGraphQLError(res: Response, kind: ErrorKind, message: string, extensions: Record<string, unknown> = {}, status = ERROR_TABLE[kind].httpStatus): void {
  res.statusCode = status;
  sendText(res, JSON.stringify(graphqlErrorBody(kind, message, extensions)), graphqlResponseType(res));
}
