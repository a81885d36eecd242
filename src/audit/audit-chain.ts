import { createHash } from 'node:crypto';
import { orderedBody, type AuditRecordBody } from './audit-record.js';

/** JSON with object keys sorted at every level: the same value hashes the same however it was stored (jsonb reorders keys). */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value ?? null);
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, field]) => field !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([key, field]) => `${JSON.stringify(key)}:${canonicalJson(field)}`).join(',')}}`;
}

/** The columns of a record the chain covers: everything it says, its place in the chain included. */
export interface ChainedRecord {
  accountId: string;
  position: number;
  id: string;
  executionTime: Date;
  action: string;
  rootResourceType: string;
  rootResourceId: string;
  actorType: string | null;
  actorId: string | null;
  methodType: string;
  methodTruncatedToken: string | null;
  body: AuditRecordBody;
}

/** What a record says besides its place in the chain (account, position, id, time), in the order the chain hashes it. */
export type ChainedContent = [
  action: string,
  rootResourceType: string,
  rootResourceId: string,
  actorType: string | null,
  actorId: string | null,
  methodType: string,
  methodTruncatedToken: string | null,
  body: AuditRecordBody,
];

export function chainedContent(record: Omit<ChainedRecord, 'accountId' | 'position' | 'id' | 'executionTime'>): ChainedContent {
  return [
    record.action,
    record.rootResourceType,
    record.rootResourceId,
    record.actorType,
    record.actorId,
    record.methodType,
    record.methodTruncatedToken,
    orderedBody(record.body),
  ];
}

/**
 * SHA-256 over the previous record's hash and this record: editing a record changes its hash,
 * removing one breaks the link of the next, and moving one changes the position its hash covers.
 * The record is serialized in one fixed order (`chainedContent`), so a body read back from jsonb
 * (which reorders keys) hashes the same. The write path computes the same digest in the database
 * (`audit_append_records`, where the chain's head is locked) from the JSON text of
 * `chainedContent`; this is the verifier's side.
 */
export function chainHash(previousHash: string, record: ChainedRecord): string {
  const covered = JSON.stringify([record.accountId, String(record.position), record.id, record.executionTime.toISOString(), ...chainedContent(record)]);
  return createHash('sha256').update(previousHash).update('\n').update(covered).digest('hex');
}

/** True when a stored body holds exactly what `orderedBody` keeps: nothing added beside the fields the chain covers. */
export function holdsOnlyChainedFields(body: AuditRecordBody): boolean {
  return canonicalJson(body) === canonicalJson(orderedBody(body));
}
