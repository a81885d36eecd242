import { scimPatch, ScimError, NoTarget, type ScimPatchOperation } from 'scim-patch';
import { ScimInputError } from './scim.errors.js';
import { SCIM_USER_SCHEMA, scimBoolean, type ScimUser } from './scim.user.js';

export const PATCH_OP_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';
export const MAX_PATCH_OPERATIONS = 100;
const MAX_PATH_LENGTH = 512;

/** Attributes of RFC 7643's User schema: the product holds some, the others are accepted and ignored. */
const USER_ATTRIBUTES = new Set([
  'username', 'name', 'displayname', 'nickname', 'profileurl', 'title', 'usertype', 'preferredlanguage', 'locale', 'timezone', 'active',
  'password', 'emails', 'phonenumbers', 'ims', 'photos', 'addresses', 'entitlements', 'roles', 'x509certificates', 'externalid',
]);
/** Set by the service provider only (RFC 7643 sections 3.1 and 4.1.2). */
const READ_ONLY_ATTRIBUTES = new Set(['id', 'meta', 'groups', 'schemas']);
const EXTENSION_PREFIX = /^urn:ietf:params:scim:schemas:extension:/i;
const CORE_PREFIX = `${SCIM_USER_SCHEMA}:`;

const syntax = (detail: string) => new ScimInputError('invalidSyntax', detail);

/**
 * RFC 7644 section 3.5.2 applied to the current user, all operations or none. scim-patch applies the
 * operations (paths with filters such as `emails[type eq "work"].value`, values without a path);
 * around it, what it does not do the way identity providers need:
 * - op names in any case: it lower-cases them for most checks but compares `remove` exactly, so
 *   they are lower-cased first;
 * - the core schema's URN prefix on paths and value keys is removed, and extension schemas the
 *   product does not hold (Entra ID's enterprise extension) are dropped instead of being added to
 *   the resource;
 * - read-only attributes (`id`, `meta`, `groups`) are refused as `mutability` rather than changed,
 *   attributes outside the User schema as `invalidPath`;
 * - `active` given as a string ("False") becomes a boolean.
 */
export function applyPatch(current: ScimUser, body: unknown): Record<string, unknown> {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw syntax('the request body must be a SCIM PatchOp object');
  const { schemas, Operations: operations } = body as { schemas?: unknown; Operations?: unknown };
  if (schemas !== undefined && (!Array.isArray(schemas) || !schemas.includes(PATCH_OP_SCHEMA))) throw syntax(`schemas must be ["${PATCH_OP_SCHEMA}"]`);
  if (!Array.isArray(operations) || operations.length === 0) throw syntax('Operations must be a non-empty array');
  if (operations.length > MAX_PATCH_OPERATIONS) throw new ScimInputError('tooMany', `Operations may hold at most ${MAX_PATCH_OPERATIONS} operations`);
  const normalized = operations.flatMap((operation, index) => normalizeOperation(operation, index));
  const resource = structuredClone(current) as unknown as Record<string, unknown>;
  if (normalized.length === 0) return resource;
  let patched: Record<string, unknown>;
  try {
    patched = scimPatch(resource as never, normalized, { mutateDocument: false, treatMissingAsAdd: true }) as unknown as Record<string, unknown>;
  } catch (error) {
    if (error instanceof NoTarget) throw new ScimInputError('noTarget', error.message);
    if (error instanceof ScimError) throw new ScimInputError(error.scimCode === 'invalidValue' ? 'invalidValue' : 'invalidPath', error.message);
    throw error;
  }
  if (patched.active !== undefined && patched.active !== null) patched.active = scimBoolean(patched.active, 'active');
  return patched;
}

function normalizeOperation(raw: unknown, index: number): ScimPatchOperation[] {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw syntax(`Operations[${index}] must be an object`);
  const { op, path, value } = raw as { op?: unknown; path?: unknown; value?: unknown };
  const name = typeof op === 'string' ? op.toLowerCase() : undefined;
  if (name !== 'add' && name !== 'replace' && name !== 'remove') throw syntax(`Operations[${index}].op must be add, replace or remove`);
  if (path !== undefined && path !== null && typeof path !== 'string') throw new ScimInputError('invalidPath', `Operations[${index}].path must be a string`);
  if (typeof path === 'string' && path.trim() !== '') {
    if (path.length > MAX_PATH_LENGTH) throw new ScimInputError('invalidPath', `Operations[${index}].path must be at most ${MAX_PATH_LENGTH} characters`);
    const target = withoutCorePrefix(path.trim());
    if (EXTENSION_PREFIX.test(target)) return [];
    checkAttribute(target, `Operations[${index}].path`);
    if (name === 'remove') return [{ op: 'remove', path: target, ...(value !== undefined ? { value } : {}) } as ScimPatchOperation];
    if (value === undefined) throw new ScimInputError('invalidValue', `Operations[${index}].value is required`);
    return [{ op: name, path: target, value } as ScimPatchOperation];
  }
  if (name === 'remove') throw new ScimInputError('noTarget', `Operations[${index}]: remove needs a path`);
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new ScimInputError('invalidValue', `Operations[${index}].value must be an object when there is no path`);
  const attributes: Record<string, unknown> = {};
  for (const [key, attributeValue] of Object.entries(value)) {
    const target = withoutCorePrefix(key);
    if (EXTENSION_PREFIX.test(target)) continue;
    // The core schema's URN as a key holds core attributes (RFC 7644 section 3.5.2 allows either).
    if (key === SCIM_USER_SCHEMA && typeof attributeValue === 'object' && attributeValue !== null && !Array.isArray(attributeValue)) {
      Object.assign(attributes, attributeValue);
      continue;
    }
    if (target.toLowerCase() === 'schemas') continue;
    checkAttribute(target, `Operations[${index}].value.${key}`);
    attributes[target] = attributeValue;
  }
  for (const key of Object.keys(attributes)) checkAttribute(key, `Operations[${index}].value.${key}`);
  return Object.keys(attributes).length ? [{ op: name, value: attributes } as ScimPatchOperation] : [];
}

function withoutCorePrefix(path: string): string {
  return path.toLowerCase().startsWith(CORE_PREFIX.toLowerCase()) ? path.slice(CORE_PREFIX.length) : path;
}

/** The attribute a path starts with (`name.givenName`, `emails[type eq "work"].value`) must be a writable User attribute. */
function checkAttribute(path: string, where: string): void {
  const attribute = /^[A-Za-z][A-Za-z0-9_$-]*/.exec(path)?.[0]?.toLowerCase();
  if (!attribute) throw new ScimInputError('invalidPath', `${where} is not a valid attribute path`);
  if (READ_ONLY_ATTRIBUTES.has(attribute)) throw new ScimInputError('mutability', `${where}: ${attribute} is read-only`);
  if (!USER_ATTRIBUTES.has(attribute)) throw new ScimInputError('invalidPath', `${where}: ${attribute} is not an attribute of the User schema`);
}
