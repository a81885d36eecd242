import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { AccountsService } from '../src/accounts/accounts.service.js';
import { issueDelegation } from '../src/oauth-delegations/oauth-delegation.service.js';
import { ACCESS_TABLE, type TargetRule } from '../src/auth/access-table.js';
import { startHarness, type Credential, type Harness, type TestAccount } from './support/harness.js';

/**
 * The privilege order, walked: every operation whose access-table row depends on how the target
 * relates to the actor (self, lower role, same role, higher role, another account) is run by every
 * kind of actor against every relation, on every face where it exists, and the answer must be what
 * the row's target rule says, restated here independently of the checker. A new row with such a rule
 * fails this test until it has an invoker below.
 */
type Outcome = 'ok' | 'FORBIDDEN' | 'NOT_FOUND' | 'BAD_USER_INPUT';
type Role = 'owner' | 'admin' | 'user';
type Relation = 'self' | 'lower' | 'same' | 'higher' | 'other account';

interface Actor {
  name: string;
  /** A user key acts as its user; account keys act for the account (full access, or read-only). */
  role: Role | 'account key' | 'read-only account key';
  key: Credential;
  userId?: string;
}

interface Target {
  id: string;
  role: Role;
  otherAccount: boolean;
}

const PRIVILEGE_ORDER_RULES: readonly TargetRule[] = ['self-or-manager-in-privilege-order', 'self-only', 'self-or-admin-in-privilege-order'];
const RANK: Record<Role, number> = { user: 0, admin: 1, owner: 2 };

function relationOf(actor: Actor, target: Target): Relation {
  if (target.otherAccount) return 'other account';
  if (actor.userId === target.id) return 'self';
  if (actor.role === 'account key' || actor.role === 'read-only account key') return target.role === 'owner' ? 'higher' : 'lower';
  const difference = RANK[actor.role] - RANK[target.role];
  return difference > 0 ? 'lower' : difference < 0 ? 'higher' : 'same';
}

const isManager = (actor: Actor) => actor.role === 'owner' || actor.role === 'admin' || actor.role === 'account key';

/** The rules of docs/security.md ("the privilege order"), restated for each operation the relations decide. */
const EXPECTED: Record<string, (actor: Actor, target: Target, relation: Relation) => Outcome | Outcome[]> = {
  // Profile fields: the user themself, or can_update_user; the owner only by the owner.
  'jobTitle': (actor, target, relation) => {
    if (relation === 'other account') return ['NOT_FOUND', 'FORBIDDEN'];
    if (actor.role === 'read-only account key') return 'FORBIDDEN';
    if (relation === 'self') return 'ok';
    if (!isManager(actor)) return 'FORBIDDEN';
    return target.role === 'owner' ? 'FORBIDDEN' : 'ok';
  },
  // An email is who single sign-on may link: the owner's only the owner, an admin's only that admin or the owner.
  'email': (actor, target, relation) => {
    if (relation === 'other account') return ['NOT_FOUND', 'FORBIDDEN'];
    if (actor.role === 'read-only account key') return 'FORBIDDEN';
    if (relation === 'self') return 'ok';
    if (!isManager(actor)) return 'FORBIDDEN';
    if (target.role === 'owner') return 'FORBIDDEN';
    if (target.role === 'admin') return actor.role === 'owner' ? 'ok' : 'FORBIDDEN';
    return 'ok';
  },
  // A bulk update names an id of another account as one bad element of its input.
  'email in a bulk update': (actor, target, relation) => {
    if (relation === 'other account') return actor.role === 'read-only account key' ? 'FORBIDDEN' : 'BAD_USER_INPUT';
    return EXPECTED.email!(actor, target, relation);
  },
  // Ending someone's sessions or delegations: the user themself, or can_update_user in the privilege order.
  'end access': (actor, target, relation) => {
    if (relation === 'other account') return ['NOT_FOUND', 'FORBIDDEN', 'BAD_USER_INPUT'];
    if (relation === 'self') return 'ok';
    if (!isManager(actor)) return 'FORBIDDEN';
    if (target.role === 'owner') return 'FORBIDDEN';
    if (target.role === 'admin') return actor.role === 'owner' ? 'ok' : 'FORBIDDEN';
    return 'ok';
  },
  // A credential that acts as a person is made (and rolled) by that person only.
  'mint a USER key': (_actor, _target, relation) => (relation === 'self' ? 'ok' : relation === 'other account' ? ['NOT_FOUND', 'FORBIDDEN'] : 'FORBIDDEN'),
  'roll a USER key': (_actor, _target, relation) => (relation === 'self' ? 'ok' : relation === 'other account' ? ['NOT_FOUND', 'FORBIDDEN'] : 'FORBIDDEN'),
  // Revoking: the key's user; a member's by a full-access account admin; another admin's only the owner; the owner's only the owner.
  'revoke a USER key': (actor, target, relation) => {
    if (relation === 'other account') return ['NOT_FOUND', 'FORBIDDEN'];
    if (relation === 'self') return 'ok';
    if (!isManager(actor)) return 'FORBIDDEN';
    if (target.role === 'owner') return 'FORBIDDEN';
    if (target.role === 'admin') return actor.role === 'owner' ? 'ok' : 'FORBIDDEN';
    return 'ok';
  },
};

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => h.close());

function graphqlOutcome(result: { data?: unknown; errors?: Array<{ extensions?: { code?: string } }> }): Outcome | string {
  if (!result.errors?.length) return 'ok';
  return result.errors[0]!.extensions?.code ?? 'unknown';
}

function restOutcome(status: number): Outcome | string {
  if (status >= 200 && status < 300) return 'ok';
  return status === 403 ? 'FORBIDDEN' : status === 404 ? 'NOT_FOUND' : status === 400 ? 'BAD_USER_INPUT' : String(status);
}

async function keyOf(accountId: string, userId: string): Promise<{ id: string; secret: string }> {
  const issued = await h.database.transactions.run(h.database.em(), (tx) => new AccountsService(tx).createApiKey({ accountId, userId }));
  const [row] = await h.database.em().execute<{ id: string }[]>('select id from api_keys where user_id = ? order by created_at desc limit 1', [userId]);
  return { id: row!.id, secret: issued.apiKey };
}

type Invoker = { face: 'GraphQL' | 'REST'; check: keyof typeof EXPECTED; run(actor: Actor, target: Target, account: TestAccount): Promise<Outcome | string> };

const newEmail = () => `relations-${randomUUID()}@example.com`;

/** How each privilege-order operation is invoked, on each face where it exists. */
const INVOKERS: Record<string, Invoker[]> = {
  'Mutation.updateUser': [
    { face: 'GraphQL', check: 'jobTitle', run: async (actor, target) => graphqlOutcome(await h.graphql('mutation($id: ID!) { updateUser(input: { id: $id, jobTitle: "Relations" }) { user { id } } }', { id: target.id }, actor.key)) },
    { face: 'GraphQL', check: 'email', run: async (actor, target) => graphqlOutcome(await h.graphql('mutation($id: ID!, $email: EmailAddress!) { updateUser(input: { id: $id, email: $email }) { user { id } } }', { id: target.id, email: newEmail() }, actor.key)) },
    { face: 'REST', check: 'jobTitle', run: async (actor, target) => restOutcome((await h.rest('put', `/users/${target.id}`, { key: actor.key, body: { user: { job_title: 'Relations' } } })).status) },
    { face: 'REST', check: 'email', run: async (actor, target) => restOutcome((await h.rest('put', `/users/${target.id}`, { key: actor.key, body: { user: { email: newEmail() } } })).status) },
  ],
  'Mutation.updateUsers': [
    { face: 'GraphQL', check: 'email in a bulk update', run: async (actor, target) => graphqlOutcome(await h.graphql('mutation($id: ID!, $email: EmailAddress!) { updateUsers(input: { users: [{ id: $id, email: $email }] }) { users { id } } }', { id: target.id, email: newEmail() }, actor.key)) },
  ],
  'Mutation.deleteOAuthDelegations': [
    { face: 'GraphQL', check: 'end access', run: async (actor, target) => graphqlOutcome(await h.graphql('mutation($id: ID!) { deleteOAuthDelegations(input: { userId: $id, types: [MOBILE] }) { revokedCount } }', { id: target.id }, actor.key)) },
    { face: 'REST', check: 'end access', run: async (actor, target) => restOutcome((await h.rest('delete', `/oauth_delegations?user_id=${target.id}&type=mobile`, { key: actor.key })).status) },
  ],
  'Mutation.revokeSignInSessions': [
    { face: 'GraphQL', check: 'end access', run: async (actor, target) => graphqlOutcome(await h.graphql('mutation($id: ID!) { revokeSignInSessions(input: { userId: $id }) { revokedCount } }', { id: target.id }, actor.key)) },
  ],
  'Mutation.revokeOAuthDelegation': [
    { face: 'GraphQL', check: 'end access', run: async (actor, target) => {
      const id = await delegationOf(target.id);
      return graphqlOutcome(await h.graphql('mutation($id: ID!, $userId: ID!) { revokeOAuthDelegation(input: { userId: $userId, id: $id }) { oauthDelegation { id } } }', { id, userId: target.id }, actor.key));
    } },
    { face: 'REST', check: 'end access', run: async (actor, target) => restOutcome((await h.rest('delete', `/users/${target.id}/oauth_delegations/${await delegationOf(target.id)}`, { key: actor.key })).status) },
  ],
  'Mutation.createApiKey': [
    { face: 'GraphQL', check: 'mint a USER key', run: async (actor, target) => graphqlOutcome(await h.graphql('mutation($id: ID!) { createApiKey(input: { kind: USER, userId: $id }) { secret } }', { id: target.id }, actor.key)) },
  ],
  'Mutation.rollApiKey': [
    { face: 'GraphQL', check: 'roll a USER key', run: async (actor, target, account) => {
      const key = await keyOf(target.otherAccount ? (await accountOf(target.id)) : account.id, target.id);
      return graphqlOutcome(await h.graphql('mutation($id: ID!) { rollApiKey(input: { id: $id }) { secret } }', { id: key.id }, actor.key));
    } },
  ],
  'Mutation.revokeApiKey': [
    { face: 'GraphQL', check: 'revoke a USER key', run: async (actor, target, account) => {
      const key = await keyOf(target.otherAccount ? (await accountOf(target.id)) : account.id, target.id);
      return graphqlOutcome(await h.graphql('mutation($id: ID!) { revokeApiKey(input: { id: $id }) { apiKey { id } } }', { id: key.id }, actor.key));
    } },
  ],
};

/** A live mobile delegation of the user, to revoke. */
async function delegationOf(userId: string): Promise<string> {
  const { delegation } = await h.database.transactions.run(h.database.em(), (tx) => issueDelegation(tx, { userId, type: 'mobile', scopes: 'users.read' }));
  return delegation.id;
}

async function accountOf(userId: string): Promise<string> {
  const [row] = await h.database.em().execute<{ account_id: string }[]>('select account_id from users where id = ?', [userId]);
  return row!.account_id;
}

describe('the privilege order, on every face', () => {
  test('every row whose rule depends on the target\'s relation to the actor has an invoker here', () => {
    const rows = Object.entries(ACCESS_TABLE).filter(([, row]) => PRIVILEGE_ORDER_RULES.includes(row.target)).map(([coordinate]) => coordinate);
    expect(rows.filter((coordinate) => !INVOKERS[coordinate])).toEqual([]);
    expect(rows.length).toBeGreaterThanOrEqual(Object.keys(INVOKERS).length);
  });

  test('each actor against each relation gets the answer the rule gives', async () => {
    const account = await h.createAccount();
    const other = await h.createAccount();
    const admin = await h.createUser(account, { role: 'admin' });
    const member = await h.createUser(account);
    const actors: Actor[] = [
      { name: 'owner', role: 'owner', key: await h.ownerKey(account), userId: account.ownerId },
      { name: 'admin', role: 'admin', key: admin.key, userId: admin.id },
      { name: 'member', role: 'user', key: member.key, userId: member.id },
      { name: 'full-access account key', role: 'account key', key: account.key },
      { name: 'read-only account key', role: 'read-only account key', key: await h.accountKey(account, { readOnly: true }) },
    ];
    const secondAdmin = await h.createUser(account, { role: 'admin' });
    const secondMember = await h.createUser(account);
    const stranger = await h.createUser(other, { role: 'admin' });
    const targets: Target[] = [
      { id: account.ownerId, role: 'owner', otherAccount: false },
      { id: secondAdmin.id, role: 'admin', otherAccount: false },
      { id: secondMember.id, role: 'user', otherAccount: false },
      { id: stranger.id, role: 'admin', otherAccount: true },
    ];
    const mismatches: string[] = [];
    let cases = 0;
    for (const [coordinate, invokers] of Object.entries(INVOKERS)) {
      for (const invoker of invokers) {
        for (const actor of actors) {
          // The actor's own user is one more target: the "self" relation.
          const own: Target[] = actor.userId ? [{ id: actor.userId, role: actor.role as Role, otherAccount: false }] : [];
          for (const target of [...own, ...targets]) {
            const relation = relationOf(actor, target);
            const expected = [EXPECTED[invoker.check]!(actor, target, relation)].flat();
            const actual = await invoker.run(actor, target, account);
            cases += 1;
            if (!expected.includes(actual as Outcome)) mismatches.push(`${coordinate} (${invoker.check}, ${invoker.face}) by ${actor.name} on ${relation} (${target.role}): ${actual}, the rule says ${expected.join(' or ')}`);
          }
        }
      }
    }
    expect(mismatches).toEqual([]);
    expect(cases).toBeGreaterThan(150);
  }, 120_000);
});
