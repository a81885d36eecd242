import type { EntityManager } from '@mikro-orm/sql';
import type { Change, CommitHook, WriteOrigin } from '../db/change-journal.js';
import { chainKeyPads, storedParts } from './audit-chain.js';
import { draftRecord } from './audit-record.js';
import { callFunction } from '../db/write-path.js';

export const AUDIT_TRAIL_HOOK = 'audit-trail';

/**
 * Appends the records of `changes` (all of one account) to that account's chain: one statement
 * whatever their number. `audit_append_records` (migration 20261125040000, a function of the
 * schema's owner: the only path that writes records and moves heads) locks the chain head, links
 * each record to the previous one with the HMAC `chainHash` verifies, inserts them all and moves
 * the head; the records travel as bound parameters: their ids, the batch's shared context once
 * (migration 20261125040100) and one JSON array of their own contents, beside the chain key's two pads.
 */
async function appendRecords(tx: EntityManager, accountId: string, changes: readonly Change[], origin: WriteOrigin): Promise<void> {
  const drafts = changes.map((change) => draftRecord(change, origin));
  const pads = chainKeyPads();
  // Who acted, how and from where is the origin's, the same for every record of the batch: sent and stored once.
  const parts = drafts.map(storedParts);
  await callFunction(tx, 'audit_append_records', [
    { value: accountId },
    { value: drafts.map((draft) => draft.id) },
    { value: parts[0]!.sharedMembers },
    { value: `[${parts.map((part) => part.content).join(',')}]`, cast: 'json' },
    { value: pads.inner.toString('hex') },
    { value: pads.outer.toString('hex') },
  ]);
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
