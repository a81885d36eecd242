import { GraphQLError, type GraphQLFormattedError } from 'graphql';
import { DomainError, InvalidInputError, StepUpRequiredError, type ErrorKind, type FieldProblem } from '../errors/domain-errors.js';
import { ERROR_TABLE } from '../errors/error-table.js';
import { isDatabaseUnavailable } from '../db/database-errors.js';
import { QUERY_LIMIT_EXTENSION } from './limits.js';
import { boundedMessage } from './input-bounds.js';
import { withAllowedValues } from './closed-set-enum.js';

/** An input error's message as the client sees it: bounded, and naming a closed set's values when one was missed. */
const inputMessage = (message: string) => withAllowedValues(message, boundedMessage(message));

/**
 * Validation errors without graphql-js' "Did you mean ...?" hints, which name fields and types one
 * by one: with introspection off, no transport may tell the schema (Apollo's plugin does this on
 * HTTP, `hideSchemaDetailsFromClientErrors`; the WebSocket calls this).
 */
export function withoutSuggestions(errors: readonly GraphQLError[]): GraphQLError[] {
  for (const error of errors) error.message = error.message.replace(/ ?Did you mean(.+?)\?$/, '');
  return [...errors];
}

export interface ClassifiedError {
  kind: ErrorKind;
  message: string;
  details: string[];
  /** Problems per input field (`extensions.fields`), when input values caused the error. */
  fields?: FieldProblem[];
  /** A step-up's `max_age`: how recent a sign-in the operation needs (`extensions.maxAge`). */
  maxAge?: number;
}

const INPUT_ERROR_CODES = new Set(['GRAPHQL_PARSE_FAILED', 'GRAPHQL_VALIDATION_FAILED', 'BAD_USER_INPUT', 'BAD_REQUEST', 'OPERATION_RESOLUTION_FAILURE']);

/**
 * Automatic persisted queries: clients resend the full query on exactly these codes, so they
 * reach the client unchanged (HTTP 200, as the APQ protocol has it), never masked.
 */
export const PERSISTED_QUERY_CODES = new Set(['PERSISTED_QUERY_NOT_FOUND', 'PERSISTED_QUERY_NOT_SUPPORTED']);

function codeOf(error: unknown): unknown {
  return error instanceof GraphQLError ? error.extensions?.code : undefined;
}

function originalOf(error: unknown): unknown {
  let current = error;
  while (current instanceof GraphQLError && current.originalError && current.originalError !== current) current = current.originalError;
  return current;
}

/**
 * Sorts any error out of an execution into a kind of the error table. Errors the product
 * did not raise on purpose are internal, and their text never leaves the process.
 */
export function classifyError(error: unknown): ClassifiedError {
  const original = originalOf(error);
  if (original instanceof DomainError) {
    const fields = original instanceof InvalidInputError && original.fields.length ? original.fields : undefined;
    const maxAge = original instanceof StepUpRequiredError ? original.maxAgeSeconds : undefined;
    return { kind: original.kind, message: original.message, details: original.details, ...(fields ? { fields } : {}), ...(maxAge ? { maxAge } : {}) };
  }
  // A document the parser gave up on, or a variable a scalar could not coerce, is the client's
  // input whatever the parser or scalar tripped over (a stack overflow on a 10,000-level value).
  const outerCode = codeOf(error);
  if (typeof outerCode === 'string' && (INPUT_ERROR_CODES.has(outerCode) || PERSISTED_QUERY_CODES.has(outerCode))) {
    return { kind: 'invalid_input', message: 'Invalid Input Provided', details: [inputMessage((error as GraphQLError).message)] };
  }
  if (original instanceof GraphQLError) {
    // Parse, validation and variable-coercion errors (a scalar's own GraphQLError sits inside
    // the coercion error): the client's input, safe to echo. The outermost message names the path.
    const code = original.extensions?.code ?? (error instanceof GraphQLError ? error.extensions?.code : undefined);
    if (code === undefined || (typeof code === 'string' && INPUT_ERROR_CODES.has(code))) {
      return { kind: 'invalid_input', message: 'Invalid Input Provided', details: [inputMessage(error instanceof GraphQLError ? error.message : original.message)] };
    }
  }
  if (isDatabaseUnavailable(original)) {
    return { kind: 'unavailable', message: 'Service Unavailable', details: ['The database is unavailable or busy; retry shortly.'] };
  }
  return { kind: 'internal', message: 'Internal Server Error', details: [] };
}

/** Apollo's `formatError`: every error carries `extensions.code` and `extensions.apiErrorCode`. */
export function formatGraphQLError(formatted: GraphQLFormattedError, error: unknown): GraphQLFormattedError {
  const classified = classifyError(error);
  const translation = ERROR_TABLE[classified.kind];
  const standardCode = formatted.extensions?.code;
  const queryLimit = formatted.extensions?.[QUERY_LIMIT_EXTENSION];
  const keepStandardCode = classified.kind === 'invalid_input' && !queryLimit && typeof standardCode === 'string' && (standardCode.startsWith('GRAPHQL_') || PERSISTED_QUERY_CODES.has(standardCode));
  return {
    message: classified.kind === 'internal' ? 'Internal server error' : classified.details[0] ?? classified.message,
    ...(formatted.locations ? { locations: formatted.locations } : {}),
    ...(formatted.path ? { path: formatted.path } : {}),
    extensions: {
      code: keepStandardCode ? standardCode : translation.graphqlCode,
      apiErrorCode: translation.apiErrorCode,
      ...(queryLimit ? { [QUERY_LIMIT_EXTENSION]: queryLimit } : {}),
      ...(classified.details.length > 1 ? { details: classified.details } : {}),
      ...(classified.fields ? { fields: classified.fields } : {}),
      ...(classified.maxAge ? { maxAge: classified.maxAge } : {}),
    },
  };
}

/** A GraphQL error response for failures outside execution (rate limit, a crash before Apollo ran). */
export function graphqlErrorBody(kind: ErrorKind, message: string, extensions: Record<string, unknown> = {}) {
  const { graphqlCode, apiErrorCode } = ERROR_TABLE[kind];
  return { errors: [{ message, extensions: { code: graphqlCode, apiErrorCode, ...extensions } }] };
}
