import { DateTimeResolver } from 'graphql-scalars';
import { InvalidInputError, MissingArgumentError } from '../errors/domain-errors.js';
import type { RestRoute } from '../rest/route.js';
import { operationDocument } from '../rest/route.js';
import { cursorPagination, list, required, single, type Query } from '../rest/params.js';
import type {
  DeleteOAuthDelegationsMutation,
  ListUserOAuthDelegationsQuery,
  OAuthDelegationRevocationRequestsStatusQuery,
  RestOAuthDelegationFieldsFragment,
  ShowUserOAuthDelegationQuery,
} from '../graphql/generated/operations.js';
import { DELEGATION_STATUSES, DELEGATION_TYPES } from './oauth-delegation.entity.js';
import { REVOCABLE_TYPES } from './oauth-delegation.service.js';

const withFields = (file: string) => operationDocument(import.meta.url, file, './operations/oauth-delegation-fields.graphql');

/**
 * The executor hands over what the GraphQL execution produced: a DateTime is a Date there
 * (graphql-scalars serializes to Date; JSON makes the string). Either way, ISO 8601 in UTC.
 */
function iso(value: string | Date): string {
  return new Date(value).toISOString();
}

/** The v2 representation of a delegation (SPEC section 6), from the fields the REST documents select. */
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

export const oauthDelegationRoutes: RestRoute[] = [
  {
    method: 'delete',
    path: '/oauth_delegations',
    operation: operationDocument(import.meta.url, './operations/delete-oauth-delegations.graphql'),
    variables: ({ query }) => {
      const userId = required(query, 'user_id').trim();
      const types = enumList(query, 'type', REVOCABLE_TYPES);
      if (!types) throw new MissingArgumentError('type is required (mobile, web, or mobile,web)');
      return { input: { userId, types } };
    },
    respond: () => ({ status: 200, body: { status: 'ok' } }),
  } satisfies RestRoute<DeleteOAuthDelegationsMutation>,
  {
    method: 'get',
    path: '/oauth_delegations/revocation_requests/status',
    operation: operationDocument(import.meta.url, './operations/oauth-delegation-revocation-status.graphql'),
    successor: 'DELETE /oauth_delegations',
    variables: ({ query }) => {
      const raw = single(query, 'requested_at_end');
      if (raw === undefined || raw.trim() === '') return { requestedAtEnd: null };
      try {
        DateTimeResolver.parseValue(raw.trim());
      } catch {
        throw new InvalidInputError(`requested_at_end must be an ISO 8601 date-time such as 2026-01-01T12:00:00Z (got "${raw}")`);
      }
      return { requestedAtEnd: raw.trim() };
    },
    respond: (data: OAuthDelegationRevocationRequestsStatusQuery) => {
      const status = data.oauthDelegationRevocationRequestsStatus;
      return { status: 200, body: { pending_count: status.pendingCount, requested_at_end: iso(status.requestedAtEnd) } };
    },
  } satisfies RestRoute<OAuthDelegationRevocationRequestsStatusQuery>,
  {
    method: 'get',
    path: '/users/:id/oauth_delegations',
    operation: withFields('./operations/list-user-oauth-delegations.graphql'),
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
    variables: ({ params }) => ({ userId: params.id, id: params.delegation_id }),
    // SPEC's decided slip: wrapped, as the seed's show rule and the reference's example have it.
    respond: (data: ShowUserOAuthDelegationQuery) => ({ status: 200, body: { oauth_delegation: presentOAuthDelegation(data.oauthDelegation) } }),
  } satisfies RestRoute<ShowUserOAuthDelegationQuery>,
];
