import type { ErrorKind } from './domain-errors.js';

export type GraphQLErrorCode =
  | 'UNAUTHENTICATED'
  | 'INSUFFICIENT_USER_AUTHENTICATION'
  | 'FORBIDDEN'
  | 'NOT_FOUND'
  | 'BAD_USER_INPUT'
  | 'RATE_LIMITED'
  | 'CONFLICT'
  | 'SERVICE_UNAVAILABLE'
  | 'INTERNAL_SERVER_ERROR';

export interface ErrorTranslation {
  graphqlCode: GraphQLErrorCode;
  httpStatus: number;
  apiErrorCode: number;
}

/** The one table both faces read: error kind -> GraphQL code, HTTP status, API error code. */
export const ERROR_TABLE: Record<ErrorKind, ErrorTranslation> = {
  invalid_input: { graphqlCode: 'BAD_USER_INPUT', httpStatus: 400, apiErrorCode: 2001 },
  missing_argument: { graphqlCode: 'BAD_USER_INPUT', httpStatus: 400, apiErrorCode: 2003 },
  unprocessable: { graphqlCode: 'BAD_USER_INPUT', httpStatus: 422, apiErrorCode: 2001 },
  unauthenticated: { graphqlCode: 'UNAUTHENTICATED', httpStatus: 401, apiErrorCode: 2006 },
  // RFC 9470: the credential works but its sign-in is too old for this operation; 401 with a challenge naming max_age.
  insufficient_user_authentication: { graphqlCode: 'INSUFFICIENT_USER_AUTHENTICATION', httpStatus: 401, apiErrorCode: 2006 },
  forbidden: { graphqlCode: 'FORBIDDEN', httpStatus: 403, apiErrorCode: 2010 },
  not_found: { graphqlCode: 'NOT_FOUND', httpStatus: 404, apiErrorCode: 2100 },
  not_acceptable: { graphqlCode: 'BAD_USER_INPUT', httpStatus: 406, apiErrorCode: 2001 },
  unsupported_media_type: { graphqlCode: 'BAD_USER_INPUT', httpStatus: 415, apiErrorCode: 2001 },
  rate_limited: { graphqlCode: 'RATE_LIMITED', httpStatus: 429, apiErrorCode: 2020 },
  // 2002 is the v2 API's "Arguments Caused Error": the request is valid but collides with another.
  conflict: { graphqlCode: 'CONFLICT', httpStatus: 409, apiErrorCode: 2002 },
  // Retry later: clients and load balancers tell this from a defect by the status and Retry-After.
  unavailable: { graphqlCode: 'SERVICE_UNAVAILABLE', httpStatus: 503, apiErrorCode: 2000 },
  internal: { graphqlCode: 'INTERNAL_SERVER_ERROR', httpStatus: 500, apiErrorCode: 2000 },
};

const KIND_BY_GRAPHQL_CODE = new Map<string, ErrorKind>(
  (Object.entries(ERROR_TABLE) as [ErrorKind, ErrorTranslation][])
    .filter(([kind]) => kind !== 'missing_argument' && kind !== 'unprocessable' && kind !== 'not_acceptable' && kind !== 'unsupported_media_type')
    .map(([kind, translation]) => [translation.graphqlCode, kind]),
);

/** For errors that carry only a GraphQL code (validation, variable coercion): the kind to answer with. */
export function kindForGraphQLCode(code: string | undefined): ErrorKind {
  return (code && KIND_BY_GRAPHQL_CODE.get(code)) || 'internal';
}
