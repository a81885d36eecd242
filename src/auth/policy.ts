import { ForbiddenError } from '../errors/domain-errors.js';
import { actingUserId, canUpdateUser, isReadOnly, type Principal } from './principal.js';

/**
 * The target-dependent half of the access matrix (SPEC section 2); the static half
 * (authenticated, scopes, writes) is declared on the schema and enforced by the auth checker.
 */
export const policy = {
  assertCanWrite(principal: Principal): void {
    if (isReadOnly(principal)) throw new ForbiddenError('This credential is read-only.');
  },

  assertCanUpdateUsers(principal: Principal): void {
    if (!canUpdateUser(principal)) throw new ForbiddenError('This action requires the can_update_user permission.');
  },

  /** The user themself, or anyone holding `can_update_user`. */
  assertSelfOrUserManager(principal: Principal, userId: string): void {
    if (actingUserId(principal) === userId) return;
    if (!canUpdateUser(principal)) {
      throw new ForbiddenError('Only the user themself or a holder of can_update_user may do this for another user.');
    }
  },

  isSelf(principal: Principal, userId: string): boolean {
    return actingUserId(principal) === userId;
  },
};
