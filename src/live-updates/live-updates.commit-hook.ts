import type { CommitHook } from '../db/change-journal.js';
import { encodeLiveChanges, LIVE_CHANNEL, toLiveChange } from './live-change.codec.js';

/**
 * Announces a transaction's changes to every instance: `pg_notify` inside the transaction, so
 * PostgreSQL (and PGlite) deliver it at commit and drop it on rollback. Nothing is announced that
 * did not commit, and a retried transaction announces once.
 */
export const liveUpdatesCommitHook: CommitHook = {
  name: 'live-updates',
  callsBeforeCommit: (changes) =>
    encodeLiveChanges(changes.map(toLiveChange)).map((payload) => ({ name: 'pg_notify', args: [{ value: LIVE_CHANNEL }, { value: payload }] })),
};
