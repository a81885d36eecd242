import type { EntityManager } from '@mikro-orm/sql';
import type { Change, CommitHook, WriteOrigin } from '../db/change-journal.js';
import { linkBatch, storedParts } from './audit-chain.js';
import { draftRecord } from './audit-record.js';
import { callFunctionForRow } from '../db/write-path.js';

export const AUDIT_TRAIL_HOOK = 'audit-trail';

interface ChainHead {
  position: number;
  hash: string;
  time: Date;
}

/**
 * Where this process last saw each account's chain end. Links are computed from it before the head
 * is taken; when another writer (a connection, an instance) moved the head meanwhile, the append
 * is refused, answers the head, and the batch is linked again from it, the head then held by this
 * transaction. A wrong guess costs one statement, never a wrong link.
 */
const knownHeads = new Map<string, ChainHead>();
const KNOWN_HEADS_LIMIT = 10_000;

function rememberHead(accountId: string, head: ChainHead): void {
  knownHeads.delete(accountId);
  if (knownHeads.size >= KNOWN_HEADS_LIMIT) knownHeads.delete(knownHeads.keys().next().value!);
  knownHeads.set(accountId, head);
}

interface AppendAnswer {
  appended: boolean;
  head_position: string | number;
  head_hash: string;
  head_time: Date | string;
}

/**
 * Appends the records of `changes` (all of one account) to that account's chain: usually one
 * statement whatever their number. `audit_append_linked_records` (migration 20261126010000, a
 * function of the schema's owner: the only path that writes records and moves heads) locks the
 * chain's head and inserts the records only if the head is still the one their links were
 * computed from; the records travel as bound parameters: their ids, the batch's shared context
 * once, one JSON array of their own contents and their links.
 */
async function appendRecords(tx: EntityManager, accountId: string, changes: readonly Change[], origin: WriteOrigin): Promise<void> {
  const drafts = changes.map((change) => draftRecord(change, origin));
  // Who acted, how and from where is the origin's, the same for every record of the batch: sent and stored once.
  const parts = drafts.map(storedParts);
  const ids = drafts.map((draft) => draft.id);
  const contents = parts.map((part) => part.content);
  const recordContents = `[${contents.join(',')}]`;
  let head = knownHeads.get(accountId);
  // The second attempt links from the head the first one found, which this transaction now holds.
  for (let attempt = 0; attempt < 3; attempt += 1) {
    // Record times only move forward in an account's chain; milliseconds, as the chain covers them.
    const now = Date.now();
    const time = new Date(head && head.time.getTime() > now ? head.time.getTime() : now);
    const links = head ? linkBatch(head.hash, { accountId, firstPosition: head.position + 1, time, ids, sharedMembers: parts[0]!.sharedMembers, contents }) : [];
    const answer = await callFunctionForRow<AppendAnswer>(tx, 'audit_append_linked_records', [
      { value: accountId },
      { value: head ? String(head.position) : null },
      { value: head?.hash ?? null },
      { value: time.toISOString() },
      { value: ids },
      { value: parts[0]!.sharedMembers },
      { value: recordContents, cast: 'json' },
      { value: links },
    ]);
    head = { position: Number(answer.head_position), hash: answer.head_hash, time: new Date(answer.head_time) };
    rememberHead(accountId, head);
    if (answer.appended) return;
  }
  throw new Error(`the audit chain head of account ${accountId} kept moving while its transaction held it`);
}

/**
 * The audit trail as a step of the write path: every change a transaction recorded becomes one
 * record, written in that transaction, so no change commits without its record and no rolled-back
 * change leaves one.
 */
export const auditTrailHook: CommitHook = {
  name: AUDIT_TRAIL_HOOK,
  async beforeCommit(tx, changes, origin) {
    const byAccount = new Map<string, Change[]>();
    for (const change of changes) {
      const ofAccount = byAccount.get(change.accountId);
      if (ofAccount) ofAccount.push(change);
      else byAccount.set(change.accountId, [change]);
    }
    // Several accounts' heads (an operator's command): always in account order, so two such writes cannot deadlock.
    for (const accountId of [...byAccount.keys()].sort()) await appendRecords(tx, accountId, byAccount.get(accountId)!, origin);
  },
};
