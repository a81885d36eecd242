import type { Change, CommitHook, WriteOrigin } from '../db/change-journal.js';
import type { FunctionCall } from '../db/write-path.js';
import { chainKeyPads, storedBatch } from './audit-chain.js';
import { draftBatch } from './audit-record.js';

export const AUDIT_TRAIL_HOOK = 'audit-trail';

/**
 * The append of the records of `changes` (all of one account) to that account's chain as one
 * batch, one call whatever their number. `audit_append_batch` (migration 20261126030000, a
 * function of the schema's owner: the only path that writes records and moves heads) locks the
 * chain head, links the batch to it with the HMAC `batchHash` verifies, stores it and moves the
 * head; the batch travels as bound parameters beside the chain key's two pads.
 */
function appendCall(accountId: string, changes: readonly Change[], origin: WriteOrigin): FunctionCall {
  const batch = storedBatch(draftBatch(changes, origin));
  const pads = chainKeyPads();
  return {
    name: 'audit_append_batch',
    args: [
      { value: accountId },
      { value: batch.context },
      { value: batch.records },
      { value: batch.recordOffsets },
      { value: batch.actions },
      { value: batch.rootTypes },
      { value: batch.rootIds },
      { value: pads.inner },
      { value: pads.outer },
    ],
  };
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
  callsBeforeCommit(changes, origin) {
    const byAccount = new Map<string, Change[]>();
    for (const change of changes) {
      const ofAccount = byAccount.get(change.accountId);
      if (ofAccount) ofAccount.push(change);
      else byAccount.set(change.accountId, [change]);
    }
    // Several accounts' heads (an operator's command): always in account order, so two such writes
    // cannot deadlock (PostgreSQL evaluates a statement's select list in order).
    return [...byAccount.keys()].sort().map((accountId) => appendCall(accountId, byAccount.get(accountId)!, origin));
  },
};
