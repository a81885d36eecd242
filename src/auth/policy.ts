import { ForbiddenError } from '../errors/domain-errors.js';
import { actingUserId, canUpdateUser, isAccountAdmin, isReadOnly, isUserPrincipal, scopesOf, type Principal } from './principal.js';
import type { UserRole } from './roles.js';
import { READ_ONLY_ROLES } from './roles.js';
import { SCOPES, type Scope } from './scopes.js';

/** The scope a token needs to see calendar URLs (docs/security.md, "Security"). */
export const CALENDAR_URL_SCOPE: Scope = 'users.write';

/**
 * Someone else's credentials and access, once the actor may manage users at all, follow the
 * privilege order: the owner's are the owner's alone, an admin's that admin's or the owner's.
 * `act` names what was refused, for the holder (`the owner's`, `an admin's`).
 */
function assertPrivilegeOrder(principal: Principal, holder: { role: UserRole }, act: (whose: string) => string): void {
  if (holder.role === 'owner') throw new ForbiddenError(`Only the account owner may ${act('the owner\'s')}.`);
  if (holder.role === 'admin' && !hasOwnerRights(principal)) throw new ForbiddenError(`Only the admin themself or the account owner may ${act('an admin\'s')}.`);
}

/**
 * The target-dependent half of the access matrix; the static half
 * (authenticated, scopes, writes) is declared on the schema and enforced by the auth checker.
 */
export const policy = {
  assertCanWrite(principal: Principal): void {
    if (isReadOnly(principal)) throw new ForbiddenError('This credential is read-only.');
  },

  /**
   * The account's own credentials (apps, an integration's account-wide delegation, single sign-on):
   * `account_admin`, and a token needs `credentials.read` or `credentials.write`.
   * For targets found only after a look-up; operations declare the same on the schema.
   */
  assertManagesAccountCredentials(principal: Principal, access: 'read' | 'write'): void {
    if (access === 'write') this.assertManagesCredentials(principal);
    const scopes = scopesOf(principal);
    if (scopes && !scopes.has(`credentials.${access}`)) throw new ForbiddenError(`This OAuth token lacks the required scope: credentials.${access}`);
    if (!isAccountAdmin(principal)) throw new ForbiddenError('This action is limited to account owners, admins and account API keys.');
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
   * an account-level app's read scopes alone are not that right.
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

  assertAccountAdmin(principal: Principal): void {
    if (!isAccountAdmin(principal)) throw new ForbiddenError('This action is limited to account owners, admins and account API keys.');
  },

  /** A user's API keys (never their secrets): the user themself or `account_admin`. */
  assertMayReadApiKeysOf(principal: Principal, userId: string): void {
    if (actingUserId(principal) === userId || isAccountAdmin(principal)) return;
    throw new ForbiddenError('Only the user themself or an account owner, admin or account API key may see a user\'s API keys.');
  },

  /**
   * Revoking a user's key: the user themself unless read-only or restricted; anyone else needs to be
   * a full-access account admin who may update users, and the privilege order holds: another
   * admin's keys are revoked only by the owner, the owner's by nobody else.
   */
  assertMayRevokeApiKeysOf(principal: Principal, holder: { id: string; role: UserRole }): void {
    this.assertManagesCredentials(principal);
    if (actingUserId(principal) === holder.id && isUserPrincipal(principal)) {
      if (!mayManageOwnKeys(principal.role)) throw new ForbiddenError(`A ${principal.role} may not manage API keys.`);
      return;
    }
    if (!isAccountAdmin(principal) || !canUpdateUser(principal)) {
      throw new ForbiddenError('Only the user themself or an account owner, admin or full-access account key may revoke a user\'s API keys.');
    }
    assertPrivilegeOrder(principal, holder, (whose) => `revoke ${whose} API keys`);
  },

  /**
   * Ending someone's access (their sign-in sessions, their delegations): the user themself, or a
   * holder of can_update_user in the privilege order: another admin's only the owner, the owner's
   * nobody else. Signing the owner out is changing the owner.
   */
  assertMayEndAccessOf(principal: Principal, holder: { id: string; role: UserRole }): void {
    if (actingUserId(principal) === holder.id) return;
    this.assertSelfOrUserManager(principal, holder.id);
    assertPrivilegeOrder(principal, holder, (whose) => `end ${whose} sessions and delegations`);
  },

  /**
   * Whoever creates, rolls or revokes a credential: a credential that can write, and not a key
   * rolled over and living out its grace period (it keeps working for what it did, and manages nothing).
   */
  assertManagesCredentials(principal: Principal): void {
    this.assertCanWrite(principal);
    if (principal.supersededAt) throw new ForbiddenError('This API key was rolled over: in its grace period it still works, but manages no credential. Use its successor.');
  },

  /**
   * No credential mints one with more rights than its own, and nobody mints one that acts as
   * another person. A key is limited by no scope, so a token needs every scope to mint one; an
   * account key needs `account_admin` with `can_update_user` (a full-access key acts as an admin);
   * a user key acts as its user, so only that user creates or rolls one (the operator may, with `accessctl`).
   */
  assertMayIssueApiKey(principal: Principal, kind: 'account_full_access' | 'account_read_only' | 'user', holder?: { id: string; role: UserRole }): void {
    this.assertManagesCredentials(principal);
    assertHoldsEveryScope(principal, 'an API key');
    if (kind !== 'user') {
      if (!isAccountAdmin(principal) || !canUpdateUser(principal)) {
        throw new ForbiddenError('Only account owners, admins and full-access account keys may create account API keys.');
      }
      return;
    }
    if (!holder) throw new ForbiddenError('A USER key needs its user.');
    if (actingUserId(principal) !== holder.id || !isUserPrincipal(principal)) {
      throw new ForbiddenError('A USER key acts as its user: only that user may create or roll one.');
    }
    if (!mayManageOwnKeys(principal.role)) throw new ForbiddenError(`A ${principal.role} may not create API keys.`);
  },

  /** A provisioning token writes users (users.read, users.write) on /scim/v2: its creator must be able to. */
  assertMayIssueProvisioningToken(principal: Principal): void {
    this.assertManagesCredentials(principal);
    const scopes = scopesOf(principal);
    if (scopes && !(scopes.has('users.read') && scopes.has('users.write'))) {
      throw new ForbiddenError('A provisioning token reads and writes users: creating one needs the users.read and users.write scopes.');
    }
    if (!isAccountAdmin(principal) || !canUpdateUser(principal)) {
      throw new ForbiddenError('Only account owners, admins and full-access account keys may create provisioning tokens.');
    }
  },

  isSelf(principal: Principal, userId: string): boolean {
    return actingUserId(principal) === userId;
  },
};

/** Owner rights over the API: the owner's own credential (the operator has them too, through `accessctl`). */
export function hasOwnerRights(principal: Principal): boolean {
  return isUserPrincipal(principal) && principal.role === 'owner';
}

/** Read-only roles only read; `restricted_access` holds no credentials of its own making. */
function mayManageOwnKeys(role: UserRole): boolean {
  return !READ_ONLY_ROLES.has(role) && role !== 'restricted_access';
}

function assertHoldsEveryScope(principal: Principal, what: string): void {
  const scopes = scopesOf(principal);
  if (!scopes) return;
  const missing = SCOPES.filter((scope) => !scopes.has(scope));
  if (missing.length) throw new ForbiddenError(`${what} is limited by no scope, so a token needs every scope to create one; this token lacks: ${missing.join(', ')}`);
}
