import { ForbiddenError } from '../errors/domain-errors.js';
import { actingUserId, canUpdateUser, isReadOnly, scopesOf, type Principal } from './principal.js';
import type { Scope } from './scopes.js';

/** The scope a token needs to see calendar URLs (README, "Security"). */
export const CALENDAR_URL_SCOPE: Scope = 'users.write';

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

  /**
   * The user themself, or anyone holding `can_update_user`. An account-level app has no user and no
   * role: the operation's scope, already checked, is its whole right over the account's users (a
   * `subscribers.write` app subscribes any user); `can_update_user` itself needs `users.write`.
   */
  assertSelfOrUserManager(principal: Principal, userId: string): void {
    if (actingUserId(principal) === userId || principal.kind === 'oauth_app') return;
    if (!canUpdateUser(principal)) {
      throw new ForbiddenError('Only the user themself or a holder of can_update_user may do this for another user.');
    }
  },

  /**
   * What was done to another user (their audit records): the user themself or `can_update_user`;
   * an account-level app's read scopes alone are not that right (SPEC section 19).
   */
  assertSelfOrCanUpdateUser(principal: Principal, userId: string): void {
    if (actingUserId(principal) === userId || canUpdateUser(principal)) return;
    throw new ForbiddenError('Only the user themself or a holder of can_update_user may read what was done to another user.');
  },

  /**
   * A user's calendar URLs are bearer credentials that outlive the token that read them: the user
   * themself or `can_update_user` (never a read-only account key), and a token must hold
   * `users.write` (the scope that can also regenerate them), not merely `users.read`.
   */
  mayReadCalendarUrls(principal: Principal, userId: string): boolean {
    const scopes = scopesOf(principal);
    if (scopes && !scopes.has(CALENDAR_URL_SCOPE)) return false;
    return actingUserId(principal) === userId || canUpdateUser(principal);
  },

  isSelf(principal: Principal, userId: string): boolean {
    return actingUserId(principal) === userId;
  },
};
