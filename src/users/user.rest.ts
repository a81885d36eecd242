import { InvalidInputError, MissingArgumentError } from '../errors/domain-errors.js';
import type { RestRoute } from '../rest/route.js';
import { operationDocument } from '../rest/route.js';
import { bodyField, classicPagination, classicPaginationParameters, includeParameter, includes, pathParameter, single } from '../rest/params.js';
import type { BodyDescription } from '../rest/description.js';
import { classicPage, schemaRef, wrapped } from '../rest/openapi-schemas.js';
import { policy } from '../auth/policy.js';
import { actingUserId } from '../auth/principal.js';
import { excerpt } from '../graphql/input-bounds.js';
import type {
  CreateUserMutation,
  CurrentUserQuery,
  ListUsersQuery,
  RestUserFieldsFragment,
  ShowUserQuery,
  UpdateUserMutation,
  UpdateUsersMutation,
} from '../graphql/generated/operations.js';
import { MAX_USERS_PER_BULK_UPDATE } from './user.service.js';
import { USER_FIELDS, USER_FIELD_NAMES, restName, type KeyedByRestName } from './user.fields.js';
import { validateUserFields, type UserFields } from './user.validation.js';
import { userQueryParameter } from './user.openapi.js';

/** Arrays the product holds none of: accepted in include[] and always returned empty. */
export const USER_INCLUDES = ['contact_methods', 'notification_rules', 'teams', 'subdomains'] as const;
/** Show (and the current user) also accept `calendar_urls`; the index never carries calendar URLs. */
export const USER_SHOW_INCLUDES = [...USER_INCLUDES, 'calendar_urls'] as const;

const document = (file: string) => operationDocument(import.meta.url, file, './operations/user-fields.graphql');

/** The fields the v2 user carries from the field table, keyed by their REST names (user.fields.ts). */
type PresentedFields = KeyedByRestName<Record<'name' | 'email' | 'timeZone' | 'color' | 'role' | 'avatarUrl' | 'description' | 'invitationSent' | 'jobTitle' | 'createdViaSso', unknown>>;

/**
 * The v2 representation of a user, from the fields the REST documents select (calendar URLs only
 * where selected). Written with literal keys, which every list page builds 25 times and V8 builds
 * from one shape; `satisfies` holds each key to the field table's REST name, so renaming a field
 * there fails the build here instead of changing the response.
 */
export function presentUser(user: RestUserFieldsFragment & { httpCalUrl?: string | null; webCalUrl?: string | null }) {
  return {
    id: user.id,
    type: 'user' as const,
    summary: user.name,
    self: user.self,
    html_url: user.htmlUrl,
    name: user.name,
    email: user.email,
    time_zone: user.timeZone,
    color: user.color,
    role: user.role.toLowerCase(),
    avatar_url: user.avatarUrl,
    description: user.description ?? null,
    invitation_sent: user.invitationSent,
    // The reference schema has job_title as a non-nullable string: an unset title is left out.
    ...(user.jobTitle != null ? { job_title: user.jobTitle } : {}),
    created_via_sso: user.createdViaSso,
    teams: [],
    contact_methods: [],
    notification_rules: [],
    ...(user.httpCalUrl != null && user.webCalUrl != null ? { http_cal_url: user.httpCalUrl, web_cal_url: user.webCalUrl } : {}),
  } satisfies Partial<PresentedFields> & { id: string; type: 'user'; summary: string; self: string; html_url: string; teams: []; contact_methods: []; notification_rules: []; http_cal_url?: string; web_cal_url?: string };
}

/** The fields a REST body may set (user.fields.ts), by REST name -> GraphQL name. */
const WRITABLE_FIELDS = new Map(USER_FIELD_NAMES.filter((field) => USER_FIELDS[field].writable === 'rest').map((field) => [restName(field), field]));

/**
 * Writable fields of a body's user object, checked with the REST field names and renamed for
 * GraphQL; read-only and unknown fields are ignored.
 */
export function userFieldsFromBody(raw: unknown, where: string, options: { creating: boolean }): Record<string, unknown> {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new InvalidInputError(`${where} must be a JSON object`);
  const body = raw as Record<string, unknown>;
  if (body.type !== undefined && body.type !== 'user') {
    throw new InvalidInputError(`${where}.type must be "user" (got ${excerpt(body.type)})`);
  }
  if (options.creating) {
    const missing = ['name', 'email'].filter((field) => body[field] === undefined || body[field] === null);
    if (missing.length) throw new MissingArgumentError(missing.map((field) => `${where}.${field} is required`));
  }
  const fields: UserFields = {};
  for (const [restField, graphqlField] of WRITABLE_FIELDS) {
    if (restField in body) (fields as Record<string, unknown>)[graphqlField] = body[restField];
  }
  const problems = validateUserFields(fields, { creating: options.creating, prefix: `${where}.` });
  if (problems.length) throw new InvalidInputError(problems);
  return { ...fields, ...(fields.role !== undefined ? { role: fields.role.toUpperCase() } : {}) };
}

const userIdParameter = pathParameter('id', 'The id of the user.');
const indexIncludes = includeParameter(USER_INCLUDES, 'Arrays to include (returned empty: the product holds none).');
const showIncludes = includeParameter(
  USER_SHOW_INCLUDES,
  'Arrays to include; `calendar_urls` adds `http_cal_url` and `web_cal_url` (automatic for oneself; for another user only with can_update_user).',
);
const userResponse = (description: string) => ({ description, schema: wrapped('user', schemaRef('User')) });

const createUserBody: BodyDescription<Record<string, unknown>> = {
  description: '`{"user": {...}}` with at least `name` and `email`.',
  schema: { type: 'object', required: ['user'], properties: { user: { allOf: [schemaRef('UserChanges'), { required: ['name', 'email'] }] } } },
  read: (body) => userFieldsFromBody(bodyField(body, 'user'), 'user', { creating: true }),
};

const updateUserBody: BodyDescription<Record<string, unknown>> = {
  description: '`{"user": {...}}` with only the fields to change.',
  schema: wrapped('user', schemaRef('UserChanges')),
  read: (body) => userFieldsFromBody(bodyField(body, 'user'), 'user', { creating: false }),
};

const updateUsersBody: BodyDescription<Record<string, unknown>[]> = {
  description: `\`{"users": [{id, ...changes}, ...]}\`: 1 to ${MAX_USERS_PER_BULK_UPDATE} users, all changed or none (one bad element is 400 naming it).`,
  schema: {
    type: 'object',
    required: ['users'],
    properties: {
      users: {
        type: 'array',
        minItems: 1,
        maxItems: MAX_USERS_PER_BULK_UPDATE,
        items: { allOf: [schemaRef('UserChanges'), { type: 'object', required: ['id'], properties: { id: { type: 'string', minLength: 1 } } }] },
      },
    },
  },
  read: (body) => {
    const users = bodyField(body, 'users');
    if (!Array.isArray(users)) throw new InvalidInputError('users must be an array');
    if (users.length === 0 || users.length > MAX_USERS_PER_BULK_UPDATE) {
      throw new InvalidInputError(`users must hold 1 to ${MAX_USERS_PER_BULK_UPDATE} elements`);
    }
    return users.map((element: unknown, index) => {
      const fields = userFieldsFromBody(element, `users[${index}]`, { creating: false });
      const id = (element as { id?: unknown }).id;
      if (typeof id !== 'string' || id === '') throw new MissingArgumentError(`users[${index}].id is required`);
      return { ...fields, id };
    });
  },
};

export const userRoutes: RestRoute[] = [
  {
    method: 'get',
    path: '/users',
    operation: document('./operations/list-users.graphql'),
    description: {
      operationId: 'listUsers',
      summary: 'List users',
      description: 'Ordered by name, then id. Calendar URLs are never listed.',
      tags: ['Users'],
      scope: 'users.read',
      parameters: [userQueryParameter, ...classicPaginationParameters, indexIncludes],
      responses: { 200: { description: 'A page of users.', schema: classicPage('users', schemaRef('User')) } },
      errors: [400, 403],
    },
    variables: ({ query }) => {
      const page = classicPagination(query);
      return { query: single(query, 'query') ?? null, first: page.limit, offset: page.offset, withTotal: page.total };
    },
    respond: (data: ListUsersQuery, { query }) => {
      const page = classicPagination(query);
      return {
        status: 200,
        body: {
          users: data.users.nodes.map(presentUser),
          limit: page.limit,
          offset: page.offset,
          more: data.users.pageInfo.hasNextPage,
          total: data.users.totalCount ?? null,
        },
      };
    },
  } satisfies RestRoute<ListUsersQuery>,
  {
    method: 'get',
    path: '/users/me',
    operation: document('./operations/current-user.graphql'),
    description: {
      operationId: 'getCurrentUser',
      summary: 'Show the current user',
      description: 'The user the credential acts as, with their calendar URLs when the credential may read them (an API key of the user, or a token with users.write); an account key has none: 400.',
      tags: ['Users'],
      scope: 'users.read',
      parameters: [showIncludes],
      responses: { 200: userResponse('The current user.') },
      errors: [400, 403],
    },
    variables: ({ query, principal }) => {
      const self = actingUserId(principal);
      const asked = includes(query, USER_SHOW_INCLUDES).has('calendar_urls');
      return { withCalendarUrls: asked || (self !== undefined && policy.mayReadCalendarUrls(principal, self)) };
    },
    respond: (data: CurrentUserQuery) => ({ status: 200, body: { user: presentUser(data.viewer) } }),
  } satisfies RestRoute<CurrentUserQuery>,
  {
    method: 'get',
    path: '/users/:id',
    operation: document('./operations/show-user.graphql'),
    description: {
      operationId: 'getUser',
      summary: 'Show a user',
      tags: ['Users'],
      scope: 'users.read',
      parameters: [userIdParameter, showIncludes],
      responses: { 200: userResponse('The user.') },
      errors: [400, 403, 404],
    },
    variables: ({ params, query, principal }) => {
      const included = includes(query, USER_SHOW_INCLUDES);
      // Automatically for one's own profile when the credential may read them (a token needs users.write);
      // otherwise only when asked, and then the field's rule answers 403 with the reason.
      const automatic = policy.isSelf(principal, params.id) && policy.mayReadCalendarUrls(principal, params.id);
      return { id: params.id, withCalendarUrls: included.has('calendar_urls') || automatic };
    },
    respond: (data: ShowUserQuery) => ({ status: 200, body: { user: presentUser(data.user) } }),
  } satisfies RestRoute<ShowUserQuery>,
  {
    method: 'post',
    path: '/users',
    operation: document('./operations/create-user.graphql'),
    description: {
      operationId: 'createUser',
      summary: 'Create a user',
      description: 'Needs can_update_user.',
      tags: ['Users'],
      scope: 'users.write',
      requestBody: createUserBody,
      responses: { 201: userResponse('The created user.') },
      errors: [400, 403, 409],
    },
    variables: ({ body }) => ({ input: createUserBody.read(body) }),
    respond: (data: CreateUserMutation) => ({ status: 201, body: { user: presentUser(data.createUser.user) } }),
  } satisfies RestRoute<CreateUserMutation>,
  {
    method: 'put',
    path: '/users/:id',
    operation: document('./operations/update-user.graphql'),
    description: {
      operationId: 'updateUser',
      summary: 'Update a user',
      description: 'Oneself (profile fields, not role, unless a read-only role), or anyone with can_update_user.',
      tags: ['Users'],
      scope: 'users.write',
      parameters: [userIdParameter],
      requestBody: updateUserBody,
      responses: { 200: userResponse('The updated user.') },
      errors: [400, 403, 404, 409],
    },
    variables: ({ params, body }) => ({ input: { ...updateUserBody.read(body), id: params.id } }),
    respond: (data: UpdateUserMutation) => ({ status: 200, body: { user: presentUser(data.updateUser.user) } }),
  } satisfies RestRoute<UpdateUserMutation>,
  {
    method: 'put',
    path: '/users',
    operation: document('./operations/update-users.graphql'),
    description: {
      operationId: 'updateUsers',
      summary: 'Update multiple users',
      description: 'All or nothing: one bad element is 400 naming it, and nothing changes.',
      tags: ['Users'],
      scope: 'users.write',
      requestBody: updateUsersBody,
      responses: { 200: { description: 'The updated users.', schema: { type: 'object', required: ['users'], properties: { users: { type: 'array', items: schemaRef('User') } } } } },
      errors: [400, 403, 404, 409],
    },
    variables: ({ body }) => ({ input: { users: updateUsersBody.read(body) } }),
    respond: (data: UpdateUsersMutation) => ({ status: 200, body: { users: data.updateUsers.users.map(presentUser) } }),
  } satisfies RestRoute<UpdateUsersMutation>,
  {
    method: 'delete',
    path: '/users/:id',
    operation: operationDocument(import.meta.url, './operations/delete-user.graphql'),
    description: {
      operationId: 'deleteUser',
      summary: 'Delete a user',
      description: 'Revokes their delegations and API keys, invalidates their calendar key and removes their subscriptions, at once. The owner cannot be deleted (400).',
      tags: ['Users'],
      scope: 'users.write',
      parameters: [userIdParameter],
      responses: { 204: { description: 'Deleted; no body.' } },
      errors: [400, 403, 404],
    },
    variables: ({ params }) => ({ input: { id: params.id } }),
    respond: () => ({ status: 204 }),
  },
];
