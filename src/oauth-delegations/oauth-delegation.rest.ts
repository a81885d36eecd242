import { DateTimeResolver } from 'graphql-scalars';
import { InvalidInputError, MissingArgumentError } from '../errors/domain-errors.js';
import { excerpt } from '../graphql/input-bounds.js';
import type { RestRoute } from '../rest/route.js';
import { operationDocument } from '../rest/route.js';
import { cursorPagination, cursorParameter, enumListParameter, limitParameter, list, pathParameter, required, single, type Query } from '../rest/params.js';
import type { ParameterDescription } from '../rest/description.js';
import { cursorPage, schemaRef, wrapped } from '../rest/openapi-schemas.js';
import type { oas31 } from 'openapi3-ts';
import type {
  DeleteOAuthDelegationsMutation,
  ListUserOAuthDelegationsQuery,
  OAuthDelegationRevocationRequestsStatusQuery,
  RestOAuthDelegationFieldsFragment,
  RevokeOAuthDelegationMutation,
  ShowUserOAuthDelegationQuery,
} from '../graphql/generated/operations.js';
import { DELEGATION_STATUSES, DELEGATION_TYPES, REVOCABLE_TYPES } from './oauth-delegation.entity.js';

const withFields = (file: string) => operationDocument(import.meta.url, file, './operations/oauth-delegation-fields.graphql');

/**
 * The executor hands over what the GraphQL execution produced: a DateTime is a Date there
 * (graphql-scalars serializes to Date; JSON makes the string). Either way, ISO 8601 in UTC.
 */
function iso(value: string | Date): string {
  return new Date(value).toISOString();
}

/** The v2 representation of a delegation, from the fields the REST documents select. */
export function presentOAuthDelegation(delegation: RestOAuthDelegationFieldsFragment) {
  const delegationType = delegation.delegationType.toLowerCase();
  return {
    id: delegation.id,
    type: 'oauth_delegation' as const,
    // A flow-made delegation names its app; an operator-issued one only has a client id.
    summary: `${delegation.clientName ?? delegation.clientId} (${delegationType})`,
    self: delegation.self,
    html_url: delegation.htmlUrl,
    delegation_type: delegationType,
    client_id: delegation.clientId,
    scope: delegation.scope,
    status: delegation.status.toLowerCase(),
    created_at: iso(delegation.createdAt),
    expires_at: iso(delegation.expiresAt),
  };
}

/** A comma (or repeated, or `name[]`) list whose values must all be allowed; GraphQL enum names out. */
function enumList(query: Query, name: string, allowed: readonly string[]): string[] | null {
  const values = [...new Set(list(query, name))];
  const unknown = values.filter((value) => !allowed.includes(value));
  if (unknown.length) {
    throw new InvalidInputError(`${name} does not accept ${unknown.map((value) => `"${value}"`).join(', ')}; allowed values: ${allowed.join(', ')}`);
  }
  return values.length ? values.map((value) => value.toUpperCase()) : null;
}

/**
 * `delegation_type` is the parameter's name; the reference's own description shows it as
 * `type=web,mobile`, so `type` is accepted as an alias rather than silently ignored.
 */
function delegationTypeFilter(query: Query): string[] | null {
  const given = ['delegation_type', 'type'].filter((name) => list(query, name).length > 0);
  if (given.length > 1) throw new InvalidInputError('give delegation_type or its alias type, not both');
  return enumList(query, given[0] ?? 'delegation_type', DELEGATION_TYPES);
}

export const oauthDelegationSchemas: Record<string, oas31.SchemaObject> = {
  OAuthDelegation: {
    type: 'object',
    required: ['id', 'type', 'summary', 'self', 'html_url', 'delegation_type', 'client_id', 'scope', 'status', 'created_at', 'expires_at'],
    properties: {
      id: { type: 'string', format: 'uuid', readOnly: true },
      type: { type: 'string', enum: ['oauth_delegation'] },
      summary: { type: 'string' },
      self: { type: 'string', format: 'uri' },
      html_url: { type: 'string', format: 'uri' },
      delegation_type: { type: 'string', enum: [...DELEGATION_TYPES] },
      client_id: { type: 'string' },
      scope: { type: 'string', description: 'Space-separated scopes.' },
      status: { type: 'string', enum: [...DELEGATION_STATUSES] },
      created_at: { type: 'string', format: 'date-time' },
      expires_at: { type: 'string', format: 'date-time' },
    },
  },
};

const userIdPath = pathParameter('id', 'The id of the user.');

const revocationUserParameter: ParameterDescription<string> = {
  name: 'user_id',
  in: 'query',
  required: true,
  description: 'The user whose delegations to revoke.',
  schema: { type: 'string', minLength: 1 },
  read: ({ query }) => required(query, 'user_id').trim(),
};

const revocationTypeParameter = enumListParameter('type', REVOCABLE_TYPES, 'The delegation types to revoke (sign out of the mobile app, the web app, or both).', ({ query }) => {
  const types = enumList(query, 'type', REVOCABLE_TYPES);
  if (!types) throw new MissingArgumentError('type is required (mobile, web, or mobile,web)');
  return types;
}, true);

const requestedAtEndParameter: ParameterDescription<string | null> = {
  name: 'requested_at_end',
  in: 'query',
  description: 'Echoed back as `requested_at_end`; defaults to now.',
  schema: { type: 'string', format: 'date-time' },
  read: ({ query }) => {
    const raw = single(query, 'requested_at_end');
    if (raw === undefined || raw.trim() === '') return null;
    try {
      DateTimeResolver.parseValue(raw.trim());
    } catch {
      throw new InvalidInputError(`requested_at_end must be an ISO 8601 date-time such as 2026-01-01T12:00:00Z (got ${excerpt(raw)})`);
    }
    return raw.trim();
  },
};

/** How third-party apps' grants are named by the type filters (docs/security.md, "Sign in and apps"). */
export const THIRD_PARTY_TYPE_NOTE =
  'A third-party app acting as the user (it asked the user\'s consent) is an `integration` delegation with that user; ' +
  '`delegation_type=integration` lists them, and each is revoked with `DELETE /users/{id}/oauth_delegations/{delegation_id}`.';

const delegationTypeParameter = enumListParameter(
  'delegation_type',
  DELEGATION_TYPES,
  `Only delegations of these types (\`type\` is accepted as an alias, not both). ${THIRD_PARTY_TYPE_NOTE}`,
  ({ query }) => delegationTypeFilter(query),
);
const delegationStatusParameter = enumListParameter('status', DELEGATION_STATUSES, 'Only delegations in these statuses.', ({ query }) =>
  enumList(query, 'status', DELEGATION_STATUSES),
);

export const oauthDelegationRoutes: RestRoute[] = [
  {
    method: 'delete',
    path: '/oauth_delegations',
    operation: operationDocument(import.meta.url, './operations/delete-oauth-delegations.graphql'),
    description: {
      operationId: 'deleteOauthDelegations',
      summary: "Revoke a user's delegations (sign out)",
      description: 'Revokes every issued delegation of the user of those types, synchronously: their tokens are refused from this response on. An unknown user is 400 naming it. '
        + 'Only `mobile` and `web` (signing out of the first-party apps); a third-party app\'s grant (`integration`) is revoked by id with `DELETE /users/{id}/oauth_delegations/{delegation_id}`.',
      tags: ['OAuth Delegations'],
      scope: 'oauth_delegations.write',
      parameters: [revocationUserParameter, revocationTypeParameter],
      responses: { 200: { description: 'Revoked.', schema: { type: 'object', required: ['status'], properties: { status: { type: 'string', enum: ['ok'] } } } } },
      errors: [400, 403],
    },
    variables: (request) => ({ input: { userId: revocationUserParameter.read!(request), types: revocationTypeParameter.read!(request) } }),
    respond: () => ({ status: 200, body: { status: 'ok' } }),
  } satisfies RestRoute<DeleteOAuthDelegationsMutation>,
  {
    method: 'get',
    path: '/oauth_delegations/revocation_requests/status',
    operation: operationDocument(import.meta.url, './operations/oauth-delegation-revocation-status.graphql'),
    successor: 'DELETE /oauth_delegations',
    description: {
      operationId: 'getOauthDelegationsRevocationRequestsStatus',
      summary: 'Revocation requests status (deprecated)',
      description: 'Revocation is synchronous now: `pending_count` is always 0. Owners, admins and account keys only.',
      tags: ['OAuth Delegations'],
      scope: 'oauth_delegations.read',
      parameters: [requestedAtEndParameter],
      responses: {
        200: {
          description: 'No revocation is ever pending.',
          schema: {
            type: 'object',
            required: ['pending_count', 'requested_at_end'],
            properties: { pending_count: { type: 'integer', minimum: 0 }, requested_at_end: { type: 'string', format: 'date-time' } },
          },
        },
      },
      errors: [400, 403],
    },
    variables: (request) => ({ requestedAtEnd: requestedAtEndParameter.read!(request) }),
    respond: (data: OAuthDelegationRevocationRequestsStatusQuery) => {
      const status = data.oauthDelegationRevocationRequestsStatus;
      return { status: 200, body: { pending_count: status.pendingCount, requested_at_end: iso(status.requestedAtEnd) } };
    },
  } satisfies RestRoute<OAuthDelegationRevocationRequestsStatusQuery>,
  {
    method: 'get',
    path: '/users/:id/oauth_delegations',
    operation: withFields('./operations/list-user-oauth-delegations.graphql'),
    description: {
      operationId: 'listUserDelegations',
      summary: "List a user's OAuth delegations",
      description: 'The user themself, or can_update_user.',
      tags: ['Users', 'OAuth Delegations'],
      scope: 'oauth_delegations.read',
      parameters: [userIdPath, delegationTypeParameter, delegationStatusParameter, limitParameter('cursor'), cursorParameter],
      responses: { 200: { description: 'A page of delegations.', schema: cursorPage('oauth_delegations', schemaRef('OAuthDelegation')) } },
      errors: [400, 403, 404],
    },
    variables: ({ params, query }) => {
      const page = cursorPagination(query);
      return {
        userId: params.id,
        types: delegationTypeFilter(query),
        statuses: enumList(query, 'status', DELEGATION_STATUSES),
        first: page.limit,
        after: page.cursor ?? null,
      };
    },
    respond: (data: ListUserOAuthDelegationsQuery, { query }) => {
      const { hasNextPage, endCursor } = data.oauthDelegations.pageInfo;
      return {
        status: 200,
        body: {
          oauth_delegations: data.oauthDelegations.nodes.map(presentOAuthDelegation),
          limit: cursorPagination(query).limit,
          more: hasNextPage,
          // The reference: a string, present only while more is true (never null).
          ...(hasNextPage && endCursor ? { next_cursor: endCursor } : {}),
        },
      };
    },
  } satisfies RestRoute<ListUserOAuthDelegationsQuery>,
  {
    method: 'get',
    path: '/users/:id/oauth_delegations/:delegation_id',
    operation: withFields('./operations/show-user-oauth-delegation.graphql'),
    description: {
      operationId: 'getUserDelegation',
      summary: "Show one of a user's OAuth delegations",
      tags: ['Users', 'OAuth Delegations'],
      scope: 'oauth_delegations.read',
      parameters: [userIdPath, pathParameter('delegation_id', 'The id of the delegation.')],
      responses: { 200: { description: 'The delegation.', schema: wrapped('oauth_delegation', schemaRef('OAuthDelegation')) } },
      errors: [400, 403, 404],
    },
    variables: ({ params }) => ({ userId: params.id, id: params.delegation_id }),
    // Wrapped in `oauth_delegation`, as every show response is and as the reference's example has it.
    respond: (data: ShowUserOAuthDelegationQuery) => ({ status: 200, body: { oauth_delegation: presentOAuthDelegation(data.oauthDelegation) } }),
  } satisfies RestRoute<ShowUserOAuthDelegationQuery>,
  {
    method: 'delete',
    path: '/users/:id/oauth_delegations/:delegation_id',
    operation: operationDocument(import.meta.url, './operations/revoke-oauth-delegation.graphql'),
    description: {
      operationId: 'deleteUserDelegation',
      summary: "Revoke one of a user's OAuth delegations",
      description: 'Revokes the delegation, whatever its type, before answering: its access and refresh tokens are refused from this response on. '
        + `The user themself (any role) or can_update_user. Revoking a revoked delegation answers the same. ${THIRD_PARTY_TYPE_NOTE}`,
      tags: ['Users', 'OAuth Delegations'],
      scope: 'oauth_delegations.write',
      parameters: [userIdPath, pathParameter('delegation_id', 'The id of the delegation.')],
      responses: { 204: { description: 'Revoked; no body.' } },
      errors: [400, 403, 404],
    },
    variables: ({ params }) => ({ input: { userId: params.id, id: params.delegation_id } }),
    respond: () => ({ status: 204 }),
  } satisfies RestRoute<RevokeOAuthDelegationMutation>,
];
