import type { EntityManager } from '@mikro-orm/sql';
import { policy } from '../auth/policy.js';
import type { Principal } from '../auth/principal.js';
import { PUBLIC_ID_PATTERN } from '../db/public-id.js';
import type { TransactionRunner } from '../db/transaction.js';
import { InvalidInputError, NotFoundError } from '../errors/domain-errors.js';
import { lockLiveUserRole } from '../users/user-locks.js';
import { LIVE_USER } from '../users/user.sql.js';
import { OAuthDelegation, REVOCABLE_TYPES, type DelegationType } from './oauth-delegation.entity.js';
import { revokeAccountWide } from './oauth-delegation.grants.js';
import { delegationPagesForUsers, type DelegationPage, type DelegationPageRequest } from './oauth-delegation.pages.js';
import { endUserAccess, revokeIssued } from './user-access.js';

// Issuing, grants and paging live in their own files; these are the names other features import from here.
export { ISSUABLE_SCOPES, issueDelegation, parseDuration, parseScopes } from './oauth-delegation.issuing.js';
export { recordGrantDelegation, recordTokenRevoked, revokeClientDelegations, revokeDelegationsHoldingTokens, revokeGrantDelegation } from './oauth-delegation.grants.js';

const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function isUuid(value: string): boolean {
  return UUID_PATTERN.test(value);
}

const LIVE_USER_OF_ACCOUNT = `select id from users where id = ? and account_id = ? and ${LIVE_USER}`;

async function isLiveUser(em: EntityManager, accountId: string, userId: string): Promise<boolean> {
  if (!PUBLIC_ID_PATTERN.test(userId)) return false;
  const [row] = await em.execute<{ id: string }[]>(LIVE_USER_OF_ACCOUNT, [userId, accountId]);
  return row !== undefined;
}

/** Domain logic of OAuth delegations for one caller; knows nothing of HTTP or GraphQL. */
export class OAuthDelegationsService {
  constructor(
    private readonly em: EntityManager,
    private readonly principal: Principal,
    private readonly transactions: TransactionRunner,
  ) {}

  /** Who may see and end a user's delegations: the user themself, or a holder of can_update_user. */
  assertMayManage(userId: string): void {
    policy.assertSelfOrUserManager(this.principal, userId);
  }

  /** Signs the user out of the given apps, synchronously; returns the delegations this call revoked (now REVOKED). */
  async revoke(userId: string, types: readonly DelegationType[]): Promise<OAuthDelegation[]> {
    if (types.length === 0) throw new InvalidInputError(`type must name at least one of ${REVOCABLE_TYPES.join(', ')}`);
    const refused = types.filter((type) => !REVOCABLE_TYPES.includes(type));
    if (refused.length) {
      throw new InvalidInputError(`type ${refused.join(', ')} cannot be revoked here; allowed values: ${REVOCABLE_TYPES.join(', ')}`);
    }
    this.assertMayManage(userId);
    return this.transactions.run(this.em, async (em) => {
      // The user's row first (the lock order of every write about a user): a revocation queues
      // behind the user's deletion, which revokes everything itself, instead of crossing it.
      // The reference lists no 404 for this operation: an unknown user (or another account's) is invalid input.
      const role = await lockLiveUserRole(em, this.principal.accountId, userId);
      if (!role) throw new InvalidInputError(`user ${userId} is not a user of this account`);
      policy.assertMayEndAccessOf(this.principal, { id: userId, role });
      // Signing out of the product's apps signs the user's browsers out too: no silent new code.
      const ended = await endUserAccess(em, { accountId: this.principal.accountId, userId }, { principal: this.principal, reason: 'sign_out' }, { types: [...new Set(types)] });
      // Read back after the UPDATE (not from the identity map): the client's cache gets the new status.
      return ended.delegationIds.length ? em.find(OAuthDelegation, { id: { $in: ended.delegationIds } }, { orderBy: { createdAt: 'desc', id: 'desc' }, refresh: true }) : [];
    }, 'oauthDelegations.revoke');
  }

  /**
   * Revokes one of the user's delegations, whatever its type (a third-party app's grant included):
   * the user themself or can_update_user. Another user's or account's delegation, or an id that is
   * not a uuid, is not found. Revoking a revoked delegation changes nothing and answers the same.
   * Without `userId`, the delegation is found by id alone: a user's (same rights), or an
   * integration's account-wide one (`account_admin`, a token with `credentials.write`).
   */
  async revokeOne(userId: string | undefined, id: string): Promise<OAuthDelegation> {
    if (userId === undefined) {
      const found = isUuid(id) ? await this.em.findOne(OAuthDelegation, { id, account: this.principal.accountId }) : null;
      if (!found) throw new NotFoundError('OAuth delegation');
      if (found.userId !== null) return this.revokeOne(found.userId, id);
      policy.assertManagesAccountCredentials(this.principal, 'write');
      return this.transactions.run(this.em, async (em) => {
        await revokeAccountWide(em, this.principal, id);
        return em.refresh(found) as Promise<OAuthDelegation>;
      }, 'oauthDelegations.revokeAccountWide');
    }
    this.assertMayManage(userId);
    return this.transactions.run(this.em, async (em) => {
      const role = await lockLiveUserRole(em, this.principal.accountId, userId);
      if (!role) throw new NotFoundError('user');
      policy.assertMayEndAccessOf(this.principal, { id: userId, role });
      const delegation = isUuid(id) ? await em.findOne(OAuthDelegation, { id, account: this.principal.accountId, userId }) : null;
      if (!delegation) throw new NotFoundError('OAuth delegation');
      const by = { principal: this.principal, reason: 'sign_out' as const };
      // A first-party app's delegation is one browser's session in the product: its end signs that browser out, and only it.
      if (delegation.status === 'issued' && REVOCABLE_TYPES.includes(delegation.delegationType)) await endUserAccess(em, { accountId: this.principal.accountId, userId }, by, { ids: [id], browsers: { grantIds: [] } });
      else await revokeIssued(em, { accountId: this.principal.accountId, userId, ids: [id] }, { ...by, at: new Date() });
      return em.refresh(delegation) as Promise<OAuthDelegation>;
    }, 'oauthDelegations.revokeOne');
  }

  /** An integration app's account-wide delegation (`OAuthApp.delegation`): `account_admin`, a token with `credentials.read`. */
  async accountWideOf(clientId: string): Promise<OAuthDelegation | null> {
    policy.assertManagesAccountCredentials(this.principal, 'read');
    return this.em.findOne(OAuthDelegation, { account: this.principal.accountId, grantId: `client:${clientId}`, userId: null });
  }

  /** A user's delegations, newest first; 404 for a user that is not (or no longer) in the account. */
  async listForUser(userId: string, request: DelegationPageRequest): Promise<DelegationPage> {
    this.assertMayManage(userId);
    if (!(await isLiveUser(this.em, this.principal.accountId, userId))) throw new NotFoundError('user');
    return (await this.pagesForUsers([userId], request)).get(userId)!;
  }

  /** One page per user in one statement (delegationPagesForUsers). Callers check access to each user first. */
  pagesForUsers(userIds: readonly string[], request: DelegationPageRequest): Promise<Map<string, DelegationPage>> {
    return delegationPagesForUsers(this.em, this.principal.accountId, userIds, request);
  }

  /**
   * One delegation. With `userId` (the REST path), it must be that user's: another user's or
   * account's delegation, a deleted user's, or an id that is not a uuid is simply not found.
   */
  async get(id: string, userId?: string): Promise<OAuthDelegation> {
    if (userId !== undefined) this.assertMayManage(userId);
    const delegation = isUuid(id)
      ? await this.em.findOne(OAuthDelegation, { id, account: this.principal.accountId, ...(userId !== undefined ? { userId } : {}) })
      : null;
    if (!delegation) throw new NotFoundError('OAuth delegation');
    // An integration acting for the whole account has no user, so no user's delegation path reaches it;
    // by id alone it is the account's credential, for those who manage those.
    if (delegation.userId === null) {
      if (userId !== undefined) throw new NotFoundError('OAuth delegation');
      policy.assertManagesAccountCredentials(this.principal, 'read');
      return delegation;
    }
    if (userId === undefined) this.assertMayManage(delegation.userId);
    if (!(await isLiveUser(this.em, this.principal.accountId, delegation.userId))) throw new NotFoundError('OAuth delegation');
    return delegation;
  }
}
