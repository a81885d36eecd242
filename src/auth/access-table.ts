import type { Requirement } from './auth-checker.js';

/**
 * How an operation's target must relate to the actor, beyond what the credential holds; checked by
 * the feature's service through `policy` once the target is known (its role, its account).
 */
export type TargetRule =
  /** Anything of the caller's account; other accounts' ids are not found. */
  | 'account'
  /** The user themself, or a holder of can_update_user. */
  | 'self-or-user-manager'
  /** The user themself, or can_update_user; another admin's email only that admin or the owner, the owner's only the owner. */
  | 'self-or-manager-in-privilege-order'
  /** Only the user themself (a credential that acts as a person is made by that person). */
  | 'self-only'
  /** The user themself; another's only a full-access account admin, another admin's only the owner, the owner's nobody else. */
  | 'self-or-admin-in-privilege-order'
  /** The caller's own sign-in or connection. */
  | 'own-session';

/** One operation's row: who may perform it, on every face where it exists. */
export interface AccessRow {
  /**
   * What the credential must hold before anything runs: scopes (a token must hold them; keys have
   * none), `write` (no read-only credential), `can_update_user`, `account_admin`.
   */
  requires: readonly Requirement[];
  /** How its target must relate to the actor (checked once the target is read). */
  target: TargetRule;
  /**
   * Credential and single sign-on management: a key rolled over in its grace period manages nothing,
   * and a token a browser sign-in obtained needs a recent sign-in (step-up).
   */
  managesCredentials?: true;
  /** The rule in words, as security reviewers read it (docs/security.md renders the table). */
  rule: string;
}

const read = (scope: Requirement, target: TargetRule, rule: string, more: Requirement[] = []): AccessRow => ({ requires: [scope, ...more], target, rule });
const write = (scope: Requirement, target: TargetRule, rule: string, more: Requirement[] = []): AccessRow => ({ requires: [scope, 'write', ...more], target, rule });
const credentials = (target: TargetRule, rule: string, more: Requirement[] = []): AccessRow => ({ requires: ['credentials.write', 'write', ...more], target, managesCredentials: true, rule });

/**
 * Every operation of the schema that has rights of its own: each root field of Query, Mutation and
 * Subscription, and each object field guarded separately. REST routes and SCIM operations run these
 * operations (their rows name the GraphQL document), subscriptions run over the WebSocket, so this is
 * the one table for every face; the operator's `accessctl` acts with the operator's rights outside it.
 * The server refuses to start when an operation has no row, or a row names no operation.
 */
export const ACCESS_TABLE = {
  'Query.viewer': read('users.read', 'own-session', 'The user the credential acts as.'),
  'Query.rateLimit': { requires: [], target: 'own-session', rule: 'Any authenticated credential, about its own rate budget.' },
  'Query.user': read('users.read', 'account', 'Any user of the account.'),
  'Query.users': read('users.read', 'account', 'The account\'s users.'),
  'Mutation.createUser': write('users.write', 'account', 'Holders of can_update_user.', ['can_update_user']),
  'Mutation.updateUser': write('users.write', 'self-or-manager-in-privilege-order', 'Users their own profile (not their role); can_update_user anyone, in the privilege order.'),
  'Mutation.updateUsers': write('users.write', 'self-or-manager-in-privilege-order', 'As updateUser, for each user.'),
  'Mutation.deleteUser': write('users.write', 'account', 'Holders of can_update_user; never the owner.', ['can_update_user']),
  'Mutation.changeMyPassword': write('users.write', 'own-session', 'The user themself, through a first-party app or their own key.'),
  'Mutation.regenerateUserCalendarKey': { requires: ['users.write'], target: 'self-or-user-manager', rule: 'The user themself (any role), or can_update_user.' },
  'User.httpCalUrl': { requires: [], target: 'self-or-user-manager', rule: 'The user themself or can_update_user; a token needs users.write.' },
  'User.webCalUrl': { requires: [], target: 'self-or-user-manager', rule: 'As httpCalUrl.' },
  'User.notificationSubscriptions': read('subscribers.read', 'self-or-user-manager', 'The user themself or can_update_user.'),
  'User.oauthDelegations': read('oauth_delegations.read', 'self-or-user-manager', 'The user themself or can_update_user.'),
  'User.signInSessions': read('oauth_delegations.read', 'self-or-user-manager', 'The user themself or can_update_user.'),
  'User.auditRecords': read('audit_records.read', 'self-or-user-manager', 'The user themself or can_update_user.'),
  'User.apiKeys': read('credentials.read', 'self-or-user-manager', 'The user themself or account_admin.'),
  'ApiKey.user': read('users.read', 'account', 'Whoever may see the key.'),
  'ApiKey.createdBy': read('users.read', 'account', 'Whoever may see the key.'),
  'Query.notificationSubscriptions': read('subscribers.read', 'self-or-user-manager', 'The user themself or can_update_user.'),
  'Query.subscribables': read('subscribers.read', 'account', 'The account\'s subscribable entities.'),
  'Mutation.createNotificationSubscriptions': write('subscribers.write', 'self-or-user-manager', 'The user themself or can_update_user; an account-level app by its scope.'),
  'Mutation.removeNotificationSubscriptions': write('subscribers.write', 'self-or-user-manager', 'As createNotificationSubscriptions.'),
  'Query.oauthDelegation': read('oauth_delegations.read', 'self-or-user-manager', 'The user themself or can_update_user.'),
  'Query.oauthDelegations': read('oauth_delegations.read', 'self-or-user-manager', 'The user themself or can_update_user.'),
  'Query.oauthDelegationRevocationRequestsStatus': read('oauth_delegations.read', 'account', 'account_admin.', ['account_admin']),
  'Mutation.deleteOAuthDelegations': write('oauth_delegations.write', 'self-or-user-manager', 'The user themself or can_update_user.'),
  'Mutation.revokeOAuthDelegation': { requires: ['oauth_delegations.write'], target: 'self-or-user-manager', rule: 'The user themself (even read-only: it lowers their own access) or can_update_user; an integration\'s account-wide one only a writing account_admin with credentials.write.' },
  'Mutation.revokeSignInSessions': { requires: ['oauth_delegations.write'], target: 'self-or-user-manager', rule: 'The user themself (their own sessions), or can_update_user.' },
  'Query.apiKeys': read('credentials.read', 'self-or-user-manager', 'account_admin, or the user themself with userId.'),
  'Mutation.createApiKey': credentials('self-only', 'Account keys: a full-access account_admin with can_update_user. USER keys: only their own user. A token needs every scope.'),
  'Mutation.rollApiKey': credentials('self-only', 'As createApiKey: a USER key only by its own user; a key rolls once.'),
  'Mutation.revokeApiKey': credentials('self-or-admin-in-privilege-order', 'The key\'s user; a full-access account_admin for a member\'s; another admin\'s only the owner; the owner\'s only the owner.'),
  'Query.provisioningTokens': read('credentials.read', 'account', 'account_admin.', ['account_admin']),
  'Mutation.createProvisioningToken': credentials('account', 'A full-access account_admin with can_update_user; a token needs users.read and users.write.', ['account_admin']),
  'Mutation.revokeProvisioningToken': credentials('account', 'account_admin.', ['account_admin']),
  'Query.oauthApps': read('oauth_delegations.read', 'account', 'Holders of can_update_user.', ['can_update_user']),
  'Mutation.registerOAuthApp': credentials('account', 'account_admin; WEB, MOBILE and SPA apps (no consent page) only with owner rights; no scope beyond the caller\'s.', ['account_admin']),
  'Mutation.updateOAuthApp': credentials('account', 'account_admin; new redirect URIs or scopes for, or re-enabling, a WEB, MOBILE or SPA app only with owner rights.', ['account_admin']),
  'Mutation.rotateOAuthAppSecret': credentials('account', 'account_admin.', ['account_admin']),
  'Mutation.deleteOAuthApp': credentials('account', 'account_admin.', ['account_admin']),
  'Query.singleSignOn': read('can_update_user', 'account', 'Holders of can_update_user.'),
  'Mutation.configureSingleSignOn': credentials('account', 'account_admin; an owner\'s or admin\'s first link trusts only what the owner saved.', ['account_admin']),
  'Mutation.disableSingleSignOn': credentials('account', 'account_admin.', ['account_admin']),
  'Query.auditRecords': read('audit_records.read', 'account', 'The account\'s trail: holders of can_update_user.', ['can_update_user']),
  'Query.userAuditRecords': read('audit_records.read', 'self-or-user-manager', 'The user themself or can_update_user.'),
  'Subscription.auditRecordAdded': read('audit_records.read', 'account', 'As auditRecords.', ['can_update_user']),
  'Subscription.userChanged': read('users.read', 'account', 'Any user of the account; fields as the subscriber may read them.'),
  'Subscription.viewerAccessRevoked': { requires: [], target: 'own-session', rule: 'Any authenticated connection, about itself.' },
} satisfies Record<string, AccessRow>;
