import { describe, expect, test } from '@jest/globals';
import * as client from 'openid-client';
import { LiveTestClient, sleep } from '../../test/support/live-client.js';
import { CookieJar, PASSWORD, api, browse, discover, formOf, newMember, registerApp, signIn, useOAuthServers, type Member } from '../../test/support/oauth-server.js';

const fixture = useOAuthServers();

const MOBILE_REDIRECT = 'http://127.0.0.1/mobile/callback';
const WEB_REDIRECT = 'https://web.example.com/callback';
const member = (role?: 'user' | 'admin') => newMember(fixture.database, role);

async function mobileApp(accountId: string) {
  const { app } = await registerApp(fixture.database, fixture.serverSecret, { accountId, kind: 'mobile', redirectUris: [MOBILE_REDIRECT], name: 'Mobile' });
  return { clientId: app.clientId, config: await discover(fixture.instances[0]!.url, app.clientId, client.None()) };
}

async function webApp(accountId: string) {
  const { app, clientSecret } = await registerApp(fixture.database, fixture.serverSecret, { accountId, kind: 'web', redirectUris: [WEB_REDIRECT], name: 'Web' });
  return { clientId: app.clientId, clientSecret: clientSecret!, config: await discover(fixture.instances[0]!.url, app.clientId, client.ClientSecretBasic(clientSecret!)) };
}

describe('discovery', () => {
  test('both well-known documents describe the server: code + PKCE S256, refresh, client credentials, revocation, introspection, JWKS', async () => {
    for (const path of ['/.well-known/openid-configuration', '/.well-known/oauth-authorization-server']) {
      const response = await fetch(`${fixture.instances[0]!.url}${path}`);
      expect(response.status).toBe(200);
      const metadata = await response.json() as Record<string, unknown>;
      expect(metadata.issuer).toBe(fixture.instances[0]!.url);
      expect(metadata.authorization_endpoint).toBe(`${fixture.instances[0]!.url}/oauth/authorize`);
      expect(metadata.token_endpoint).toBe(`${fixture.instances[0]!.url}/oauth/token`);
      expect(metadata.revocation_endpoint).toBe(`${fixture.instances[0]!.url}/oauth/revoke`);
      expect(metadata.introspection_endpoint).toBe(`${fixture.instances[0]!.url}/oauth/introspect`);
      expect(metadata.jwks_uri).toBe(`${fixture.instances[0]!.url}/oauth/jwks`);
      expect(metadata.code_challenge_methods_supported).toEqual(['S256']);
      expect(metadata.response_types_supported).toEqual(['code']);
      expect(metadata.grant_types_supported).toEqual(expect.arrayContaining(['authorization_code', 'refresh_token', 'client_credentials']));
      // Only what is served end to end: no pushed authorization requests, no DPoP.
      expect(Object.keys(metadata).filter((name) => /pushed_authorization|dpop/.test(name))).toEqual([]);
    }
    const jwks = await (await fetch(`${fixture.instances[0]!.url}/oauth/jwks`)).json() as { keys: Array<Record<string, unknown>> };
    expect(jwks.keys.length).toBeGreaterThanOrEqual(1);
    expect(jwks.keys[0]).toMatchObject({ kty: 'RSA', use: 'sig' });
    expect(jwks.keys[0]).not.toHaveProperty('d');
  });
});

describe('mobile sign-in (authorization code + PKCE, public client)', () => {
  test('the HTML form signs the user in; the token is that user on REST and GraphQL; revocation refuses it at once', async () => {
    const m = await member();
    const mobile = await mobileApp(m.accountId);
    const web = await webApp(m.accountId);
    const setCookies: string[] = [];
    const pages: string[] = [];
    const { tokens } = await signIn({ config: mobile.config, baseUrl: fixture.instances[0]!.url, redirectUri: MOBILE_REDIRECT, scope: 'openid users.read oauth_delegations.read', email: m.email, password: PASSWORD, setCookies, pages });
    expect(pages).toHaveLength(1);
    expect(pages[0]).toContain('name="email"');
    expect(tokens.token_type.toLowerCase()).toBe('bearer');
    expect(tokens.refresh_token).toBeDefined();
    // The access token is for the API: its scopes are the API's; openid went into the ID token.
    expect(tokens.scope?.split(' ').sort()).toEqual(['oauth_delegations.read', 'users.read']);
    expect(tokens.claims()?.sub).toBe(m.userId);
    for (const cookie of setCookies) {
      expect(cookie).toMatch(/httponly/i);
      expect(cookie).toMatch(/samesite=lax/i);
    }

    const me = await api(fixture.instances[0]!, 'GET', '/users/me', `Bearer ${tokens.access_token}`);
    expect(me.status).toBe(200);
    expect(me.body.user.id).toBe(m.userId);
    const graphql = await fetch(`${fixture.instances[1]!.url}/graphql`, { method: 'POST', headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${tokens.access_token}` }, body: JSON.stringify({ query: '{ viewer { id } }' }) });
    expect((await graphql.json() as { data: { viewer: { id: string } } }).data.viewer.id).toBe(m.userId);

    // The listing shows the flow-made delegation.
    const listed = await api(fixture.instances[0]!, 'GET', `/users/${m.userId}/oauth_delegations`, `Bearer ${tokens.access_token}`);
    expect(listed.status).toBe(200);
    expect(listed.body.oauth_delegations).toHaveLength(1);
    expect(listed.body.oauth_delegations[0]).toMatchObject({ delegation_type: 'mobile', client_id: mobile.clientId, summary: 'Mobile (mobile)', status: 'issued' });
    expect(listed.body.oauth_delegations[0].scope.split(' ').sort()).toEqual(['oauth_delegations.read', 'openid', 'users.read']);

    // The same user's web session.
    const webSession = await signIn({ config: web.config, baseUrl: fixture.instances[0]!.url, redirectUri: WEB_REDIRECT, scope: 'openid users.read', email: m.email, password: PASSWORD });

    const revoked = await api(fixture.instances[1]!, 'DELETE', `/oauth_delegations?user_id=${m.userId}&type=mobile`, `Token token=${m.ownerKey}`);
    expect(revoked).toEqual({ status: 200, body: { status: 'ok' } });

    for (const instance of fixture.instances) {
      expect((await api(instance, 'GET', '/users/me', `Bearer ${tokens.access_token}`)).status).toBe(401);
      expect((await api(instance, 'GET', '/users/me', `Bearer ${webSession.tokens.access_token}`)).status).toBe(200);
    }
    await expect(client.refreshTokenGrant(mobile.config, tokens.refresh_token!)).rejects.toMatchObject({ error: 'invalid_grant' });
    const webRefreshed = await client.refreshTokenGrant(web.config, webSession.tokens.refresh_token!);
    expect((await api(fixture.instances[1]!, 'GET', '/users/me', `Bearer ${webRefreshed.access_token}`)).status).toBe(200);
  });
});

describe('revocation (RFC 7009) reaches open sockets', () => {
  test('POST /oauth/revoke on one instance: the token\'s socket on the other gets viewerAccessRevoked and closes 4403 within a second', async () => {
    const m = await member();
    const mobile = await mobileApp(m.accountId);
    const { tokens } = await signIn({ config: mobile.config, baseUrl: fixture.instances[0]!.url, redirectUri: MOBILE_REDIRECT, scope: 'openid users.read', email: m.email, password: PASSWORD });
    const socket = await LiveTestClient.connect(fixture.instances[1]!.liveServer, `Bearer ${tokens.access_token}`);
    socket.subscribe('revoked', 'subscription { viewerAccessRevoked { reason } }');
    await sleep(100);
    const revokedAt = Date.now();
    await client.tokenRevocation(mobile.config, tokens.access_token, { token_type_hint: 'access_token' });
    const event = await socket.waitFor((message) => message.id === 'revoked' && message.type === 'next');
    expect(event.payload.data.viewerAccessRevoked.reason).toBe('CREDENTIAL_REVOKED');
    const closed = await socket.closed;
    expect(closed.code).toBe(4403);
    expect(closed.at - revokedAt).toBeLessThan(1_000);
    expect((await api(fixture.instances[1]!, 'GET', '/users/me', `Bearer ${tokens.access_token}`)).status).toBe(401);
  });
});

describe('refresh tokens', () => {
  test('rotate on every use; a reused refresh token revokes the whole grant (its delegation too)', async () => {
    const m = await member();
    const mobile = await mobileApp(m.accountId);
    const { tokens } = await signIn({ config: mobile.config, baseUrl: fixture.instances[0]!.url, redirectUri: MOBILE_REDIRECT, scope: 'users.read', email: m.email, password: PASSWORD });
    const first = await client.refreshTokenGrant(mobile.config, tokens.refresh_token!);
    expect(first.refresh_token).toBeDefined();
    expect(first.refresh_token).not.toBe(tokens.refresh_token);
    expect((await api(fixture.instances[0]!, 'GET', '/users/me', `Bearer ${first.access_token}`)).status).toBe(200);

    // The old refresh token again: refused, and everything of the grant with it.
    await expect(client.refreshTokenGrant(mobile.config, tokens.refresh_token!)).rejects.toMatchObject({ error: 'invalid_grant' });
    await expect(client.refreshTokenGrant(mobile.config, first.refresh_token!)).rejects.toMatchObject({ error: 'invalid_grant' });
    expect((await api(fixture.instances[1]!, 'GET', '/users/me', `Bearer ${first.access_token}`)).status).toBe(401);
    const listed = await api(fixture.instances[0]!, 'GET', `/users/${m.userId}/oauth_delegations`, `Token token=${m.ownerKey}`);
    expect(listed.body.oauth_delegations.map((delegation: { status: string }) => delegation.status)).toEqual(['revoked']);
  });
});

describe('refused authorization requests', () => {
  async function authorize(config: client.Configuration, parameters: Record<string, string>) {
    const response = await fetch(client.buildAuthorizationUrl(config, parameters), { redirect: 'manual' });
    return { status: response.status, location: response.headers.get('location'), body: await response.text() };
  }

  test('no PKCE, or the plain method: refused back to the app with invalid_request', async () => {
    const m = await member();
    const mobile = await mobileApp(m.accountId);
    const missing = await authorize(mobile.config, { redirect_uri: MOBILE_REDIRECT, scope: 'users.read', state: 's1' });
    expect(missing.status).toBe(303);
    expect(new URL(missing.location!).searchParams.get('error')).toBe('invalid_request');
    const plain = await authorize(mobile.config, { redirect_uri: MOBILE_REDIRECT, scope: 'users.read', state: 's2', code_challenge: 'a'.repeat(43), code_challenge_method: 'plain' });
    expect(new URL(plain.location!).searchParams.get('error')).toBe('invalid_request');
  });

  test('a redirect URI that is not registered: an error page, never a redirect', async () => {
    const m = await member();
    const mobile = await mobileApp(m.accountId);
    const refused = await authorize(mobile.config, { redirect_uri: 'https://evil.example.com/callback', scope: 'users.read', code_challenge: 'a'.repeat(43), code_challenge_method: 'S256' });
    expect(refused.status).toBe(400);
    expect(refused.location).toBeNull();
    expect(refused.body).toContain('redirect_uri');
  });

  /** Signs in through the form, stops at the callback, optionally tampers with storage, then redeems the code as told. */
  async function codeThen(m: Member, config: client.Configuration, beforeRedeem: () => Promise<void>, verifierToSend: (real: string) => string | undefined) {
    const jar = new CookieJar();
    const verifier = client.randomPKCECodeVerifier();
    const state = client.randomState();
    const url = client.buildAuthorizationUrl(config, { redirect_uri: MOBILE_REDIRECT, scope: 'users.read', code_challenge: await client.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256', state });
    const page = await browse(jar, url, MOBILE_REDIRECT);
    if (page.kind !== 'page') throw new Error('expected the sign-in page');
    const form = formOf(page.html);
    const done = await browse(jar, new URL(form.action, fixture.instances[0]!.url), MOBILE_REDIRECT, { method: 'POST', form: { csrf: form.csrf, email: m.email, password: PASSWORD } });
    if (done.kind !== 'callback') throw new Error('expected the callback');
    await beforeRedeem();
    return client.authorizationCodeGrant(config, done.url, { pkceCodeVerifier: verifierToSend(verifier), expectedState: state });
  }

  test('a wrong or missing code verifier is refused (invalid_grant); the right one works', async () => {
    const m = await member();
    const mobile = await mobileApp(m.accountId);
    const nothing = async () => {};
    await expect(codeThen(m, mobile.config, nothing, () => client.randomPKCECodeVerifier())).rejects.toMatchObject({ error: 'invalid_grant' });
    await expect(codeThen(m, mobile.config, nothing, () => undefined)).rejects.toMatchObject({ error: 'invalid_grant' });
    await expect(codeThen(m, mobile.config, nothing, (real) => real)).resolves.toHaveProperty('access_token');
  });

  test('an expired code is refused (invalid_grant), even with the right verifier', async () => {
    const m = await member();
    const mobile = await mobileApp(m.accountId);
    const expireCodes = async () => {
      await fixture.database.em().execute("update oauth_server_records set expires_at = now() - interval '1 second' where model = 'AuthorizationCode'");
    };
    await expect(codeThen(m, mobile.config, expireCodes, (real) => real)).rejects.toMatchObject({ error: 'invalid_grant' });
  });
});
