import { randomUUID } from 'node:crypto';
import { features, appSchema } from '../src/app/features.js';
import { AccountsService } from '../src/accounts/accounts.service.js';
import { issueDelegation } from '../src/oauth-delegations/oauth-delegation.service.js';
import { SCOPES, type Scope } from '../src/auth/scopes.js';
import { USER_ROLES, type UserRole } from '../src/auth/roles.js';
import { startHarness, type Credential, type Harness, type TestAccount } from './support/harness.js';

/**
 * Every operation in scope (each REST route and each GraphQL root field) x every kind of
 * credential -> the outcome the access rules prescribe (docs/security.md). The rules are restated here, independent
 * of the implementation, and both faces must give the same answer.
 */
type Outcome = 'ok' | 400 | 401 | 403 | 404;
type Who = 'anyone' | 'user_level' | 'manager' | 'self_or_manager' | 'admin_or_account_key';
interface Rule {
  scope: Scope;
  write: boolean;
  who: Who;
  /** What a full-access key of another account gets (ids of this account are unknown there). */
  otherAccount: Outcome;
}

interface Subject {
  id: string;
  delegationId: string;
  email: string;
}

interface Row {
  operation: string;
  rule: Rule;
  call(h: Harness, subject: Subject, key: Credential): Promise<Outcome>;
}

const READ_USERS: Rule = { scope: 'users.read', write: false, who: 'anyone', otherAccount: 'ok' };
const SHOW_USER: Rule = { scope: 'users.read', write: false, who: 'anyone', otherAccount: 404 };
const VIEWER: Rule = { scope: 'users.read', write: false, who: 'user_level', otherAccount: 400 };
const CREATE_USER: Rule = { scope: 'users.write', write: true, who: 'manager', otherAccount: 'ok' };
const CHANGE_USER: Rule = { scope: 'users.write', write: true, who: 'self_or_manager', otherAccount: 404 };
// Update multiple: an id the account does not have is "one bad element", a 400 naming it.
const CHANGE_USERS: Rule = { ...CHANGE_USER, otherAccount: 400 };
const DELETE_USER: Rule = { scope: 'users.write', write: true, who: 'manager', otherAccount: 404 };
// The rule: "the user themself (any role), or can_update_user": for another user only managers; read-only keys never.
const REGENERATE: Rule = { scope: 'users.write', write: true, who: 'self_or_manager', otherAccount: 404 };
// The REST conventions list no 404 for DELETE /oauth_delegations: an unknown user is a 400 naming it.
const REVOKE: Rule = { scope: 'oauth_delegations.write', write: true, who: 'self_or_manager', otherAccount: 400 };
// One delegation by id: self or can_update_user; revoking lowers access, so no write requirement (a read-only user may end their own grant).
const REVOKE_ONE: Rule = { scope: 'oauth_delegations.write', write: false, who: 'self_or_manager', otherAccount: 404 };
const REVOCATION_STATUS: Rule = { scope: 'oauth_delegations.read', write: false, who: 'admin_or_account_key', otherAccount: 'ok' };
const READ_DELEGATIONS: Rule = { scope: 'oauth_delegations.read', write: false, who: 'self_or_manager', otherAccount: 404 };
const READ_SUBSCRIPTIONS: Rule = { scope: 'subscribers.read', write: false, who: 'self_or_manager', otherAccount: 404 };
const WRITE_SUBSCRIPTIONS: Rule = { scope: 'subscribers.write', write: true, who: 'self_or_manager', otherAccount: 404 };
// The account's trail for owners, admins and full-access account keys; a user's for themself or can_update_user.
const READ_AUDIT: Rule = { scope: 'audit_records.read', write: false, who: 'manager', otherAccount: 'ok' };
const READ_USER_AUDIT: Rule = { scope: 'audit_records.read', write: false, who: 'self_or_manager', otherAccount: 404 };

function restOutcome(status: number): Outcome {
  if (status >= 200 && status < 300) return 'ok';
  if ([400, 401, 403, 404].includes(status)) return status as Outcome;
  throw new Error(`unexpected REST status ${status}`);
}

const GRAPHQL_CODES: Record<string, Outcome> = { BAD_USER_INPUT: 400, UNAUTHENTICATED: 401, FORBIDDEN: 403, NOT_FOUND: 404 };
async function graphqlOutcome(h: Harness, query: string, variables: Record<string, unknown>, key: Credential): Promise<Outcome> {
  const result = await h.graphql(query, variables, key);
  if (!result.errors?.length) return 'ok';
  const outcome = GRAPHQL_CODES[result.errors[0].extensions?.code as string];
  if (!outcome) throw new Error(`unexpected GraphQL error ${JSON.stringify(result.errors)}`);
  return outcome;
}

const rest = (method: 'get' | 'post' | 'put' | 'delete', path: (s: Subject) => string, body?: (s: Subject) => unknown) =>
  async (h: Harness, subject: Subject, key: Credential) => restOutcome((await h.rest(method, path(subject), { key, body: body?.(subject) })).status);
const graphql = (query: string, variables: (s: Subject) => Record<string, unknown> = () => ({})) =>
  (h: Harness, subject: Subject, key: Credential) => graphqlOutcome(h, query, variables(subject), key);

const SUBSCRIBABLES = [{ subscribable_type: 'incident', subscribable_id: 'PINCMTX' }];
const GQL_SUBSCRIBABLES = [{ subscribableType: 'INCIDENT', subscribableId: 'PINCMTX' }];

const ROWS: Row[] = [
  { operation: 'GET /users', rule: READ_USERS, call: rest('get', () => '/users') },
  { operation: 'GET /users/me', rule: VIEWER, call: rest('get', () => '/users/me') },
  { operation: 'GET /users/:id', rule: SHOW_USER, call: rest('get', (s) => `/users/${s.id}`) },
  { operation: 'POST /users', rule: CREATE_USER, call: rest('post', () => '/users', () => ({ user: { name: 'Matrix New', email: `new-${randomUUID()}@example.com` } })) },
  { operation: 'PUT /users/:id', rule: CHANGE_USER, call: rest('put', (s) => `/users/${s.id}`, () => ({ user: { job_title: 'Changed' } })) },
  { operation: 'PUT /users', rule: CHANGE_USERS, call: rest('put', () => '/users', (s) => ({ users: [{ id: s.id, type: 'user', job_title: 'Changed' }] })) },
  { operation: 'DELETE /users/:id', rule: DELETE_USER, call: rest('delete', (s) => `/users/${s.id}`) },
  { operation: 'POST /users/:id/regenerate_private_url_key', rule: REGENERATE, call: rest('post', (s) => `/users/${s.id}/regenerate_private_url_key`) },
  { operation: 'DELETE /oauth_delegations', rule: REVOKE, call: rest('delete', (s) => `/oauth_delegations?user_id=${s.id}&type=mobile`) },
  { operation: 'DELETE /users/:id/oauth_delegations/:delegation_id', rule: REVOKE_ONE, call: rest('delete', (s) => `/users/${s.id}/oauth_delegations/${s.delegationId}`) },
  { operation: 'GET /oauth_delegations/revocation_requests/status', rule: REVOCATION_STATUS, call: rest('get', () => '/oauth_delegations/revocation_requests/status') },
  { operation: 'GET /users/:id/oauth_delegations', rule: READ_DELEGATIONS, call: rest('get', (s) => `/users/${s.id}/oauth_delegations`) },
  { operation: 'GET /users/:id/oauth_delegations/:delegation_id', rule: READ_DELEGATIONS, call: rest('get', (s) => `/users/${s.id}/oauth_delegations/${s.delegationId}`) },
  { operation: 'GET /users/:id/notification_subscriptions', rule: READ_SUBSCRIPTIONS, call: rest('get', (s) => `/users/${s.id}/notification_subscriptions`) },
  { operation: 'POST /users/:id/notification_subscriptions', rule: WRITE_SUBSCRIPTIONS, call: rest('post', (s) => `/users/${s.id}/notification_subscriptions`, () => ({ subscribables: SUBSCRIBABLES })) },
  { operation: 'POST /users/:id/notification_subscriptions/unsubscribe', rule: WRITE_SUBSCRIPTIONS, call: rest('post', (s) => `/users/${s.id}/notification_subscriptions/unsubscribe`, () => ({ subscribables: SUBSCRIBABLES })) },

  { operation: 'GET /audit/records', rule: READ_AUDIT, call: rest('get', () => '/audit/records') },
  { operation: 'GET /users/:id/audit/records', rule: READ_USER_AUDIT, call: rest('get', (s) => `/users/${s.id}/audit/records`) },

  { operation: 'Query.auditRecords', rule: READ_AUDIT, call: graphql('{ auditRecords(first: 1) { nodes { id } } }') },
  { operation: 'Query.userAuditRecords', rule: READ_USER_AUDIT, call: graphql('query($id: ID!) { userAuditRecords(userId: $id, first: 1) { nodes { id } } }', (s) => ({ id: s.id })) },
  { operation: 'Query.users', rule: READ_USERS, call: graphql('{ users(first: 1) { totalCount } }') },
  { operation: 'Query.viewer', rule: VIEWER, call: graphql('{ viewer { id } }') },
  { operation: 'Query.user', rule: SHOW_USER, call: graphql('query($id: ID!) { user(id: $id) { id } }', (s) => ({ id: s.id })) },
  { operation: 'Mutation.createUser', rule: CREATE_USER, call: graphql('mutation($email: EmailAddress!) { createUser(input: { name: "Matrix New", email: $email }) { user { id } } }', () => ({ email: `new-${randomUUID()}@example.com` })) },
  { operation: 'Mutation.updateUser', rule: CHANGE_USER, call: graphql('mutation($id: ID!) { updateUser(input: { id: $id, jobTitle: "Changed" }) { user { id } } }', (s) => ({ id: s.id })) },
  { operation: 'Mutation.updateUsers', rule: CHANGE_USERS, call: graphql('mutation($id: ID!) { updateUsers(input: { users: [{ id: $id, jobTitle: "Changed" }] }) { users { id } } }', (s) => ({ id: s.id })) },
  { operation: 'Mutation.deleteUser', rule: DELETE_USER, call: graphql('mutation($id: ID!) { deleteUser(input: { id: $id }) { deletedUserId } }', (s) => ({ id: s.id })) },
  { operation: 'Mutation.regenerateUserCalendarKey', rule: REGENERATE, call: graphql('mutation($id: ID!) { regenerateUserCalendarKey(input: { userId: $id }) { user { id } } }', (s) => ({ id: s.id })) },
  { operation: 'Mutation.deleteOAuthDelegations', rule: REVOKE, call: graphql('mutation($id: ID!) { deleteOAuthDelegations(input: { userId: $id, types: [MOBILE] }) { revokedCount } }', (s) => ({ id: s.id })) },
  // Ending sign-in sessions lowers access too: no write requirement, like revoking one delegation.
  { operation: 'Mutation.revokeSignInSessions', rule: REVOKE_ONE, call: graphql('mutation($id: ID!) { revokeSignInSessions(input: { userId: $id }) { revokedCount } }', (s) => ({ id: s.id })) },
  { operation: 'Mutation.revokeOAuthDelegation', rule: REVOKE_ONE, call: graphql('mutation($id: ID!, $userId: ID!) { revokeOAuthDelegation(input: { userId: $userId, id: $id }) { oauthDelegation { id } } }', (s) => ({ id: s.delegationId, userId: s.id })) },
  { operation: 'Query.oauthDelegationRevocationRequestsStatus', rule: REVOCATION_STATUS, call: graphql('{ oauthDelegationRevocationRequestsStatus { pendingCount } }') },
  { operation: 'Query.oauthDelegations', rule: READ_DELEGATIONS, call: graphql('query($id: ID!) { oauthDelegations(userId: $id) { totalCount } }', (s) => ({ id: s.id })) },
  { operation: 'Query.oauthDelegation', rule: READ_DELEGATIONS, call: graphql('query($id: ID!, $userId: ID) { oauthDelegation(id: $id, userId: $userId) { id } }', (s) => ({ id: s.delegationId, userId: s.id })) },
  { operation: 'Query.notificationSubscriptions', rule: READ_SUBSCRIPTIONS, call: graphql('query($id: ID!) { notificationSubscriptions(userId: $id) { totalCount } }', (s) => ({ id: s.id })) },
  { operation: 'Mutation.createNotificationSubscriptions', rule: WRITE_SUBSCRIPTIONS, call: graphql('mutation($id: ID!, $s: [NotificationSubscribableInput!]!) { createNotificationSubscriptions(input: { userId: $id, subscribables: $s }) { subscriptions { result } } }', (s) => ({ id: s.id, s: GQL_SUBSCRIBABLES })) },
  { operation: 'Mutation.removeNotificationSubscriptions', rule: WRITE_SUBSCRIPTIONS, call: graphql('mutation($id: ID!, $s: [NotificationSubscribableInput!]!) { removeNotificationSubscriptions(input: { userId: $id, subscribables: $s }) { deletedCount } }', (s) => ({ id: s.id, s: GQL_SUBSCRIBABLES })) },
];

/**
 * Operations of the authorization server that no OAuth scope of the access rules
 * table governs, so this matrix cannot state their rule; their access is tested where named.
 */
const OUTSIDE_SCOPE_TABLE: Record<string, string> = {
  'Query.oauthApps': 'can_update_user, a token needs oauth_delegations.read; src/oauth-server/oauth-server.apps.test.ts, test/least-privilege.test.ts',
  'Mutation.changeMyPassword': 'the calling user through a credential that may write the user, with the current password; src/oauth-server/password-change.test.ts',
  'Query.singleSignOn': 'can_update_user; src/sso/sso.oidc.test.ts',
  'Query.apiKeys': 'account_admin, or the user themself with userId; a token needs credentials.read; src/accounts/api-keys.test.ts',
  'Mutation.createApiKey': 'account_admin for account keys, the user themself or can_update_user for user keys, nothing minted beyond the caller; src/accounts/api-keys.test.ts',
  'Mutation.revokeApiKey': 'src/accounts/api-keys.test.ts, src/credentials/credentials-revocation.test.ts',
  'Mutation.rollApiKey': 'src/accounts/api-keys.test.ts',
  'Query.provisioningTokens': 'account_admin, a token needs credentials.read; src/scim/provisioning-tokens.graphql.test.ts',
  'Mutation.createProvisioningToken': 'account_admin with can_update_user; src/scim/provisioning-tokens.graphql.test.ts',
  'Mutation.revokeProvisioningToken': 'account_admin; src/scim/provisioning-tokens.graphql.test.ts, src/credentials/credentials-revocation.test.ts',
  // account_admin, a token needs credentials.write (scopes added after the access table).
  'Mutation.registerOAuthApp': 'account_admin, write, a token needs credentials.write; src/oauth-server/apps.graphql.test.ts',
  'Mutation.rotateOAuthAppSecret': 'account_admin, write, a token needs credentials.write; src/oauth-server/apps.graphql.test.ts',
  'Mutation.updateOAuthApp': 'account_admin, write, a token needs credentials.write; src/oauth-server/apps.graphql.test.ts',
  'Mutation.deleteOAuthApp': 'account_admin, write, a token needs credentials.write; src/oauth-server/apps.graphql.test.ts',
  'Mutation.configureSingleSignOn': 'account_admin, write, a token needs credentials.write; src/sso/sso.graphql.test.ts',
  'Mutation.disableSingleSignOn': 'account_admin, write, a token needs credentials.write; src/sso/sso.graphql.test.ts',
  'Query.subscribables': 'any member of the account, a token needs subscribers.read; src/notification-subscriptions/subscribables.graphql.test.ts',
  'Query.rateLimit': 'any authenticated credential, no scope: its own rate budget; test/rate-budget-cost.test.ts',
};

interface CredentialKind {
  name: string;
  /** The expected outcome for a rule, from the access rules. */
  expect(rule: Rule): Outcome;
  key(rule: Rule): Credential;
}

let h: Harness;
let account: TestAccount;
const credentials: CredentialKind[] = [];

function roleOutcome(rule: Rule, principal: { accountKey: boolean; readOnly: boolean; role?: UserRole }): Outcome {
  const manager = principal.accountKey ? !principal.readOnly : principal.role === 'owner' || principal.role === 'admin';
  switch (rule.who) {
    case 'user_level':
      if (principal.accountKey) return 400;
      break;
    case 'manager':
    case 'self_or_manager':
      // The subject is never the caller, so "self" never applies here.
      if (!manager) return 403;
      break;
    case 'admin_or_account_key':
      if (!principal.accountKey && !manager) return 403;
      break;
  }
  return rule.write && principal.readOnly ? 403 : 'ok';
}

beforeAll(async () => {
  h = await startHarness();
  account = await h.createAccount();
  const other = await h.createAccount();
  const fullKey = account.key;
  const readOnlyKey = await h.accountKey(account, { readOnly: true });
  credentials.push(
    { name: 'account key, full access', key: () => fullKey, expect: (rule) => roleOutcome(rule, { accountKey: true, readOnly: false }) },
    { name: 'account key, read-only', key: () => readOnlyKey, expect: (rule) => roleOutcome(rule, { accountKey: true, readOnly: true }) },
  );
  for (const role of USER_ROLES) {
    // The owner exists already (one per account); every other role gets a user of its own.
    const key = role === 'owner'
      ? { token: (await h.database.transactions.run(h.database.em(), (tx) => new AccountsService(tx).createApiKey({ accountId: account.id, userId: account.ownerId }))).apiKey }
      : (await h.createUser(account, { role })).key;
    credentials.push({ name: `user key, role ${role}`, key: () => key, expect: (rule) => roleOutcome(rule, { accountKey: false, readOnly: role.startsWith('read_only'), role }) });
  }

  // Bearer tokens act as an admin, so only their scopes limit them.
  const admin = await h.createUser(account, { role: 'admin' });
  const tokenWith = async (scopes: readonly string[]) => ({ bearer: (await h.database.transactions.run(h.database.em(), (tx) => issueDelegation(tx, { userId: admin.id, type: 'web', scopes: scopes.join(' ') }))).accessToken });
  const allScopes = await tokenWith(SCOPES);
  const lacking = new Map<Scope, Credential>();
  for (const scope of SCOPES) lacking.set(scope, await tokenWith(SCOPES.filter((s) => s !== scope)));
  const revoked = await h.database.transactions.run(h.database.em(), (tx) => issueDelegation(tx, { userId: admin.id, type: 'mobile', scopes: SCOPES.join(' ') }));
  // The admin signs themself out of mobile (an account key may not end an admin's delegations: the privilege order).
  expect((await h.rest('delete', `/oauth_delegations?user_id=${admin.id}&type=mobile`, { key: admin.key })).status).toBe(200);
  const expired = await h.database.transactions.run(h.database.em(), (tx) => issueDelegation(tx, { userId: admin.id, type: 'integration', scopes: SCOPES.join(' ') }));
  await h.database.em().execute(`update oauth_delegations set expires_at = now() - interval '1 minute' where id = ?`, [expired.delegation.id]);
  credentials.push(
    { name: 'OAuth token with the scope', key: () => allScopes, expect: (rule) => roleOutcome(rule, { accountKey: false, readOnly: false, role: 'admin' }) },
    { name: 'OAuth token without the scope', key: (rule) => lacking.get(rule.scope), expect: () => 403 },
    { name: 'revoked OAuth token', key: () => ({ bearer: revoked.accessToken }), expect: () => 401 },
    { name: 'expired OAuth token', key: () => ({ bearer: expired.accessToken }), expect: () => 401 },
    { name: 'another account\'s full key', key: () => other.key, expect: (rule) => rule.otherAccount },
    { name: 'no credential', key: () => undefined, expect: () => 401 },
    { name: 'malformed Authorization header', key: () => ({ header: 'Token abc' }), expect: () => 401 },
  );
});

afterAll(async () => {
  await h?.close();
});

async function freshSubject(): Promise<Subject> {
  const user = await h.createUser(account, { role: 'user' });
  const { delegation } = await h.database.transactions.run(h.database.em(), (tx) => issueDelegation(tx, { userId: user.id, type: 'mobile', scopes: 'users.read' }));
  return { id: user.id, delegationId: delegation.id, email: user.email };
}

test('every REST route and GraphQL root field has a row in the matrix', async () => {
  const routes = features.flatMap((feature) => feature.routes.map((route) => `${route.method.toUpperCase()} ${route.path}`));
  const schema = await appSchema();
  const fields = [
    ...Object.keys(schema.getQueryType()!.getFields()).map((name) => `Query.${name}`),
    ...Object.keys(schema.getMutationType()!.getFields()).map((name) => `Mutation.${name}`),
  ];
  expect(ROWS.map((row) => row.operation).sort()).toEqual([...routes, ...fields].filter((operation) => !(operation in OUTSIDE_SCOPE_TABLE)).sort());
});

test('matrix: every operation x every credential gives the outcome the access rules prescribe', async () => {
  const mismatches: string[] = [];
  let cells = 0;
  for (const row of ROWS) {
    for (const credential of credentials) {
      const subject = await freshSubject();
      const expected = credential.expect(row.rule);
      const actual = await row.call(h, subject, credential.key(row.rule));
      cells++;
      if (actual !== expected) mismatches.push(`${row.operation} with ${credential.name}: expected ${expected}, got ${actual}`);
    }
  }
  expect(mismatches).toEqual([]);
  const logs = h.logs.join('\n');
  const secrets = credentials.map((credential) => credential.key(READ_USERS)).flatMap((key) => (key && 'token' in key ? [key.token] : key && 'bearer' in key ? [key.bearer] : []));
  expect(secrets.length).toBeGreaterThan(10);
  expect(logs).toContain('"msg":"request"');
  for (const secret of secrets) expect(logs.includes(secret)).toBe(false);
  expect(cells).toBe(ROWS.length * credentials.length);
  console.log(`access matrix: ${ROWS.length} operations x ${credentials.length} credential kinds = ${cells} cells`);
}, 300_000);
