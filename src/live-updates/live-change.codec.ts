import type { Change } from '../db/change-journal.js';
import type { LiveChange } from '../graphql/live-session.js';

/** The one channel every instance listens on. */
export const LIVE_CHANNEL = 'live_changes';

/**
 * PostgreSQL refuses a NOTIFY payload of 8000 bytes or more; a transaction's changes are sent in
 * as many payloads as needed, each below this.
 */
export const MAX_PAYLOAD_BYTES = 7_500;

/** Field names of one change beyond this are not sent (the change says "fields unknown"). */
const MAX_FIELD_NAMES_BYTES = 1_000;

/** On the wire: short keys, ids and names only, never a value. */
interface WireChange {
  a: string;
  k: string;
  t: string;
  i: string;
  u?: string;
  f?: string[];
  x?: 1;
}

export function toLiveChange(change: Change): LiveChange {
  const names = change.fields?.map((field) => field.name);
  const fits = names !== undefined && Buffer.byteLength(names.join(',')) <= MAX_FIELD_NAMES_BYTES;
  return {
    accountId: change.accountId,
    action: change.action,
    resourceType: change.resource.type,
    resourceId: change.resource.id,
    ...(change.userId ? { userId: change.userId } : {}),
    ...(fits ? { fields: names } : {}),
    revokesAccess: change.revokesAccess === true,
  };
}

function toWire(change: LiveChange): WireChange {
  return {
    a: change.accountId,
    k: change.action,
    t: change.resourceType,
    i: change.resourceId,
    ...(change.userId ? { u: change.userId } : {}),
    ...(change.fields ? { f: change.fields } : {}),
    ...(change.revokesAccess ? { x: 1 as const } : {}),
  };
}

/** The payloads announcing `changes`, in order, each a JSON array below MAX_PAYLOAD_BYTES. */
export function encodeLiveChanges(changes: readonly LiveChange[]): string[] {
  const payloads: string[] = [];
  let batch: string[] = [];
  let size = 2;
  for (const change of changes) {
    const encoded = JSON.stringify(toWire(change));
    const bytes = Buffer.byteLength(encoded) + 1;
    if (bytes + 2 > MAX_PAYLOAD_BYTES) throw new Error(`a live change of ${change.resourceType} is too large to announce`);
    if (size + bytes > MAX_PAYLOAD_BYTES) {
      payloads.push(`[${batch.join(',')}]`);
      batch = [];
      size = 2;
    }
    batch.push(encoded);
    size += bytes;
  }
  if (batch.length) payloads.push(`[${batch.join(',')}]`);
  return payloads;
}

const isString = (value: unknown): value is string => typeof value === 'string';

/** The changes of one payload; whatever is not a well-formed change is left out (and counted by the caller). */
export function decodeLiveChanges(payload: string): { changes: LiveChange[]; malformed: number } {
  let parsed: unknown;
  try {
    parsed = JSON.parse(payload);
  } catch {
    return { changes: [], malformed: 1 };
  }
  if (!Array.isArray(parsed)) return { changes: [], malformed: 1 };
  const changes: LiveChange[] = [];
  let malformed = 0;
  for (const item of parsed as Partial<WireChange>[]) {
    if (!item || !isString(item.a) || !isString(item.k) || !isString(item.t) || !isString(item.i) || (item.u !== undefined && !isString(item.u)) || (item.f !== undefined && !(Array.isArray(item.f) && item.f.every(isString)))) {
      malformed++;
      continue;
    }
    changes.push({ accountId: item.a, action: item.k, resourceType: item.t, resourceId: item.i, ...(item.u ? { userId: item.u } : {}), ...(item.f ? { fields: item.f } : {}), revokesAccess: item.x === 1 });
  }
  return { changes, malformed };
}
