import fs from 'node:fs';
import path from 'node:path';
import { Ajv, type ValidateFunction } from 'ajv';
import { Ajv2020 } from 'ajv/dist/2020.js';
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

/** The same public document's audit-record operations, validated the same way. */
const auditReferencePath = process.env.OPENAPI_AUDIT_REFERENCE ?? path.resolve(process.cwd(), '../shared/reference/pagerduty-rest-v2.audit-records.openapi.json');
const auditReference = withoutUntypedNullable(JSON.parse(fs.readFileSync(auditReferencePath, 'utf8'))) as typeof reference;

/**
 * OpenAPI 3.0's `nullable` needs a `type` beside it for Ajv; the audit document has one schema
 * (`response_metadata`) where it sits beside `anyOf` instead: the same meaning, said as null being one more alternative.
 */
function withoutUntypedNullable(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(withoutUntypedNullable);
  if (!node || typeof node !== 'object') return node;
  const entries = Object.entries(node as Record<string, unknown>).map(([key, value]) => [key, withoutUntypedNullable(value)] as const);
  const copy = Object.fromEntries(entries) as Record<string, unknown>;
  if (copy.nullable === true && copy.type === undefined && Array.isArray(copy.anyOf)) {
    delete copy.nullable;
    copy.anyOf = [...copy.anyOf, { type: 'null' }];
  }
  return copy;
}

const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;
const ajv = new Ajv({ strict: false, allErrors: true });
addFormats(ajv);
ajv.addFormat('url', (value: string) => URL.canParse(value));
ajv.addFormat('tzinfo', (value: string) => isIanaTimeZone(value));
ajv.addSchema(reference, 'openapi');
ajv.addSchema(auditReference, 'openapi-audit');

const pointerInto = (document: string, ...segments: string[]) => `${document}#/${segments.map((s) => s.replace(/~/g, '~0').replace(/\//g, '~1')).join('/')}`;
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

function findTemplate(method: string, actualPath: string, paths: Record<string, Record<string, unknown>> = reference.paths): string | undefined {
  const candidates = Object.keys(paths).filter((template) => paths[template]![method]);
  const exact = candidates.find((template) => template === actualPath);
  if (exact) return exact;
  return candidates.find((template) => new RegExp(`^${template.replace(/\{[^}]+\}/g, '[^/]+')}$`).test(actualPath));
}

/**
 * Where the reference lacks an operation or a status, or the product decided a known slip (docs/rest-api.md), the rule
 * applied instead. Everything else is checked exactly as the reference says.
 */
const DECIDED: Record<string, (status: number, body: any) => void> = {
  // Not in the reference: each element is a User.
  'put /users': (status, body) => {
    if (status !== 200) return;
    if (!Array.isArray(body?.users)) throw new Error('PUT /users must answer {"users": [...]}');
    body.users.forEach((user: unknown, index: number) => assertMatchesSchema(USER_SCHEMA, user, `users[${index}]`));
  },
  // Decided: wrapped as {"oauth_delegation": {...}}; the inner object is an OAuthDelegation.
  'get /users/{id}/oauth_delegations/{delegation_id}': (status, body) => {
    if (status !== 200) return;
    assertMatchesSchema(OAUTH_DELEGATION_SCHEMA, body?.oauth_delegation, 'oauth_delegation');
  },
  // The reference documents no 200 for this deprecated operation; the product decides its body (docs/rest-api.md).
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
  // 202 without a body: operations outside the reference that answer "accepted" and nothing more (POST /credentials/revoke).
  if (status === 204 || (status === 202 && !template)) {
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
  const auditTemplate = template ? undefined : findTemplate(lower, pathOnly, auditReference.paths);
  if (auditTemplate) {
    if (!auditReference.paths[auditTemplate]![lower]!.responses[String(status)]) throw new Error(`${what}: status ${status} is not documented in the audit reference`);
    return assertMatchesSchema(pointerInto('openapi-audit', 'paths', auditTemplate, lower, 'responses', String(status), 'content', 'application/json', 'schema'), body, what);
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

type ServedOperation = { responses: Record<string, { $ref?: string; headers?: Record<string, { $ref?: string }>; content?: Record<string, unknown> }> };
interface ServedDocument {
  paths: Record<string, Record<string, ServedOperation>>;
  components: { responses: Record<string, { headers?: Record<string, { $ref?: string }>; content?: Record<string, unknown> }> };
}

/**
 * Validates real responses against the service's own served OpenAPI 3.1 document (JSON Schema
 * 2020-12): the status must be documented for the operation, the body must match its schema and
 * every header the document promises (rate limits, deprecation, Retry-After) must be there.
 */
export class ServedDocumentChecker {
  private readonly ajv = new Ajv2020({ strict: false, allErrors: true });
  private readonly validators = new Map<string, ValidateFunction>();

  constructor(private readonly document: ServedDocument) {
    addFormats(this.ajv as unknown as Ajv);
    this.ajv.addSchema(document as object, 'served');
  }

  private validate(ref: string, body: unknown, what: string): void {
    let validator = this.validators.get(ref);
    if (!validator) {
      validator = this.ajv.compile({ $ref: ref });
      this.validators.set(ref, validator);
    }
    if (!validator(body)) {
      throw new Error(`${what} does not match the served document at ${ref}:\n${this.ajv.errorsText(validator.errors, { separator: '\n' })}\nbody: ${JSON.stringify(body, null, 2).slice(0, 2000)}`);
    }
  }

  check(method: string, actualPath: string, status: number, headers: Record<string, unknown>, body: unknown): void {
    const lower = method.toLowerCase();
    const pathOnly = actualPath.split('?')[0]!;
    const what = `${method.toUpperCase()} ${actualPath} -> ${status}`;
    const template = findTemplate(lower, pathOnly, this.document.paths);
    if (!template) {
      // Not an operation of the document (an unknown route): only the generic error envelope applies.
      if (status < 400) throw new Error(`${what}: the served document has no such operation`);
      return this.validate('served#/components/schemas/Error', body, what);
    }
    let response = this.document.paths[template]![lower]!.responses[String(status)];
    let at = `served#/${['paths', template, lower, 'responses', String(status)].map((s) => s.replace(/~/g, '~0').replace(/\//g, '~1')).join('/')}`;
    if (!response) throw new Error(`${what}: status ${status} is not documented for ${lower.toUpperCase()} ${template} in the served document`);
    if (response.$ref) {
      const name = response.$ref.split('/').pop()!;
      response = this.document.components.responses[name]!;
      at = `served#/components/responses/${name}`;
    }
    for (const header of Object.keys(response.headers ?? {})) {
      if (headers[header.toLowerCase()] === undefined) throw new Error(`${what}: the served document promises the ${header} header, which is missing`);
    }
    if (!response.content) {
      if (body !== undefined && body !== '' && !(typeof body === 'object' && body !== null && Object.keys(body).length === 0)) throw new Error(`${what} must have no body`);
      return;
    }
    this.validate(`${at}/content/application~1json/schema`, body, what);
  }
}
