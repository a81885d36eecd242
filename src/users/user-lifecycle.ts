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
