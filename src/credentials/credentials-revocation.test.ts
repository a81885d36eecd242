import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import supertest from 'supertest';
import { LiveTestClient, sleep } from '../../test/support/live-client.js';
import { startTwoInstances, type TwoInstances } from '../../test/support/two-instances.js';
import { startHarness, type Harness } from '../../test/support/harness.js';
import { createRateLimiter } from '../auth/rate-limit.js';
import { issueDelegation } from '../oauth-delegations/oauth-delegation.service.js';
import { ProvisioningTokensService } from '../scim/provisioning-tokens.service.js';
import { digestSecret } from '../auth/secrets.js';

/** A revoked key is refused at once on every instance and socket; revocation by possession. */
const LIMITS = { maxConnectionsPerCredential: 3, maxSubscriptionsPerConnection: 60, maxBufferedBytes: 16_384, keepAliveMs: 60_000 };
const V2 = { Accept: 'application/vnd.pagerduty+json;version=2' };
const VIEWER_REVOKED = 'subscription { viewerAccessRevoked { reason occurredAt } }';

let instances: TwoInstances;
let a: Harness;

beforeAll(async () => {
  instances = await startTwoInstances(LIMITS);
  ({ a } = instances);
});
afterAll(async () => instances.close());

const secretOf = (key: unknown) => (key as { token: string }).token;

async function graphqlOnB(query: string, variables: Record<string, unknown>, token: string) {
  const response = await instances.bRest.post('/graphql').set({ 'Content-Type': 'application/json', Authorization: `Token token=${token}` }).send({ query, variables });
  return response.body as { data?: any; errors?: any[] };
}

async function operatorToken(userId: string): Promise<string> {
  return (await a.database.transactions.run(a.database.em(), (tx) => issueDelegation(tx, { userId, type: 'mobile', scopes: 'users.read' }))).accessToken;
}

async function provisioningToken(accountId: string, legacy = false): Promise<string> {
  const issued = await a.database.transactions.run(a.database.em(), (tx) => new ProvisioningTokensService(tx).create(accountId, 'Okta'));
  if (!legacy) return issued.token;
  // A token issued before the scannable format (prefix `scim_`), which keeps working.
  const old = `scim_${'L'.repeat(20)}${issued.id}`;
  await a.database.em().execute('update provisioning_tokens set token_digest = ? where id = ?', [digestSecret(old), issued.id]);
  return old;
}

// The SCIM face answers in its own media type, which the REST reference checker does not cover.
const scimWorks = async (token: string) => (await supertest(a.app).get('/scim/v2/Users').set('Authorization', `Bearer ${token}`)).status;

async function recordsOf(accountId: string) {
  const rows = await a.database.em().execute<{ action: string; method_type: string; body: any }[]>(
    'select action, method_type, body from audit_records where account_id = ? order by position',
    [accountId],
  );
  return rows.map((row) => ({ action: row.action, methodType: row.method_type, body: typeof row.body === 'string' ? JSON.parse(row.body) : row.body }));
}

describe('revokeApiKey across instances', () => {
  test('revoked through B: refused by A on the next request, and A\'s open socket of that key is told and closed 4403 within a second', async () => {
    const account = await a.createAccount();
    const user = await a.createUser(account);
    const viewer = await LiveTestClient.connect(a.httpServer, `Token token=${secretOf(user.key)}`);
    viewer.subscribe('revoked', VIEWER_REVOKED);
    await sleep(100);
    const [key] = await a.database.em().execute<{ id: string }[]>('select id from api_keys where user_id = ?', [user.id]);
    const revokedAt = Date.now();
    const revoked = await graphqlOnB('mutation($id: ID!) { revokeApiKey(input: {id: $id}) { apiKey { id status } } }', { id: key!.id }, secretOf(account.key));
    expect(revoked.data.revokeApiKey.apiKey.status).toBe('REVOKED');
    const refused = await a.rest('get', '/users/me', { key: user.key });
    expect(refused.status).toBe(401);
    expect(refused.body.error.code).toBe(2006);
    expect((await instances.bRest.get('/users/me').set({ ...V2, Authorization: `Token token=${secretOf(user.key)}` })).status).toBe(401);
    const event = await viewer.waitFor((message) => message.id === 'revoked' && message.type === 'next');
    expect(event.payload.data.viewerAccessRevoked.reason).toBe('CREDENTIAL_REVOKED');
    const closed = await viewer.closed;
    expect(closed.code).toBe(4403);
    expect(closed.at - revokedAt).toBeLessThan(1_000);
  });

  test('rolled through B with a grace period: A\'s open socket of the old key stays open during it and is closed (4403, CREDENTIAL_EXPIRED) when it ends', async () => {
    const account = await a.createAccount();
    const user = await a.createUser(account);
    const viewer = await LiveTestClient.connect(a.httpServer, `Token token=${secretOf(user.key)}`);
    viewer.subscribe('revoked', VIEWER_REVOKED);
    await sleep(100);
    const [key] = await a.database.em().execute<{ id: string }[]>('select id from api_keys where user_id = ?', [user.id]);
    const rolled = await graphqlOnB('mutation($id: ID!) { rollApiKey(input: {id: $id, previousExpiresIn: 2}) { previous { expiresAt } } }', { id: key!.id }, secretOf(user.key));
    const graceEnds = new Date(rolled.data.rollApiKey.previous.expiresAt).getTime();
    await sleep(500);
    expect(viewer.socket.readyState).toBe(viewer.socket.OPEN);
    const event = await viewer.waitFor((message) => message.id === 'revoked' && message.type === 'next', 4_000);
    expect(event.payload.data.viewerAccessRevoked.reason).toBe('CREDENTIAL_EXPIRED');
    const closed = await viewer.closed;
    expect(closed.code).toBe(4403);
    expect(closed.at).toBeGreaterThanOrEqual(graceEnds - 50);
    expect(closed.at - graceEnds).toBeLessThan(1_000);
  });

  test('revokeProvisioningToken through B: refused by A on /scim/v2 at once', async () => {
    const account = await a.createAccount();
    const token = await provisioningToken(account.id);
    expect(await scimWorks(token)).toBe(200);
    const [row] = await a.database.em().execute<{ id: string }[]>('select id from provisioning_tokens where account_id = ?', [account.id]);
    const revoked = await graphqlOnB('mutation($id: ID!) { revokeProvisioningToken(input: {id: $id}) { provisioningToken { id revokedAt } } }', { id: row!.id }, secretOf(account.key));
    expect(revoked.data.revokeProvisioningToken.provisioningToken.revokedAt).toEqual(expect.any(String));
    expect(await scimWorks(token)).toBe(401);
  });
});

describe('POST /credentials/revoke', () => {
  test('revokes each kind it is given (user, full and read-only account keys, new and old provisioning tokens, an OAuth access token), without a credential, 202 with no body', async () => {
    const account = await a.createAccount();
    const user = await a.createUser(account);
    const readOnly = await a.accountKey(account, { readOnly: true });
    const full = await a.accountKey(account);
    const bystander = await a.createUser(account);
    const provisioning = await provisioningToken(account.id);
    const legacyProvisioning = await provisioningToken(account.id, true);
    const accessToken = await operatorToken(user.id);
    expect(await scimWorks(legacyProvisioning)).toBe(200);
    const socket = await LiveTestClient.connect(a.httpServer, `Bearer ${accessToken}`);
    socket.subscribe('revoked', VIEWER_REVOKED);
    await sleep(100);

    const reported = [secretOf(user.key), secretOf(readOnly), secretOf(full), provisioning, legacyProvisioning, accessToken, 'not-a-credential-at-all'];
    const answer = await a.rest('post', '/credentials/revoke', { body: { credentials: reported } });
    expect(answer.status).toBe(202);
    expect(answer.text).toBe('');

    expect((await a.rest('get', '/users/me', { key: user.key })).status).toBe(401);
    expect((await a.rest('get', '/users', { key: readOnly })).status).toBe(401);
    expect((await a.rest('get', '/users', { key: full })).status).toBe(401);
    expect(await scimWorks(provisioning)).toBe(401);
    expect(await scimWorks(legacyProvisioning)).toBe(401);
    expect((await a.rest('get', '/users/me', { key: { bearer: accessToken } })).status).toBe(401);
    expect((await instances.bRest.get('/users/me').set({ ...V2, Authorization: `Token token=${secretOf(user.key)}` })).status).toBe(401);
    expect((await socket.closed).code).toBe(4403);
    // What was not reported keeps working.
    expect((await a.rest('get', '/users/me', { key: bystander.key })).status).toBe(200);
    expect((await a.rest('get', '/users', { key: account.key })).status).toBe(200);

    // Each revocation is a record: method `other`, described as a reported credential, no actor.
    const records = (await recordsOf(account.id)).filter((record) => record.body.method.description === 'credential reported');
    expect(records.map((record) => [record.action, record.body.details.resource.type]).sort()).toEqual([
      ['revoke', 'api_key_reference'], ['revoke', 'api_key_reference'], ['revoke', 'api_key_reference'],
      ['revoke', 'oauth_delegation_reference'],
      ['revoke', 'provisioning_token_reference'], ['revoke', 'provisioning_token_reference'],
    ]);
    for (const record of records) {
      expect(record.methodType).toBe('other');
      expect(record.body.actors).toEqual([]);
      expect(JSON.stringify(record.body)).not.toContain(secretOf(user.key));
    }
  });

  test('the same answer whatever was found: nothing valid, already revoked, or another account\'s', async () => {
    const account = await a.createAccount();
    const user = await a.createUser(account);
    for (const credentials of [['aaguk_0000000000000000000000000000000000000000'], [secretOf(user.key)], [secretOf(user.key)]]) {
      const answer = await a.rest('post', '/credentials/revoke', { body: { credentials } });
      expect([answer.status, answer.text]).toEqual([202, '']);
    }
    const records = (await recordsOf(account.id)).filter((record) => record.body.method.description === 'credential reported');
    expect(records).toHaveLength(1);
  });

  test('a bad body is 400 (REST envelope) and revokes nothing', async () => {
    const account = await a.createAccount();
    const user = await a.createUser(account);
    const secret = secretOf(user.key);
    const bodies: [string, unknown, Record<string, string>?][] = [
      ['not JSON', `{"credentials": ["${secret}"`, { 'Content-Type': 'application/json' }],
      ['not an object', JSON.stringify([secret])],
      ['not an array', JSON.stringify({ credentials: secret })],
      ['empty', JSON.stringify({ credentials: [] })],
      ['1001 items', JSON.stringify({ credentials: [secret, ...Array.from({ length: 1000 }, (_, i) => `x${i}`)] })],
      ['a non-string', JSON.stringify({ credentials: [secret, 42] })],
      ['an empty string', JSON.stringify({ credentials: [secret, ''] })],
      ['a string too long', JSON.stringify({ credentials: [secret, 'y'.repeat(513)] })],
      ['a body too large', JSON.stringify({ credentials: [secret], padding: 'z'.repeat(600_000) })],
    ];
    for (const [what, body, headers] of bodies) {
      const answer = await a.rest('post', '/credentials/revoke', { body, headers: { 'Content-Type': 'application/json', ...headers } });
      expect([what, answer.status, answer.body.error?.code]).toEqual([what, 400, 2001]);
    }
    expect((await a.rest('get', '/users/me', { key: user.key })).status).toBe(200);
    // 1000 strings is the limit, and fine.
    const atLimit = await a.rest('post', '/credentials/revoke', { body: { credentials: [secret, ...Array.from({ length: 999 }, (_, i) => `x${i}`)] } });
    expect(atLimit.status).toBe(202);
    expect((await a.rest('get', '/users/me', { key: user.key })).status).toBe(401);
  });
});

describe('POST /credentials/revoke, rate limit', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ rateLimiter: (logger) => createRateLimiter({ perMinute: 3, logger }) });
  });
  afterAll(async () => h.close());

  test('per client address: past the budget, 429 with Retry-After, and nothing is revoked', async () => {
    const account = await h.createAccount();
    const [key] = await h.database.em().execute<{ id: string }[]>('select id from api_keys where account_id = ?', [account.id]);
    for (let i = 0; i < 3; i++) expect((await h.rest('post', '/credentials/revoke', { body: { credentials: [`unknown-${i}`] } })).status).toBe(202);
    const limited = await h.rest('post', '/credentials/revoke', { body: { credentials: [secretOf(account.key)] } });
    expect(limited.status).toBe(429);
    expect(limited.body.error.code).toBe(2020);
    expect(limited.headers['retry-after']).toEqual(expect.any(String));
    const [row] = await h.database.em().execute<{ revoked_at: Date | null }[]>('select revoked_at from api_keys where id = ?', [key!.id]);
    expect(row!.revoked_at).toBeNull();
  });
});
