import type { EntityManager } from '@mikro-orm/sql';
import { recordElements } from './audit-chain.js';
import type { AuditRecordBody } from './audit-record.js';
import { contextProblem, elementProblem, malformedElement, parsedOrProblem, UNKNOWN_CONTEXT, type RecordElement, type StoredContext } from './stored-record.js';

export type { RecordElement } from './stored-record.js';

/**
 * Reading the trail's storage (migration 20261126030000): one row per appended batch, its records
 * cut out of `records` in Node by their offsets (cutting them in SQL decompresses the batch once
 * per record). Only this module and the chain's maintenance know the layout.
 */

/** A record as the faces present it: its place, time, action and whole body. */
export interface AuditRow {
  id: string;
  position: string | number;
  execution_time: Date | string;
  action: string;
  body: AuditRecordBody | string;
  root_resource_type: string;
  root_resource_id: string;
  /** Why the stored record is not what the server writes (it is then presented flagged); null when it is. */
  malformed: string | null;
}

/** A stored batch with its records' bytes, as the maintenance walks it. */
export interface BatchRow {
  account_id: string;
  first_position: string | number;
  last_position: string | number;
  execution_time: Date | string;
  context: string;
  records: Buffer;
  record_offsets: number[];
  actions: string[];
  record_root_types: string[];
  record_root_ids: string[];
  previous_hash: string;
  hash: string;
  chain_version: number;
}

/** What a read keeps: conditions on whole batches (SQL on `b`), and on each record of the batches they let through. */
export interface RecordSelection {
  batchConditions: string[];
  batchParams: unknown[];
  keeps(element: RecordElement): boolean;
}

const everything: RecordSelection = { batchConditions: [], batchParams: [], keeps: () => true };

const HEADER_COLUMNS = 'b.first_position, b.last_position, b.execution_time';
const CONTENT_COLUMNS = 'b.first_position, b.context, b.records, b.record_offsets, b.record_root_types, b.record_root_ids';

interface BatchHeaderRow {
  first_position: string | number;
  last_position: string | number;
  execution_time: Date | string;
}

interface BatchContentRow {
  first_position: string | number;
  context: string;
  records: Buffer;
  record_offsets: number[];
  record_root_types: string[];
  record_root_ids: string[];
}

export function rowOf(position: number, executionTime: Date | string, context: StoredContext, element: RecordElement, malformed: string | null = null): AuditRow {
  return {
    malformed,
    id: element[0],
    position,
    execution_time: executionTime,
    action: element[1],
    root_resource_type: element[2],
    root_resource_id: element[3],
    body: { ...context, ...element[4] },
  };
}

/** A batch's shared part, checked: what its records say of who acted, or why none of it can be believed. */
export function checkedContext(text: string): { context: StoredContext; problem: string | null } {
  const parsed = parsedOrProblem(text, 'its context');
  const problem = 'problem' in parsed ? parsed.problem : contextProblem(parsed.value);
  return problem ? { context: UNKNOWN_CONTEXT, problem } : { context: (parsed as { value: StoredContext }).value, problem: null };
}

/**
 * One stored record as the faces present it. Stored bytes are not trusted: a record that is not in
 * the form the server writes becomes a stand-in flagged with why, at its place and under the root
 * its batch names, so one bad record never fails a page.
 */
export function readRecord(
  position: number,
  executionTime: Date | string,
  batchContext: { context: StoredContext; problem: string | null },
  text: string,
  root: { type: string; id: string },
): { row: AuditRow; element: RecordElement } {
  const parsed = parsedOrProblem(text, 'the record');
  const problem = batchContext.problem ?? ('problem' in parsed ? parsed.problem : elementProblem(parsed.value));
  if (problem) {
    const element = malformedElement(position, root);
    return { row: rowOf(position, executionTime, UNKNOWN_CONTEXT, element, problem), element };
  }
  const element = (parsed as { value: RecordElement }).value;
  return { row: rowOf(position, executionTime, batchContext.context, element), element };
}

/** The records of one stored batch, oldest first. */
export function batchRecords(batch: { first_position: string | number; execution_time: Date | string; context: string; records: Buffer; record_offsets: number[]; record_root_types: string[]; record_root_ids: string[] }): Array<{ row: AuditRow; element: RecordElement }> {
  const context = checkedContext(batch.context);
  const first = Number(batch.first_position);
  return recordElements(batch.records, batch.record_offsets).map((text, index) =>
    readRecord(first + index, batch.execution_time, context, text, { type: String(batch.record_root_types[index] ?? ''), id: String(batch.record_root_ids[index] ?? '') }));
}

/** How many records of the batch a read still wants (those past its bound), were each to match. */
function countPast(header: BatchHeaderRow, bound: number | undefined, newestFirst: boolean): number {
  const first = Number(header.first_position);
  const last = Number(header.last_position);
  if (bound === undefined) return last - first + 1;
  return newestFirst ? Math.max(0, Math.min(last, bound - 1) - first + 1) : Math.max(0, last - Math.max(first, bound + 1) + 1);
}

/**
 * The account's records a read selects, newest first (by time, then position) within the window
 * and before `before`, or oldest first after `after`: at most `wanted` of them, plus whether more
 * exist. Batch headers are read a page at a time, and only as many batches' bytes as could fill
 * the page, so a page costs about the same however long the trail is.
 */
export async function selectRecords(
  em: EntityManager,
  accountId: string,
  options: {
    selection?: RecordSelection;
    wanted: number;
    window?: { since: Date; until: Date };
    newestFirst: boolean;
    /** Newest first: records strictly older than this record. */
    before?: { executionTime: Date; position: number };
    /** Oldest first: records after this position, up to `through`. */
    after?: number;
    through?: number;
  },
): Promise<{ rows: AuditRow[]; more: boolean }> {
  const selection = options.selection ?? everything;
  const rows: AuditRow[] = [];
  const wanted = options.wanted + 1;
  // Where the next batches start: inclusive for the caller's bound (its batch may hold records on both sides of it), exclusive after a batch read.
  let continueFrom: { time: Date; position: number; inclusive: boolean } | undefined = options.before
    ? { time: options.before.executionTime, position: options.before.position, inclusive: true }
    : options.after !== undefined ? { time: new Date(0), position: options.after, inclusive: true } : undefined;
  const recordBound = options.newestFirst ? options.before?.position : options.after;
  for (;;) {
    const where = ['b.account_id = ?', ...selection.batchConditions];
    const params: unknown[] = [accountId, ...selection.batchParams];
    if (options.window) {
      where.push('b.execution_time >= ?', 'b.execution_time <= ?');
      params.push(options.window.since, options.window.until);
    }
    if (options.through !== undefined) {
      where.push('b.first_position <= ?');
      params.push(options.through);
    }
    if (continueFrom && options.newestFirst) {
      where.push(`(b.execution_time, b.first_position) ${continueFrom.inclusive ? '<=' : '<'} (?, ?)`);
      params.push(continueFrom.time, continueFrom.position);
    } else if (continueFrom) {
      // The batch holding the position after the bound begins at or before it.
      where.push(continueFrom.inclusive
        ? 'b.first_position >= coalesce((select x.first_position from audit_batches x where x.account_id = ? and x.first_position <= ? order by x.first_position desc limit 1), 0)'
        : 'b.first_position > ?');
      params.push(...(continueFrom.inclusive ? [accountId, continueFrom.position + 1] : [continueFrom.position]));
    }
    const order = options.newestFirst ? 'b.execution_time desc, b.first_position desc' : 'b.first_position';
    const headerLimit = wanted - rows.length;
    const headers = await em.execute<BatchHeaderRow[]>(
      `select ${HEADER_COLUMNS} from audit_batches b where ${where.join(' and ')} order by ${order} limit ?`,
      [...params, headerLimit],
    );
    if (!headers.length) return { rows, more: false };
    // The fewest batches that hold enough records for the page, were every one of them to match.
    const reading: BatchHeaderRow[] = [];
    let couldMatch = 0;
    for (const header of headers) {
      reading.push(header);
      couldMatch += countPast(header, recordBound, options.newestFirst);
      if (couldMatch >= wanted - rows.length) break;
    }
    const contents = await em.execute<BatchContentRow[]>(
      `select ${CONTENT_COLUMNS} from audit_batches b where b.account_id = ? and b.first_position = any(array[?]::bigint[])`,
      [accountId, reading.map((header) => String(header.first_position))],
    );
    const byPosition = new Map(contents.map((content) => [String(content.first_position), content]));
    for (const header of reading) {
      const content = byPosition.get(String(header.first_position));
      if (!content) continue;
      const records = batchRecords({ ...content, execution_time: header.execution_time });
      if (options.newestFirst) records.reverse();
      for (const { row, element } of records) {
        const position = Number(row.position);
        if (recordBound !== undefined && (options.newestFirst ? position >= recordBound : position <= recordBound)) continue;
        if (options.through !== undefined && position > options.through) continue;
        if (!selection.keeps(element)) continue;
        rows.push(row);
        if (rows.length >= wanted) return { rows: rows.slice(0, options.wanted), more: true };
      }
    }
    const last = reading.at(-1)!;
    if (reading.length === headers.length && headers.length < headerLimit) return { rows, more: false };
    continueFrom = { time: new Date(last.execution_time), position: Number(last.first_position), inclusive: false };
  }
}

/**
 * The records whose root resource is `rootType`/`rootId`, newest first within the window and
 * before `before`. Up to the account's index head, through the narrow roots index, each record cut
 * out of its batch in SQL (one record of a batch: decompressed once); past it (the batches
 * `audit_index_roots` has not reached yet, normally the last half second's), from the batches'
 * own root arrays. A root entry that does not name the record it points at (the index is derived
 * data; `audit verify` reports a mismatch) is not shown as that root's.
 */
export async function recordsOfRoot(
  em: EntityManager,
  accountId: string,
  rootType: string,
  rootId: string,
  options: { wanted: number; window: { since: Date; until: Date }; before?: { executionTime: Date; position: number } },
): Promise<{ rows: AuditRow[]; more: boolean }> {
  const wanted = options.wanted + 1;
  // Where the chain ends and how far the roots index reached: the batches between are read from themselves (none, mostly).
  const [heads] = await em.execute<{ chain_head: string | number; indexed_through: string | number }[]>(
    `select h.position as chain_head, coalesce(i.through_position, 0) as indexed_through
       from audit_chain_heads h left join audit_root_index_heads i on i.account_id = h.account_id where h.account_id = ?`,
    [accountId],
  );
  if (!heads) return { rows: [], more: false };
  const chainHead = Number(heads.chain_head);
  const indexedThrough = Number(heads.indexed_through);

  const where = ['r.account_id = ?', 'r.root_resource_type = ?', 'r.root_resource_id = ?', 'r.execution_time >= ?', 'r.execution_time <= ?'];
  const params: unknown[] = [accountId, rootType, rootId, options.window.since, options.window.until];
  if (options.before) {
    where.push('(r.execution_time, r.position) < (?, ?)');
    params.push(options.before.executionTime, options.before.position);
  }
  // The record's bytes, decoded here: bytes that are not UTF-8, or offsets that cut nothing, make a malformed record, not a failed read.
  const indexed = await em.execute<Array<{ position: string | number; execution_time: Date | string; context: string; element: Uint8Array | null }>>(
    `select r.position, r.execution_time, b.context,
            substring(b.records from b.record_offsets[(r.position - b.first_position + 1)::integer] + 1
                      for greatest(0, b.record_offsets[(r.position - b.first_position + 2)::integer] - b.record_offsets[(r.position - b.first_position + 1)::integer] - 1)) as element
       from audit_record_roots r
       join audit_batches b on b.account_id = r.account_id and b.first_position = r.first_position
      where ${where.join(' and ')}
      order by r.execution_time desc, r.position desc
      limit ?`,
    [...params, wanted],
  );
  const contexts = new Map<string, ReturnType<typeof checkedContext>>();
  const found = new Map<number, AuditRow>();
  for (const record of indexed) {
    let context = contexts.get(record.context);
    if (!context) contexts.set(record.context, (context = checkedContext(record.context)));
    const text = record.element ? Buffer.from(record.element.buffer, record.element.byteOffset, record.element.byteLength).toString('utf8') : '';
    const { row, element } = readRecord(Number(record.position), record.execution_time, context, text, { type: rootType, id: rootId });
    if (element[2] !== rootType || element[3] !== rootId) continue;
    found.set(Number(record.position), row);
  }

  // Past the index head up to the chain's, newest first, by the primary key alone (a time condition would let the
  // planner walk the window's whole range of the time index instead; both ends keep its estimate, and JIT, small): the window and the cursor are applied here, and times never go
  // back along the chain, so the walk stops at the first batch older than the window. Each batch naming the root
  // holds at least one of its records, so `wanted` batches in the window are enough, and one more when paging on.
  let below: number | undefined;
  const enough = wanted + (options.before ? 1 : 0);
  let inWindow = 0;
  walk: while (chainHead > indexedThrough) {
    const unindexed = await em.execute<Array<{ first_position: string | number; execution_time: Date | string; context: string; records: Buffer; record_offsets: number[]; record_root_types: string[]; record_root_ids: string[] }>>(
      `select b.first_position, b.execution_time, b.context, b.records, b.record_offsets, b.record_root_types, b.record_root_ids
         from audit_batches b
        where b.account_id = ? and b.first_position > ? and b.first_position <= ?${below === undefined ? '' : ' and b.first_position < ?'} and ? = any(b.record_root_ids)
        order by b.first_position desc limit ?`,
      [accountId, indexedThrough, chainHead, ...(below === undefined ? [] : [below]), rootId, enough],
    );
    for (const batch of unindexed) {
      const time = new Date(batch.execution_time).getTime();
      if (time < options.window.since.getTime()) break walk;
      if (time > options.window.until.getTime()) continue;
      const first = Number(batch.first_position);
      // A batch wholly after the cursor holds nothing for this page.
      if (options.before && (time > options.before.executionTime.getTime() || (time === options.before.executionTime.getTime() && first >= options.before.position))) continue;
      inWindow += 1;
      for (const { row, element } of batchRecords(batch)) {
        const position = Number(row.position);
        if (element[2] !== rootType || element[3] !== rootId || position <= indexedThrough) continue;
        if (options.before && (time > options.before.executionTime.getTime() || (time === options.before.executionTime.getTime() && position >= options.before.position))) continue;
        found.set(position, row);
      }
    }
    if (unindexed.length < enough || inWindow >= enough) break;
    below = Number(unindexed.at(-1)!.first_position);
  }
  // Positions order records as their times do (times never go back along the chain).
  const rows = [...found.values()].sort((a, b) => Number(b.position) - Number(a.position));
  return { rows: rows.slice(0, options.wanted), more: rows.length > options.wanted };
}

/** The account's batches after `afterPosition`, oldest first, a bounded number at a time: constant memory however long the trail. */
export async function* walkBatches(em: EntityManager, accountId: string, options: { afterPosition: number; since?: Date; until?: Date; chunk?: number }): AsyncGenerator<BatchRow> {
  const chunk = options.chunk ?? 200;
  let after = options.afterPosition;
  if (options.since) {
    // Start at the window's first batch, found by time, rather than walking everything before it.
    const [first] = await em.execute<{ first_position: string | number }[]>(
      'select first_position from audit_batches where account_id = ? and execution_time >= ? order by execution_time, first_position limit 1',
      [accountId, options.since],
    );
    if (!first) return;
    after = Math.max(after, Number(first.first_position) - 1);
  }
  let through: number | undefined;
  if (options.until) {
    const [last] = await em.execute<{ first_position: string | number }[]>(
      'select first_position from audit_batches where account_id = ? and execution_time <= ? order by execution_time desc, first_position desc limit 1',
      [accountId, options.until],
    );
    if (!last) return;
    through = Number(last.first_position);
  }
  for (;;) {
    const bounded = through === undefined ? '' : ' and first_position <= ?';
    const batches = await em.execute<BatchRow[]>(
      `select account_id, first_position, last_position, execution_time, context, records, record_offsets, actions, record_root_types, record_root_ids, previous_hash, hash, chain_version
         from audit_batches where account_id = ? and first_position > ?${bounded} order by first_position limit ?`,
      [accountId, after, ...(through === undefined ? [] : [through]), chunk],
    );
    for (const batch of batches) yield batch;
    if (batches.length < chunk) return;
    after = Number(batches.at(-1)!.first_position);
  }
}
