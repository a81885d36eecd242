import { InvalidInputError, MissingArgumentError } from '../errors/domain-errors.js';
import type { RestRoute } from '../rest/route.js';
import { operationDocument } from '../rest/route.js';
import { bodyField, classicPagination, includes, single } from '../rest/params.js';
import { policy } from '../auth/policy.js';
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
import { validateUserFields, type UserFields } from './user.validation.js';

/** Arrays the product holds none of: accepted in include[] and always returned empty. */
export const USER_INCLUDES = ['contact_methods', 'notification_rules', 'teams', 'subdomains'] as const;
/** Show (and the current user) also accept `calendar_urls`; the index never carries calendar URLs. */
export const USER_SHOW_INCLUDES = [...USER_INCLUDES, 'calendar_urls'] as const;

const document = (file: string) => operationDocument(import.meta.url, file, './operations/user-fields.graphql');

/** The v2 representation of a user, from the fields the REST documents select (calendar URLs only where selected). */
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
  };
}

const WRITABLE_FIELDS = {
  name: 'name',
  email: 'email',
  time_zone: 'timeZone',
  color: 'color',
  role: 'role',
  description: 'description',
  job_title: 'jobTitle',
} as const;

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
  for (const [restName, graphqlName] of Object.entries(WRITABLE_FIELDS)) {
    if (restName in body) (fields as Record<string, unknown>)[graphqlName] = body[restName];
  }
  const problems = validateUserFields(fields, { creating: options.creating, prefix: `${where}.` });
  if (problems.length) throw new InvalidInputError(problems);
  return { ...fields, ...(fields.role !== undefined ? { role: fields.role.toUpperCase() } : {}) };
}

export const userRoutes: RestRoute[] = [
  {
    method: 'get',
    path: '/users',
    operation: document('./operations/list-users.graphql'),
    variables: ({ query }) => {
      includes(query, USER_INCLUDES);
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
    variables: ({ query }) => {
      includes(query, USER_SHOW_INCLUDES);
      return {};
    },
    respond: (data: CurrentUserQuery) => ({ status: 200, body: { user: presentUser(data.viewer) } }),
  } satisfies RestRoute<CurrentUserQuery>,
  {
    method: 'get',
    path: '/users/:id',
    operation: document('./operations/show-user.graphql'),
    variables: ({ params, query, principal }) => {
      const included = includes(query, USER_SHOW_INCLUDES);
      // Automatically for one's own profile (user-level credentials); for anyone else only when asked,
      // and then the field's rule answers 403 unless the caller holds can_update_user.
      return { id: params.id, withCalendarUrls: included.has('calendar_urls') || policy.isSelf(principal, params.id) };
    },
    respond: (data: ShowUserQuery) => ({ status: 200, body: { user: presentUser(data.user) } }),
  } satisfies RestRoute<ShowUserQuery>,
  {
    method: 'post',
    path: '/users',
    operation: document('./operations/create-user.graphql'),
    variables: ({ body }) => ({ input: userFieldsFromBody(bodyField(body, 'user'), 'user', { creating: true }) }),
    respond: (data: CreateUserMutation) => ({ status: 201, body: { user: presentUser(data.createUser.user) } }),
  } satisfies RestRoute<CreateUserMutation>,
  {
    method: 'put',
    path: '/users/:id',
    operation: document('./operations/update-user.graphql'),
    variables: ({ params, body }) => ({ input: { ...userFieldsFromBody(bodyField(body, 'user'), 'user', { creating: false }), id: params.id } }),
    respond: (data: UpdateUserMutation) => ({ status: 200, body: { user: presentUser(data.updateUser.user) } }),
  } satisfies RestRoute<UpdateUserMutation>,
  {
    method: 'put',
    path: '/users',
    operation: document('./operations/update-users.graphql'),
    variables: ({ body }) => {
      const users = bodyField(body, 'users');
      if (!Array.isArray(users)) throw new InvalidInputError('users must be an array');
      if (users.length === 0 || users.length > MAX_USERS_PER_BULK_UPDATE) {
        throw new InvalidInputError(`users must hold 1 to ${MAX_USERS_PER_BULK_UPDATE} elements`);
      }
      return {
        input: {
          users: users.map((element: unknown, index) => {
            const fields = userFieldsFromBody(element, `users[${index}]`, { creating: false });
            const id = (element as { id?: unknown }).id;
            if (typeof id !== 'string' || id === '') throw new MissingArgumentError(`users[${index}].id is required`);
            return { ...fields, id };
          }),
        },
      };
    },
    respond: (data: UpdateUsersMutation) => ({ status: 200, body: { users: data.updateUsers.users.map(presentUser) } }),
  } satisfies RestRoute<UpdateUsersMutation>,
  {
    method: 'delete',
    path: '/users/:id',
    operation: operationDocument(import.meta.url, './operations/delete-user.graphql'),
    variables: ({ params }) => ({ input: { id: params.id } }),
    respond: () => ({ status: 204 }),
  },
];
