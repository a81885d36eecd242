import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { startHarness, type Credential, type Harness } from '../../test/support/harness.js';
import { digestSecret } from '../auth/secrets.js';
import { recordGrantDelegation } from '../oauth-delegations/oauth-delegation.grants.js';

/**
 * Who may manage credentials, whatever the credential's own rights: a key rolled over and living out
 * its grace period manages nothing; read-only changes nothing (an integration's account-wide
 * delegation included); revocation by possession acts only on credentials that still work.
 */
let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => h.close());

const KEY_FIELDS = 'id status expiresAt';
const CREATE = `mutation($input: CreateApiKeyInput!) { createApiKey(input: $input) { secret apiKey { ${KEY_FIELDS} } } }`;
const REVOKE = `mutation($id: ID!) { revokeApiKey(input: {id: $id}) { apiKey { ${KEY_FIELDS} } } }`;
const ROLL = `mutation($id: ID!, $grace: Int) { rollApiKey(input: {id: $id, previousExpiresIn: $grace}) { secret apiKey { ${KEY_FIELDS} } previous { ${KEY_FIELDS} } } }`;
const REVOKE_DELEGATION = 'mutation($id: ID!) { revokeOAuthDelegation(input: {id: $id}) { oauthDelegation { id status } } }';
const codeOf = (result: { errors?: Array<{ extensions?: { code?: string } }> }) => result.errors?.[0]?.extensions?.code;

async function keyIdOf(userId: string): Promise<string> {
  const [row] = await h.database.em().execute<{ id: string }[]>('select id from api_keys where user_id = ? and revoked_at is null order by created_at limit 1', [userId]);
  return row!.id;
}

/** An integration's account-wide delegation, as registering the app records it. */
async function accountWideDelegation(accountId: string): Promise<string> {
  const grantId = `client:${randomUUID()}`;
  await h.database.transactions.run(h.database.em(), (tx) => recordGrantDelegation(tx, {
    accountId, userId: null, type: 'integration', clientId: grantId.slice(7), clientName: 'Integration', scopes: ['users.read'], grantId, expiresAt: new Date(Date.now() + 86_400_000),
  }));
  const [row] = await h.database.em().execute<{ id: string }[]>('select id from oauth_delegations where grant_id = ?', [grantId]);
  return row!.id;
}

async function statusOf(delegationId: string): Promise<string> {
  const [row] = await h.database.em().execute<{ status: string }[]>('select status from oauth_delegations where id = ?', [delegationId]);
  return row!.status;
}

describe('a rolled key in its grace period', () => {
  test('still reads, but creates, rolls and revokes no credential; its successor does', async () => {
    const account = await h.createAccount();
    const user = await h.createUser(account);
    const oldId = await keyIdOf(user.id);
    const rolled = await h.graphql(ROLL, { id: oldId, grace: 3600 }, user.key);
    expect(rolled.errors).toBeUndefined();
    const successor: Credential = { token: rolled.data.rollApiKey.secret };
    const successorId = rolled.data.rollApiKey.apiKey.id as string;
    expect((await h.rest('get', '/users/me', { key: user.key })).status).toBe(200);

    expect(codeOf(await h.graphql(CREATE, { input: { kind: 'USER', userId: user.id } }, user.key))).toBe('FORBIDDEN');
    expect(codeOf(await h.graphql(REVOKE, { id: successorId }, user.key))).toBe('FORBIDDEN');
    expect(codeOf(await h.graphql(ROLL, { id: oldId, grace: 3600 }, user.key))).toBe('FORBIDDEN');
    expect((await h.rest('get', '/users/me', { key: successor })).status).toBe(200);

    // Even its successor cannot roll it a second time: a rolled key is rolled once.
    expect(codeOf(await h.graphql(ROLL, { id: oldId, grace: 60 }, successor))).toBe('BAD_USER_INPUT');
    const rolledAgain = await h.graphql(ROLL, { id: successorId, grace: 0 }, successor);
    expect(rolledAgain.errors).toBeUndefined();
    expect(rolledAgain.data.rollApiKey.apiKey.expiresAt).toBeNull();
  });

  test('an account key in its grace period registers no app and mints no provisioning token', async () => {
    const account = await h.createAccount();
    const full = await h.accountKey(account);
    const [{ id }] = await h.database.em().execute<{ id: string }[]>('select id from api_keys where account_id = ? and user_id is null and read_only = false order by created_at desc limit 1', [account.id]);
    expect((await h.graphql(ROLL, { id, grace: 3600 }, full)).errors).toBeUndefined();
    const register = await h.graphql('mutation { registerOAuthApp(input: {name: "Partner", kind: THIRD_PARTY, redirectUris: ["https://partner.example/cb"], scopes: ["users.read"]}) { app { clientId } } }', {}, full);
    expect(codeOf(register)).toBe('FORBIDDEN');
    expect(codeOf(await h.graphql('mutation { createProvisioningToken(input: {description: "Okta"}) { token } }', {}, full))).toBe('FORBIDDEN');
    expect((await h.rest('get', '/users', { key: full })).status).toBe(200);
  });
});

describe('read-only changes nothing', () => {
  test('a read-only account key may not revoke an integration\'s account-wide delegation; a full-access key may', async () => {
    const account = await h.createAccount();
    const delegationId = await accountWideDelegation(account.id);
    const refused = await h.graphql(REVOKE_DELEGATION, { id: delegationId }, await h.accountKey(account, { readOnly: true }));
    expect(codeOf(refused)).toBe('FORBIDDEN');
    expect(await statusOf(delegationId)).toBe('issued');
    expect((await h.graphql(REVOKE_DELEGATION, { id: delegationId }, account.key)).errors).toBeUndefined();
    expect(await statusOf(delegationId)).toBe('revoked');
  });
});

describe('revocation by possession acts on credentials that still work', () => {
  test('an expired access token of a live grant ends nothing; a live one of the same grant ends it', async () => {
    const account = await h.createAccount();
    const user = await h.createUser(account);
    const grantId = `grant-${randomUUID()}`;
    await h.database.transactions.run(h.database.em(), (tx) => recordGrantDelegation(tx, {
      accountId: account.id, userId: user.id, type: 'mobile', clientId: 'mobile-app', clientName: 'Mobile', scopes: ['users.read'], grantId, expiresAt: new Date(Date.now() + 86_400_000),
    }));
    const insertToken = (secret: string, expiresAt: Date) => h.database.em().execute(
      'insert into oauth_server_records (model, key_digest, payload, grant_id, expires_at) values (\'AccessToken\', ?, \'{}\', ?, ?)',
      [digestSecret(secret), grantId, expiresAt],
    );
    const expired = `expired-${randomUUID()}`;
    const live = `live-${randomUUID()}`;
    await insertToken(expired, new Date(Date.now() - 3_600_000));
    await insertToken(live, new Date(Date.now() + 3_600_000));
    const [{ id }] = await h.database.em().execute<{ id: string }[]>('select id from oauth_delegations where grant_id = ?', [grantId]);

    expect((await h.rest('post', '/credentials/revoke', { body: { credentials: [expired] } })).status).toBe(202);
    expect(await statusOf(id)).toBe('issued');
    expect((await h.rest('post', '/credentials/revoke', { body: { credentials: [live] } })).status).toBe(202);
    expect(await statusOf(id)).toBe('revoked');
  });

  test('an expired API key is not touched (no revocation recorded for a key that no longer works)', async () => {
    const account = await h.createAccount();
    const user = await h.createUser(account);
    const created = await h.graphql(CREATE, { input: { kind: 'USER', userId: user.id } }, user.key);
    const { secret, apiKey } = created.data.createApiKey;
    await h.database.em().execute('update api_keys set expires_at = now() - interval \'1 hour\' where id = ?', [apiKey.id]);
    expect((await h.rest('post', '/credentials/revoke', { body: { credentials: [secret] } })).status).toBe(202);
    const [row] = await h.database.em().execute<{ revoked_at: Date | null }[]>('select revoked_at from api_keys where id = ?', [apiKey.id]);
    expect(row!.revoked_at).toBeNull();
  });
});

describe('POST /credentials/revoke draws on the address budget like every other route', () => {
  test('its answer carries the ratelimit headers', async () => {
    const answer = await h.rest('post', '/credentials/revoke', { body: { credentials: ['not-a-credential'] } });
    expect(answer.status).toBe(202);
    expect(Number(answer.headers['ratelimit-limit'])).toBeGreaterThan(0);
    expect(answer.headers['ratelimit-remaining']).toMatch(/^\d+$/);
    expect(answer.headers['ratelimit-reset']).toMatch(/^\d+$/);
  });
});
