import { describe, expect, test } from '@jest/globals';
import * as client from 'openid-client';
import { AccountsService } from '../accounts/accounts.service.js';
import { issueDelegation } from '../oauth-delegations/oauth-delegation.service.js';
import { CookieJar, PASSWORD, api, browse, discover, graphqlCall, newMember, registerApp, signIn, useOAuthServers } from '../../test/support/oauth-server.js';
import { checkSignIn } from './passwords.js';
import { setPasswordCommand } from '../cli/commands/oauth-server.commands.js';

/** Issue 22, finding 1: changeMyPassword is no longer a password oracle open to any token of the user. */
const fixture = useOAuthServers();

const MOBILE_REDIRECT = 'com.example.incidents:/oauth/callback';
const WEB_REDIRECT = 'https://web.example.com/callback';
const PARTNER_REDIRECT = 'https://partner.example.net/oauth/callback';
const CHANGE = 'mutation($input: ChangeMyPasswordInput!) { changeMyPassword(input: $input) { changed } }';
const NEW_PASSWORD = 'a brand new long passphrase';

const change = (authorization: string, currentPassword: string, instance = 0) =>
  graphqlCall(fixture.instances[instance]!, authorization, CHANGE, { input: { currentPassword, newPassword: NEW_PASSWORD } });

async function app(accountId: string, kind: 'mobile' | 'web' | 'third_party' | 'integration', scopes?: string) {
  const redirectUris = kind === 'mobile' ? [MOBILE_REDIRECT] : kind === 'web' ? [WEB_REDIRECT] : kind === 'third_party' ? [PARTNER_REDIRECT] : [];
  const { app: registered, clientSecret } = await registerApp(fixture.database, fixture.serverSecret, { accountId, kind, redirectUris, scopes });
  const auth = clientSecret ? client.ClientSecretBasic(clientSecret) : client.None();
  return { clientId: registered.clientId, config: await discover(fixture.instances[0]!.url, registered.clientId, auth), redirectUri: redirectUris[0]! };
}

describe('who may call changeMyPassword', () => {
  test('even with the right current password: refused to third-party apps, integrations, tokens without users.write and read-only roles', async () => {
    const m = await newMember(fixture.database);
    const partner = await app(m.accountId, 'third_party', 'openid profile users.read users.write');
    const partnerToken = (await signIn({ config: partner.config, baseUrl: fixture.instances[0]!.url, redirectUri: partner.redirectUri, scope: 'openid profile users.write', email: m.email, password: PASSWORD, approve: true })).tokens.access_token;
    const thirdParty = await change(`Bearer ${partnerToken}`, PASSWORD);
    expect(thirdParty.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');

    const mobile = await app(m.accountId, 'mobile', 'openid subscribers.read');
    const readToken = (await signIn({ config: mobile.config, baseUrl: fixture.instances[0]!.url, redirectUri: mobile.redirectUri, scope: 'subscribers.read', email: m.email, password: PASSWORD })).tokens.access_token;
    const withoutScope = await change(`Bearer ${readToken}`, PASSWORD);
    expect(withoutScope.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    expect(withoutScope.errors?.[0]?.message).toContain('users.write');

    const operatorIssuedIntegration = await fixture.database.transactions.run(fixture.database.em(), (tx) => issueDelegation(tx, { userId: m.userId, type: 'integration', scopes: 'users.write' }));
    expect((await change(`Bearer ${operatorIssuedIntegration.accessToken}`, PASSWORD)).errors?.[0]?.extensions?.code).toBe('FORBIDDEN');

    const integration = await app(m.accountId, 'integration', 'users.read users.write');
    const appToken = await client.clientCredentialsGrant(integration.config, { scope: 'users.write' });
    expect((await change(`Bearer ${appToken.access_token}`, PASSWORD)).errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');

    const em = fixture.database.em();
    await em.execute("update users set role = 'read_only_user' where id = ?", [m.userId]);
    const readOnlyKey = await fixture.database.transactions.run(em, (tx) => new AccountsService(tx).createApiKey({ accountId: m.accountId, userId: m.userId }));
    expect((await change(`Token token=${readOnlyKey.apiKey}`, PASSWORD)).errors?.[0]?.extensions?.code).toBe('FORBIDDEN');

    expect(await checkSignIn(em, m.accountId, m.email, PASSWORD)).toBe(m.userId);
  });
});

describe('wrong current passwords', () => {
  test('count against the sign-in limits of the email: past them the mutation is RATE_LIMITED and the sign-in form answers 429', async () => {
    const m = await newMember(fixture.database);
    const key = (await fixture.database.transactions.run(fixture.database.em(), (tx) => new AccountsService(tx).createApiKey({ accountId: m.accountId, userId: m.userId }))).apiKey;
    for (let attempt = 1; attempt <= 5; attempt += 1) {
      // A form's mistake is BAD_USER_INPUT naming the field to correct, not FORBIDDEN.
      expect((await change(`Token token=${key}`, `wrong guess number ${attempt}`)).errors?.[0]?.extensions).toMatchObject({
        code: 'BAD_USER_INPUT',
        fields: [{ path: ['input', 'currentPassword'], code: 'INCORRECT', message: 'currentPassword is not correct.' }],
      });
    }
    const limited = await change(`Token token=${key}`, PASSWORD);
    expect(limited.errors?.[0]?.extensions?.code).toBe('RATE_LIMITED');

    const mobile = await app(m.accountId, 'mobile', 'users.read');
    const jar = new CookieJar();
    const url = client.buildAuthorizationUrl(mobile.config, { redirect_uri: MOBILE_REDIRECT, scope: 'users.read', code_challenge: await client.calculatePKCECodeChallenge(client.randomPKCECodeVerifier()), code_challenge_method: 'S256' });
    const page = await browse(jar, url, MOBILE_REDIRECT);
    if (page.kind !== 'page') throw new Error('expected the sign-in page');
    const action = /action="([^"]+)"/.exec(page.html)![1]!;
    const csrf = /name="csrf" value="([^"]+)"/.exec(page.html)![1]!;
    const form = await browse(jar, new URL(action, fixture.instances[0]!.url), MOBILE_REDIRECT, { method: 'POST', form: { csrf, email: m.email, password: PASSWORD } });
    expect(form.kind === 'page' && form.status).toBe(429);
    expect(await checkSignIn(fixture.database.em(), m.accountId, m.email, PASSWORD)).toBe(m.userId);
  });
});

describe('a successful change', () => {
  test('revokes the other sessions and grants of the user (first party, third party, operator-issued), keeps the caller\'s token and the API keys', async () => {
    const m = await newMember(fixture.database);
    const jar = new CookieJar();
    const mobile = await app(m.accountId, 'mobile');
    const mobileSignIn = await signIn({ config: mobile.config, baseUrl: fixture.instances[0]!.url, redirectUri: MOBILE_REDIRECT, scope: 'users.read', email: m.email, password: PASSWORD, jar });
    const web = await app(m.accountId, 'web');
    const webToken = (await signIn({ config: web.config, baseUrl: fixture.instances[0]!.url, redirectUri: WEB_REDIRECT, scope: 'users.read users.write', email: m.email, password: PASSWORD })).tokens.access_token;
    const partner = await app(m.accountId, 'third_party', 'users.read');
    const partnerToken = (await signIn({ config: partner.config, baseUrl: fixture.instances[0]!.url, redirectUri: PARTNER_REDIRECT, scope: 'users.read', email: m.email, password: PASSWORD, approve: true })).tokens.access_token;
    const operatorIssued = await fixture.database.transactions.run(fixture.database.em(), (tx) => issueDelegation(tx, { userId: m.userId, type: 'mobile', scopes: 'users.read' }));
    const userKey = (await fixture.database.transactions.run(fixture.database.em(), (tx) => new AccountsService(tx).createApiKey({ accountId: m.accountId, userId: m.userId }))).apiKey;

    const changed = await change(`Bearer ${webToken}`, PASSWORD, 1);
    expect(changed.data).toEqual({ changeMyPassword: { changed: true } });
    expect(await checkSignIn(fixture.database.em(), m.accountId, m.email, NEW_PASSWORD)).toBe(m.userId);

    for (const instance of fixture.instances) {
      for (const revoked of [mobileSignIn.tokens.access_token, partnerToken, operatorIssued.accessToken]) {
        expect((await api(instance, 'GET', '/users/me', `Bearer ${revoked}`)).status).toBe(401);
      }
      expect((await api(instance, 'GET', '/users/me', `Bearer ${webToken}`)).status).toBe(200);
      expect((await api(instance, 'GET', '/users/me', `Token token=${userKey}`)).status).toBe(200);
    }
    await expect(client.refreshTokenGrant(mobile.config, mobileSignIn.tokens.refresh_token!)).rejects.toMatchObject({ error: 'invalid_grant' });
    const listed = await api(fixture.instances[0]!, 'GET', `/users/${m.userId}/oauth_delegations?status=revoked`, `Token token=${m.ownerKey}`);
    expect(listed.body.oauth_delegations).toHaveLength(3);

    // The browser's sign-in session ended too: the next authorization asks for the password again.
    const again = client.buildAuthorizationUrl(mobile.config, { redirect_uri: MOBILE_REDIRECT, scope: 'users.read', code_challenge: await client.calculatePKCECodeChallenge(client.randomPKCECodeVerifier()), code_challenge_method: 'S256' });
    const next = await browse(jar, again, MOBILE_REDIRECT);
    expect(next.kind === 'page' && next.html).toContain('name="password"');
  });
});

describe('an operator\'s reset (accessctl users set-password)', () => {
  test('also ends the user\'s sessions and grants: what follows a suspected takeover', async () => {
    const m = await newMember(fixture.database);
    const mobile = await app(m.accountId, 'mobile');
    const { tokens } = await signIn({ config: mobile.config, baseUrl: fixture.instances[0]!.url, redirectUri: MOBILE_REDIRECT, scope: 'users.read', email: m.email, password: PASSWORD });
    expect((await api(fixture.instances[0]!, 'GET', '/users/me', `Bearer ${tokens.access_token}`)).status).toBe(200);
    await setPasswordCommand.run(fixture.database, { user: m.userId }, { info: () => {}, readStdin: async () => `${NEW_PASSWORD}\n` });
    expect((await api(fixture.instances[0]!, 'GET', '/users/me', `Bearer ${tokens.access_token}`)).status).toBe(401);
    await expect(client.refreshTokenGrant(mobile.config, tokens.refresh_token!)).rejects.toMatchObject({ error: 'invalid_grant' });
  });
});
