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
  /** The user themself, or can_update_user; the owner only by the owner; another admin's email, sessions and delegations only that admin or the owner. */
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
  'Mutation.deleteOAuthDelegations': write('oauth_delegations.write', 'self-or-manager-in-privilege-order', 'The user themself or can_update_user; another admin\'s only the owner, the owner\'s only the owner.'),
  'Mutation.revokeOAuthDelegation': { requires: ['oauth_delegations.write'], target: 'self-or-manager-in-privilege-order', rule: 'The user themself (even read-only: it lowers their own access) or can_update_user, another admin\'s only the owner, the owner\'s only the owner; an integration\'s account-wide one only a writing account_admin with credentials.write.' },
  'Mutation.revokeSignInSessions': { requires: ['oauth_delegations.write'], target: 'self-or-manager-in-privilege-order', rule: 'The user themself (their own sessions), or can_update_user; another admin\'s only the owner, the owner\'s only the owner.' },
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
  'Subscription.auditRecordAdded': read('audit_records.read', 'self-or-user-manager', 'With filter.userId: that user\'s records, to the user themself or can_update_user (as userAuditRecords); without it, the account\'s, to can_update_user (as auditRecords).'),
  'Subscription.userChanged': read('users.read', 'account', 'Any user of the account; fields as the subscriber may read them.'),
  'Subscription.viewerAccessRevoked': { requires: [], target: 'own-session', rule: 'Any authenticated connection, about itself.' },
} satisfies Record<string, AccessRow>;

/**
 * SCIM operations, by their OpenAPI operationId: each row is checked before the request is read,
 * then the GraphQL operations the route runs are checked by their own rows as well. SCIM is how the
 * account's identity provider provisions people: its writes need can_update_user, whoever the target.
 * The SCIM face refuses to start with a route that has no row here.
 */
export const SCIM_ACCESS_TABLE = {
  listScimUsers: read('users.read', 'account', 'The account\'s users, to a provisioning token or any credential that reads users.'),
  getScimUser: read('users.read', 'account', 'As listScimUsers.'),
  createScimUser: write('users.write', 'account', 'Holders of can_update_user: a provisioning token, an owner, an admin, a full-access account key.', ['can_update_user']),
  replaceScimUser: write('users.write', 'self-or-manager-in-privilege-order', 'As createScimUser, and updateUser\'s privilege order (admins\' and the owner\'s emails: a token created with owner rights).', ['can_update_user']),
  patchScimUser: write('users.write', 'self-or-manager-in-privilege-order', 'As replaceScimUser.', ['can_update_user']),
  deleteScimUser: write('users.write', 'account', 'As createScimUser; never the owner.', ['can_update_user']),
} satisfies Record<string, AccessRow>;

/** A SCIM operation's row; a route without one stops the SCIM face from starting. */
export function scimAccessRow(operationId: string): AccessRow {
  const row = (SCIM_ACCESS_TABLE as Record<string, AccessRow>)[operationId];
  if (!row) throw new Error(`the SCIM operation ${operationId} has no row in the access table (src/auth/access-table.ts)`);
  return row;
}

/**
 * The operator's commands (`accessctl`): whoever runs them holds the deployment's database
 * credentials, so each acts with the operator's rights, outside the account's roles, and what it
 * changes is recorded as the operator's (method `other`). Listed here so every way to change access
 * is in one place; `test/access-table.test.ts` holds the command table to it.
 */
export const OPERATOR_COMMANDS: Record<string, string> = {
  'bootstrap': 'Creates an account, its owner and a full-access account key.',
  'api-keys create': 'Mints any key of any account, a USER key included (recorded as the operator, who acts for the person who asked).',
  'api-keys list': 'Reads keys (never secrets).',
  'api-keys revoke': 'Revokes any key.',
  'api-keys roll': 'Rolls any key.',
  'apps create': 'Registers an app of any kind: owner rights.',
  'apps delete': 'Deletes an app and revokes its delegations.',
  'apps disable': 'Disables an app: its tokens stop working.',
  'apps enable': 'Re-enables an app: owner rights.',
  'apps list': 'Reads an account\'s apps.',
  'apps rotate-secret': 'Rotates an app\'s secret.',
  'audit checkpoint': 'Signs where an account\'s chain ends.',
  'audit export': 'Reads an account\'s trail.',
  'audit purge': 'Removes records past the retention period, recording itself.',
  'audit verify': 'Reads an account\'s trail and checks its chain.',
  'db grant-app-role': 'Grants the least-privilege app role (as the schema\'s owner).',
  'delegations create': 'Issues a delegation for a user (for scripts and tests).',
  'migrate': 'Migrates the schema (as its owner).',
  'oauth purge': 'Removes the authorization server\'s expired records.',
  'oauth rotate-keys': 'Rotates the authorization server\'s signing keys.',
  'provisioning-tokens create': 'Creates a provisioning token with owner rights.',
  'provisioning-tokens list': 'Reads an account\'s provisioning tokens.',
  'provisioning-tokens revoke': 'Revokes a provisioning token.',
  'seed': 'Fills a development database with sample users.',
  'shifts add': 'Adds an on-call shift to a user\'s calendar feed.',
  'sso configure': 'Configures an account\'s single sign-on: owner rights.',
  'sso disable': 'Turns single sign-on off.',
  'sso show': 'Reads an account\'s single sign-on configuration.',
  'subscribables add': 'Adds an entity users may subscribe to.',
  'users set-password': 'Sets a user\'s password and ends their access.',
};
