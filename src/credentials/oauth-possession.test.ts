import { describe, expect, test } from '@jest/globals';
import * as client from 'openid-client';
import { CookieJar, PASSWORD, api, authorizeAgain, discover, graphqlCall, newMember, registerApp, signIn, useOAuthServers } from '../../test/support/oauth-server.js';

/**
 * Revocation by possession of the authorization server's tokens (a token revokes
 * its delegation), and the credentials scopes: held by first-party and integration apps, never a third party's.
 */
const fixture = useOAuthServers(1);
const MOBILE_REDIRECT = 'com.example.incidents:/oauth/callback';
const PARTNER_REDIRECT = 'https://partner.example.net/oauth/callback';

async function report(credentials: string[]) {
  const response = await fetch(`${fixture.instances[0]!.url}/credentials/revoke`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ credentials }) });
  return { status: response.status, text: await response.text() };
}

async function mobileSignIn(scope = 'users.read') {
  const m = await newMember(fixture.database);
  const { app } = await registerApp(fixture.database, fixture.serverSecret, { accountId: m.accountId, kind: 'mobile', redirectUris: [MOBILE_REDIRECT] });
  const config = await discover(fixture.instances[0]!.url, app.clientId, client.None());
  const jar = new CookieJar();
  const { tokens } = await signIn({ config, baseUrl: fixture.instances[0]!.url, redirectUri: MOBILE_REDIRECT, scope, email: m.email, password: PASSWORD, jar });
  return { m, config, tokens, jar };
}

const delegationStatus = async (userId: string) =>
  (await fixture.database.em().execute<{ status: string }[]>('select status from oauth_delegations where user_id = ?', [userId])).map((row) => row.status);

describe('POST /credentials/revoke with the authorization server\'s tokens', () => {
  test('an access token: its delegation is revoked, so its refresh token dies with it', async () => {
    const { m, config, tokens } = await mobileSignIn();
    expect((await api(fixture.instances[0]!, 'GET', '/users/me', `Bearer ${tokens.access_token}`)).status).toBe(200);
    expect(await report([tokens.access_token])).toEqual({ status: 202, text: '' });
    expect((await api(fixture.instances[0]!, 'GET', '/users/me', `Bearer ${tokens.access_token}`)).status).toBe(401);
    await expect(client.refreshTokenGrant(config, tokens.refresh_token!)).rejects.toMatchObject({ error: 'invalid_grant' });
    expect(await delegationStatus(m.userId)).toEqual(['revoked']);
  });

  test('a first-party delegation revoked by possession signs its user out: the browser\'s next authorize shows the sign-in page', async () => {
    const { config, tokens, jar } = await mobileSignIn();
    const again = await authorizeAgain(jar, config, MOBILE_REDIRECT);
    expect(again.kind === 'page' && again.html.includes('name="password"')).toBe(false);
    expect(await report([tokens.access_token])).toEqual({ status: 202, text: '' });
    const after = await authorizeAgain(jar, config, MOBILE_REDIRECT);
    expect(after.kind === 'page' && after.html.includes('name="password"')).toBe(true);
  });

  test('a reused refresh token revokes its first-party grant and signs the user out of that browser', async () => {
    const { config, tokens, jar } = await mobileSignIn();
    const rotated = await client.refreshTokenGrant(config, tokens.refresh_token!);
    expect(rotated.refresh_token).not.toBe(tokens.refresh_token);
    await expect(client.refreshTokenGrant(config, tokens.refresh_token!)).rejects.toMatchObject({ error: 'invalid_grant' });
    await expect(client.refreshTokenGrant(config, rotated.refresh_token!)).rejects.toMatchObject({ error: 'invalid_grant' });
    const after = await authorizeAgain(jar, config, MOBILE_REDIRECT);
    expect(after.kind === 'page' && after.html.includes('name="password"')).toBe(true);
  });

  test('a refresh token: its delegation is revoked, so the access token issued beside it is refused', async () => {
    const { m, config, tokens } = await mobileSignIn();
    expect(await report([tokens.refresh_token!])).toEqual({ status: 202, text: '' });
    expect((await api(fixture.instances[0]!, 'GET', '/users/me', `Bearer ${tokens.access_token}`)).status).toBe(401);
    await expect(client.refreshTokenGrant(config, tokens.refresh_token!)).rejects.toMatchObject({ error: 'invalid_grant' });
    expect(await delegationStatus(m.userId)).toEqual(['revoked']);
  });

  test('an integration\'s client-credentials token: the app\'s account-wide delegation is revoked', async () => {
    const m = await newMember(fixture.database);
    const { app, clientSecret } = await registerApp(fixture.database, fixture.serverSecret, { accountId: m.accountId, kind: 'integration', scopes: 'users.read' });
    const config = await discover(fixture.instances[0]!.url, app.clientId, client.ClientSecretBasic(clientSecret!));
    const tokens = await client.clientCredentialsGrant(config, { scope: 'users.read' });
    expect((await api(fixture.instances[0]!, 'GET', '/users', `Bearer ${tokens.access_token}`)).status).toBe(200);
    expect(await report([tokens.access_token])).toEqual({ status: 202, text: '' });
    expect((await api(fixture.instances[0]!, 'GET', '/users', `Bearer ${tokens.access_token}`)).status).toBe(401);
  });
});

describe('the credentials scopes', () => {
  test('a third-party app can never be registered with them (nor gets them by default); first-party and integration apps can', async () => {
    const m = await newMember(fixture.database);
    for (const scopes of ['credentials.read', 'users.read credentials.write']) {
      await expect(registerApp(fixture.database, fixture.serverSecret, { accountId: m.accountId, kind: 'third_party', redirectUris: [PARTNER_REDIRECT], scopes })).rejects.toMatchObject({ details: [expect.stringContaining('may not hold credentials')] });
    }
    const byDefault = await registerApp(fixture.database, fixture.serverSecret, { accountId: m.accountId, kind: 'third_party', redirectUris: [PARTNER_REDIRECT] });
    expect(byDefault.app.scope.split(' ')).not.toContain('credentials.read');
    expect(byDefault.app.scope.split(' ')).toContain('users.read');
    const integration = await registerApp(fixture.database, fixture.serverSecret, { accountId: m.accountId, kind: 'integration', scopes: 'credentials.read' });
    expect(integration.app.scope).toBe('credentials.read');
  });

  test('an integration with credentials.read lists the account\'s keys; one without it is refused (FORBIDDEN, naming the scope)', async () => {
    const m = await newMember(fixture.database);
    const query = '{ apiKeys { nodes { id kind } } }';
    const withScope = await registerApp(fixture.database, fixture.serverSecret, { accountId: m.accountId, kind: 'integration', scopes: 'credentials.read' });
    const without = await registerApp(fixture.database, fixture.serverSecret, { accountId: m.accountId, kind: 'integration', scopes: 'users.read' });
    const tokenOf = async (registered: typeof withScope, scope: string) =>
      (await client.clientCredentialsGrant(await discover(fixture.instances[0]!.url, registered.app.clientId, client.ClientSecretBasic(registered.clientSecret!)), { scope })).access_token;
    const listed = await graphqlCall(fixture.instances[0]!, `Bearer ${await tokenOf(withScope, 'credentials.read')}`, query);
    expect(listed.errors).toBeUndefined();
    expect(listed.data.apiKeys.nodes.map((key: { kind: string }) => key.kind)).toContain('ACCOUNT_FULL_ACCESS');
    const refused = await graphqlCall(fixture.instances[0]!, `Bearer ${await tokenOf(without, 'users.read')}`, query);
    expect(refused.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    expect(refused.errors?.[0]?.message).toContain('credentials.read');
    // Holding credentials.write is not enough to mint a key: a key is limited by no scope.
    const writer = await registerApp(fixture.database, fixture.serverSecret, { accountId: m.accountId, kind: 'integration', scopes: 'credentials.read credentials.write users.read users.write' });
    const minted = await graphqlCall(fixture.instances[0]!, `Bearer ${await tokenOf(writer, 'credentials.read credentials.write users.read users.write')}`, 'mutation { createApiKey(input: {kind: ACCOUNT_FULL_ACCESS}) { secret } }');
    expect(minted.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
  });
});
