import type { CommitHook } from '../db/change-journal.js';
import { encodeLiveChanges, LIVE_CHANNEL, toLiveChange } from './live-change.codec.js';

/**
 * Announces a transaction's changes to every instance: `pg_notify` inside the transaction, so
 * PostgreSQL (and PGlite) deliver it at commit and drop it on rollback. Nothing is announced that
 * did not commit, and a retried transaction announces once.
 */
export const liveUpdatesCommitHook: CommitHook = {
  name: 'live-updates',
  async beforeCommit(tx, changes) {
    const payloads = encodeLiveChanges(changes.map(toLiveChange));
    // One statement however many payloads: a bulk write costs one round trip more, not one per element.
    await tx.execute(`select ${payloads.map(() => 'pg_notify(?, ?)').join(', ')}`, payloads.flatMap((payload) => [LIVE_CHANNEL, payload]), 'run');
  },
};
