import { READ_ONLY_ROLES, USER_MANAGER_ROLES, type UserRole } from './roles.js';
import type { Scope } from './scopes.js';

interface PrincipalBase {
  accountId: string;
  /** The key or delegation presented; for audit trails. */
  credentialId: string;
  /** The last 4 characters of the presented key or token (audit records' `truncated_token`); never more of it. */
  credentialTail?: string;
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

/** Who is calling, resolved once per request and shared by both faces. */
export type Principal = AccountKeyPrincipal | UserKeyPrincipal | OAuthPrincipal | OAuthAppPrincipal;
export type UserPrincipal = UserKeyPrincipal | OAuthPrincipal;

export function isUserPrincipal(principal: Principal): principal is UserPrincipal {
  return principal.kind === 'user_key' || principal.kind === 'oauth';
}

/** Tokens are limited to their scopes; API keys are not. */
export function scopesOf(principal: Principal): ReadonlySet<string> | undefined {
  return principal.kind === 'oauth' || principal.kind === 'oauth_app' ? principal.scopes : undefined;
}

export function actingUserId(principal: Principal): string | undefined {
  return isUserPrincipal(principal) ? principal.userId : undefined;
}

/** `can_update_user`: owners, admins and full-access account keys. */
export function canUpdateUser(principal: Principal): boolean {
  if (principal.kind === 'account_key') return !principal.readOnly;
  // An account-level app holds the account's rights; its scopes are what limit it.
  if (principal.kind === 'oauth_app') return true;
  return USER_MANAGER_ROLES.has(principal.role);
}

export function isReadOnly(principal: Principal): boolean {
  if (principal.kind === 'account_key') return principal.readOnly;
  if (principal.kind === 'oauth_app') return false;
  return READ_ONLY_ROLES.has(principal.role);
}
