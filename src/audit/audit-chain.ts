import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { deriveKey } from '../auth/server-secret.js';
import { orderedBody, type AuditRecordBody, type DraftBatch } from './audit-record.js';

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
 * One write's records as `audit_append_batch` stores them (chain version 3): what every record of
 * the batch shares (who acted, how, from where) once as `context`, and each record's own part,
 * `[id, action, root type, root id, {rootResource, details}]`, as one element of the JSON array
 * `records` (UTF-8 bytes, hashed and stored as they are), which `recordOffsets` cuts into elements.
 */
export interface StoredBatch {
  context: string;
  records: Buffer;
  /** The byte offset of each element in `records`, then the array's length. */
  recordOffsets: number[];
  /** The batch's distinct actions, for filtered reads to skip batches. */
  actions: string[];
  rootTypes: string[];
  rootIds: string[];
}

export function storedBatch(batch: DraftBatch): StoredBatch {
  // The bytes are hashed as stored, so no canonical key order is needed: the drafts' own order is kept.
  const elements = batch.records.map((draft) => JSON.stringify([draft.id, draft.action, draft.rootResourceType, draft.rootResourceId, { rootResource: draft.rootResource, details: draft.details }]));
  const text = `[${elements.join(',')}]`;
  const records = Buffer.from(text);
  const recordOffsets: number[] = [];
  let offset = 1;
  // ASCII only (the usual case): bytes are characters, and no element needs measuring.
  const ascii = records.length === text.length;
  for (const element of elements) {
    recordOffsets.push(offset);
    offset += (ascii ? element.length : Buffer.byteLength(element)) + 1;
  }
  recordOffsets.push(offset);
  return {
    context: JSON.stringify(batch.context),
    records,
    recordOffsets,
    actions: [...new Set(batch.records.map((draft) => draft.action))],
    rootTypes: batch.records.map((draft) => draft.rootResourceType),
    rootIds: batch.records.map((draft) => draft.rootResourceId),
  };
}

/** The elements of a batch's `records`, by its offsets; the JSON of each still to parse. (PGlite hands bytea over as a plain Uint8Array.) */
export function recordElements(records: Uint8Array, recordOffsets: readonly number[]): string[] {
  const bytes = Buffer.isBuffer(records) ? records : Buffer.from(records.buffer, records.byteOffset, records.byteLength);
  const elements: string[] = [];
  for (let index = 0; index + 1 < recordOffsets.length; index++) elements.push(bytes.toString('utf8', recordOffsets[index]!, recordOffsets[index + 1]! - 1));
  return elements;
}

/** A batch's place in the chain: what its link covers beside its context and records. */
export interface BatchHeader {
  accountId: string;
  firstPosition: number;
  lastPosition: number;
  executionTime: Date;
}

/**
 * The link of a batch (chain version 3) to the hash before it, as `audit_append_batch` computes
 * it: an HMAC under the chain key of the previous hash and the batch's own bytes, so editing,
 * removing, moving or re-linking any record of it without the key is seen.
 */
export function batchHash(previousHash: string, header: BatchHeader, context: string, records: Buffer): string {
  const place = JSON.stringify([header.accountId, String(header.firstPosition), String(header.lastPosition), header.executionTime.toISOString()]);
  return createHmac('sha256', chainKey)
    .update(previousHash)
    .update('\n')
    .update(`${place.slice(0, -1)},${context},`)
    .update(records)
    .update(']')
    .digest('hex');
}

/**
 * The key the chain (versions 2 and 3) and checkpoints are keyed with: derived from AUDIT_CHAIN_KEY, else
 * the server secret. The server and `accessctl` configure it at start from their configuration;
 * until then (tests, in one process) a fixed development key keeps writer and verifier agreeing.
 */
let chainKey: Buffer = deriveKey(Buffer.from('audit chain key of an unconfigured process'), 'audit-chain');
let chainKeyPadsHex = padsOf(chainKey);

export function configureAuditChainKey(secret: Buffer): void {
  chainKey = deriveKey(secret, 'audit-chain');
  chainKeyPadsHex = padsOf(chainKey);
}

/** The key's two HMAC pads (RFC 2104) as hex: a 32-byte key fills one 64-byte SHA-256 block. */
function padsOf(key: Buffer): { inner: string; outer: string } {
  const block = Buffer.alloc(64);
  key.copy(block);
  return { inner: Buffer.from(block.map((byte) => byte ^ 0x36)).toString('hex'), outer: Buffer.from(block.map((byte) => byte ^ 0x5c)).toString('hex') };
}

/**
 * The key's two HMAC pads, which `audit_append_batch` hashes with PostgreSQL's sha256(): the
 * database computes the keyed links without holding the key beyond the statement. Made once per
 * key, not per write.
 */
export function chainKeyPads(): { inner: string; outer: string } {
  return chainKeyPadsHex;
}

/**
 * The link of a record written before batches (chain versions 1 and 2) to the previous record's
 * hash. Version 2 is an HMAC, so a writer of the database without the key cannot re-link records
 * it changed. The record is serialized in one fixed order (`chainedContent`), so a body read back
 * from jsonb (which reorders keys) hashes the same.
 */
export function chainHash(previousHash: string, record: ChainedRecord, version: 1 | 2): string {
  const covered = JSON.stringify([record.accountId, String(record.position), record.id, record.executionTime.toISOString(), ...chainedContent(record)]);
  const digest = version === 1 ? createHash('sha256') : createHmac('sha256', chainKey);
  return digest.update(previousHash).update('\n').update(covered).digest('hex');
}

/** Where an account's chain ended at a moment, signed with the chain key: kept outside the database, it shows a truncated tail. */
export interface AuditCheckpoint {
  accountId: string;
  position: number;
  hash: string;
  time: Date;
  signature: string;
}

function checkpointSignature(checkpoint: Omit<AuditCheckpoint, 'signature'>): string {
  return createHmac('sha256', deriveKey(chainKey, 'audit-checkpoint'))
    .update(JSON.stringify([checkpoint.accountId, String(checkpoint.position), checkpoint.hash, checkpoint.time.toISOString()]))
    .digest('hex');
}

export function signCheckpoint(head: Omit<AuditCheckpoint, 'signature'>): AuditCheckpoint {
  return { ...head, signature: checkpointSignature(head) };
}

export function checkpointIsAuthentic(checkpoint: AuditCheckpoint): boolean {
  const expected = Buffer.from(checkpointSignature(checkpoint), 'hex');
  const given = Buffer.from(checkpoint.signature, 'hex');
  return given.length === expected.length && timingSafeEqual(given, expected);
}

/** A checkpoint as `audit checkpoint --json` prints it. */
export function checkpointJson(checkpoint: AuditCheckpoint): Record<string, string | number> {
  return { account_id: checkpoint.accountId, position: checkpoint.position, hash: checkpoint.hash, time: checkpoint.time.toISOString(), signature: checkpoint.signature };
}

/** A checkpoint as `audit checkpoint` prints it for people: one line, which `audit verify --checkpoint` reads back. */
export function checkpointLine(checkpoint: AuditCheckpoint): string {
  return `audit checkpoint account_id=${checkpoint.accountId} position=${checkpoint.position} hash=${checkpoint.hash} time=${checkpoint.time.toISOString()} signature=${checkpoint.signature}`;
}

/** Reads what `audit checkpoint` printed, plain or JSON; undefined when it is neither. */
export function parseCheckpoint(text: string): AuditCheckpoint | undefined {
  const trimmed = text.trim();
  let fields: Record<string, unknown>;
  if (trimmed.startsWith('{')) {
    try {
      fields = JSON.parse(trimmed) as Record<string, unknown>;
      // The server's log line carries it under `checkpoint`.
      if (fields.checkpoint && typeof fields.checkpoint === 'object') fields = fields.checkpoint as Record<string, unknown>;
    } catch {
      return undefined;
    }
  } else {
    const line = trimmed.split('\n').find((candidate) => candidate.startsWith('audit checkpoint '));
    if (!line) return undefined;
    fields = Object.fromEntries(line.slice('audit checkpoint '.length).split(' ').map((pair) => [pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1)]));
    fields.position = Number(fields.position);
  }
  const { account_id: accountId, position, hash, time, signature } = fields as { account_id?: unknown; position?: unknown; hash?: unknown; time?: unknown; signature?: unknown };
  if (typeof accountId !== 'string' || typeof position !== 'number' || !Number.isSafeInteger(position) || position < 0) return undefined;
  if (typeof hash !== 'string' || typeof time !== 'string' || typeof signature !== 'string' || !/^[0-9a-f]{64}$/.test(signature)) return undefined;
  const at = new Date(time);
  if (Number.isNaN(at.getTime())) return undefined;
  return { accountId, position, hash, time: at, signature };
}

/** True when a stored body holds exactly what `orderedBody` keeps: nothing added beside the fields the chain covers. */
export function holdsOnlyChainedFields(body: AuditRecordBody): boolean {
  return canonicalJson(body) === canonicalJson(orderedBody(body));
}
