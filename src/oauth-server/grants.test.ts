import { describe, expect, test } from '@jest/globals';
import * as client from 'openid-client';
import { CookieJar, PASSWORD, api, browse, discover, formOf, newMember, registerApp, signIn, useOAuthServers } from '../../test/support/oauth-server.js';

/** Issue 22, findings 2 (re-consent) and 3 (public clients): what an authorization may do without the user. */
const fixture = useOAuthServers(1);

const LOOPBACK_REDIRECT = 'http://127.0.0.1/mobile/callback';
const PARTNER_REDIRECT = 'https://partner.example.net/oauth/callback';

async function authorizationUrl(config: client.Configuration, redirectUri: string, scope: string) {
  return client.buildAuthorizationUrl(config, { redirect_uri: redirectUri, scope, code_challenge: await client.calculatePKCECodeChallenge(client.randomPKCECodeVerifier()), code_challenge_method: 'S256' });
}

describe('the mobile app (a public client)', () => {
  test('with a sign-in session already in the browser, a new authorization is never completed silently: the user confirms or cancels', async () => {
    const m = await newMember(fixture.database);
    const { app } = await registerApp(fixture.database, fixture.serverSecret, { accountId: m.accountId, kind: 'mobile', redirectUris: [LOOPBACK_REDIRECT], name: 'Mobile' });
    const config = await discover(fixture.instances[0]!.url, app.clientId, client.None());
    const jar = new CookieJar();
    await signIn({ config, baseUrl: fixture.instances[0]!.url, redirectUri: LOOPBACK_REDIRECT, scope: 'users.read', email: m.email, password: PASSWORD, jar });

    // Another app on the device starts a flow with the mobile client id and a loopback port of its own.
    const intruderRedirect = 'http://127.0.0.1:49152/mobile/callback';
    const attempt = await browse(jar, await authorizationUrl(config, intruderRedirect, 'users.read'), intruderRedirect);
    expect(attempt.kind).toBe('page');
    if (attempt.kind !== 'page') return;
    expect(attempt.html).toContain('Continue to Mobile?');
    expect(attempt.html).toContain(m.email);
    expect(attempt.html).not.toContain('name="password"');
    const form = formOf(attempt.html);
    const cancelled = await browse(jar, new URL(form.action, fixture.instances[0]!.url), intruderRedirect, { method: 'POST', form: { csrf: form.csrf, decision: 'deny' } });
    expect(cancelled.kind === 'callback' && cancelled.url.searchParams.get('error')).toBe('access_denied');
    expect(cancelled.kind === 'callback' && cancelled.url.searchParams.get('code')).toBeNull();

    // The user's own confirmation completes it, on the same grant (one delegation).
    const own = await browse(jar, await authorizationUrl(config, LOOPBACK_REDIRECT, 'users.read'), LOOPBACK_REDIRECT);
    if (own.kind !== 'page') throw new Error('expected the confirmation page');
    const confirm = formOf(own.html);
    const confirmed = await browse(jar, new URL(confirm.action, fixture.instances[0]!.url), LOOPBACK_REDIRECT, { method: 'POST', form: { csrf: confirm.csrf, decision: 'approve' } });
    expect(confirmed.kind === 'callback' && confirmed.url.searchParams.get('code')).toBeTruthy();
    const listed = await api(fixture.instances[0]!, 'GET', `/users/${m.userId}/oauth_delegations`, `Token token=${m.ownerKey}`);
    expect(listed.body.oauth_delegations).toHaveLength(1);
  });
});

describe('consenting again', () => {
  test('widens the grant\'s scopes but does not extend its life: the delegation keeps the expiry of the first consent', async () => {
    const m = await newMember(fixture.database);
    const { app, clientSecret } = await registerApp(fixture.database, fixture.serverSecret, { accountId: m.accountId, kind: 'third_party', redirectUris: [PARTNER_REDIRECT], scopes: 'users.read subscribers.read' });
    const config = await discover(fixture.instances[0]!.url, app.clientId, client.ClientSecretBasic(clientSecret!));
    const jar = new CookieJar();
    await signIn({ config, baseUrl: fixture.instances[0]!.url, redirectUri: PARTNER_REDIRECT, scope: 'users.read', email: m.email, password: PASSWORD, approve: true, jar });
    const em = fixture.database.em();
    // As if the first consent was 80 days ago.
    await em.execute("update oauth_delegations set expires_at = now() + interval '10 days' where client_id = ?", [app.clientId]);
    const [before] = await em.execute<{ expires_at: Date }[]>('select expires_at from oauth_delegations where client_id = ?', [app.clientId]);

    const again = await browse(jar, await authorizationUrl(config, PARTNER_REDIRECT, 'users.read subscribers.read'), PARTNER_REDIRECT);
    if (again.kind !== 'page') throw new Error('expected the consent page');
    expect(again.html).toContain('<code>subscribers.read</code>');
    const form = formOf(again.html);
    const approved = await browse(jar, new URL(form.action, fixture.instances[0]!.url), PARTNER_REDIRECT, { method: 'POST', form: { csrf: form.csrf, decision: 'approve' } });
    expect(approved.kind).toBe('callback');

    const rows = await em.execute<{ expires_at: Date; scope: string }[]>('select expires_at, scope from oauth_delegations where client_id = ?', [app.clientId]);
    expect(rows).toHaveLength(1);
    expect(rows[0]!.scope.split(' ').sort()).toEqual(['subscribers.read', 'users.read']);
    expect(new Date(rows[0]!.expires_at).getTime()).toBe(new Date(before!.expires_at).getTime());
  });
});

describe('abandoned sign-ins', () => {
  test('each new authorization request purges the interactions that have expired', async () => {
    const m = await newMember(fixture.database);
    const { app } = await registerApp(fixture.database, fixture.serverSecret, { accountId: m.accountId, kind: 'mobile', redirectUris: [LOOPBACK_REDIRECT] });
    const config = await discover(fixture.instances[0]!.url, app.clientId, client.None());
    const em = fixture.database.em();
    for (let started = 0; started < 3; started += 1) await browse(new CookieJar(), await authorizationUrl(config, LOOPBACK_REDIRECT, 'users.read'), LOOPBACK_REDIRECT);
    await em.execute("update oauth_server_records set expires_at = now() - interval '1 second' where model = 'Interaction'");
    await browse(new CookieJar(), await authorizationUrl(config, LOOPBACK_REDIRECT, 'users.read'), LOOPBACK_REDIRECT);
    const [left] = await em.execute<{ expired: string; live: string }[]>(
      "select count(*) filter (where expires_at < now()) as expired, count(*) filter (where expires_at >= now()) as live from oauth_server_records where model = 'Interaction'",
    );
    expect(Number(left!.expired)).toBe(0);
    expect(Number(left!.live)).toBe(1);
  });
});
