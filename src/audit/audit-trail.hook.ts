import type { EntityManager } from '@mikro-orm/sql';
import type { Change, CommitHook, WriteOrigin } from '../db/change-journal.js';
import { chainHash } from './audit-chain.js';
import { draftRecord } from './audit-record.js';

export const AUDIT_TRAIL_HOOK = 'audit-trail';

export interface ChainHead {
  position: number;
  hash: string;
  now: Date;
}

/**
 * Locks the account's chain head (creating it at the first record) and reads where the chain
 * ends, with the time the next record gets: never before the last record's, so position order is
 * time order. The last lock a write takes (docs/ARCHITECTURE.md, "Lock order"): writers of one
 * account queue here for the moment of their commit, and none extends the chain from a record
 * another is replacing.
 */
export async function lockChainHead(tx: EntityManager, accountId: string): Promise<ChainHead> {
  const [head] = await tx.execute<Array<{ position: string | number; hash: string; now: Date | string }>>(
    `insert into audit_chain_heads (account_id, position, hash, last_time) values (?, 0, '', to_timestamp(0))
     on conflict (account_id) do update set account_id = excluded.account_id
     returning position, hash, greatest(date_trunc('milliseconds', clock_timestamp()), last_time) as now`,
    [accountId],
  );
  return { position: Number(head!.position), hash: head!.hash, now: new Date(head!.now) };
}

/** Appends the records of `changes` (all of one account) to that account's chain: one statement after the head's lock, whatever their number. */
async function appendRecords(tx: EntityManager, accountId: string, changes: readonly Change[], origin: WriteOrigin): Promise<void> {
  const head = await lockChainHead(tx, accountId);
  let { position, hash } = head;
  const rows = changes.map((change) => {
    const draft = draftRecord(change, origin);
    position += 1;
    const previous = hash;
    hash = chainHash(previous, { ...draft, position, executionTime: head.now });
    return {
      position,
      id: draft.id,
      action: draft.action,
      root_resource_type: draft.rootResourceType,
      root_resource_id: draft.rootResourceId,
      actor_type: draft.actorType,
      actor_id: draft.actorId,
      method_type: draft.methodType,
      method_truncated_token: draft.methodTruncatedToken,
      body: draft.body,
      previous_hash: previous,
      hash,
    };
  });
  // The records travel as one JSON parameter (as the bulk user update's patches do): the statement does not grow with the batch.
  await tx.execute(
    `with appended as (
       insert into audit_records (account_id, position, id, execution_time, action, root_resource_type, root_resource_id, actor_type, actor_id,
                                  method_type, method_truncated_token, body, previous_hash, hash)
       select ?, r.position, r.id, ?, r.action, r.root_resource_type, r.root_resource_id, r.actor_type, r.actor_id,
              r.method_type, r.method_truncated_token, r.body, r.previous_hash, r.hash
         from jsonb_to_recordset(?::jsonb) as r(position bigint, id uuid, action text, root_resource_type text, root_resource_id text, actor_type text,
                                                actor_id text, method_type text, method_truncated_token text, body jsonb, previous_hash text, hash text)
       returning 1
     )
     update audit_chain_heads set position = ?, hash = ?, last_time = ? where account_id = ?`,
    [accountId, head.now, JSON.stringify(rows), position, hash, head.now, accountId],
    'run',
  );
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
    for (const change of changes) byAccount.set(change.accountId, [...(byAccount.get(change.accountId) ?? []), change]);
    // Several accounts' heads (an operator's command): always in account order, so two such writes cannot deadlock.
    for (const accountId of [...byAccount.keys()].sort()) await appendRecords(tx, accountId, byAccount.get(accountId)!, origin);
  },
};
