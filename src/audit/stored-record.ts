import { createHash } from 'node:crypto';
import { CHANGE_ACTIONS } from '../db/change-journal.js';
import { METHOD_TYPES, type AuditRecordBody, type StoredReference } from './audit-record.js';

/**
 * Reading a stored record as untrusted data. The trail is written only through the owner's
 * functions, but those take whatever bytes their caller hands them (the app role may call them),
 * so a record the server did not write can be stored, well linked. Such a record is never a 500:
 * it is presented flagged as malformed, with what can be said of it (its place, time and the root
 * its batch names), and the rest of the page is served. `audit verify` names its batch.
 */

/** What every record of a batch shares, once checked. */
export type StoredContext = Omit<AuditRecordBody, 'rootResource' | 'details'>;

/** `[id, action, root type, root id, own body]`; records of chain versions 1 and 2 add the actor and method columns they hashed. */
export type RecordElement = [string, string, string, string, Pick<AuditRecordBody, 'rootResource' | 'details'>, ...Array<string | null>];

/** The action a malformed record is presented with: no write makes it. */
export const MALFORMED_ACTION = 'malformed';

const ACTIONS: ReadonlySet<string> = new Set(CHANGE_ACTIONS);
const METHODS: ReadonlySet<string> = new Set(METHOD_TYPES);

type Check = (value: unknown) => boolean;

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);
const isText: Check = (value) => typeof value === 'string';
const isTextOrNull: Check = (value) => value === null || typeof value === 'string';
const isOptionalTextOrNull: Check = (value) => value === undefined || isTextOrNull(value);

const isReference: Check = (value) => isObject(value) && isText(value.id) && isText(value.type) && isOptionalTextOrNull(value.summary);
const isListOf = (item: Check, nullable = false): Check => (value) => (nullable && value === null) || (Array.isArray(value) && value.every(item));
const isField: Check = (value) => isObject(value) && isText(value.name) && isOptionalTextOrNull(value.value) && isOptionalTextOrNull(value.beforeValue);
const isReferenceGroup: Check = (value) => isObject(value) && isText(value.name) && isListOf(isReference, true)(value.added ?? null) && isListOf(isReference, true)(value.removed ?? null);

/** Why a batch's shared part is not what the server writes, if it is not. */
export function contextProblem(context: unknown): string | null {
  if (!isObject(context)) return 'its context is not a JSON object';
  const where = context.executionContext;
  if (!isObject(where) || !isTextOrNull(where.requestId ?? null) || !isTextOrNull(where.remoteAddress ?? null)) return 'its execution context is not in the form the server writes';
  if (!isListOf(isReference)(context.actors)) return 'its actors are not a list of references';
  const method = context.method;
  if (!isObject(method) || !METHODS.has(method.type as string) || !isTextOrNull(method.truncatedToken ?? null) || !isTextOrNull(method.description ?? null)) return 'its method is not one the server writes';
  return null;
}

/** Why one record's own part is not what the server writes, if it is not. */
export function elementProblem(element: unknown): string | null {
  if (!Array.isArray(element) || element.length < 5) return 'it is not a record array';
  const [id, action, rootType, rootId, own] = element as unknown[];
  if (!isText(id) || !isText(rootType) || !isText(rootId)) return 'its id or root is not text';
  if (!ACTIONS.has(action as string)) return 'its action is not one the server writes';
  if (!isObject(own) || !isReference(own.rootResource)) return 'its root resource is not a reference';
  const details = own.details;
  if (!isObject(details) || !isReference(details.resource) || !isListOf(isField)(details.fields) || !isListOf(isReferenceGroup)(details.references)) {
    return 'its details are not in the form the server writes';
  }
  return null;
}

/** JSON text parsed, or the reason it could not be. */
export function parsedOrProblem(text: string, what: string): { value: unknown } | { problem: string } {
  try {
    return { value: JSON.parse(text) as unknown };
  } catch {
    return { problem: `${what} is not JSON` };
  }
}

/** A stand-in's id: a UUID (records' ids are), the same on every read of the same place. */
function standInId(position: number, root: { type: string; id: string }): string {
  const hex = createHash('sha256').update(`malformed audit record\n${position}\n${root.type}\n${root.id}`).digest('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-8${hex.slice(13, 16)}-${((parseInt(hex[16]!, 16) & 0x3) | 0x8).toString(16)}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

/** The stand-in for a record that cannot be read as written: its place is known, its content is not trusted. */
export function malformedElement(position: number, root: { type: string; id: string }): RecordElement {
  const reference: StoredReference = { id: root.id, type: `${root.type}_reference` };
  return [standInId(position, root), MALFORMED_ACTION, root.type, root.id, { rootResource: reference, details: { resource: reference, fields: [], references: [] } }];
}

/** What a malformed record says of who acted and how: nothing that could be believed. */
export const UNKNOWN_CONTEXT: StoredContext = {
  executionContext: { requestId: null, remoteAddress: null },
  actors: [],
  method: { type: 'other', truncatedToken: null, description: null },
};
