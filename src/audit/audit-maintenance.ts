import type { EntityManager } from '@mikro-orm/sql';
import { recordChange } from '../db/change-journal.js';
import type { TransactionRunner } from '../db/transaction.js';
import { batchHash, chainHash, checkpointIsAuthentic, holdsOnlyChainedFields, signCheckpoint, type AuditCheckpoint } from './audit-chain.js';
import { batchRecords, walkBatches, type AuditRow, type BatchRow } from './audit-batches.js';
import type { PublicUrls } from '../http/runtime.js';
import { auditBodyOf } from './audit-record.js';
import { presentAuditRecord } from './audit-record.rest.js';
import { presentAuditRow } from './audit-records.service.js';

export type VerifyOutcome =
  | { ok: true; verified: number }
  | { ok: false; verified: number; recordId: string | null; position: number; problem: string };

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** What is wrong with a batch's records besides its hash, if anything: their shape, their offsets and the batch's summaries. */
function malformation(batch: BatchRow, records: ReturnType<typeof batchRecords>): string | undefined {
  const count = Number(batch.last_position) - Number(batch.first_position) + 1;
  const unreadable = records.find(({ row }) => row.malformed);
  if (unreadable) return `the record at position ${unreadable.row.position} is malformed: ${unreadable.row.malformed}`;
  if (records.length !== count) return `it holds ${records.length} record(s) where its positions say ${count}`;
  const offsets = batch.record_offsets;
  if (offsets[0] !== 1 || offsets.at(-1) !== batch.records.length || batch.records[0] !== 0x5b || batch.records.at(-1) !== 0x5d) return 'its record offsets do not cut its records';
  for (let index = 1; index + 1 < offsets.length; index++) if (batch.records[offsets[index]! - 1] !== 0x2c) return 'its record offsets do not cut its records';
  const ownFields = batch.chain_version === 3 ? 5 : 9;
  if (records.some(({ element }) => !Array.isArray(element) || element.length !== ownFields || typeof element[0] !== 'string' || !UUID.test(element[0]))) return 'a record is not in the form its chain version writes';
  const actions = new Set(records.map(({ element }) => element[1]));
  if (batch.actions.length !== actions.size || !batch.actions.every((action) => actions.has(action))) return 'its list of actions differs from its records';
  if (records.some(({ element }, index) => batch.record_root_types[index] !== element[2] || batch.record_root_ids[index] !== element[3])) return 'its list of roots differs from its records';
  return undefined;
}

/**
 * Whether each indexed record's entry in the roots index (what per-user reads go by) names its
 * record: the index is derived, so a writer could hide a record from them. Records past the
 * account's index head are read from their batches and have no entry yet.
 */
async function rootsDisagree(em: EntityManager, accountId: string, indexedThrough: number, checked: Array<{ batch: BatchRow; records: ReturnType<typeof batchRecords> }>): Promise<{ position: number; recordId: string } | undefined> {
  const batches = checked.filter(({ batch }) => Number(batch.last_position) <= indexedThrough);
  if (!batches.length) return undefined;
  const from = Number(batches[0]!.batch.first_position);
  const to = Number(batches.at(-1)!.batch.last_position);
  const roots = await em.execute<{ position: string | number; root_resource_type: string; root_resource_id: string; first_position: string | number; execution_time: Date | string }[]>(
    `select position, root_resource_type, root_resource_id, first_position, execution_time from audit_record_roots
      where account_id = ? and execution_time >= ? and execution_time <= ? and position >= ? and position <= ?`,
    [accountId, new Date(batches[0]!.batch.execution_time), new Date(batches.at(-1)!.batch.execution_time), from, to],
  );
  const byPosition = new Map<number, (typeof roots)[number][]>();
  for (const root of roots) byPosition.set(Number(root.position), [...(byPosition.get(Number(root.position)) ?? []), root]);
  for (const { batch, records } of batches) {
    for (const { row } of records) {
      const entries = byPosition.get(Number(row.position)) ?? [];
      const [entry] = entries;
      if (entries.length !== 1 || entry!.root_resource_type !== row.root_resource_type || entry!.root_resource_id !== row.root_resource_id
        || Number(entry!.first_position) !== Number(batch.first_position) || new Date(entry!.execution_time).getTime() !== new Date(batch.execution_time).getTime()) {
        return { position: Number(row.position), recordId: row.id };
      }
    }
  }
  return undefined;
}

/**
 * Walks the account's chain from its anchor (the last purged batch, else the start) and reports
 * the first record that was edited (its batch's hash no longer covers it), removed (a gap, or a
 * missing tail), inserted out of order (its batch does not follow the one before it), or hidden
 * from per-user reads (its roots index entry is missing or names another resource).
 */
export async function verifyAuditChain(em: EntityManager, accountId: string): Promise<VerifyOutcome> {
  const [head] = await em.execute<{ position: string | number; hash: string; anchor_position: string | number; anchor_hash: string }[]>(
    'select position, hash, anchor_position, anchor_hash from audit_chain_heads where account_id = ?',
    [accountId],
  );
  if (!head) return { ok: true, verified: 0 };
  const [index] = await em.execute<{ through_position: string | number }[]>('select through_position from audit_root_index_heads where account_id = ?', [accountId]);
  const indexedThrough = index ? Number(index.through_position) : 0;
  let expectedPosition = Number(head.anchor_position) + 1;
  let previousHash = head.anchor_hash;
  let verified = 0;
  let keyed = false;
  let pending: Array<{ batch: BatchRow; records: ReturnType<typeof batchRecords> }> = [];
  const checkRoots = async (): Promise<VerifyOutcome | undefined> => {
    const disagreement = await rootsDisagree(em, accountId, indexedThrough, pending);
    pending = [];
    return disagreement && { ok: false, verified, recordId: disagreement.recordId, position: disagreement.position, problem: 'hidden from per-user reads: its roots index entry is missing or names another resource' };
  };
  for await (const batch of walkBatches(em, accountId, { afterPosition: Number(head.anchor_position) })) {
    const first = Number(batch.first_position);
    let records: ReturnType<typeof batchRecords> = [];
    try {
      records = batchRecords(batch);
    } catch {
      // Unreadable records: reported below as edited, by the hash or the shape.
    }
    const failure = (problem: string): VerifyOutcome => ({ ok: false, verified, recordId: records[0]?.row.id ?? null, position: first, problem });
    if (first !== expectedPosition) return failure(`record(s) removed before it: expected position ${expectedPosition}, found ${first}`);
    if (batch.previous_hash !== previousHash) return failure('inserted out of order: it does not follow the record before it');
    // Unkeyed links end where keyed ones begin: a version 1 record after a keyed one was rewritten without the key.
    if (keyed && batch.chain_version === 1) return failure('edited: an unkeyed link after the chain became keyed');
    keyed ||= batch.chain_version !== 1;
    const header = { accountId: batch.account_id, firstPosition: first, lastPosition: Number(batch.last_position), executionTime: new Date(batch.execution_time) };
    if (batch.chain_version === 3) {
      if (batchHash(previousHash, header, batch.context, batch.records) !== batch.hash) return failure('edited: its hash no longer matches its content');
    } else if (batch.chain_version === 1 || batch.chain_version === 2) {
      if (header.lastPosition !== first || records.length !== 1 || records[0]!.element.length !== 9) return failure('edited: a record of chain version 1 or 2 is a batch of one');
      const { row, element } = records[0]!;
      const body = auditBodyOf(row.body);
      const recomputed = chainHash(previousHash, {
        accountId: batch.account_id, position: first, id: row.id, executionTime: header.executionTime, action: row.action,
        rootResourceType: row.root_resource_type, rootResourceId: row.root_resource_id,
        actorType: element[5] ?? null, actorId: element[6] ?? null, methodType: element[7] as string, methodTruncatedToken: element[8] ?? null,
        body,
      }, batch.chain_version);
      if (recomputed !== batch.hash || !holdsOnlyChainedFields(body)) return failure('edited: its hash no longer matches its content');
    } else {
      return failure(`edited: chain version ${batch.chain_version} does not exist`);
    }
    const malformed = malformation(batch, records);
    if (malformed) return failure(`edited: ${malformed}`);
    pending.push({ batch, records });
    if (pending.length >= 200) {
      const hidden = await checkRoots();
      if (hidden) return hidden;
    }
    previousHash = batch.hash;
    expectedPosition = header.lastPosition + 1;
    verified += records.length;
  }
  const hidden = await checkRoots();
  if (hidden) return hidden;
  const headPosition = Number(head.position);
  if (expectedPosition - 1 !== headPosition || previousHash !== head.hash) {
    return { ok: false, verified, recordId: null, position: expectedPosition, problem: `the newest record(s) removed: the chain ends at position ${expectedPosition - 1}, its head at ${headPosition}` };
  }
  return { ok: true, verified };
}

/**
 * Brings the roots index (per-user reads) up to the chain's heads: every account with batches past
 * its index head, or just `accountId`, a bounded number of batches per call of the owner's
 * `audit_index_roots`. Returns how many accounts it moved. Idempotent and safe on every instance
 * at once: an account another instance is indexing is skipped.
 */
export async function indexAuditRoots(em: EntityManager, accountId?: string, batchesPerCall = 1_000): Promise<number> {
  const behind = await em.execute<{ account_id: string; position: string | number }[]>(
    `select h.account_id, h.position from audit_chain_heads h left join audit_root_index_heads i on i.account_id = h.account_id
      where h.position > coalesce(i.through_position, 0)${accountId ? ' and h.account_id = ?' : ''} order by h.account_id`,
    accountId ? [accountId] : [],
  );
  for (const { account_id: account, position } of behind) {
    for (;;) {
      const [{ reached }] = await em.execute<{ reached: string | number | null }[]>('select audit_index_roots(?, ?) as reached', [account, batchesPerCall]);
      if (reached === null || Number(reached) >= Number(position)) break;
    }
  }
  return behind.length;
}

/** The youngest records the purge may delete, whoever calls it (`audit_purge_batch` refuses younger cutoffs): the owner's decision. */
export async function setAuditMinRetention(em: EntityManager, days: number): Promise<void> {
  await em.execute('update audit_policy set min_retention_days = ?', [days]);
}

/** The account's head, signed: undefined while the account has no record. */
export async function auditCheckpoint(em: EntityManager, accountId: string): Promise<AuditCheckpoint | undefined> {
  const [head] = await em.execute<{ position: string | number; hash: string; last_time: Date | string }[]>(
    'select position, hash, last_time from audit_chain_heads where account_id = ? and position > 0',
    [accountId],
  );
  return head ? signCheckpoint({ accountId, position: Number(head.position), hash: head.hash, time: new Date(head.last_time) }) : undefined;
}

/** Every account's checkpoint, for the server's hourly log line. */
export async function auditCheckpoints(em: EntityManager): Promise<AuditCheckpoint[]> {
  const heads = await em.execute<{ account_id: string; position: string | number; hash: string; last_time: Date | string }[]>(
    'select account_id, position, hash, last_time from audit_chain_heads where position > 0 order by account_id',
  );
  return heads.map((head) => signCheckpoint({ accountId: head.account_id, position: Number(head.position), hash: head.hash, time: new Date(head.last_time) }));
}

/**
 * What a checkpoint taken earlier says about the chain now: the record it ended at must still be
 * there with the same hash (unless purged since, behind the anchor), so records removed from the
 * end after it, the head moved back with them, are reported by their positions.
 */
export async function verifyAgainstCheckpoint(em: EntityManager, checkpoint: AuditCheckpoint): Promise<VerifyOutcome | undefined> {
  const failure = (problem: string, position: number): VerifyOutcome => ({ ok: false, verified: 0, recordId: null, position, problem });
  if (!checkpointIsAuthentic(checkpoint)) return failure('the checkpoint is not signed with this chain key (forged, altered, or another key)', checkpoint.position);
  const [head] = await em.execute<{ position: string | number; anchor_position: string | number }[]>(
    'select position, anchor_position from audit_chain_heads where account_id = ?',
    [checkpoint.accountId],
  );
  const headPosition = head ? Number(head.position) : 0;
  if (headPosition < checkpoint.position) {
    return failure(`records removed from the end after the checkpoint of ${checkpoint.time.toISOString()}: positions ${headPosition + 1} to ${checkpoint.position} are missing (the chain now ends at ${headPosition})`, headPosition + 1);
  }
  if (head && Number(head.anchor_position) >= checkpoint.position) return undefined;
  const [record] = await em.execute<{ hash: string; last_position: string | number }[]>(
    'select hash, last_position from audit_batches where account_id = ? and first_position <= ? order by first_position desc limit 1',
    [checkpoint.accountId, checkpoint.position],
  );
  // A head is always a batch's end: a checkpoint's position inside a batch means the batches were rewritten.
  if (!record || Number(record.last_position) !== checkpoint.position) return failure(`the record at the checkpoint's position ${checkpoint.position} is missing`, checkpoint.position);
  if (record.hash !== checkpoint.hash) return failure(`the chain was rewritten up to the checkpoint's position ${checkpoint.position}: its hash differs from the checkpoint's`, checkpoint.position);
  return undefined;
}

/**
 * Deletes the records older than the retention, oldest first in bounded batches, each batch one
 * write of its own that moves the chain's anchor and is itself recorded (action `purge`). The
 * only deletion the table's trigger lets through; `onPurged` hears each account purged (the
 * server logs a checkpoint of it).
 */
export async function purgeAuditRecords(
  em: EntityManager,
  transactions: TransactionRunner,
  options: { retentionDays: number; now?: Date; batch?: number; onPurged?: (accountId: string) => Promise<void> },
): Promise<number> {
  const cutoff = new Date((options.now ?? new Date()).getTime() - options.retentionDays * 86_400_000);
  const batch = options.batch ?? 10_000;
  const accounts = await em.execute<{ account_id: string }[]>(
    // The oldest remaining batch of each chain is its first by position (the primary key's first entry).
    `select h.account_id from audit_chain_heads h
      where (select b.execution_time from audit_batches b where b.account_id = h.account_id order by b.first_position limit 1) < ?
      order by h.account_id`,
    [cutoff],
  );
  let purged = 0;
  for (const { account_id: accountId } of accounts) {
    // A run purges only what existed when it began: its own purge records are never its prey, so it
    // ends even when the cutoff is in the future (a retention of 0 days) and each run is bounded.
    const [{ newest } = { newest: null }] = await em.execute<{ newest: string | number | null }[]>(
      'select last_position as newest from audit_batches where account_id = ? order by first_position desc limit 1',
      [accountId],
    );
    if (newest === null) continue;
    for (;;) {
      const removed = await transactions.run(em, async (tx) => {
        // The owner's function (migration 20261125040000) deletes under the head's lock and moves the anchor: the app's role may not delete itself.
        const [batchOutcome] = await tx.execute<{ purged: string | number; anchored_at: string | number | null }[]>(
          'select purged, anchored_at from audit_purge_batch(?, ?, ?, ?)',
          [accountId, cutoff, newest, batch],
        );
        const count = Number(batchOutcome?.purged ?? 0);
        if (!count) return 0;
        recordChange(tx, {
          accountId,
          action: 'purge',
          resource: { type: 'audit_record', id: accountId },
          fields: [
            { name: 'purged_count', value: String(count) },
            { name: 'purged_through_position', value: String(batchOutcome!.anchored_at) },
            { name: 'retention_days', value: String(options.retentionDays) },
          ],
        });
        return count;
      }, 'audit.purge');
      purged += removed;
      if (removed === 0) break;
    }
    if (options.onPurged) await options.onPurged(accountId);
  }
  return purged;
}

/** A record as a SIEM reads it: the public API's shape, plus its account, its place in the chain and its batch's link. */
function exportLine(batch: BatchRow, row: AuditRow, urls: PublicUrls): string {
  return JSON.stringify({
    ...presentAuditRecord(presentAuditRow(row, urls)),
    account_id: batch.account_id,
    position: Number(row.position),
    batch_first_position: Number(batch.first_position),
    batch_last_position: Number(batch.last_position),
    hash: batch.hash,
    previous_hash: batch.previous_hash,
    chain_version: batch.chain_version,
  });
}

/** Writes the account's records of the window as NDJSON, oldest first, a batch at a time; waits for the writer to drain. */
export async function exportAuditRecords(
  em: EntityManager,
  accountId: string,
  options: { since: Date; until: Date; urls: PublicUrls },
  write: (line: string) => Promise<void>,
): Promise<number> {
  let exported = 0;
  for await (const batch of walkBatches(em, accountId, { afterPosition: 0, since: options.since, until: options.until })) {
    for (const { row } of batchRecords(batch)) {
      await write(`${exportLine(batch, row, options.urls)}\n`);
      exported += 1;
    }
  }
  return exported;
}
