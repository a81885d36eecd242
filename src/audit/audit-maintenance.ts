import type { EntityManager } from '@mikro-orm/sql';
import { recordChange } from '../db/change-journal.js';
import type { TransactionRunner } from '../db/transaction.js';
import { chainHash, checkpointIsAuthentic, holdsOnlyChainedFields, signCheckpoint, type AuditCheckpoint, type ChainVersion } from './audit-chain.js';
import type { PublicUrls } from '../app/runtime.js';
import { auditBodyOf, type AuditRecordBody } from './audit-record.js';
import { presentAuditRecord } from './audit-record.rest.js';
import { presentAuditRow } from './audit-records.service.js';

const BATCH = 1_000;

interface StoredRow {
  account_id: string;
  position: string | number;
  id: string;
  execution_time: Date | string;
  action: string;
  root_resource_type: string;
  root_resource_id: string;
  actor_type: string | null;
  actor_id: string | null;
  method_type: string;
  method_truncated_token: string | null;
  body: AuditRecordBody | string;
  previous_hash: string;
  hash: string;
  chain_version: number;
}

const COLUMNS = 'account_id, position, id, execution_time, action, root_resource_type, root_resource_id, actor_type, actor_id, method_type, method_truncated_token, body, previous_hash, hash, chain_version';

/** The account's records from `afterPosition` on, oldest first, one bounded batch at a time: constant memory whatever the trail's length. */
async function* walk(em: EntityManager, accountId: string, options: { afterPosition: number; since?: Date; until?: Date }): AsyncGenerator<StoredRow> {
  let after = options.afterPosition;
  for (;;) {
    const window = options.since && options.until ? ' and execution_time >= ? and execution_time <= ?' : '';
    const rows = await em.execute<StoredRow[]>(
      `select ${COLUMNS} from audit_records_full where account_id = ? and position > ?${window} order by position limit ?`,
      [accountId, after, ...(window ? [options.since, options.until] : []), BATCH],
    );
    for (const row of rows) yield row;
    if (rows.length < BATCH) return;
    after = Number(rows[rows.length - 1]!.position);
  }
}

function bodyOf(row: StoredRow): AuditRecordBody {
  return auditBodyOf(row.body);
}

export type VerifyOutcome =
  | { ok: true; verified: number }
  | { ok: false; verified: number; recordId: string | null; position: number; problem: string };

/**
 * Walks the account's chain from its anchor (the last purged record, else the start) and reports
 * the first record that was edited (its hash no longer covers it), removed (a gap, or a missing
 * tail) or inserted out of order (it does not follow the record before it).
 */
export async function verifyAuditChain(em: EntityManager, accountId: string): Promise<VerifyOutcome> {
  const [head] = await em.execute<{ position: string | number; hash: string; anchor_position: string | number; anchor_hash: string }[]>(
    'select position, hash, anchor_position, anchor_hash from audit_chain_heads where account_id = ?',
    [accountId],
  );
  if (!head) return { ok: true, verified: 0 };
  let expectedPosition = Number(head.anchor_position) + 1;
  let previousHash = head.anchor_hash;
  let verified = 0;
  let keyed = false;
  for await (const row of walk(em, accountId, { afterPosition: Number(head.anchor_position) })) {
    const position = Number(row.position);
    const failure = (problem: string): VerifyOutcome => ({ ok: false, verified, recordId: row.id, position, problem });
    if (position !== expectedPosition) return failure(`record(s) removed before it: expected position ${expectedPosition}, found ${position}`);
    if (row.previous_hash !== previousHash) return failure('inserted out of order: it does not follow the record before it');
    // Unkeyed links end where keyed ones begin: a version 1 record after a version 2 one was rewritten without the key.
    if (keyed && row.chain_version === 1) return failure('edited: an unkeyed link after the chain became keyed');
    keyed ||= row.chain_version !== 1;
    const body = bodyOf(row);
    const recomputed = chainHash(previousHash, {
      accountId: row.account_id,
      position,
      id: row.id,
      executionTime: new Date(row.execution_time),
      action: row.action,
      rootResourceType: row.root_resource_type,
      rootResourceId: row.root_resource_id,
      actorType: row.actor_type,
      actorId: row.actor_id,
      methodType: row.method_type,
      methodTruncatedToken: row.method_truncated_token,
      body,
    }, row.chain_version as ChainVersion);
    if (recomputed !== row.hash || !holdsOnlyChainedFields(body)) return failure('edited: its hash no longer matches its content');
    previousHash = row.hash;
    expectedPosition = position + 1;
    verified += 1;
  }
  const headPosition = Number(head.position);
  if (expectedPosition - 1 !== headPosition || previousHash !== head.hash) {
    return { ok: false, verified, recordId: null, position: expectedPosition, problem: `the newest record(s) removed: the chain ends at position ${expectedPosition - 1}, its head at ${headPosition}` };
  }
  return { ok: true, verified };
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
  const [record] = await em.execute<{ hash: string }[]>('select hash from audit_records where account_id = ? and position = ?', [checkpoint.accountId, checkpoint.position]);
  if (!record) return failure(`the record at the checkpoint's position ${checkpoint.position} is missing`, checkpoint.position);
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
    // The oldest remaining record of each chain is its first by position (the primary key's first entry).
    `select h.account_id from audit_chain_heads h
      where (select r.execution_time from audit_records r where r.account_id = h.account_id order by r.position limit 1) < ?
      order by h.account_id`,
    [cutoff],
  );
  let purged = 0;
  for (const { account_id: accountId } of accounts) {
    // A run purges only what existed when it began: its own purge records are never its prey, so it
    // ends even when the cutoff is in the future (a retention of 0 days) and each run is bounded.
    const [{ newest } = { newest: null }] = await em.execute<{ newest: string | number | null }[]>('select max(position) as newest from audit_records where account_id = ?', [accountId]);
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

/** A record as a SIEM reads it: the public API's shape, plus its account and its place in the chain. */
function exportLine(row: StoredRow, urls: PublicUrls): string {
  return JSON.stringify({
    ...presentAuditRecord(presentAuditRow(row, urls)),
    account_id: row.account_id,
    position: Number(row.position),
    hash: row.hash,
    previous_hash: row.previous_hash,
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
  for await (const row of walk(em, accountId, { afterPosition: 0, since: options.since, until: options.until })) {
    await write(`${exportLine(row, options.urls)}\n`);
    exported += 1;
  }
  return exported;
}
