/**
 * Typed domain errors: services throw these and know nothing of HTTP or GraphQL.
 * Each face translates them once through the error table.
 */
export type ErrorKind =
  | 'invalid_input'
  | 'missing_argument'
  | 'unprocessable'
  | 'unauthenticated'
  | 'insufficient_user_authentication'
  | 'forbidden'
  | 'not_found'
  | 'rate_limited'
  | 'not_acceptable'
  | 'unsupported_media_type'
  | 'conflict'
  | 'unavailable'
  | 'internal';

export class DomainError extends Error {
  constructor(
    readonly kind: ErrorKind,
    message: string,
    /** Human-readable details, one per problem; the REST envelope's `errors`. */
    readonly details: string[] = [],
  ) {
    super(message);
    this.name = new.target.name;
  }
}

/**
 * One problem of one input value, for forms: `path` from the operation's argument (the GraphQL
 * convention names it `input`, e.g. `["input", "timeZone"]`), a message naming the field by that
 * name, and a stable code (`REQUIRED`, `INVALID`, `TOO_LONG`, `TAKEN`, `INCORRECT`, ...).
 */
export interface FieldProblem {
  path: (string | number)[];
  message: string;
  code: string;
}

export class InvalidInputError extends DomainError {
  constructor(
    details: string[] | string,
    message = 'Invalid Input Provided',
    /** The problems per input field, when the input's values (not its shape) caused them. */
    readonly fields: FieldProblem[] = [],
  ) {
    super('invalid_input', message, Array.isArray(details) ? details : [details]);
  }

  /** Every problem of an input at once; the details are their messages. */
  static ofFields(fields: FieldProblem[]): InvalidInputError {
    return new InvalidInputError(fields.map((field) => field.message), 'Invalid Input Provided', fields);
  }
}

export class MissingArgumentError extends DomainError {
  constructor(details: string[] | string) {
    super('missing_argument', 'Missing Arguments', Array.isArray(details) ? details : [details]);
  }
}

/** A payload that parses but fails validation (the spec's 422 for notification subscriptions). */
export class UnprocessableError extends DomainError {
  constructor(details: string[] | string) {
    super('unprocessable', 'Unprocessable Entity', Array.isArray(details) ? details : [details]);
  }
}

export class AuthenticationError extends DomainError {
  constructor(detail = 'A valid API key or OAuth access token is required.') {
    super('unauthenticated', 'Authentication failed', [detail]);
  }
}

/**
 * The credential works, but the sign-in behind it is older than the operation allows (RFC 9470
 * step-up): the app signs the user in again (`max_age`) and retries with the new token.
 */
export class StepUpRequiredError extends DomainError {
  constructor(readonly maxAgeSeconds: number) {
    super('insufficient_user_authentication', 'Insufficient user authentication', [`This needs a sign-in from the last ${maxAgeSeconds} seconds: sign in again (max_age=${maxAgeSeconds}) and retry with the new token.`]);
  }
}

export class ForbiddenError extends DomainError {
  constructor(detail: string) {
    super('forbidden', 'Access Denied', [detail]);
  }
}

export class NotFoundError extends DomainError {
  constructor(resource = 'resource') {
    super('not_found', 'Not Found', [`The requested ${resource} was not found.`]);
  }
}

export class RateLimitedError extends DomainError {
  constructor(readonly retryAfterSeconds: number, detail = `Too many requests; retry in ${retryAfterSeconds} seconds.`) {
    super('rate_limited', 'Rate Limit Exceeded', [detail]);
  }
}

/** The request's body is in a media type or encoding the server does not read. */
export class UnsupportedMediaTypeError extends DomainError {
  constructor(detail: string) {
    super('unsupported_media_type', 'Unsupported Media Type', [detail]);
  }
}

/** The request collides with another one still in progress (e.g. the same idempotency key). */
export class ConflictError extends DomainError {
  constructor(detail: string) {
    super('conflict', 'Conflict', [detail]);
  }
}

/**
 * A value that must be unique (a user's email, an identity provider's id) is already held. Invalid
 * input on REST and GraphQL as before; the SCIM face answers it as 409 `uniqueness`.
 */
export class DuplicateValueError extends InvalidInputError {
  /**
   * `taken`: what is wrong, or each place in the input (GraphQL names) holding a taken value with its
   * message, so a form shows the problem beside its field.
   */
  constructor(readonly field: string, taken: string | Array<{ path: Array<string | number>; message: string }>) {
    const fields = typeof taken === 'string' ? [] : taken.map((problem) => ({ ...problem, code: 'DUPLICATE' }));
    super(typeof taken === 'string' ? taken : fields.map((problem) => problem.message), undefined, fields);
  }
}

/** The change was based on a version of the resource that is no longer current (SCIM: 412). */
export class StaleVersionError extends ConflictError {
  constructor(detail = 'The resource changed since the given version; read it again.') {
    super(detail);
  }
}

/**
 * A dependency is away or saturated (database unreachable, statement or lock timeout, contention
 * that retries did not resolve): the request may succeed if sent again after `retryAfterSeconds`.
 */
export class ServiceUnavailableError extends DomainError {
  constructor(detail = 'The service is temporarily unavailable; retry shortly.', readonly retryAfterSeconds = 1) {
    super('unavailable', 'Service Unavailable', [detail]);
  }
}
