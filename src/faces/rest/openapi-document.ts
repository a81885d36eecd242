import type { oas31 } from 'openapi3-ts';
import { SCOPES } from '../../auth/scopes.js';
import { ERROR_TABLE } from '../../errors/error-table.js';
import { IDEMPOTENCY_KEY_MAX_LENGTH } from '../../http/idempotency.js';
import type { ErrorKind } from '../../errors/domain-errors.js';
import type { PlainOperationDescription, Schema } from '../../rest/description.js';
import type { RestRoute } from '../../rest/route.js';
import { referenceSchema } from '../../rest/openapi-schemas.js';

export interface DocumentSources {
  routes: readonly RestRoute[];
  schemas: Record<string, oas31.SchemaObject>;
  plainOperations: readonly PlainOperationDescription[];
}

export interface DocumentSettings {
  publicApiUrl: string;
  publicFeedUrl: string;
  apiVendor: string;
}

/** Statuses any v2 API route may answer, whatever it is asked: credentials, versioning, rate limit, failures. */
const COMMON_ERROR_STATUSES = [401, 406, 429, 500, 503] as const;

/** Methods that accept an `Idempotency-Key` (src/http/idempotency.ts). */
const IDEMPOTENT_METHODS = new Set(['post', 'put', 'delete']);

const ERROR_TITLES: Record<number, string> = {
  400: 'Invalid input (2001) or a missing required argument (2003); `errors` names the field.',
  401: 'Missing, malformed, unknown, disabled or revoked credential.',
  403: 'Access denied: role, read-only key, or a bearer token without the needed scope (named in `errors`).',
  404: 'Not found (also: deleted, or in another account).',
  406: 'Unsupported API version in `Accept`.',
  409: 'A request with the same `Idempotency-Key` is still running; retry after `Retry-After` seconds.',
  415: 'Request bodies must be application/json.',
  422: 'The payload fails validation (`errors` names each element), or the `Idempotency-Key` was used for another request.',
  429: 'Rate limit exceeded; retry after `Retry-After` seconds.',
  500: 'Internal error: no details, a request id to quote.',
  503: 'Temporarily unavailable; retry after `Retry-After` seconds.',
};

const RESPONSE_NAMES: Record<number, string> = {
  400: 'BadRequest', 401: 'Unauthorized', 403: 'Forbidden', 404: 'NotFound', 406: 'NotAcceptable', 409: 'Conflict',
  415: 'UnsupportedMediaType', 422: 'UnprocessableEntity', 429: 'TooManyRequests', 500: 'InternalServerError', 503: 'ServiceUnavailable',
};

const RATE_LIMIT_HEADERS: Record<string, oas31.ReferenceObject> = {
  'ratelimit-limit': { $ref: '#/components/headers/ratelimit-limit' },
  'ratelimit-remaining': { $ref: '#/components/headers/ratelimit-remaining' },
  'ratelimit-reset': { $ref: '#/components/headers/ratelimit-reset' },
};

/** The API error codes an HTTP status carries, read from the one error table. */
function apiCodesFor(status: number): number[] {
  const kinds = Object.keys(ERROR_TABLE) as ErrorKind[];
  return [...new Set(kinds.filter((kind) => ERROR_TABLE[kind].httpStatus === status).map((kind) => ERROR_TABLE[kind].apiErrorCode))].sort((a, b) => a - b);
}

function errorResponse(status: number): oas31.ResponseObject {
  const retry: oas31.HeadersObject = status === 409 || status === 429 || status === 503 ? { 'Retry-After': { $ref: '#/components/headers/Retry-After' } } : {};
  return {
    description: ERROR_TITLES[status] ?? 'Error',
    // A failure may come before the rate limiter ran (authentication's own query), so 5xx promise no budget headers.
    headers: { ...(status >= 500 ? {} : RATE_LIMIT_HEADERS), ...retry },
    content: {
      'application/json': {
        schema: {
          allOf: [
            { $ref: '#/components/schemas/Error' },
            { type: 'object', properties: { error: { type: 'object', properties: { code: { type: 'integer', enum: apiCodesFor(status) } } } } },
          ],
        },
      },
    },
  };
}

/** `/users/:id` (Express) as `/users/{id}` (OpenAPI), and the names of its path parameters. */
export function openApiPath(expressPath: string): { path: string; names: string[] } {
  const names: string[] = [];
  const path = expressPath.replace(/:([A-Za-z0-9_]+)/g, (_match, name: string) => {
    names.push(name);
    return `{${name}}`;
  });
  return { path, names };
}

function describeRoute(route: RestRoute): { path: string; method: string; operation: oas31.OperationObject } {
  const where = `REST route ${route.method.toUpperCase()} ${route.path}`;
  const description = route.description;
  if (!description) throw new Error(`${where} has no description: every route row must describe itself for the OpenAPI document`);
  const { path, names } = openApiPath(route.path);
  const parameters = description.parameters ?? [];
  const described = parameters.filter((parameter) => parameter.in === 'path').map((parameter) => parameter.name);
  if (names.join() !== described.join()) throw new Error(`${where} describes path parameters [${described.join(', ')}] but its path has [${names.join(', ')}]`);

  const responses: oas31.ResponsesObject = {};
  for (const [status, success] of Object.entries(description.responses)) {
    const deprecation = route.successor
      ? { Deprecation: { $ref: '#/components/headers/Deprecation' }, Link: { $ref: '#/components/headers/Link' } }
      : {};
    responses[status] = {
      description: success.description,
      headers: { ...RATE_LIMIT_HEADERS, ...deprecation, ...success.headers },
      ...(success.schema ? { content: { 'application/json': { schema: success.schema } } } : {}),
    };
  }
  if (!Object.keys(responses).length) throw new Error(`${where} describes no success response`);
  const writes = IDEMPOTENT_METHODS.has(route.method);
  const errorStatuses = [...new Set([
    ...description.errors,
    ...COMMON_ERROR_STATUSES,
    ...(description.requestBody ? [400, 415] : []),
    // Idempotency-Key: a malformed key (400), the key still running (409) or reused for another request (422).
    ...(writes ? [400, 409, 422] : []),
  ])].sort((a, b) => a - b);
  for (const status of errorStatuses) responses[String(status)] = { $ref: `#/components/responses/${RESPONSE_NAMES[status]}` };

  const operation: oas31.OperationObject = {
    operationId: description.operationId,
    summary: description.summary,
    ...(description.description ? { description: description.description } : {}),
    tags: description.tags,
    ...(route.successor ? { deprecated: true, description: `${description.description ?? ''}\n\nDeprecated: use \`${route.successor}\`.`.trim() } : {}),
    parameters: [
      { $ref: '#/components/parameters/Accept' },
      ...(writes ? [{ $ref: '#/components/parameters/Idempotency-Key' }] : []),
      ...parameters.map((parameter): oas31.ParameterObject => ({
        name: parameter.name,
        in: parameter.in,
        description: parameter.description,
        required: parameter.in === 'path' ? true : parameter.required ?? false,
        schema: parameter.schema,
        ...(parameter.explode ? { style: 'form', explode: true } : {}),
      })),
    ],
    ...(description.requestBody
      ? { requestBody: { required: true, description: description.requestBody.description, content: { 'application/json': { schema: description.requestBody.schema } } } }
      : {}),
    responses,
    security: [{ api_key: [] }, { oauth_bearer: [description.scope] }],
  };
  return { path, method: route.method, operation };
}

/** Every `$ref` must land on a component the document has: a typo fails the start, not a client. */
function assertReferencesResolve(document: oas31.OpenAPIObject): void {
  const missing = new Set<string>();
  const visit = (value: unknown) => {
    if (Array.isArray(value)) return value.forEach(visit);
    if (value === null || typeof value !== 'object') return;
    for (const [key, inner] of Object.entries(value)) {
      if (key === '$ref' && typeof inner === 'string') {
        const [, section, name] = /^#\/components\/([^/]+)\/([^/]+)$/.exec(inner) ?? [];
        const components = document.components as Record<string, Record<string, unknown> | undefined>;
        if (!section || !name || !components[section]?.[name]) missing.add(inner);
      } else visit(inner);
    }
  };
  visit(document.paths);
  visit(document.components);
  if (missing.size) throw new Error(`the OpenAPI document refers to missing components: ${[...missing].join(', ')}`);
}


const SECURITY_SCHEMES: Record<string, oas31.SecuritySchemeObject> = {
  api_key: {
    type: 'apiKey',
    in: 'header',
    name: 'Authorization',
    description: 'An API key, sent as `Authorization: Token token=<key>`: an account key (full access or read-only) or a user key.',
  },
  oauth_bearer: {
    type: 'http',
    scheme: 'bearer',
    description: `The access token of an OAuth delegation, sent as \`Authorization: Bearer <token>\`, limited to its scopes: ${SCOPES.join(', ')}. ` +
      'Each operation lists the scope it needs; without it the answer is 403 naming the scope.',
  },
};

function sharedParameters(vendorType: string): Record<string, oas31.ParameterObject> {
  return {
    'Idempotency-Key': {
      name: 'Idempotency-Key',
      in: 'header',
      description: `Makes a write safe to retry: the first outcome is kept for 24 hours for this credential, and a retry with the same key and ` +
        `request gets it back (with \`Idempotent-Replayed: true\`) without running again. 1 to ${IDEMPOTENCY_KEY_MAX_LENGTH} visible ASCII characters, e.g. a UUID.`,
      required: false,
      schema: { type: 'string', minLength: 1, maxLength: IDEMPOTENCY_KEY_MAX_LENGTH, pattern: '^[\\x21-\\x7E]+$' },
    },
    Accept: {
      name: 'Accept',
      in: 'header',
      description: `The versioning header: absent, \`*/*\`, \`application/json\` or \`${vendorType}\`. Any other version is 406.`,
      required: false,
      schema: { type: 'string', default: vendorType },
    },
  };
}

const SHARED_HEADERS: Record<string, oas31.HeaderObject> = {
  'ratelimit-limit': { description: 'Requests allowed per minute for this credential (or client address).', schema: { type: 'integer' } },
  'ratelimit-remaining': { description: 'Requests left in the current window.', schema: { type: 'integer' } },
  'ratelimit-reset': { description: 'Seconds until the window resets.', schema: { type: 'integer' } },
  'Retry-After': { description: 'Seconds to wait before retrying.', schema: { type: 'integer' } },
  Deprecation: { description: 'Always `true`: this operation is deprecated.', schema: { type: 'string', enum: ['true'] } },
  Link: { description: 'The successor operation: `<url>; rel="successor-version"; title="METHOD /path"`.', schema: { type: 'string' } },
};

const ERROR_ENVELOPE_SCHEMA: Schema = {
  type: 'object',
  description: 'The error envelope of every REST error.',
  required: ['error'],
  properties: {
    error: {
      type: 'object',
      required: ['message', 'code', 'errors'],
      properties: {
        message: { type: 'string' },
        code: { type: 'integer', description: 'The v2 API error code.' },
        errors: { type: 'array', items: { type: 'string' }, description: 'Details, each naming the field or parameter at fault.' },
      },
    },
  },
};

/** Every row's and plain route's operation, by path and method; a duplicate operation id or method stops the start. */
function describedPaths(sources: DocumentSources, settings: DocumentSettings): oas31.PathsObject {
  const paths: oas31.PathsObject = {};
  const operationIds = new Set<string>();
  const add = (path: string, method: string, operation: oas31.OperationObject, where: string) => {
    if (!operation.operationId) throw new Error(`${where} has no operationId`);
    if (operationIds.has(operation.operationId)) throw new Error(`${where} repeats operationId ${operation.operationId}`);
    operationIds.add(operation.operationId);
    const item = (paths[path] ??= {}) as Record<string, unknown>;
    if (item[method]) throw new Error(`${where} is described twice`);
    item[method] = operation;
  };
  for (const route of sources.routes) {
    const { path, method, operation } = describeRoute(route);
    add(path, method, operation, `REST route ${method.toUpperCase()} ${route.path}`);
  }
  for (const plain of sources.plainOperations) {
    const server = plain.server === 'feed' ? settings.publicFeedUrl : settings.publicApiUrl;
    add(plain.path, plain.method, plain.operation, `route ${plain.method.toUpperCase()} ${plain.path}`);
    if (server !== settings.publicApiUrl) (paths[plain.path] as oas31.PathItemObject).servers = [{ url: server }];
  }
  return paths;
}

/**
 * The REST face's OpenAPI 3.1 document, assembled from the route rows (and features' plain
 * routes) at start. A row without a description, a duplicate operation id, a path parameter
 * left undescribed or a dangling `$ref` stops the start.
 */
export function buildOpenApiDocument(sources: DocumentSources, settings: DocumentSettings): oas31.OpenAPIObject {
  const vendorType = `application/vnd.${settings.apiVendor.toLowerCase()}+json;version=2`;
  const paths = describedPaths(sources, settings);

  const errorStatuses = Object.keys(RESPONSE_NAMES).map(Number);
  const document: oas31.OpenAPIObject = {
    openapi: '3.1.0',
    info: {
      title: 'Account access REST API (v2)',
      version: '2',
      description:
        'The v2 REST facade of the account access gateway: users, OAuth delegations, calendar feed keys and notification subscriptions. ' +
        `Send \`Accept: ${vendorType}\` (or application/json); any other version is 406. Request bodies are JSON. ` +
        'Every response to an API route carries `ratelimit-limit`, `ratelimit-remaining` and `ratelimit-reset`. ' +
        'Errors are always `{"error": {"message", "code", "errors"}}`.',
    },
    servers: [{ url: settings.publicApiUrl }],
    security: [{ api_key: [] }],
    tags: [
      { name: 'Users', description: 'Users of the account, their calendar feed and subscriptions.' },
      { name: 'OAuth Delegations', description: 'Sign-ins and app authorizations acting for a user.' },
      { name: 'Calendar feed', description: 'The private iCal feed URL of a user (its key is its credential).' },
    ],
    paths,
    components: {
      securitySchemes: SECURITY_SCHEMES,
      parameters: sharedParameters(vendorType),
      headers: SHARED_HEADERS,
      responses: Object.fromEntries(errorStatuses.map((status) => [RESPONSE_NAMES[status], errorResponse(status)])),
      schemas: {
        Error: ERROR_ENVELOPE_SCHEMA,
        Reference: referenceSchema,
        ...sources.schemas,
      } satisfies Record<string, Schema>,
    },
  };
  assertReferencesResolve(document);
  return document;
}
