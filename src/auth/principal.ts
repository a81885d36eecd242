import { READ_ONLY_ROLES, USER_MANAGER_ROLES, type UserRole } from './roles.js';
import type { Scope } from './scopes.js';

interface PrincipalBase {
  accountId: string;
  /** The key or delegation presented; for audit trails. */
  credentialId: string;
  /** The budget this request draws on: a user's keys and tokens share one. */
  rateLimitKey: string;
}

export interface AccountKeyPrincipal extends PrincipalBase {
  kind: 'account_key';
  readOnly: boolean;
}

export interface UserKeyPrincipal extends PrincipalBase {
  kind: 'user_key';
  userId: string;
  role: UserRole;
}

export interface OAuthPrincipal extends PrincipalBase {
  kind: 'oauth';
  userId: string;
  role: UserRole;
  scopes: ReadonlySet<Scope | string>;
}

/** An app acting for its whole account (OAuth client credentials): no user, limited to its scopes. */
export interface OAuthAppPrincipal extends PrincipalBase {
  kind: 'oauth_app';
  scopes: ReadonlySet<Scope | string>;
}

/**
 * An identity provider provisioning the account's users (SPEC section 12): valid only on the SCIM
 * face (`/scim/v2`), where it acts for the account with `users.read users.write`.
 */
export interface ProvisioningTokenPrincipal extends PrincipalBase {
  kind: 'provisioning_token';
  scopes: ReadonlySet<Scope | string>;
}

/** Who is calling, resolved once per request and shared by every face. */
export type Principal = AccountKeyPrincipal | UserKeyPrincipal | OAuthPrincipal | OAuthAppPrincipal | ProvisioningTokenPrincipal;
export type UserPrincipal = UserKeyPrincipal | OAuthPrincipal;

export function isUserPrincipal(principal: Principal): principal is UserPrincipal {
  return principal.kind === 'user_key' || principal.kind === 'oauth';
}

/** Tokens are limited to their scopes; API keys are not. */
export function scopesOf(principal: Principal): ReadonlySet<string> | undefined {
  return principal.kind === 'oauth' || principal.kind === 'oauth_app' || principal.kind === 'provisioning_token' ? principal.scopes : undefined;
}

export function actingUserId(principal: Principal): string | undefined {
  return isUserPrincipal(principal) ? principal.userId : undefined;
}

/** `can_update_user`: owners, admins and full-access account keys. */
export function canUpdateUser(principal: Principal): boolean {
  if (principal.kind === 'account_key') return !principal.readOnly;
  // An account-level app holds the account's rights; its scopes are what limit it.
  if (principal.kind === 'oauth_app' || principal.kind === 'provisioning_token') return true;
  return USER_MANAGER_ROLES.has(principal.role);
}

export function isReadOnly(principal: Principal): boolean {
  if (principal.kind === 'account_key') return principal.readOnly;
  if (principal.kind === 'oauth_app' || principal.kind === 'provisioning_token') return false;
  return READ_ONLY_ROLES.has(principal.role);
}
