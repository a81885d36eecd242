import { describe, expect, test } from '@jest/globals';
import * as client from 'openid-client';
import { CookieJar, PASSWORD, api, browse, discover, formOf, newMember, registerApp, signIn, useOAuthServers } from '../../test/support/oauth-server.js';
import { DEFAULT_SIGN_IN_LIMITS, beginSignInAttempt } from './sign-in-limiter.js';
import { scanTextColumns } from '../../test/support/plaintext-scan.js';

const fixture = useOAuthServers();
const MOBILE_REDIRECT = 'http://127.0.0.1/mobile/callback';
const WEB_REDIRECT = 'https://web.example.com/callback';

/** Opens the sign-in page of a fresh mobile authorization request; returns what a browser holds. */
async function signInPage(accountId: string) {
  const { app } = await registerApp(fixture.database, fixture.serverSecret, { accountId, kind: 'mobile', redirectUris: [MOBILE_REDIRECT] });
  const config = await discover(fixture.instances[0]!.url, app.clientId, client.None());
  const jar = new CookieJar();
  const url = client.buildAuthorizationUrl(config, { redirect_uri: MOBILE_REDIRECT, scope: 'users.read', code_challenge: await client.calculatePKCECodeChallenge(client.randomPKCECodeVerifier()), code_challenge_method: 'S256' });
  const page = await browse(jar, url, MOBILE_REDIRECT);
  if (page.kind !== 'page') throw new Error('expected the sign-in page');
  const form = formOf(page.html);
  const submit = (fields: Record<string, string>, withJar = jar) => browse(withJar, new URL(form.action, fixture.instances[0]!.url), MOBILE_REDIRECT, { method: 'POST', form: { csrf: form.csrf, ...fields } });
  return { page, form, jar, submit };
}

describe('nothing secret at rest or in the logs', () => {
  test('no token, code, client secret, session id or password appears in any text column or log line', async () => {
    const m = await newMember(fixture.database);
    const needles: string[] = [PASSWORD];

    const mobile = await registerApp(fixture.database, fixture.serverSecret, { accountId: m.accountId, kind: 'mobile', redirectUris: [MOBILE_REDIRECT] });
    const mobileConfig = await discover(fixture.instances[0]!.url, mobile.app.clientId, client.None());
    const setCookies: string[] = [];
    const signedIn = await signIn({ config: mobileConfig, baseUrl: fixture.instances[0]!.url, redirectUri: MOBILE_REDIRECT, scope: 'openid users.read', email: m.email, password: PASSWORD, setCookies });
    const rotated = await client.refreshTokenGrant(mobileConfig, signedIn.tokens.refresh_token!);
    needles.push(signedIn.callback.searchParams.get('code')!, signedIn.verifier, signedIn.tokens.access_token, signedIn.tokens.refresh_token!, signedIn.tokens.id_token!, rotated.access_token, rotated.refresh_token!);
    for (const cookie of setCookies) {
      const value = cookie.split(';')[0]!.split('=').slice(1).join('=');
      if (value.length >= 16) needles.push(value);
    }

    const web = await registerApp(fixture.database, fixture.serverSecret, { accountId: m.accountId, kind: 'web', redirectUris: [WEB_REDIRECT] });
    const integration = await registerApp(fixture.database, fixture.serverSecret, { accountId: m.accountId, kind: 'integration', scopes: 'users.read' });
    const integrationConfig = await discover(fixture.instances[0]!.url, integration.app.clientId, client.ClientSecretBasic(integration.clientSecret!));
    const appToken = await client.clientCredentialsGrant(integrationConfig, { scope: 'users.read' });
    needles.push(web.clientSecret!, integration.clientSecret!, appToken.access_token);
    // The tokens are in use (and so in the request path of the logs, were anything logged wrongly).
    expect((await api(fixture.instances[1]!, 'GET', '/users/me', `Bearer ${rotated.access_token}`)).status).toBe(200);
    expect((await api(fixture.instances[0]!, 'GET', '/users', `Bearer ${appToken.access_token}`)).status).toBe(200);
    expect(needles.every((needle) => needle.length >= 12)).toBe(true);

    const em = fixture.database.em();
    const { scanned, hits } = await scanTextColumns(em, needles);
    expect(scanned).toEqual(expect.arrayContaining(['oauth_server_records.payload', 'oauth_server_records.key_digest', 'oauth_apps.client_secret_sealed', 'oauth_signing_keys.jwk_sealed', 'user_passwords.password_hash']));
    const [records] = await em.execute<{ count: string }[]>("select count(*) as count from oauth_server_records where model in ('AccessToken', 'RefreshToken', 'AuthorizationCode', 'Session', 'ClientCredentials')");
    expect(Number(records!.count)).toBeGreaterThanOrEqual(5);
    expect(hits).toEqual([]);
    // The signing key's private part is sealed: no JWK member in clear. Quoted, as JSON writes
    // them: the sealed form is base64url, which holds no quote but may spell "RSA" by chance.
    const [key] = await em.execute<{ jwk_sealed: string }[]>('select jwk_sealed from oauth_signing_keys limit 1');
    expect(key!.jwk_sealed).not.toMatch(/"d"|"kty"|"RSA"/);

    const logText = fixture.logs.join('');
    expect(logText).toContain('/oauth/token');
    expect(needles.filter((needle) => logText.includes(needle))).toEqual([]);
  });
});

describe('the sign-in form', () => {
  test('a wrong password and an unknown email look the same', async () => {
    const m = await newMember(fixture.database);
    const wrongPassword = await (await signInPage(m.accountId)).submit({ email: m.email, password: 'not the password at all' });
    const unknownEmail = await (await signInPage(m.accountId)).submit({ email: `nobody-${m.userId}@example.com`, password: 'not the password at all' });
    if (wrongPassword.kind !== 'page' || unknownEmail.kind !== 'page') throw new Error('expected the form again');
    expect(wrongPassword.status).toBe(401);
    expect(unknownEmail.status).toBe(401);
    const normalize = (html: string) => html.replace(/value="[^"]*"/g, 'value=""').replace(/action="[^"]*"/g, 'action=""');
    expect(normalize(wrongPassword.html)).toBe(normalize(unknownEmail.html));
    expect(wrongPassword.html).toContain('The email or password is not correct.');
  });

  test('failures of one email from one address back off: past the free ones even the right password is not checked (429, Retry-After)', async () => {
    const m = await newMember(fixture.database);
    const { submit } = await signInPage(m.accountId);
    for (let attempt = 1; attempt <= DEFAULT_SIGN_IN_LIMITS.freeFailuresPerEmailAndAddress; attempt += 1) {
      const result = await submit({ email: m.email, password: `wrong password ${attempt}` });
      expect(result.kind === 'page' && result.status).toBe(401);
    }
    const limited = await submit({ email: m.email.toUpperCase(), password: PASSWORD });
    expect(limited.kind === 'page' && limited.status).toBe(429);
    if (limited.kind === 'page') expect(limited.html).toContain('Too many sign-in attempts');
  });

  test('nobody can lock a user out: failures from one address leave the same email free from another address', async () => {
    const em = fixture.database.em();
    const limits = { ...DEFAULT_SIGN_IN_LIMITS, freeFailuresPerEmailAndAddress: 3, maxBackoffSeconds: 900 };
    const email = `victim-${Math.random().toString(36).slice(2)}@example.com`;
    const outcomes = [];
    for (let attempt = 0; attempt < 5; attempt += 1) outcomes.push((await beginSignInAttempt(em, email, '203.0.113.66', limits)).allowed);
    expect(outcomes).toEqual([true, true, true, false, false]);
    const refused = await beginSignInAttempt(em, email, '203.0.113.66', limits);
    expect(refused.allowed === false && refused.retryAfterSeconds).toBeGreaterThanOrEqual(1);
    // The owner, elsewhere, is not affected; a success takes the failures of that pair back.
    const owner = await beginSignInAttempt(em, email, '198.51.100.20', limits);
    expect(owner.allowed).toBe(true);
    // Once the back-off has passed, the attacker's address gets one more try (then waits twice as long).
    await em.execute("update sign_in_failures set last_failed_at = last_failed_at - interval '2 seconds'");
    expect((await beginSignInAttempt(em, email, '203.0.113.66', limits)).allowed).toBe(true);
    expect((await beginSignInAttempt(em, email, '203.0.113.66', limits)).allowed).toBe(false);
  });

  test('failures of one email from many addresses slow it down, capped low', async () => {
    const em = fixture.database.em();
    const limits = { ...DEFAULT_SIGN_IN_LIMITS, freeFailuresPerEmail: 4, maxEmailBackoffSeconds: 60 };
    const email = `spread-${Math.random().toString(36).slice(2)}@example.com`;
    const outcomes = [];
    for (let attempt = 0; attempt < 6; attempt += 1) outcomes.push((await beginSignInAttempt(em, email, `192.0.2.${attempt + 1}`, limits)).allowed);
    expect(outcomes).toEqual([true, true, true, true, false, false]);
  });

  test('attempts are limited per client address, whatever the email', async () => {
    const em = fixture.database.em();
    const limits = { ...DEFAULT_SIGN_IN_LIMITS, perAddress: 3 };
    // An address no other test of this file uses (203.0.113.66 collects failures above).
    const address = `198.18.${Math.floor(Math.random() * 250)}.${Math.floor(Math.random() * 250)}`;
    const outcomes = [];
    for (let attempt = 0; attempt < 5; attempt += 1) outcomes.push((await beginSignInAttempt(em, `person${attempt}-${address}@example.com`, address, limits)).allowed);
    expect(outcomes).toEqual([true, true, true, false, false]);
    expect((await beginSignInAttempt(em, 'someone@example.com', '198.51.100.7', limits)).allowed).toBe(true);
  });

  test('CSRF: a post without the interaction cookie, or with a wrong form token, signs nobody in', async () => {
    const m = await newMember(fixture.database);
    const crossSite = await signInPage(m.accountId);
    const withoutCookies = await crossSite.submit({ email: m.email, password: PASSWORD }, new CookieJar());
    expect(withoutCookies.kind === 'page' && withoutCookies.status).toBe(400);
    const forged = await browse(crossSite.jar, new URL(crossSite.form.action, fixture.instances[0]!.url), MOBILE_REDIRECT, { method: 'POST', form: { csrf: 'forged', email: m.email, password: PASSWORD } });
    expect(forged.kind === 'page' && forged.status).toBe(400);
    // The genuine form still works afterwards.
    expect((await crossSite.submit({ email: m.email, password: PASSWORD })).kind).toBe('callback');
  });

  test('the pages are plain forms: no script, no framing, not cached', async () => {
    const m = await newMember(fixture.database);
    const { page } = await signInPage(m.accountId);
    expect(page.html).not.toMatch(/<script/i);
    expect(page.html).toMatch(/<input type="email" name="email"/);
    expect(page.html).toMatch(/<input type="password" name="password"/);
    const response = await fetch(page.url, { headers: { cookie: '' } });
    expect(response.status).toBe(400);
    expect(response.headers.get('cache-control')).toBe('no-store');
    expect(response.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
  });
});
