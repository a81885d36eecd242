import { READ_ONLY_ROLES, USER_MANAGER_ROLES, type UserRole } from './roles.js';
import type { Scope } from './scopes.js';

/** Where a credential was presented: the HTTP faces, and the WebSocket of live updates. */
export type Face = 'rest' | 'graphql' | 'scim' | 'websocket';

interface PrincipalBase {
  accountId: string;
  /**
   * The one face this credential is valid on, when it is confined to one (a provisioning token:
   * SCIM). `authenticate` refuses it on every other face, whatever transport asks.
   */
  confinedTo?: Face;
  /** The key or delegation presented; for audit trails. */
  credentialId: string;
  /** The last 4 characters of the presented key or token (audit records' `truncated_token`); never more of it. */
  credentialTail?: string;
  /** The budget this request draws on: a user's keys and tokens share one. */
  rateLimitKey: string;
  /** When the credential stops working by itself (tokens); long-lived connections re-check it then. */
  expiresAt?: Date;
  /** A key rolled over and living out its grace period: it works for what it did, and manages no credential. */
  supersededAt?: Date;
  /** What the audit trail names actors by (their `summary`): the user's name, the key's or token's description, the app's name. */
  summaries?: { user?: string | null; credential?: string | null; app?: string | null };
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
  /** The app the token was issued to, if any (the audit trail's `app_reference`). */
  clientId?: string;
  userId: string;
  role: UserRole;
  scopes: ReadonlySet<Scope | string>;
  /**
   * True only for a token of one of the product's own apps (mobile, web); a third-party app's or
   * an integration's token is never trusted with the user's own secrets (their password).
   */
  firstParty?: boolean;
  /** A token a browser sign-in obtained (the product's web, mobile or browser app): when that sign-in happened, if known. */
  browserSignIn?: { signedInAt?: Date; sessionId?: string };
}

/** An app acting for its whole account (OAuth client credentials): no user, limited to its scopes. */
export interface OAuthAppPrincipal extends PrincipalBase {
  kind: 'oauth_app';
  /** The app acting (the audit trail's `app_reference`). */
  clientId: string;
  scopes: ReadonlySet<Scope | string>;
}

/**
 * An identity provider provisioning the account's users: valid only on the SCIM
 * face (`/scim/v2`), where it acts for the account with `users.read users.write`.
 */
export interface ProvisioningTokenPrincipal extends PrincipalBase {
  kind: 'provisioning_token';
  scopes: ReadonlySet<Scope | string>;
  /** Created with owner rights: it may change admins' and the owner's emails; otherwise members' only. */
  ownerRights: boolean;
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

/**
 * `can_update_user`: owners, admins and full-access account keys. An account-level app has no role:
 * its rights derive from its scopes alone, so it manages users only with `users.write`.
 */
export function canUpdateUser(principal: Principal): boolean {
  if (principal.kind === 'account_key') return !principal.readOnly;
  // A provisioning token is the account's identity provider: it may write users, and only on /scim/v2.
  if (principal.kind === 'provisioning_token') return true;
  if (principal.kind === 'oauth_app') return principal.scopes.has('users.write');
  return USER_MANAGER_ROLES.has(principal.role);
}

/** An account-level app holding no write scope is read-only, like a read-only account key. */
export function isReadOnly(principal: Principal): boolean {
  if (principal.kind === 'account_key') return principal.readOnly;
  if (principal.kind === 'provisioning_token') return false;
  if (principal.kind === 'oauth_app') return ![...principal.scopes].some((scope) => scope.endsWith('.write'));
  return READ_ONLY_ROLES.has(principal.role);
}

/**
 * `account_admin`: owners, admins, account API keys and account-level apps (their scopes limit them
 * further); what managing the account's own credentials needs. A provisioning token never reaches
 * an operation that asks (it is confined to /scim/v2).
 */
export function isAccountAdmin(principal: Principal): boolean {
  return !isUserPrincipal(principal) || USER_MANAGER_ROLES.has(principal.role);
}
