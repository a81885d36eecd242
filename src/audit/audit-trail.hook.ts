import type { EntityManager } from '@mikro-orm/sql';
import type { Change, CommitHook, WriteOrigin } from '../db/change-journal.js';
import { chainKeyPads, storedBatch } from './audit-chain.js';
import { draftRecord } from './audit-record.js';
import { callFunction } from '../db/write-path.js';

export const AUDIT_TRAIL_HOOK = 'audit-trail';

/**
 * Appends the records of `changes` (all of one account) to that account's chain as one batch, in
 * one statement whatever their number. `audit_append_batch` (migration 20261126030000, a function
 * of the schema's owner: the only path that writes records and moves heads) locks the chain head,
 * links the batch to it with the HMAC `batchHash` verifies, stores it with one root per record and
 * moves the head; the batch travels as bound parameters beside the chain key's two pads.
 */
async function appendRecords(tx: EntityManager, accountId: string, changes: readonly Change[], origin: WriteOrigin): Promise<void> {
  const batch = storedBatch(changes.map((change) => draftRecord(change, origin)));
  const pads = chainKeyPads();
  await callFunction(tx, 'audit_append_batch', [
    { value: accountId },
    { value: batch.context },
    { value: batch.records },
    { value: batch.recordOffsets },
    { value: batch.actions },
    { value: batch.rootTypes },
    { value: batch.rootIds },
    { value: pads.inner },
    { value: pads.outer },
  ]);
}

/**
 * The audit trail as a step of the write path: every change a transaction recorded becomes one
 * record, written in that transaction, so no change commits without its record and no rolled-back
 * change leaves one.
 */
export const auditTrailHook: CommitHook = {
  name: AUDIT_TRAIL_HOOK,
  // The account's chain head, locked by the append to the commit.
  locksUntilCommit: true,
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
