import type { EntityManager } from '@mikro-orm/sql';
import type { Change, CommitHook, WriteOrigin } from '../db/change-journal.js';
import { chainedContent } from './audit-chain.js';
import { draftRecord } from './audit-record.js';
import { callFunction } from '../db/write-path.js';

export const AUDIT_TRAIL_HOOK = 'audit-trail';

/**
 * Locks the account's chain head (creating it if the account has no record yet), as
 * `audit_append_records` does before it extends the chain: the purge holds it while it moves the
 * chain's anchor, so no writer appends meanwhile. The last lock a write takes (docs/ARCHITECTURE.md, "Lock order").
 */
export async function lockChainHead(tx: EntityManager, accountId: string): Promise<void> {
  await tx.execute(
    `insert into audit_chain_heads (account_id, position, hash, last_time) values (?, 0, '', to_timestamp(0))
     on conflict (account_id) do update set account_id = excluded.account_id`,
    [accountId],
    'run',
  );
}

/**
 * Appends the records of `changes` (all of one account) to that account's chain: one statement
 * whatever their number. `audit_append_records` (migration 20261124010000) locks the chain head,
 * links each record to the previous one with the SHA-256 `chainHash` verifies, inserts them all
 * and moves the head; the records travel as two bound parameters, their ids and one JSON array of
 * their contents.
 */
async function appendRecords(tx: EntityManager, accountId: string, changes: readonly Change[], origin: WriteOrigin): Promise<void> {
  const drafts = changes.map((change) => draftRecord(change, origin));
  await callFunction(tx, 'audit_append_records', [
    { value: accountId },
    { value: drafts.map((draft) => draft.id) },
    { value: JSON.stringify(drafts.map(chainedContent)), cast: 'json' },
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
