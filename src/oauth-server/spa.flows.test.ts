import { describe, expect, test } from '@jest/globals';
import * as client from 'openid-client';
import { CookieJar, PASSWORD, api, browse, discover, graphqlCall, newMember, registerApp, signIn, useOAuthServers, oauthError } from '../../test/support/oauth-server.js';
import { SCOPE_DESCRIPTIONS, consentPage } from './pages.js';
import { ISSUABLE_SCOPES } from '../oauth-delegations/oauth-delegation.service.js';

const fixture = useOAuthServers();
const SPA_ORIGIN = 'https://spa.example.com';
const SPA_REDIRECT = `${SPA_ORIGIN}/callback`;
const DAY_SECONDS = 24 * 3600;

const first = () => fixture.instances[0]!;
const second = () => fixture.instances[1]!;

async function refreshTokenRows(clientId: string) {
  return fixture.database.em().execute<Array<{ grant_id: string; consumed: boolean; seconds_left: string }>>(
    `select r.grant_id, r.consumed_at is not null as consumed, extract(epoch from r.expires_at - now()) as seconds_left
       from oauth_server_records r join oauth_delegations d on d.grant_id = r.grant_id
      where r.model = 'RefreshToken' and d.client_id = ? order by r.expires_at`,
    [clientId],
  );
}

describe('a browser app (spa): public client, code + PKCE, exact redirect URIs, a web delegation of one day', () => {
  test('registered through GraphQL, it signs in with no secret; refresh tokens rotate and never outlive the day; signing out of the web app ends it', async () => {
    const m = await newMember(fixture.database);
    const registered = await graphqlCall(first(), `Token token=${m.ownerUserKey}`, 'mutation($input: RegisterOAuthAppInput!) { registerOAuthApp(input: $input) { clientSecret app { clientId kind } } }', {
      input: { name: 'Browser app', kind: 'SPA', redirectUris: [SPA_REDIRECT], scopes: ['openid', 'users.read', 'oauth_delegations.read'] },
    });
    expect(registered.errors).toBeUndefined();
    expect(registered.data.registerOAuthApp.clientSecret).toBeNull();
    const clientId = registered.data.registerOAuthApp.app.clientId as string;
    const config = await discover(first().url, clientId, client.None());

    const pages: string[] = [];
    const { tokens } = await signIn({ config, baseUrl: first().url, redirectUri: SPA_REDIRECT, scope: 'openid users.read oauth_delegations.read', email: m.email, password: PASSWORD, pages });
    expect(pages).toHaveLength(1);
    expect(tokens.refresh_token).toBeDefined();
    expect((await api(second(), 'GET', '/users/me', `Bearer ${tokens.access_token}`)).body.user.id).toBe(m.userId);

    const [delegation] = await fixture.database.em().execute<Array<{ id: string; delegation_type: string; lifetime: string }>>(
      'select id, delegation_type, extract(epoch from expires_at - created_at) as lifetime from oauth_delegations where client_id = ?',
      [clientId],
    );
    expect(delegation!.delegation_type).toBe('web');
    expect(Math.abs(Number(delegation!.lifetime) - DAY_SECONDS)).toBeLessThan(5);

    // Every use rotates the refresh token; the new one ends when the first did, a day after sign-in.
    const refreshed = await client.refreshTokenGrant(config, tokens.refresh_token!);
    expect(refreshed.refresh_token).toBeDefined();
    expect(refreshed.refresh_token).not.toBe(tokens.refresh_token);
    const again = await client.refreshTokenGrant(config, refreshed.refresh_token!);
    const rows = await refreshTokenRows(clientId);
    expect(rows.map((row) => row.consumed).sort()).toEqual([false, true, true]);
    for (const row of rows) expect(Math.abs(Number(row.seconds_left) - DAY_SECONDS)).toBeLessThan(10);
    expect(Math.max(...rows.map((row) => Number(row.seconds_left))) - Math.min(...rows.map((row) => Number(row.seconds_left)))).toBeLessThan(3);

    // A day later (moved in the database): the refresh token and the access token are refused.
    await fixture.database.em().execute("update oauth_server_records set expires_at = now() - interval '1 second' where model = 'RefreshToken' and grant_id = ?", [rows[0]!.grant_id]);
    expect(await oauthError(client.refreshTokenGrant(config, again.refresh_token!))).toBe('invalid_grant');

    // A new sign-in; signing out of the web app (the delegations of type web) ends it everywhere.
    const next = await signIn({ config, baseUrl: first().url, redirectUri: SPA_REDIRECT, scope: 'users.read', email: m.email, password: PASSWORD });
    expect((await api(second(), 'GET', '/users/me', `Bearer ${next.tokens.access_token}`)).status).toBe(200);
    const signOut = await graphqlCall(first(), `Bearer ${next.tokens.access_token}`, 'mutation($userId: ID!) { deleteOAuthDelegations(input: {userId: $userId, types: [WEB]}) { revokedCount } }', { userId: m.userId });
    expect(signOut.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    const ownerSignOut = await graphqlCall(first(), `Token token=${m.ownerKey}`, 'mutation($userId: ID!) { deleteOAuthDelegations(input: {userId: $userId, types: [WEB]}) { revokedCount } }', { userId: m.userId });
    expect(ownerSignOut.errors).toBeUndefined();
    expect((await api(second(), 'GET', '/users/me', `Bearer ${next.tokens.access_token}`)).status).toBe(401);
    expect(await oauthError(client.refreshTokenGrant(config, next.tokens.refresh_token!))).toBe('invalid_grant');
  });

  test('a web app\'s refresh token keeps its own lifetime (the day is the browser app\'s alone)', async () => {
    const m = await newMember(fixture.database);
    const { app, clientSecret } = await registerApp(fixture.database, fixture.serverSecret, { accountId: m.accountId, kind: 'web', redirectUris: ['https://web.example.com/callback'], scopes: 'users.read' });
    const config = await discover(first().url, app.clientId, client.ClientSecretBasic(clientSecret!));
    await signIn({ config, baseUrl: first().url, redirectUri: 'https://web.example.com/callback', scope: 'users.read', email: m.email, password: PASSWORD });
    const [row] = await refreshTokenRows(app.clientId);
    expect(Number(row!.seconds_left)).toBeGreaterThan(29 * DAY_SECONDS);
  });

  test('redirect URIs are exact (no other path, no other loopback port); the token endpoint answers the app\'s origin (CORS)', async () => {
    const m = await newMember(fixture.database);
    const loopback = 'http://127.0.0.1:5000/cb';
    const { app } = await registerApp(fixture.database, fixture.serverSecret, { accountId: m.accountId, kind: 'spa', redirectUris: [SPA_REDIRECT, loopback], scopes: 'users.read' });
    const config = await discover(first().url, app.clientId, client.None());
    for (const redirectUri of [`${SPA_REDIRECT}/other`, 'http://127.0.0.1:5001/cb', `${SPA_REDIRECT}?x=1`]) {
      const url = client.buildAuthorizationUrl(config, { redirect_uri: redirectUri, scope: 'users.read', code_challenge: await client.calculatePKCECodeChallenge(client.randomPKCECodeVerifier()), code_challenge_method: 'S256' });
      const result = await browse(new CookieJar(), url, redirectUri);
      expect(result.kind).toBe('page');
      expect(result.kind === 'page' && result.html).toContain('redirect_uri');
    }
    // Without PKCE nothing starts.
    const noPkce = client.buildAuthorizationUrl(config, { redirect_uri: SPA_REDIRECT, scope: 'users.read' });
    const refused = await browse(new CookieJar(), noPkce, SPA_REDIRECT);
    expect(refused.kind === 'callback' ? refused.url.searchParams.get('error') : refused.kind).toBe('invalid_request');

    const preflight = await fetch(`${first().url}/oauth/token`, { method: 'OPTIONS', headers: { Origin: SPA_ORIGIN, 'Access-Control-Request-Method': 'POST', 'Access-Control-Request-Headers': 'content-type' } });
    expect(preflight.status).toBeLessThan(300);
    const token = await fetch(`${first().url}/oauth/token`, {
      method: 'POST',
      headers: { Origin: SPA_ORIGIN, 'Content-Type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: 'not-a-token', client_id: app.clientId }),
    });
    expect(token.status).toBe(400);
    expect(token.headers.get('access-control-allow-origin')).toBe(SPA_ORIGIN);
    const foreign = await fetch(`${first().url}/oauth/token`, {
      method: 'POST',
      headers: { Origin: 'https://evil.example', 'Content-Type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: 'not-a-token', client_id: app.clientId }),
    });
    expect(foreign.headers.get('access-control-allow-origin')).not.toBe('https://evil.example');
  });
});

describe('the consent page', () => {
  test('describes every scope an app may ask for, audit_records.read and credentials.* included', () => {
    const html = consentPage({ action: '/x', csrf: 'c', appName: 'Partner', scopes: [...ISSUABLE_SCOPES, 'offline_access'], redirectHost: 'partner.example' });
    for (const scope of [...ISSUABLE_SCOPES, 'offline_access']) {
      const description = SCOPE_DESCRIPTIONS[scope as keyof typeof SCOPE_DESCRIPTIONS];
      expect([scope, typeof description]).toEqual([scope, 'string']);
      expect(html).toContain(`<code>${scope}</code>: ${description.replace(/'/g, '&#39;')}`);
    }
    expect(ISSUABLE_SCOPES).toEqual(expect.arrayContaining(['audit_records.read', 'credentials.read', 'credentials.write']));
  });
});
