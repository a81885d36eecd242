import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { startHarness, type Credential, type Harness, type TestAccount } from '../../test/support/harness.js';
import { SCOPES } from '../auth/scopes.js';
import { scannableSecretKind } from '../auth/secret-format.js';
import { issueDelegation } from '../oauth-delegations/oauth-delegation.service.js';

/** API keys through GraphQL: each operation, and each right both ways. */
let h: Harness;

beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h.close();
});

const KEY_FIELDS = 'id kind description createdAt lastUsedAt expiresAt revokedAt status truncatedToken user { id } createdBy { id }';
const CREATE = `mutation($input: CreateApiKeyInput!) { createApiKey(input: $input) { secret apiKey { ${KEY_FIELDS} } } }`;
const REVOKE = `mutation($id: ID!) { revokeApiKey(input: {id: $id}) { apiKey { ${KEY_FIELDS} } } }`;
const ROLL = `mutation($id: ID!, $grace: Int) { rollApiKey(input: {id: $id, previousExpiresIn: $grace}) { secret apiKey { ${KEY_FIELDS} } previous { ${KEY_FIELDS} } } }`;
const LIST = `query($userId: ID, $statuses: [ApiKeyStatus!], $first: Int, $after: String) {
  apiKeys(userId: $userId, statuses: $statuses, first: $first, after: $after) { totalCount nodes { ${KEY_FIELDS} } pageInfo { hasNextPage endCursor } }
}`;

const codeOf = (result: { errors?: any[] }) => result.errors?.[0]?.extensions?.code;

async function bearer(userId: string, scopes: readonly string[], type: 'web' | 'mobile' | 'integration' = 'web'): Promise<Credential> {
  const issued = await h.database.transactions.run(h.database.em(), (tx) => issueDelegation(tx, { userId, type, scopes: scopes.join(' ') }));
  return { bearer: issued.accessToken };
}

async function create(key: Credential, input: Record<string, unknown>) {
  return h.graphql(CREATE, { input }, key);
}

async function rowCount(accountId: string): Promise<number> {
  const [row] = await h.database.em().execute<{ n: string }[]>('select count(*) as n from api_keys where account_id = ?', [accountId]);
  return Number(row!.n);
}

async function auditActions(accountId: string, resourceId: string): Promise<string[]> {
  const rows = await h.database.em().execute<{ action: string; body: any }[]>(
    'select action, body from audit_records where account_id = ? order by position',
    [accountId],
  );
  return rows.filter((row) => (typeof row.body === 'string' ? JSON.parse(row.body) : row.body).details.resource.id === resourceId).map((row) => row.action);
}

describe('createApiKey', () => {
  test('an admin creates each account kind and their own USER key; the secret is scannable, shown once, works at once, and the key is recorded with its creator', async () => {
    const account = await h.createAccount();
    const admin = await h.createUser(account, { role: 'admin' });
    const member = await h.createUser(account);
    const expected = { ACCOUNT_FULL_ACCESS: 'accountApiKey', ACCOUNT_READ_ONLY: 'accountReadOnlyApiKey', USER: 'userApiKey' } as const;
    for (const kind of Object.keys(expected) as (keyof typeof expected)[]) {
      const result = await create(admin.key, { kind, description: `for ${kind}`, ...(kind === 'USER' ? { userId: admin.id } : {}) });
      expect(result.errors).toBeUndefined();
      const { secret, apiKey } = result.data.createApiKey;
      expect(scannableSecretKind(secret)).toBe(expected[kind]);
      expect(apiKey).toMatchObject({ kind, description: `for ${kind}`, status: 'ACTIVE', revokedAt: null, expiresAt: null, truncatedToken: secret.slice(-4), createdBy: { id: admin.id } });
      expect(apiKey.user).toEqual(kind === 'USER' ? { id: admin.id } : null);
      const me = await h.rest('get', kind === 'USER' ? '/users/me' : `/users/${member.id}`, { key: { token: secret } });
      expect(me.status).toBe(200);
      expect(await auditActions(account.id, apiKey.id)).toEqual(['create']);
      // The secret is stored only as a digest.
      const [stored] = await h.database.em().execute<{ token_digest: string }[]>('select token_digest from api_keys where id = ?', [apiKey.id]);
      expect(stored!.token_digest).not.toContain(secret);
    }
  });

  test('a user creates their own key; the owner\'s account key has no creator user', async () => {
    const account = await h.createAccount();
    const user = await h.createUser(account);
    const own = await create(user.key, { kind: 'USER', userId: user.id });
    expect(own.data.createApiKey.apiKey).toMatchObject({ kind: 'USER', user: { id: user.id }, createdBy: { id: user.id } });
    const byAccountKey = await create(account.key, { kind: 'ACCOUNT_READ_ONLY' });
    expect(byAccountKey.data.createApiKey.apiKey.createdBy).toBeNull();
  });

  test('bad input: unknown kind, expiresAt past or beyond 366 days, a USER key without user, an account key with one, a long description: BAD_USER_INPUT, nothing written', async () => {
    const account = await h.createAccount();
    const user = await h.createUser(account);
    const before = await rowCount(account.id);
    const now = Date.now();
    for (const input of [
      { kind: 'ROOT' },
      { kind: 'ACCOUNT_FULL_ACCESS', expiresAt: new Date(now - 1_000).toISOString() },
      { kind: 'ACCOUNT_FULL_ACCESS', expiresAt: new Date(now + 367 * 86_400_000).toISOString() },
      { kind: 'USER' },
      { kind: 'ACCOUNT_READ_ONLY', userId: user.id },
      { kind: 'ACCOUNT_FULL_ACCESS', description: 'x'.repeat(256) },
    ]) {
      const result = await create(account.key, input);
      expect([input, codeOf(result)]).toEqual([input, 'BAD_USER_INPUT']);
    }
    expect(await rowCount(account.id)).toBe(before);
    const fine = await create(account.key, { kind: 'ACCOUNT_FULL_ACCESS', expiresAt: new Date(now + 365 * 86_400_000).toISOString() });
    expect(fine.errors).toBeUndefined();
  });

  test('rights: members, read-only and restricted roles, read-only keys, other users and tokens without every scope may not mint; nobody but the owner mints for the owner', async () => {
    const account = await h.createAccount();
    const admin = await h.createUser(account, { role: 'admin' });
    const member = await h.createUser(account);
    const readOnly = await h.createUser(account, { role: 'read_only_user' });
    const restricted = await h.createUser(account, { role: 'restricted_access' });
    const readOnlyKey = await h.accountKey(account, { readOnly: true });
    const before = await rowCount(account.id);
    const refusals: [string, Credential, Record<string, unknown>][] = [
      ['member: account key', member.key, { kind: 'ACCOUNT_FULL_ACCESS' }],
      ['member: read-only account key', member.key, { kind: 'ACCOUNT_READ_ONLY' }],
      ['member: another user\'s key', member.key, { kind: 'USER', userId: admin.id }],
      ['read-only user: own key', readOnly.key, { kind: 'USER', userId: readOnly.id }],
      ['restricted user: own key', restricted.key, { kind: 'USER', userId: restricted.id }],
      ['read-only account key', readOnlyKey, { kind: 'ACCOUNT_READ_ONLY' }],
      ['admin: the owner\'s key', admin.key, { kind: 'USER', userId: account.ownerId }],
      ['full-access key: the owner\'s key', account.key, { kind: 'USER', userId: account.ownerId }],
      ['first-party token without users.write', await bearer(member.id, SCOPES.filter((scope) => scope !== 'users.write')), { kind: 'USER', userId: member.id }],
      ['admin token without every scope', await bearer(admin.id, ['credentials.read', 'credentials.write', 'users.read']), { kind: 'ACCOUNT_FULL_ACCESS' }],
      ['third-party token without credentials.write', await bearer(member.id, ['users.read', 'users.write'], 'integration'), { kind: 'USER', userId: member.id }],
    ];
    for (const [who, key, input] of refusals) {
      const result = await create(key, input);
      expect([who, codeOf(result)]).toEqual([who, 'FORBIDDEN']);
    }
    expect(await rowCount(account.id)).toBe(before);

    // The owner may for themself; a first-party token with every scope may for its user.
    const owner = await h.graphql(CREATE, { input: { kind: 'USER', userId: account.ownerId } }, await bearer(account.ownerId, SCOPES));
    expect(owner.errors).toBeUndefined();
    expect((await create(await bearer(member.id, SCOPES), { kind: 'USER', userId: member.id })).errors).toBeUndefined();
  });


  test('another account\'s user is not found, and no key is written there', async () => {
    const account = await h.createAccount();
    const other = await h.createAccount();
    const stranger = await h.createUser(other);
    const before = await rowCount(other.id);
    expect(codeOf(await create(account.key, { kind: 'USER', userId: stranger.id }))).toBe('NOT_FOUND');
    expect(await rowCount(other.id)).toBe(before);
  });
});

describe('createApiKey never acts as another person', () => {
  test('nobody mints a key that acts as another person: not an admin for a member or another admin, not the owner, not an account key', async () => {
    const account = await h.createAccount();
    const admin = await h.createUser(account, { role: 'admin' });
    const otherAdmin = await h.createUser(account, { role: 'admin' });
    const member = await h.createUser(account);
    const before = await rowCount(account.id);
    const attempts: Array<[string, Credential, string]> = [
      ['admin for a member', admin.key, member.id],
      ['admin for another admin', admin.key, otherAdmin.id],
      ['owner for an admin', await bearer(account.ownerId, SCOPES), admin.id],
      ['full-access account key for a member', account.key, member.id],
    ];
    for (const [who, key, userId] of attempts) {
      const result = await create(key, { kind: 'USER', userId });
      expect([who, codeOf(result), result.errors?.[0]?.message]).toEqual([who, 'FORBIDDEN', 'A USER key acts as its user: only that user may create or roll one.']);
    }
    expect(await rowCount(account.id)).toBe(before);
  });
});

describe('apiKeys and User.apiKeys', () => {
  let account: TestAccount;
  let member: Awaited<ReturnType<Harness['createUser']>>;

  beforeAll(async () => {
    account = await h.createAccount();
    member = await h.createUser(account);
  });

  test('account-wide for account_admin, newest first, paged; filtered by status; a cursor of another query is refused', async () => {
    const admin = await h.createUser(account, { role: 'admin' });
    const created: string[] = [];
    for (let i = 0; i < 3; i++) created.push((await create(account.key, { kind: 'ACCOUNT_READ_ONLY', description: `k${i}` })).data.createApiKey.apiKey.id);
    await h.graphql(REVOKE, { id: created[0] }, account.key);
    const first = await h.graphql(LIST, { first: 2 }, admin.key);
    expect(first.errors).toBeUndefined();
    expect(first.data.apiKeys.nodes.map((key: { id: string }) => key.id)).toEqual([created[2], created[1]]);
    expect(first.data.apiKeys.pageInfo.hasNextPage).toBe(true);
    const next = await h.graphql(LIST, { first: 100, after: first.data.apiKeys.pageInfo.endCursor }, admin.key);
    expect(next.data.apiKeys.nodes.map((key: { id: string }) => key.id)).toContain(created[0]);
    expect(next.data.apiKeys.nodes.map((key: { id: string }) => key.id)).not.toContain(created[2]);
    const revoked = await h.graphql(LIST, { statuses: ['REVOKED'] }, admin.key);
    expect(revoked.data.apiKeys.nodes.map((key: { id: string; status: string }) => [key.id, key.status])).toEqual([[created[0], 'REVOKED']]);
    expect(revoked.data.apiKeys.totalCount).toBe(1);
    expect(codeOf(await h.graphql(LIST, { statuses: ['ACTIVE'], after: first.data.apiKeys.pageInfo.endCursor }, admin.key))).toBe('BAD_USER_INPUT');
  });

  test('a user lists their own keys (even read-only); others\' only with account_admin; members may not list the account\'s', async () => {
    const readOnly = await h.createUser(account, { role: 'read_only_user' });
    const own = await h.graphql(LIST, { userId: member.id }, member.key);
    expect(own.errors).toBeUndefined();
    expect(own.data.apiKeys.nodes.length).toBeGreaterThan(0);
    expect(own.data.apiKeys.nodes.every((key: { user: { id: string } }) => key.user.id === member.id)).toBe(true);
    expect((await h.graphql(LIST, { userId: readOnly.id }, readOnly.key)).errors).toBeUndefined();
    expect(codeOf(await h.graphql(LIST, { userId: member.id }, readOnly.key))).toBe('FORBIDDEN');
    expect(codeOf(await h.graphql(LIST, {}, member.key))).toBe('FORBIDDEN');
    expect((await h.graphql(LIST, { userId: member.id }, await h.accountKey(account, { readOnly: true }))).errors).toBeUndefined();
    // Another account's user: not found, as an id that never existed.
    const other = await h.createAccount();
    expect(codeOf(await h.graphql(LIST, { userId: member.id }, other.key))).toBe('NOT_FOUND');
  });

  test('tokens need credentials.read; a third-party app cannot hold it', async () => {
    expect(codeOf(await h.graphql(LIST, { userId: member.id }, await bearer(member.id, ['users.read'])))).toBe('FORBIDDEN');
    const scoped = await h.graphql(LIST, { userId: member.id }, await bearer(member.id, ['credentials.read', 'users.read']));
    expect(scoped.errors).toBeUndefined();
  });

  test('User.apiKeys is the user\'s keys, and null with FORBIDDEN for a caller who may not see them', async () => {
    const other = await h.createUser(account);
    const query = 'query($id: ID!) { user(id: $id) { id name apiKeys { nodes { id kind } } } }';
    const own = await h.graphql(query, { id: member.id }, member.key);
    expect(own.errors).toBeUndefined();
    expect(own.data.user.apiKeys.nodes.length).toBeGreaterThan(0);
    const denied = await h.graphql(query, { id: member.id }, other.key);
    expect(denied.data.user).toMatchObject({ id: member.id, apiKeys: null });
    expect(codeOf(denied)).toBe('FORBIDDEN');
  });
});

describe('revokeApiKey', () => {
  test('the key is refused from the next request on (401/2006, UNAUTHENTICATED); recorded once; revoking again changes nothing', async () => {
    const account = await h.createAccount();
    const member = await h.createUser(account);
    const issued = (await create(member.key, { kind: 'USER', userId: member.id })).data.createApiKey;
    const key = { token: issued.secret };
    expect((await h.rest('get', '/users/me', { key })).status).toBe(200);
    const revoked = await h.graphql(REVOKE, { id: issued.apiKey.id }, member.key);
    expect(revoked.data.revokeApiKey.apiKey).toMatchObject({ id: issued.apiKey.id, status: 'REVOKED' });
    const refused = await h.rest('get', '/users/me', { key });
    expect(refused.status).toBe(401);
    expect(refused.body.error.code).toBe(2006);
    expect(codeOf(await h.graphql('{ viewer { id } }', {}, key))).toBe('UNAUTHENTICATED');
    const again = await h.graphql(REVOKE, { id: issued.apiKey.id }, member.key);
    expect(again.data.revokeApiKey.apiKey.revokedAt).toBe(revoked.data.revokeApiKey.apiKey.revokedAt);
    expect(await auditActions(account.id, issued.apiKey.id)).toEqual(['create', 'revoke']);
  });

  test('rights: another member, a read-only user (own key), a read-only account key, a token without credentials.write, another account may not; an admin may revoke a member\'s, never the owner\'s or another admin\'s', async () => {
    const account = await h.createAccount();
    const member = await h.createUser(account);
    const other = await h.createUser(account);
    const admin = await h.createUser(account, { role: 'admin' });
    const readOnly = await h.createUser(account, { role: 'read_only_user' });
    const readOnlyOwnKey = (await h.graphql(LIST, { userId: readOnly.id }, readOnly.key)).data.apiKeys.nodes[0].id;
    const memberKey = (await h.graphql(LIST, { userId: member.id }, member.key)).data.apiKeys.nodes[0].id;
    const accountKeyId = (await h.graphql(LIST, {}, account.key)).data.apiKeys.nodes.find((key: { kind: string }) => key.kind === 'ACCOUNT_FULL_ACCESS').id;
    const stranger = await h.createAccount();
    expect(codeOf(await h.graphql(REVOKE, { id: memberKey }, other.key))).toBe('FORBIDDEN');
    expect(codeOf(await h.graphql(REVOKE, { id: readOnlyOwnKey }, readOnly.key))).toBe('FORBIDDEN');
    expect(codeOf(await h.graphql(REVOKE, { id: memberKey }, await h.accountKey(account, { readOnly: true })))).toBe('FORBIDDEN');
    expect(codeOf(await h.graphql(REVOKE, { id: memberKey }, await bearer(member.id, ['credentials.read'])))).toBe('FORBIDDEN');
    expect(codeOf(await h.graphql(REVOKE, { id: accountKeyId }, member.key))).toBe('FORBIDDEN');
    expect(codeOf(await h.graphql(REVOKE, { id: memberKey }, stranger.key))).toBe('NOT_FOUND');
    expect((await h.rest('get', '/users/me', { key: member.key })).status).toBe(200);

    expect((await h.graphql(REVOKE, { id: memberKey }, await bearer(member.id, ['credentials.write', 'users.read']))).errors).toBeUndefined();
    expect((await h.rest('get', '/users/me', { key: member.key })).status).toBe(401);
    const ownerKey = (await h.graphql(CREATE, { input: { kind: 'USER', userId: account.ownerId } }, await bearer(account.ownerId, SCOPES))).data.createApiKey;
    const otherAdmin = await h.createUser(account, { role: 'admin' });
    const otherAdminKey = (await h.graphql(LIST, { userId: otherAdmin.id }, otherAdmin.key)).data.apiKeys.nodes[0].id;
    for (const [whose, id, by] of [['the owner\'s', ownerKey.apiKey.id, admin.key], ['another admin\'s', otherAdminKey, admin.key], ['the owner\'s, by an account key', ownerKey.apiKey.id, account.key]] as const) {
      expect([whose, codeOf(await h.graphql(REVOKE, { id }, by))]).toEqual([whose, 'FORBIDDEN']);
    }
    expect((await h.rest('get', '/users/me', { key: { token: ownerKey.secret } })).status).toBe(200);
    expect((await h.rest('get', '/users/me', { key: otherAdmin.key })).status).toBe(200);
    expect((await h.graphql(REVOKE, { id: otherAdminKey }, await bearer(account.ownerId, SCOPES))).errors).toBeUndefined();
    expect((await h.rest('get', '/users/me', { key: otherAdmin.key })).status).toBe(401);
    expect((await h.graphql(REVOKE, { id: readOnlyOwnKey }, admin.key)).errors).toBeUndefined();
  });
});

describe('rollApiKey and expiry', () => {
  test('the replacement works, the previous key works during its grace period and is refused, saying it expired, once it ends', async () => {
    const account = await h.createAccount();
    const member = await h.createUser(account);
    const issued = (await create(member.key, { kind: 'USER', userId: member.id, description: 'deploy bot' })).data.createApiKey;
    const rolled = await h.graphql(ROLL, { id: issued.apiKey.id, grace: 3600 }, member.key);
    expect(rolled.errors).toBeUndefined();
    const { secret, apiKey, previous } = rolled.data.rollApiKey;
    expect(apiKey).toMatchObject({ kind: 'USER', description: 'deploy bot', user: { id: member.id }, status: 'ACTIVE' });
    expect(previous).toMatchObject({ id: issued.apiKey.id, status: 'ACTIVE' });
    const graceEnds = new Date(previous.expiresAt).getTime();
    expect(Math.abs(graceEnds - (Date.now() + 3_600_000))).toBeLessThan(60_000);
    expect((await h.rest('get', '/users/me', { key: { token: secret } })).status).toBe(200);
    expect((await h.rest('get', '/users/me', { key: { token: issued.secret } })).status).toBe(200);

    // The grace period ends (time moved through the database, not by waiting).
    await h.database.em().execute('update api_keys set expires_at = now() - interval \'1 second\' where id = ?', [issued.apiKey.id]);
    const refused = await h.rest('get', '/users/me', { key: { token: issued.secret } });
    expect(refused.status).toBe(401);
    expect(refused.body.error.code).toBe(2006);
    expect(JSON.stringify(refused.body)).toContain('expired');
    const viaGraphql = await h.graphql('{ viewer { id } }', {}, { token: issued.secret });
    expect(codeOf(viaGraphql)).toBe('UNAUTHENTICATED');
    expect(viaGraphql.errors![0].message).toContain('expired');
    expect((await h.rest('get', '/users/me', { key: { token: secret } })).status).toBe(200);
    const listed = await h.graphql(LIST, { userId: member.id, statuses: ['EXPIRED'] }, member.key);
    expect(listed.data.apiKeys.nodes.map((key: { id: string }) => key.id)).toEqual([issued.apiKey.id]);
    // An expired key cannot be rolled.
    expect(codeOf(await h.graphql(ROLL, { id: issued.apiKey.id }, member.key))).toBe('BAD_USER_INPUT');
  });

  test('previousExpiresIn: default one day, 0 ends the old key at once, out of 0..604800 is BAD_USER_INPUT with nothing written', async () => {
    const account = await h.createAccount();
    const first = (await create(account.key, { kind: 'ACCOUNT_READ_ONLY' })).data.createApiKey;
    const before = await rowCount(account.id);
    for (const grace of [-1, 604_801]) expect(codeOf(await h.graphql(ROLL, { id: first.apiKey.id, grace }, account.key))).toBe('BAD_USER_INPUT');
    expect(await rowCount(account.id)).toBe(before);
    const byDefault = await h.graphql(ROLL, { id: first.apiKey.id }, account.key);
    expect(Math.abs(new Date(byDefault.data.rollApiKey.previous.expiresAt).getTime() - (Date.now() + 86_400_000))).toBeLessThan(60_000);
    expect(byDefault.data.rollApiKey.apiKey.kind).toBe('ACCOUNT_READ_ONLY');
    const second = byDefault.data.rollApiKey;
    const atOnce = await h.graphql(ROLL, { id: second.apiKey.id, grace: 0 }, account.key);
    expect(atOnce.errors).toBeUndefined();
    expect((await h.rest('get', '/users', { key: { token: second.secret } })).status).toBe(401);
    expect((await h.rest('get', '/users', { key: { token: atOnce.data.rollApiKey.secret } })).status).toBe(200);
  });

  test('rights: a member may not roll an account key, an admin may not roll the owner\'s key, a read-only user may not roll their own', async () => {
    const account = await h.createAccount();
    const member = await h.createUser(account);
    const admin = await h.createUser(account, { role: 'admin' });
    const readOnly = await h.createUser(account, { role: 'read_only_user' });
    const ownerKey = (await h.graphql(CREATE, { input: { kind: 'USER', userId: account.ownerId } }, await bearer(account.ownerId, SCOPES))).data.createApiKey.apiKey.id;
    const accountKey = (await create(account.key, { kind: 'ACCOUNT_FULL_ACCESS' })).data.createApiKey.apiKey.id;
    const readOnlyKey = (await h.graphql(LIST, { userId: readOnly.id }, readOnly.key)).data.apiKeys.nodes[0].id;
    const before = await rowCount(account.id);
    expect(codeOf(await h.graphql(ROLL, { id: accountKey }, member.key))).toBe('FORBIDDEN');
    expect(codeOf(await h.graphql(ROLL, { id: ownerKey }, admin.key))).toBe('FORBIDDEN');
    expect(codeOf(await h.graphql(ROLL, { id: readOnlyKey }, readOnly.key))).toBe('FORBIDDEN');
    expect(await rowCount(account.id)).toBe(before);
    expect((await h.graphql(ROLL, { id: accountKey }, admin.key)).errors).toBeUndefined();
  });
});

describe('lastUsedAt', () => {
  test('set on first use without the request waiting for it, then not rewritten within the minute', async () => {
    const account = await h.createAccount();
    const member = await h.createUser(account);
    const issued = (await create(member.key, { kind: 'USER', userId: member.id })).data.createApiKey;
    expect(issued.apiKey.lastUsedAt).toBeNull();
    expect((await h.rest('get', '/users/me', { key: { token: issued.secret } })).status).toBe(200);
    const lastUsed = async () => {
      const [row] = await h.database.em().execute<{ last_used_at: Date | string | null }[]>('select last_used_at from api_keys where id = ?', [issued.apiKey.id]);
      return row!.last_used_at === null ? null : new Date(row!.last_used_at).getTime();
    };
    let first: number | null = null;
    for (let attempt = 0; attempt < 50 && first === null; attempt++) {
      first = await lastUsed();
      if (first === null) await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(first).not.toBeNull();
    expect(Math.abs(first! - Date.now())).toBeLessThan(60_000);
    // Put the recorded use back in time: further requests within the minute do not write it.
    await h.database.em().execute('update api_keys set last_used_at = last_used_at - interval \'30 seconds\' where id = ?', [issued.apiKey.id]);
    const moved = await lastUsed();
    for (let i = 0; i < 5; i++) await h.rest('get', '/users/me', { key: { token: issued.secret } });
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(await lastUsed()).toBe(moved);
    const shown = await h.graphql(LIST, { userId: member.id }, member.key);
    const node = shown.data.apiKeys.nodes.find((key: { id: string }) => key.id === issued.apiKey.id);
    expect(new Date(node.lastUsedAt).getTime()).toBe(moved);
  });
});


