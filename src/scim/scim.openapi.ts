import type { oas31 } from 'openapi3-ts';
import { MAX_SCIM_PAGE_SIZE } from './scim.discovery.js';
import { PATCH_OP_SCHEMA } from './scim.patch.js';
import type { ScimRoute } from './scim.route-row.js';
import { SCIM_BASE_PATH, SCIM_USER_SCHEMA } from './scim.user.js';
import { scimAccessRow } from '../auth/access-table.js';

const SCIM_MEDIA = 'application/scim+json';
const ref = (name: string): oas31.ReferenceObject => ({ $ref: `#/components/schemas/${name}` });
const content = (schema: oas31.SchemaObject | oas31.ReferenceObject) => ({ [SCIM_MEDIA]: { schema }, 'application/json': { schema } });

const PARAMETERS: Record<string, oas31.ParameterObject> = {
  id: { name: 'id', in: 'path', required: true, description: 'The user id, the same as on REST and GraphQL.', schema: { type: 'string' } },
  filter: { name: 'filter', in: 'query', description: '`eq` on userName, externalId, id, emails.value (also `emails[type eq "work"].value`), joined by and/or.', schema: { type: 'string', maxLength: 1000 } },
  startIndex: { name: 'startIndex', in: 'query', description: '1-based index of the first result.', schema: { type: 'integer', minimum: 1, default: 1 } },
  count: { name: 'count', in: 'query', description: `Page size, at most ${MAX_SCIM_PAGE_SIZE}.`, schema: { type: 'integer', minimum: 0, maximum: MAX_SCIM_PAGE_SIZE, default: MAX_SCIM_PAGE_SIZE } },
  'If-Match': { name: 'If-Match', in: 'header', description: 'A `meta.version` (weak ETag): the change is refused with 412 if the user changed since.', schema: { type: 'string' } },
};

const SCHEMAS: Record<string, oas31.SchemaObject> = {
  User: {
    type: 'object',
    required: ['schemas', 'id', 'userName', 'displayName', 'roles', 'active', 'meta'],
    properties: {
      schemas: { type: 'array', items: { type: 'string', enum: [SCIM_USER_SCHEMA] } },
      id: { type: 'string', readOnly: true },
      externalId: { type: 'string', maxLength: 100 },
      userName: { type: 'string', format: 'email', maxLength: 100 },
      displayName: { type: 'string', maxLength: 100 },
      name: { type: 'object', properties: { formatted: { type: 'string' }, givenName: { type: 'string' }, familyName: { type: 'string' } } },
      emails: { type: 'array', items: { type: 'object', properties: { value: { type: 'string' }, type: { type: 'string' }, primary: { type: 'boolean' } } } },
      title: { type: 'string', maxLength: 100 },
      timezone: { type: 'string' },
      roles: { type: 'array', items: { type: 'object', required: ['type', 'value'], properties: { type: { const: 'base' }, value: { type: 'string' }, primary: { type: 'boolean' } } } },
      active: { type: 'boolean' },
      meta: {
        type: 'object',
        readOnly: true,
        properties: { resourceType: { const: 'User' }, created: { type: 'string', format: 'date-time' }, lastModified: { type: 'string', format: 'date-time' }, location: { type: 'string' }, version: { type: 'string' } },
      },
    },
  },
  UserListResponse: {
    type: 'object',
    required: ['schemas', 'totalResults', 'startIndex', 'itemsPerPage', 'Resources'],
    properties: {
      schemas: { type: 'array', items: { type: 'string' } },
      totalResults: { type: 'integer', minimum: 0 },
      startIndex: { type: 'integer', minimum: 1 },
      itemsPerPage: { type: 'integer', minimum: 0 },
      Resources: { type: 'array', items: ref('User') },
    },
  },
  PatchOp: {
    type: 'object',
    required: ['Operations'],
    properties: {
      schemas: { type: 'array', items: { type: 'string', enum: [PATCH_OP_SCHEMA] } },
      Operations: { type: 'array', minItems: 1, maxItems: 100, items: { type: 'object', required: ['op'], properties: { op: { type: 'string', description: 'add, replace or remove, in any case.' }, path: { type: 'string' }, value: {} } } },
    },
  },
  Error: {
    type: 'object',
    required: ['schemas', 'status', 'detail'],
    properties: {
      schemas: { type: 'array', items: { const: 'urn:ietf:params:scim:api:messages:2.0:Error' } },
      status: { type: 'string', description: 'The HTTP status, as a string.' },
      scimType: { type: 'string', enum: ['invalidFilter', 'tooMany', 'uniqueness', 'mutability', 'invalidSyntax', 'invalidPath', 'noTarget', 'invalidValue', 'invalidVers', 'sensitive'] },
      detail: { type: 'string' },
    },
  },
  Discovery: { type: 'object', description: 'ServiceProviderConfig, a Schema, or a ListResponse of Schemas or ResourceTypes (RFC 7643 sections 5 to 7).' },
};

const ERROR_STATUSES: Record<number, string> = { 400: 'Bad input (see scimType).', 401: 'No valid credential.', 403: 'The credential may not do this.', 429: 'Rate limit exceeded.' };
const OPEN_API_PATH = (path: string) => `${SCIM_BASE_PATH}${path.replace(/:(\w+)/g, '{$1}')}`;

/** The SCIM face's own OpenAPI 3.1 document, assembled from its route rows and served at /scim/v2/openapi.json. */
export function buildScimOpenApiDocument(routes: readonly ScimRoute[], apiUrl: string): oas31.OpenAPIObject {
  const paths: oas31.PathsObject = {};
  const errors = (statuses: Record<number, string>) => Object.fromEntries(
    Object.entries(statuses).map(([status, description]) => [status, { description, content: content(ref('Error')) }]),
  );
  for (const route of routes) {
    const { description } = route;
    const responses: oas31.ResponsesObject = {};
    for (const [status, response] of Object.entries(description.responses)) {
      responses[status] = response.schema ? { description: response.description, content: content(ref(response.schema)) } : { description: response.description, ...(Number(status) >= 400 ? { content: content(ref('Error')) } : {}) };
    }
    (paths[OPEN_API_PATH(route.path)] ??= {})[route.method] = {
      operationId: description.operationId,
      summary: description.summary,
      ...(description.description ? { description: description.description } : {}),
      tags: ['SCIM Users'],
      'x-scopes': scimAccessRow(description.operationId).requires,
      parameters: (description.parameters ?? []).map((name) => PARAMETERS[name]!),
      ...(description.requestSchema ? { requestBody: { required: true, content: content(ref(description.requestSchema)) } } : {}),
      responses: { ...errors(ERROR_STATUSES), ...responses },
    } as oas31.OperationObject;
  }
  for (const [path, summary] of [['/ServiceProviderConfig', 'Service provider configuration'], ['/Schemas', 'Schemas'], ['/Schemas/{id}', 'One schema'], ['/ResourceTypes', 'Resource types']] as const) {
    paths[`${SCIM_BASE_PATH}${path}`] = {
      get: {
        operationId: `get${path.replace(/[/{}]/g, '').replace(/^./, (c) => c.toUpperCase())}`,
        summary,
        tags: ['SCIM discovery'],
        ...(path.includes('{id}') ? { parameters: [{ ...PARAMETERS.id!, description: 'The schema URN.' }] } : {}),
        responses: { 200: { description: summary, content: content(ref('Discovery')) }, ...errors(ERROR_STATUSES), ...(path.includes('{id}') ? errors({ 404: 'No such schema.' }) : {}) },
      },
    };
  }
  return {
    openapi: '3.1.0',
    info: { title: 'SCIM 2.0 provisioning', version: '2', description: 'Users provisioned by an identity provider (RFC 7643/7644). Every operation runs the same GraphQL operations as the other faces.' },
    servers: [{ url: apiUrl }],
    security: [{ bearerToken: [] }],
    paths,
    components: {
      schemas: SCHEMAS,
      securitySchemes: { bearerToken: { type: 'http', scheme: 'bearer', description: 'A provisioning token, or an OAuth access token with users.read (and users.write to change users).' } },
    },
  };
}
