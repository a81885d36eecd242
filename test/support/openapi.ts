import fs from 'node:fs';
import path from 'node:path';
import { Ajv, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { isIanaTimeZone } from '../../src/users/user.validation.js';

/**
 * Validates real responses against the reference OpenAPI document that existing clients were
 * written against (../shared/reference, or OPENAPI_REFERENCE).
 */
const referencePath = process.env.OPENAPI_REFERENCE ?? path.resolve(process.cwd(), '../shared/reference/pagerduty-rest-v2.subset.openapi.json');
const reference = JSON.parse(fs.readFileSync(referencePath, 'utf8')) as {
  paths: Record<string, Record<string, { responses: Record<string, { $ref?: string; content?: Record<string, { schema: unknown }> }> }>>;
};

const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;
const ajv = new Ajv({ strict: false, allErrors: true });
addFormats(ajv);
ajv.addFormat('url', (value: string) => URL.canParse(value));
ajv.addFormat('tzinfo', (value: string) => isIanaTimeZone(value));
ajv.addSchema(reference, 'openapi');

const pointer = (...segments: string[]) => `openapi#/${segments.map((s) => s.replace(/~/g, '~0').replace(/\//g, '~1')).join('/')}`;
const validators = new Map<string, ValidateFunction>();
function validatorFor(ref: string): ValidateFunction {
  let validator = validators.get(ref);
  if (!validator) {
    validator = ajv.compile({ $ref: ref });
    validators.set(ref, validator);
  }
  return validator;
}

export const ERROR_SCHEMA = pointer('components', 'responses', 'Conflict', 'content', 'application/json', 'schema');
export const USER_SCHEMA = pointer('components', 'schemas', 'User');
export const OAUTH_DELEGATION_SCHEMA = pointer('components', 'schemas', 'OAuthDelegation');

export function assertMatchesSchema(ref: string, body: unknown, what: string): void {
  const validate = validatorFor(ref);
  if (!validate(body)) {
    throw new Error(`${what} does not match ${ref}:\n${ajv.errorsText(validate.errors, { separator: '\n' })}\nbody: ${JSON.stringify(body, null, 2).slice(0, 2000)}`);
  }
}

const REVOCATION_STATUS_SCHEMA = {
  type: 'object',
  required: ['pending_count', 'requested_at_end'],
  properties: { pending_count: { type: 'integer', minimum: 0 }, requested_at_end: { type: 'string', format: 'date-time' } },
};

function assertMatchesInlineSchema(schema: object, body: unknown, what: string): void {
  const validate = ajv.compile(schema);
  if (!validate(body)) throw new Error(`${what} does not match:\n${ajv.errorsText(validate.errors, { separator: '\n' })}\nbody: ${JSON.stringify(body, null, 2).slice(0, 2000)}`);
}

function findTemplate(method: string, actualPath: string): string | undefined {
  const candidates = Object.keys(reference.paths).filter((template) => reference.paths[template]![method]);
  const exact = candidates.find((template) => template === actualPath);
  if (exact) return exact;
  return candidates.find((template) => new RegExp(`^${template.replace(/\{[^}]+\}/g, '[^/]+')}$`).test(actualPath));
}

/**
 * Where the reference lacks an operation or a status, or SPEC decided a known slip, the rule
 * applied instead. Everything else is checked exactly as the reference says.
 */
const DECIDED: Record<string, (status: number, body: any) => void> = {
  // Not in the reference: each element is a User.
  'put /users': (status, body) => {
    if (status !== 200) return;
    if (!Array.isArray(body?.users)) throw new Error('PUT /users must answer {"users": [...]}');
    body.users.forEach((user: unknown, index: number) => assertMatchesSchema(USER_SCHEMA, user, `users[${index}]`));
  },
  // SPEC: wrapped as {"oauth_delegation": {...}}; the inner object is an OAuthDelegation.
  'get /users/{id}/oauth_delegations/{delegation_id}': (status, body) => {
    if (status !== 200) return;
    assertMatchesSchema(OAUTH_DELEGATION_SCHEMA, body?.oauth_delegation, 'oauth_delegation');
  },
  // The reference documents no 200 for this deprecated operation; SPEC section 6 decides its body.
  'get /oauth_delegations/revocation_requests/status': (status, body) => {
    if (status !== 200) return;
    assertMatchesInlineSchema(REVOCATION_STATUS_SCHEMA, body, 'revocation requests status');
  },
};

export function assertMatchesReference(method: string, actualPath: string, status: number, contentType: string | undefined, body: unknown): void {
  const lower = method.toLowerCase();
  const pathOnly = actualPath.split('?')[0]!;
  const template = findTemplate(lower, pathOnly) ?? (lower === 'put' && pathOnly === '/users' ? '/users' : undefined);
  const what = `${method.toUpperCase()} ${actualPath} -> ${status}`;
  if (status === 204) {
    if (body !== undefined && body !== '' && !(typeof body === 'object' && body !== null && Object.keys(body).length === 0)) throw new Error(`${what} must have no body`);
    return;
  }
  if (!contentType?.startsWith('application/json; charset=utf-8')) throw new Error(`${what} has Content-Type ${contentType}, expected application/json; charset=utf-8`);
  if (status >= 400) {
    assertMatchesSchema(ERROR_SCHEMA, body, what);
    const error = (body as { error?: { code?: unknown; message?: unknown; errors?: unknown } }).error;
    if (typeof error?.code !== 'number' || typeof error.message !== 'string' || !Array.isArray(error.errors)) throw new Error(`${what}: error envelope needs message, code and errors`);
    return;
  }
  if (!template) throw new Error(`${what}: the reference OpenAPI document has no such operation`);
  const decided = DECIDED[`${lower} ${template}`];
  if (decided) return decided(status, body);
  const operation = reference.paths[template]![lower]!;
  const response = operation.responses[String(status)];
  if (!response) throw new Error(`${what}: status ${status} is not documented for ${lower.toUpperCase()} ${template}`);
  if (!response.content && !response.$ref) return;
  assertMatchesSchema(pointer('paths', template, lower, 'responses', String(status), 'content', 'application/json', 'schema'), body, what);
}
