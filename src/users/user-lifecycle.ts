import type { EntityManager } from '@mikro-orm/sql';
import type { Principal } from '../auth/principal.js';

export interface DeletedUser {
  id: string;
  accountId: string;
  deletedAt: Date;
}

/**
 * Runs inside the transaction that deletes the user, so a feature's clean-up (revoking keys and
 * delegations, invalidating the calendar key, removing subscriptions) commits or fails with it.
 */
export type UserDeletedHook = (em: EntityManager, user: DeletedUser, principal: Principal) => Promise<void>;

export interface SuspendedUser {
  id: string;
  accountId: string;
  suspendedAt: Date;
}

/**
 * Runs inside the transaction that suspends the user: each feature revokes the credentials it
 * issued (API keys, delegations and their OAuth grants, the calendar key), so from the commit no
 * instance accepts any of them. Reactivation runs no hook: nothing revoked comes back.
 */
export type UserSuspendedHook = (em: EntityManager, user: SuspendedUser, principal: Principal) => Promise<void>;

export interface UserLifecycleHooks {
  deleted?: readonly UserDeletedHook[];
  suspended?: readonly UserSuspendedHook[];
}
