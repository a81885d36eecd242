import fs from 'node:fs';
import path from 'node:path';
import { Ajv, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import supertest from 'supertest';

/**
 * Validates SCIM responses against the reference SCIM document's schemas
 * (../shared/reference/pagerduty-scim-v2.openapi.json). One deliberate deviation:
 * user ids are this product's 7-character ids, so the reference's 26-character minimum is lifted.
 */
const referencePath = process.env.SCIM_OPENAPI_REFERENCE ?? path.resolve(process.cwd(), '../shared/reference/pagerduty-scim-v2.openapi.json');
const reference = JSON.parse(fs.readFileSync(referencePath, 'utf8')) as {
  paths: Record<string, Record<string, { responses: Record<string, { content?: Record<string, { schema: unknown }> }> }>>;
};

function liftIdLength(node: unknown): void {
  if (Array.isArray(node)) return node.forEach(liftIdLength);
  if (typeof node !== 'object' || node === null) return;
  const object = node as Record<string, unknown>;
  if (object.title === 'ResourceIdentifier') delete object.minLength;
  Object.values(object).forEach(liftIdLength);
}
liftIdLength(reference);

const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;
const ajv = new Ajv({ strict: false, allErrors: true });
addFormats(ajv);
ajv.addSchema(reference, 'scim');
const validators = new Map<string, ValidateFunction>();
const pointer = (...segments: string[]) => `scim#/${segments.map((s) => s.replace(/~/g, '~0').replace(/\//g, '~1')).join('/')}`;

function validate(ref: string, body: unknown, what: string): void {
  let validator = validators.get(ref);
  if (!validator) validators.set(ref, (validator = ajv.compile({ $ref: ref })));
  if (!validator(body)) throw new Error(`${what} does not match ${ref}:\n${ajv.errorsText(validator.errors, { separator: '\n' })}\nbody: ${JSON.stringify(body, null, 2).slice(0, 2000)}`);
}

const ERROR_REF = pointer('components', 'schemas', 'BadRequestErrorResponse');
/** Operations the product serves that the reference lacks, and the schema their answer follows. */
const EXTRA: Record<string, string> = { 'get /ResourceTypes/User': pointer('components', 'schemas', 'ResourceType') };

export function assertScimResponse(method: string, fullPath: string, status: number, contentType: string | undefined, body: unknown): void {
  const lower = method.toLowerCase();
  const scimPath = fullPath.split('?')[0]!.replace(/^\/scim\/v2/, '');
  const what = `${method.toUpperCase()} ${fullPath} -> ${status}`;
  if (status === 204) {
    if (body !== undefined && body !== '' && !(typeof body === 'object' && body !== null && Object.keys(body).length === 0)) throw new Error(`${what} must have no body`);
    return;
  }
  if (!contentType?.startsWith('application/scim+json')) throw new Error(`${what} has Content-Type ${contentType}, expected application/scim+json`);
  if (status >= 400) {
    validate(ERROR_REF, body, what);
    if ((body as { status?: unknown }).status !== String(status)) throw new Error(`${what}: the error's status must be "${status}"`);
    return;
  }
  if (status >= 500) throw new Error(`${what}: a 5xx`);
  const extra = EXTRA[`${lower} ${scimPath}`];
  if (extra) return validate(extra, body, what);
  const template = Object.keys(reference.paths).find((candidate) => reference.paths[candidate]![lower] && new RegExp(`^${candidate.replace(/\{[^}]+\}/g, '[^/]+')}$`).test(scimPath));
  if (!template) throw new Error(`${what}: the reference SCIM document has no such operation`);
  const response = reference.paths[template]![lower]!.responses[String(status)];
  if (!response) throw new Error(`${what}: status ${status} is not documented for ${lower.toUpperCase()} ${template}`);
  if (!response.content) return;
  validate(pointer('paths', template, lower, 'responses', String(status), 'content', 'application/scim+json', 'schema'), body, what);
}

export type ScimCall = { token?: string; authorization?: string; body?: unknown; headers?: Record<string, string>; raw?: string; contentType?: string };

/** A SCIM request through the app, its answer checked against the reference document before it is returned. */
export async function scim(app: Parameters<typeof supertest>[0], method: 'get' | 'post' | 'put' | 'patch' | 'delete', path: string, call: ScimCall = {}): Promise<supertest.Response> {
  const authorization = call.authorization ?? (call.token ? `Bearer ${call.token}` : undefined);
  let request = supertest(app)[method](`/scim/v2${path}`).set({ Accept: 'application/scim+json', ...(authorization ? { Authorization: authorization } : {}), ...call.headers });
  if (call.raw !== undefined) request = request.set('Content-Type', call.contentType ?? 'application/scim+json').send(call.raw);
  else if (call.body !== undefined) request = request.set('Content-Type', call.contentType ?? 'application/scim+json').send(JSON.stringify(call.body));
  const response = await request;
  const body = response.status === 204 ? response.text : parseBody(response);
  assertScimResponse(method, `/scim/v2${path}`, response.status, response.headers['content-type'], body);
  response.body = body;
  return response;
}

function parseBody(response: supertest.Response): unknown {
  if (response.body && typeof response.body === 'object' && Object.keys(response.body).length) return response.body;
  try {
    return JSON.parse(response.text);
  } catch {
    return response.text;
  }
}
