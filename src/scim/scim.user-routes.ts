import type { CreateScimUserMutation, ListScimUsersQuery, ShowScimUserQuery, UpdateScimUserMutation } from '../graphql/generated/operations.js';
import { operationDocument } from '../rest/route.js';
import { MAX_SCIM_PAGE_SIZE, listResponse } from './scim.discovery.js';
import { ScimInputError } from './scim.errors.js';
import { userFilterLookups } from './scim.filter.js';
import { applyPatch } from './scim.patch.js';
import type { ScimRequest, ScimRoute } from './scim.route-row.js';
import { changesBetween, changesFromResource, presentScimUser } from './scim.user.js';

const document = (file: string) => operationDocument(import.meta.url, file, './operations/scim-user-fields.graphql');
/** The classic paging window of the listing: startIndex - 1 + count at most this. */
const MAX_WINDOW = 10_000;

type ScimUserData = ShowScimUserQuery['user'];

function single(query: ScimRequest['query'], name: string): string | undefined {
  const value = query[name];
  if (Array.isArray(value)) throw new ScimInputError('invalidValue', `${name} may be given once`);
  return value;
}

function integerParameter(query: ScimRequest['query'], name: string, fallback: number): number {
  const raw = single(query, name);
  if (raw === undefined || raw === '') return fallback;
  if (!/^-?\d{1,9}$/.test(raw.trim())) throw new ScimInputError('invalidValue', `${name} must be an integer`);
  return Number(raw.trim());
}

/** RFC 7644 section 3.4.2.4: startIndex below 1 is 1, a negative count is 0; count is served as at most 100. */
export function scimPage(query: ScimRequest['query']): { startIndex: number; count: number } {
  const startIndex = Math.max(1, integerParameter(query, 'startIndex', 1));
  const count = Math.min(MAX_SCIM_PAGE_SIZE, Math.max(0, integerParameter(query, 'count', MAX_SCIM_PAGE_SIZE)));
  if (startIndex - 1 + Math.max(count, 1) > MAX_WINDOW) throw new ScimInputError('invalidValue', `startIndex - 1 + count must be at most ${MAX_WINDOW}`);
  return { startIndex, count };
}

const userResponse = (status: number, user: ScimUserData, request: ScimRequest) => {
  const resource = presentScimUser(user, request.apiUrl);
  return { status, body: resource, headers: { ETag: resource.meta.version, Location: resource.meta.location } };
};

/** The If-Match version for a write that has no read before it (PUT): the first named, unless `*`. */
const expectedVersion = (request: ScimRequest) => (request.ifMatch?.includes('*') ? undefined : request.ifMatch?.[0]);

export const scimUserRoutes: ScimRoute[] = [
  {
    method: 'get',
    path: '/Users',
    operation: document('./operations/list-scim-users.graphql'),
    description: {
      operationId: 'listScimUsers',
      summary: 'List or look up users',
      description: 'Ordered by name, then id. `filter`: `eq` on userName, externalId, id, emails.value (also `emails[type eq "work"].value`), joined by and/or; each `eq` is one index look-up.',
      parameters: ['filter', 'startIndex', 'count'],
      responses: { 200: { description: 'A ListResponse of users.', schema: 'UserListResponse' }, 400: { description: 'Bad filter or paging.' } },
    },
    variables: ({ query }) => {
      const { startIndex, count } = scimPage(query);
      const filter = single(query, 'filter');
      const match = filter === undefined || filter.trim() === '' ? null : userFilterLookups(filter);
      return { match, first: Math.max(count, 1), offset: startIndex - 1 };
    },
    respond: (data: ListScimUsersQuery, request) => {
      const { startIndex, count } = scimPage(request.query);
      const users = data.users.nodes.slice(0, count).map((user) => presentScimUser(user, request.apiUrl));
      return { status: 200, body: listResponse(users, data.users.totalCount, startIndex) };
    },
  } satisfies ScimRoute<ListScimUsersQuery>,
  {
    method: 'get',
    path: '/Users/:id',
    operation: document('./operations/show-scim-user.graphql'),
    description: { operationId: 'getScimUser', summary: 'Show a user', parameters: ['id'], responses: { 200: { description: 'The user.', schema: 'User' }, 404: { description: 'No such user in this account.' } } },
    variables: ({ params }) => ({ id: params.id }),
    respond: (data: ShowScimUserQuery, request) => userResponse(200, data.user, request),
  } satisfies ScimRoute<ShowScimUserQuery>,
  {
    method: 'post',
    path: '/Users',
    operation: document('./operations/create-scim-user.graphql'),
    description: {
      operationId: 'createScimUser',
      summary: 'Create a user',
      description: 'userName (the email) and displayName (or name) are required; `active: false` creates the user suspended.',
      requestSchema: 'User',
      responses: { 201: { description: 'The created user.', schema: 'User' }, 409: { description: 'userName or externalId already taken (`uniqueness`).' } },
    },
    variables: ({ body }) => ({ input: changesFromResource(body, 'create') }),
    respond: (data: CreateScimUserMutation, request) => userResponse(201, data.createUser.user, request),
  } satisfies ScimRoute<CreateScimUserMutation>,
  {
    method: 'put',
    path: '/Users/:id',
    operation: document('./operations/update-scim-user.graphql'),
    description: {
      operationId: 'replaceScimUser',
      summary: 'Replace a user',
      description: 'Replaces the writable attributes: an absent title or externalId is cleared; an absent active or role is kept.',
      parameters: ['id', 'If-Match'],
      requestSchema: 'User',
      responses: { 200: { description: 'The user.', schema: 'User' }, 404: { description: 'No such user.' }, 409: { description: 'Taken userName or externalId.' }, 412: { description: 'If-Match names a stale version.' } },
    },
    variables: (request) => ({ input: { ...changesFromResource(request.body, 'replace'), id: request.params.id, expectedVersion: expectedVersion(request) ?? null } }),
    respond: (data: UpdateScimUserMutation, request) => userResponse(200, data.updateUser.user, request),
  } satisfies ScimRoute<UpdateScimUserMutation>,
  {
    method: 'patch',
    path: '/Users/:id',
    operation: document('./operations/update-scim-user.graphql'),
    current: {
      operation: document('./operations/show-scim-user.graphql'),
      variables: ({ params }) => ({ id: params.id }),
      version: (data: ShowScimUserQuery) => data.user.version,
    },
    description: {
      operationId: 'patchScimUser',
      summary: 'Change a user (PATCH operations)',
      description: 'RFC 7644 add/replace/remove, with or without path, op names in any case, booleans as strings; all operations or none. `active: false` suspends the user.',
      parameters: ['id', 'If-Match'],
      requestSchema: 'PatchOp',
      responses: { 200: { description: 'The user after the operations.', schema: 'User' }, 404: { description: 'No such user.' }, 409: { description: 'Taken userName or externalId.' }, 412: { description: 'If-Match names a stale version.' } },
    },
    variables: (request, current: ShowScimUserQuery | undefined) => {
      const before = presentScimUser(current!.user, request.apiUrl);
      const changes = changesBetween(before, applyPatch(before, request.body));
      // Written only if nobody changed the user since it was read.
      return { input: { ...changes, id: request.params.id, expectedVersion: current!.user.version } };
    },
    respond: (data: UpdateScimUserMutation, request) => userResponse(200, data.updateUser.user, request),
  } satisfies ScimRoute<UpdateScimUserMutation, ShowScimUserQuery>,
  {
    method: 'delete',
    path: '/Users/:id',
    operation: operationDocument(import.meta.url, './operations/delete-scim-user.graphql'),
    description: { operationId: 'deleteScimUser', summary: 'Delete a user', description: 'As DELETE /users/{id}: a tombstone; 404 afterwards. The owner cannot be deleted.', parameters: ['id'], responses: { 204: { description: 'Deleted.' }, 404: { description: 'No such user.' } } },
    variables: ({ params }) => ({ input: { id: params.id } }),
    respond: () => ({ status: 204 }),
  },
];
