import type { EntityManager } from '@mikro-orm/sql';
import type { Principal } from '../auth/principal.js';
import type { FunctionCall } from './write-path.js';

/**
 * Every verb a change is recorded with: a closed set, so the audit trail's filters and its GraphQL
 * enum name each one (a new verb is added here, and the compiler asks for its description there).
 */
export const CHANGE_ACTIONS = [
  'create', 'update', 'delete', 'revoke', 'revoke_token', 'regenerate', 'suspend', 'reactivate', 'purge',
  'change_password', 'set_password', 'sign_in', 'sign_in_failed', 'view_calendar_urls',
] as const;
export type ChangeAction = (typeof CHANGE_ACTIONS)[number];

/** Every type of resource a change is about; with the user a change concerns, the audit trail's root resource types. */
export const CHANGE_RESOURCE_TYPES = [
  'account', 'api_key', 'app', 'audit_record', 'calendar_feed_key', 'notification_subscription', 'oauth_delegation',
  'provisioning_token', 'sso_configuration', 'user',
] as const;
export type ChangeResourceType = (typeof CHANGE_RESOURCE_TYPES)[number];

/** One field of a change: its value after and before, never a secret. */
export interface ChangedField {
  name: string;
  value?: unknown;
  beforeValue?: unknown;
}

/**
 * What a unit of work changed, said by the code that changed it, in the words of the resource it
 * changed. The write path hands the changes of a transaction to its commit hooks (the audit trail,
 * live updates) inside that transaction, so a change is announced exactly when it commits.
 */
export interface Change {
  accountId: string;
  /** `<verb>` in the resource's words, e.g. `create`, `update`, `revoke`, `suspend`. */
  action: ChangeAction;
  /** The resource changed, e.g. `{type: 'user', id}`, `{type: 'oauth_delegation', id}`; `summary` names it for people (a user's name). */
  resource: { type: ChangeResourceType; id: string; summary?: string };
  /** The user the change concerns (the changed user, or the owner of the changed credential). */
  userId?: string;
  /** For updates: each changed field with its value before and after. */
  fields?: readonly ChangedField[];
  /** Other resources the change names (the delegations of a bulk sign-out, a user's key). */
  references?: ReadonlyArray<{ type: string; id: string }>;
  /** The change takes access away from `userId` (revocation, suspension, deletion, a lowered role). */
  revokesAccess?: boolean;
}

/** Where the writes of a runner come from: the request's principal and address, or an operator's command. */
export interface WriteOrigin {
  face: 'graphql' | 'rest' | 'scim' | 'oauth' | 'cli' | 'server';
  principal?: Principal;
  requestId?: string;
  remoteAddress?: string;
  /** What the write was asked as, in words (e.g. `PUT /users/{id}`, `accessctl api-keys create`). */
  description?: string;
  /** Who acts when no credential does: the user of a sign-in page's session. */
  actor?: { type: string; id: string };
}

/**
 * A step of the write path itself, run inside every write transaction that recorded changes,
 * after its work and before its commit: whatever it writes commits or rolls back with the change.
 * A hook says what to do as database function calls; the runner makes every hook's calls in one
 * statement (`callFunctions`), so the steps of a write share one round trip.
 */
export interface CommitHook {
  name: string;
  /**
   * The hook takes a lock that every write of the account waits for and holds it to the commit
   * (the audit trail's chain head): its calls come after the other hooks', so theirs are not made
   * under it and one account's writers wait for each other as briefly as they can.
   */
  locksUntilCommit?: boolean;
  /** The calls that carry the hook out for `changes`, in the order they are to be made; none to skip. */
  callsBeforeCommit(changes: readonly Change[], origin: WriteOrigin): readonly FunctionCall[];
}

/**
 * The changes of one transaction attempt. A retried attempt starts a new journal, so a retried
 * transaction hands its hooks exactly the changes of the run that commits.
 */
export class ChangeJournal {
  readonly changes: Change[] = [];
}

// Keyed by the transaction's connection context, which every EntityManager working inside that
// transaction shares (the unit of work's fork, a nested run joining it).
const journals = new WeakMap<object, ChangeJournal>();

export function openJournal(tx: EntityManager): ChangeJournal {
  const journal = new ChangeJournal();
  journals.set(transactionKey(tx), journal);
  return journal;
}

/** Records a change of the transaction `tx` is in; it reaches the commit hooks if and when that transaction commits. */
export function recordChange(tx: EntityManager, change: Change): void {
  const journal = journals.get(transactionKey(tx));
  // A change recorded outside the write path would commit unrecorded: a programming error, not a request's.
  if (!journal) throw new Error(`recordChange(${change.resource.type}.${change.action}) outside a write transaction of TransactionRunner.run`);
  journal.changes.push(change);
}

function transactionKey(tx: EntityManager): object {
  const context = tx.getTransactionContext();
  if (!context || typeof context !== 'object') throw new Error('recordChange needs an EntityManager inside a transaction');
  return context;
}
