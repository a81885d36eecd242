import { isUserPrincipal, type Principal } from './principal.js';
import { USER_MANAGER_ROLES, type UserRole } from './roles.js';

/** Who makes a write the single sign-on rules weigh: a request's principal, or the operator (the CLI, bootstrap). */
export type Writer = Principal | 'operator';

/**
 * Who a write that single sign-on trusts (an identity provider's configuration, a user's email)
 * is by. `ownerRights`: the operator, or a user acting (API key or OAuth token)
 * whose role is `owner` when the write is made. `userId`: the user acting, if one is. An admin, an
 * app acting for one, an account key, an account-level app and a provisioning token have no owner
 * rights; only the first two name a user.
 */
export interface Authorship {
  userId: string | null;
  ownerRights: boolean;
}

/**
 * The writer's authorship. The role is the principal's, read with its credential at the start of
 * the request: `owner` is never assigned or taken away through the API, so no request can hold it
 * stale in a way that matters.
 */
export function authorshipOf(writer: Writer): Authorship {
  if (writer === 'operator') return { userId: null, ownerRights: true };
  if (!isUserPrincipal(writer)) return { userId: null, ownerRights: false };
  return { userId: writer.userId, ownerRights: writer.role === 'owner' };
}

/** The users single sign-on signs in only through what the owner (or they themselves) saved. */
export function isPrivilegedRole(role: UserRole | string): boolean {
  return USER_MANAGER_ROLES.has(role as UserRole);
}

/** Whether a write of `authorship` is one single sign-on may trust for user `userId`: made with owner rights or by that user. */
export function trustedFor(authorship: { userId: string | null; ownerRights: boolean }, userId: string): boolean {
  return authorship.ownerRights || authorship.userId === userId;
}
