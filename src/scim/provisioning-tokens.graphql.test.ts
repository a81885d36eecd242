import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import supertest from 'supertest';
import { startHarness, type Credential, type Harness } from '../../test/support/harness.js';
import { SCOPES } from '../auth/scopes.js';
import { scannableSecretKind } from '../auth/secret-format.js';
import { listApiKeysCommand, revokeApiKeyCommand, rollApiKeyCommand } from '../cli/commands/api-keys.commands.js';
import { issueDelegation } from '../oauth-delegations/oauth-delegation.service.js';

/** Provisioning tokens through GraphQL, and the operator's `api-keys list|revoke|roll`. */
let h: Harness;

beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h.close();
});

const FIELDS = 'id description createdAt lastUsedAt revokedAt truncatedToken';
const LIST = `{ provisioningTokens { ${FIELDS} } }`;
const CREATE = `mutation($description: String) { createProvisioningToken(input: {description: $description}) { token provisioningToken { ${FIELDS} } } }`;
const REVOKE = `mutation($id: ID!) { revokeProvisioningToken(input: {id: $id}) { provisioningToken { ${FIELDS} } } }`;
const codeOf = (result: { errors?: any[] }) => result.errors?.[0]?.extensions?.code;
const scim = (token: string) => supertest(h.app).get('/scim/v2/Users').set('Authorization', `Bearer ${token}`);

async function bearer(userId: string, scopes: readonly string[], type: 'web' | 'integration' = 'web'): Promise<Credential> {
  return { bearer: (await h.database.transactions.run(h.database.em(), (tx) => issueDelegation(tx, { userId, type, scopes: scopes.join(' ') }))).accessToken };
}

async function tokenRows(accountId: string): Promise<number> {
  const [row] = await h.database.em().execute<{ n: string }[]>('select count(*) as n from provisioning_tokens where account_id = ?', [accountId]);
  return Number(row!.n);
}

describe('provisioning tokens through GraphQL', () => {
  test('an admin creates one (scannable, shown once, works on /scim/v2 only), lists it with its last use, revokes it; each change recorded', async () => {
    const account = await h.createAccount();
    const admin = await h.createUser(account, { role: 'admin' });
    const created = await h.graphql(CREATE, { description: 'Okta' }, admin.key);
    expect(created.errors).toBeUndefined();
    const { token, provisioningToken } = created.data.createProvisioningToken;
    expect(scannableSecretKind(token)).toBe('provisioningToken');
    expect(provisioningToken).toMatchObject({ description: 'Okta', revokedAt: null, lastUsedAt: null, truncatedToken: token.slice(-4) });
    expect((await scim(token)).status).toBe(200);
    expect((await h.rest('get', '/users', { key: { bearer: token } })).status).toBe(401);

    let listed: any;
    for (let attempt = 0; attempt < 50; attempt++) {
      listed = (await h.graphql(LIST, {}, admin.key)).data.provisioningTokens;
      if (listed[0].lastUsedAt) break;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(listed).toHaveLength(1);
    expect(listed[0]).toMatchObject({ id: provisioningToken.id, description: 'Okta' });
    expect(Math.abs(new Date(listed[0].lastUsedAt).getTime() - Date.now())).toBeLessThan(60_000);

    const revoked = await h.graphql(REVOKE, { id: provisioningToken.id }, admin.key);
    expect(revoked.data.revokeProvisioningToken.provisioningToken.revokedAt).toEqual(expect.any(String));
    expect((await scim(token)).status).toBe(401);
    const records = await h.database.em().execute<{ action: string }[]>(
      "select action from audit_records where account_id = ? and root_resource_type = 'provisioning_token' order by position",
      [account.id],
    );
    expect(records.map((record) => record.action)).toEqual(['create', 'revoke']);
  });

  test('rights: members, read-only keys and users, tokens without credentials.* or users.write, other accounts may not; nothing is written', async () => {
    const account = await h.createAccount();
    const member = await h.createUser(account);
    const readOnlyUser = await h.createUser(account, { role: 'read_only_user' });
    const admin = await h.createUser(account, { role: 'admin' });
    const existing = (await h.graphql(CREATE, { description: 'existing' }, account.key)).data.createProvisioningToken;
    const readOnlyKey = await h.accountKey(account, { readOnly: true });
    const before = await tokenRows(account.id);
    // Revoking lowers access: an admin's token with credentials.write revokes without users.write (it may not create).
    const writers: [string, Credential, boolean][] = [
      ['member', member.key, false],
      ['read-only user', readOnlyUser.key, false],
      ['read-only account key', readOnlyKey, false],
      ['admin token without credentials.write', await bearer(admin.id, ['credentials.read', 'users.read', 'users.write']), false],
      ['admin token without users.write', await bearer(admin.id, ['credentials.write', 'users.read']), true],
      ['third-party token of an admin', await bearer(admin.id, ['users.read', 'users.write'], 'integration'), false],
    ];
    for (const [who, key, mayRevoke] of writers) {
      expect([who, codeOf(await h.graphql(CREATE, { description: 'x' }, key))]).toEqual([who, 'FORBIDDEN']);
      if (!mayRevoke) expect([who, codeOf(await h.graphql(REVOKE, { id: existing.provisioningToken.id }, key))]).toEqual([who, 'FORBIDDEN']);
    }
    expect(codeOf(await h.graphql(LIST, {}, member.key))).toBe('FORBIDDEN');
    expect(codeOf(await h.graphql(LIST, {}, await bearer(admin.id, ['users.read'])))).toBe('FORBIDDEN');
    expect(await tokenRows(account.id)).toBe(before);
    expect((await scim(existing.token)).status).toBe(200);

    // Another account's token is not found there, and theirs are not listed.
    const other = await h.createAccount();
    expect(codeOf(await h.graphql(REVOKE, { id: existing.provisioningToken.id }, other.key))).toBe('NOT_FOUND');
    expect((await h.graphql(LIST, {}, other.key)).data.provisioningTokens).toEqual([]);
    expect((await scim(existing.token)).status).toBe(200);

    // A read-only key lists; an admin's first-party token with the scopes creates.
    expect((await h.graphql(LIST, {}, readOnlyKey)).data.provisioningTokens.length).toBe(before);
    expect((await h.graphql(CREATE, {}, await bearer(admin.id, SCOPES))).errors).toBeUndefined();
  });

  test('a description over 255 characters is BAD_USER_INPUT and nothing is written', async () => {
    const account = await h.createAccount();
    expect(codeOf(await h.graphql(CREATE, { description: 'd'.repeat(256) }, account.key))).toBe('BAD_USER_INPUT');
    expect(await tokenRows(account.id)).toBe(0);
  });
});

describe('accessctl api-keys list|revoke|roll', () => {
  const io = { info: () => {} };

  test('lists the account\'s keys (never a secret), rolls one with a grace period, revokes one; the API sees the same', async () => {
    const account = await h.createAccount();
    const member = await h.createUser(account);
    const listed = await listApiKeysCommand.run(h.database, { account: account.id, json: true }, io);
    const keys = listed.api_keys as { id: string; kind: string; user_id: string | null; status: string; created_by_user_id: string | null }[];
    expect(keys.map((key) => key.kind).sort()).toEqual(['account_full_access', 'user']);
    expect(keys.every((key) => key.created_by_user_id === null && key.status === 'active')).toBe(true);
    expect(JSON.stringify(listed)).not.toContain((member.key as { token: string }).token);
    const memberKey = keys.find((key) => key.user_id === member.id)!;
    expect((await listApiKeysCommand.run(h.database, { account: account.id, user: member.id }, io)).api_keys).toHaveLength(1);

    const rolled = await rollApiKeyCommand.run(h.database, { id: memberKey.id, 'previous-expires-in': '0', json: true }, io);
    expect(Object.keys(rolled).sort()).toEqual(['api_key', 'id', 'previous']);
    expect(scannableSecretKind(String(rolled.api_key))).toBe('userApiKey');
    expect((await h.rest('get', '/users/me', { key: member.key })).status).toBe(401);
    expect((await h.rest('get', '/users/me', { key: { token: String(rolled.api_key) } })).status).toBe(200);
    await expect(rollApiKeyCommand.run(h.database, { id: memberKey.id, 'previous-expires-in': '604801' }, io)).rejects.toMatchObject({ kind: 'invalid_input' });

    const revoked = await revokeApiKeyCommand.run(h.database, { id: String(rolled.id), json: true }, io);
    expect(revoked.api_key).toMatchObject({ id: rolled.id, status: 'revoked' });
    expect((await h.rest('get', '/users/me', { key: { token: String(rolled.api_key) } })).status).toBe(401);
    const shown = await h.graphql('query($id: ID!) { apiKeys(userId: $id) { nodes { id status createdBy { id } } } }', { id: member.id }, account.key);
    expect(shown.data.apiKeys.nodes).toEqual([{ id: rolled.id, status: 'REVOKED', createdBy: null }, { id: memberKey.id, status: 'EXPIRED', createdBy: null }]);
    await expect(revokeApiKeyCommand.run(h.database, { id: 'PNOPE00' }, io)).rejects.toMatchObject({ kind: 'not_found' });
  });
});

describe('a provisioning token acts no higher than whoever created it', () => {
  const renameThroughScim = (token: string, userId: string) => supertest(h.app).patch(`/scim/v2/Users/${userId}`).set('Authorization', `Bearer ${token}`).set('Content-Type', 'application/scim+json')
    .send({ schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'], Operations: [{ op: 'replace', path: 'userName', value: `renamed-${userId.toLowerCase()}-${Date.now()}@example.com` }] });

  test('an admin\'s token renames members, not another admin nor the owner; the owner\'s token renames admins', async () => {
    const account = await h.createAccount();
    const admin = await h.createUser(account, { role: 'admin' });
    const otherAdmin = await h.createUser(account, { role: 'admin' });
    const member = await h.createUser(account);
    const byAdmin = (await h.graphql(CREATE, { description: 'made by an admin' }, admin.key)).data.createProvisioningToken.token as string;

    expect((await renameThroughScim(byAdmin, member.id)).status).toBe(200);
    for (const [target, why] of [[otherAdmin.id, 'not created by the account owner'], [account.ownerId, 'Only the account owner may change the owner']] as const) {
      const refused = await renameThroughScim(byAdmin, target);
      expect([target, refused.status]).toEqual([target, 403]);
      expect(refused.body.detail).toContain(why);
    }
    const [{ email: unchanged }] = await h.database.em().execute<{ email: string }[]>('select email from users where id = ?', [otherAdmin.id]);
    expect(unchanged).toBe(otherAdmin.email);

    const byOwner = (await h.graphql(CREATE, { description: 'made by the owner' }, await h.ownerKey(account))).data.createProvisioningToken.token as string;
    expect((await renameThroughScim(byOwner, otherAdmin.id)).status).toBe(200);
  });
});
