import * as client from 'openid-client';
import { AccountsService } from '../accounts/accounts.service.js';
import { issueDelegation } from '../oauth-delegations/oauth-delegation.service.js';
import { checkSignIn } from '../oauth-server/passwords.js';
import { PASSWORD, api, discover, graphqlCall, newMember, registerApp, signIn, useOAuthServers, type Member } from '../../test/support/oauth-server.js';
import { ProvisioningTokensService } from './provisioning-tokens.service.js';

const fixture = useOAuthServers(2);
const MOBILE_REDIRECT = 'http://127.0.0.1/mobile/callback';
const PATCH_OP = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';

async function scimCall(instance: { url: string }, method: string, path: string, authorization: string, body?: unknown) {
  const response = await fetch(`${instance.url}/scim/v2${path}`, {
    method,
    headers: { Accept: 'application/scim+json', Authorization: authorization, ...(body ? { 'Content-Type': 'application/scim+json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : undefined };
}

const setActive = (active: boolean | string) => ({ schemas: [PATCH_OP], Operations: [{ op: 'replace', value: { active } }] });

async function provisioningToken(accountId: string) {
  return (await fixture.database.transactions.run(fixture.database.em(), (tx) => new ProvisioningTokensService(tx).create(accountId))).token;
}

async function feedPath(member: Member): Promise<string> {
  const result = await graphqlCall(fixture.instances[0]!, `Token token=${member.ownerKey}`, 'query($id: ID!) { user(id: $id) { httpCalUrl } }', { id: member.userId });
  return new URL(result.data.user.httpCalUrl as string).pathname;
}

describe('suspension (active: false) across two instances on one database', () => {
  test('the user\'s OAuth tokens, API key and feed URL are refused on the other instance by the very next request', async () => {
    const m = await newMember(fixture.database);
    const [first, second] = fixture.instances as [typeof fixture.instances[0], typeof fixture.instances[0]];
    const token = await provisioningToken(m.accountId);
    const apiKey = (await fixture.database.transactions.run(fixture.database.em(), (tx) => new AccountsService(tx).createApiKey({ accountId: m.accountId, userId: m.userId }))).apiKey;
    const delegation = await fixture.database.transactions.run(fixture.database.em(), (tx) => issueDelegation(tx, { userId: m.userId, type: 'mobile', scopes: 'users.read' }));
    const { app } = await registerApp(fixture.database, fixture.serverSecret, { accountId: m.accountId, kind: 'mobile', redirectUris: [MOBILE_REDIRECT], name: 'Mobile' });
    const config = await discover(first.url, app.clientId, client.None());
    const { tokens } = await signIn({ config, baseUrl: first.url, redirectUri: MOBILE_REDIRECT, scope: 'users.read', email: m.email, password: PASSWORD });
    const feed = await feedPath(m);

    const credentials = { apiKey: `Token token=${apiKey}`, delegation: `Bearer ${delegation.accessToken}`, flowToken: `Bearer ${tokens.access_token}` };
    for (const authorization of Object.values(credentials)) expect((await api(second, 'GET', '/users/me', authorization)).status).toBe(200);
    expect((await fetch(`${second.url}${feed}`)).status).toBe(200);

    const suspended = await scimCall(first, 'PATCH', `/Users/${m.userId}`, `Bearer ${token}`, setActive('False'));
    expect(suspended.status).toBe(200);
    expect(suspended.body.active).toBe(false);

    for (const [name, authorization] of Object.entries(credentials)) {
      expect({ name, status: (await api(second, 'GET', '/users/me', authorization)).status }).toEqual({ name, status: 401 });
      expect({ name, code: (await graphqlCall(second, authorization, '{ viewer { id } }')).errors?.[0]?.extensions?.code }).toEqual({ name, code: 'UNAUTHENTICATED' });
    }
    expect((await fetch(`${second.url}${feed}`)).status).toBe(404);
    // A refresh of the signed-in app's grant is refused too.
    await expect(client.refreshTokenGrant(config, tokens.refresh_token!)).rejects.toBeDefined();

    const [row] = await fixture.database.em().execute<{ status: string; revocation_reason: string; revoked_by_kind: string }[]>(
      'select status, revocation_reason, revoked_by_kind from oauth_delegations where id = ?', [delegation.delegation.id]);
    expect(row).toEqual({ status: 'revoked', revocation_reason: 'user_suspended', revoked_by_kind: 'provisioning_token' });

    // Suspended: no sign-in, no new credentials; still listed on REST.
    expect(await checkSignIn(fixture.database.em(), m.accountId, m.email, PASSWORD)).toBeUndefined();
    await expect(fixture.database.transactions.run(fixture.database.em(), (tx) => new AccountsService(tx).createApiKey({ accountId: m.accountId, userId: m.userId }))).rejects.toMatchObject({ kind: 'invalid_input' });
    await expect(fixture.database.transactions.run(fixture.database.em(), (tx) => issueDelegation(tx, { userId: m.userId, type: 'mobile', scopes: 'users.read' }))).rejects.toMatchObject({ kind: 'invalid_input' });
    const listed = await api(second, 'GET', '/users?limit=100', `Token token=${m.ownerKey}`);
    expect(listed.body.users.map((user: { id: string }) => user.id)).toContain(m.userId);

    // Reactivation restores sign-in only: nothing revoked comes back.
    const reactivated = await scimCall(second, 'PATCH', `/Users/${m.userId}`, `Bearer ${token}`, setActive(true));
    expect(reactivated.body.active).toBe(true);
    expect(await checkSignIn(fixture.database.em(), m.accountId, m.email, PASSWORD)).toBe(m.userId);
    for (const authorization of Object.values(credentials)) expect((await api(first, 'GET', '/users/me', authorization)).status).toBe(401);
    expect((await fetch(`${first.url}${feed}`)).status).toBe(404);
  });

  test('the owner cannot be suspended; GraphQL updateUser suspends like SCIM, and only with can_update_user', async () => {
    const m = await newMember(fixture.database);
    const owner = `Token token=${m.ownerKey}`;
    const [ownerRow] = await fixture.database.em().execute<{ id: string }[]>("select id from users where account_id = ? and role = 'owner'", [m.accountId]);
    const token = await provisioningToken(m.accountId);
    const refused = await scimCall(fixture.instances[0]!, 'PATCH', `/Users/${ownerRow!.id}`, `Bearer ${token}`, setActive(false));
    expect(refused.status).toBe(400);
    expect(refused.body.scimType).toBe('invalidValue');

    const ownKey = (await fixture.database.transactions.run(fixture.database.em(), (tx) => new AccountsService(tx).createApiKey({ accountId: m.accountId, userId: m.userId }))).apiKey;
    const mutation = 'mutation($id: ID!) { updateUser(input: { id: $id, active: false }) { user { id active } } }';
    const selfSuspend = await graphqlCall(fixture.instances[0]!, `Token token=${ownKey}`, mutation, { id: m.userId });
    expect(selfSuspend.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    const byAdmin = await graphqlCall(fixture.instances[1]!, owner, mutation, { id: m.userId });
    expect(byAdmin.data?.updateUser.user).toEqual({ id: m.userId, active: false });
    expect((await api(fixture.instances[0]!, 'GET', '/users/me', `Token token=${ownKey}`)).status).toBe(401);
  });
});

describe('who may use the SCIM face', () => {
  test('a provisioning token works only on /scim/v2 of its own account; a revoked one is refused', async () => {
    const m = await newMember(fixture.database);
    const other = await newMember(fixture.database);
    const service = new ProvisioningTokensService(fixture.database.em());
    const issued = await fixture.database.transactions.run(fixture.database.em(), (tx) => new ProvisioningTokensService(tx).create(m.accountId));
    const bearer = `Bearer ${issued.token}`;
    const instance = fixture.instances[0]!;
    expect((await scimCall(instance, 'GET', `/Users/${m.userId}`, bearer)).status).toBe(200);
    // Another account's user is not found, exactly like one that never existed.
    const foreign = await scimCall(instance, 'GET', `/Users/${other.userId}`, bearer);
    expect(foreign).toMatchObject({ status: 404, body: { status: '404' } });
    expect((await scimCall(instance, 'PATCH', `/Users/${other.userId}`, bearer, setActive(false))).status).toBe(404);
    expect((await api(instance, 'GET', '/users', bearer)).status).toBe(401);
    const graphql = await graphqlCall(instance, bearer, '{ users { nodes { id } } }');
    expect(graphql.errors?.[0]?.extensions?.code).toBe('UNAUTHENTICATED');
    expect(graphql.data?.users).toBeUndefined();

    expect((await service.list(m.accountId)).map((token) => token.id)).toEqual([issued.id]);
    await fixture.database.transactions.run(fixture.database.em(), (tx) => new ProvisioningTokensService(tx).revoke(issued.id));
    const revoked = await scimCall(fixture.instances[1]!, 'GET', '/Users', bearer);
    expect(revoked).toMatchObject({ status: 401, body: { schemas: ['urn:ietf:params:scim:api:messages:2.0:Error'], status: '401' } });
    expect(await fetch(`${instance.url}/scim/v2/Users`).then((response) => response.status)).toBe(401);
  });

  test('an integration app\'s token reads with users.read and writes with users.write; a user\'s token without can_update_user cannot write', async () => {
    const m = await newMember(fixture.database);
    const instance = fixture.instances[0]!;
    const { app, clientSecret } = await registerApp(fixture.database, fixture.serverSecret, { accountId: m.accountId, kind: 'integration', scopes: 'users.read users.write' });
    const config = await discover(instance.url, app.clientId, client.ClientSecretBasic(clientSecret!));
    const reader = await client.clientCredentialsGrant(config, { scope: 'users.read' });
    const writer = await client.clientCredentialsGrant(config, { scope: 'users.read users.write' });
    expect((await scimCall(instance, 'GET', `/Users/${m.userId}`, `Bearer ${reader.access_token}`)).status).toBe(200);
    const denied = await scimCall(instance, 'PATCH', `/Users/${m.userId}`, `Bearer ${reader.access_token}`, setActive(false));
    expect(denied).toMatchObject({ status: 403, body: { status: '403' } });
    expect(denied.body.detail).toContain('users.write');
    const written = await scimCall(instance, 'PATCH', `/Users/${m.userId}`, `Bearer ${writer.access_token}`, { schemas: [PATCH_OP], Operations: [{ op: 'replace', path: 'title', value: 'Integrated' }] });
    expect(written).toMatchObject({ status: 200, body: { title: 'Integrated' } });

    const userToken = await fixture.database.transactions.run(fixture.database.em(), (tx) => issueDelegation(tx, { userId: m.userId, type: 'mobile', scopes: 'users.read users.write' }));
    const selfWrite = await scimCall(instance, 'PATCH', `/Users/${m.userId}`, `Bearer ${userToken.accessToken}`, { schemas: [PATCH_OP], Operations: [{ op: 'replace', path: 'title', value: 'Self' }] });
    expect(selfWrite.status).toBe(403);
    const [row] = await fixture.database.em().execute<{ job_title: string }[]>('select job_title from users where id = ?', [m.userId]);
    expect(row!.job_title).toBe('Integrated');
  });
});
