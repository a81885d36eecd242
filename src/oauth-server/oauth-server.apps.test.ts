import { describe, expect, test } from '@jest/globals';
import * as client from 'openid-client';
import { createAppCommand, deleteAppCommand, listAppsCommand, purgeCommand, rotateSigningKeysCommand, setPasswordCommand } from '../cli/commands/oauth-server.commands.js';
import { sealersFor } from './provider.js';
import { loadSigningKeys } from './signing-keys.js';
import { CookieJar, PASSWORD, api, browse, discover, formOf, graphqlCall, newMember, signIn, useOAuthServers, oauthError } from '../../test/support/oauth-server.js';
import { checkSignIn } from './passwords.js';
import { AccountsService } from '../accounts/accounts.service.js';

const fixture = useOAuthServers();

const MOBILE_REDIRECT = 'com.example.incidents:/oauth/callback';
const WEB_REDIRECT = 'https://web.example.com/callback';
const PARTNER_REDIRECT = 'https://partner.example.net/oauth/callback';
const io = (stdin = '') => ({ info: () => {}, serverSecret: () => fixture.serverSecret, readStdin: async () => stdin });

/** `accessctl apps create ... --json`, as the operator would run it. */
async function createApp(accountId: string, kind: string, redirectUris: string[], scopes?: string) {
  const result = await createAppCommand.run(fixture.database, { account: accountId, name: `${kind} app`, kind, 'redirect-uri': redirectUris as unknown as string, ...(scopes ? { scopes } : {}), json: true }, io());
  return result as { client_id: string; client_secret?: string };
}

describe('accessctl apps', () => {
  test('create prints client_id, and client_secret only for confidential apps; list shows them; bad input is refused', async () => {
    const m = await newMember(fixture.database);
    const mobile = await createApp(m.accountId, 'mobile', [MOBILE_REDIRECT]);
    expect(Object.keys(mobile)).toEqual(['client_id']);
    const web = await createApp(m.accountId, 'web', [WEB_REDIRECT, 'https://web.example.com/other']);
    expect(Object.keys(web).sort()).toEqual(['client_id', 'client_secret']);
    expect(web.client_secret!.length).toBeGreaterThanOrEqual(43);
    const integration = await createApp(m.accountId, 'integration', [], 'users.read');
    expect(Object.keys(integration).sort()).toEqual(['client_id', 'client_secret']);

    const listed = await listAppsCommand.run(fixture.database, { account: m.accountId }, io()) as { apps: Array<{ client_id: string; kind: string; redirect_uris: string[] }> };
    expect(listed.apps.map((app) => app.kind).sort()).toEqual(['integration', 'mobile', 'web']);
    expect(listed.apps.find((app) => app.kind === 'web')!.redirect_uris).toEqual([WEB_REDIRECT, 'https://web.example.com/other']);
    expect(JSON.stringify(listed)).not.toContain(web.client_secret);

    await expect(createApp(m.accountId, 'desktop', [WEB_REDIRECT])).rejects.toMatchObject({ details: [expect.stringMatching(/kind must be one of/)] });
    await expect(createApp(m.accountId, 'web', [])).rejects.toMatchObject({ details: [expect.stringMatching(/redirect-uri/)] });
    await expect(createApp(m.accountId, 'web', ['http://web.example.com/cb'])).rejects.toMatchObject({ details: [expect.stringMatching(/https/)] });
    await expect(createApp(m.accountId, 'mobile', [MOBILE_REDIRECT], 'users.read admin.everything')).rejects.toMatchObject({ details: [expect.stringMatching(/unknown scope/)] });
    await expect(createApp('PNOSUCH', 'mobile', [MOBILE_REDIRECT])).rejects.toMatchObject({ details: [expect.stringMatching(/does not exist/)] });
  });

  test('users set-password reads standard input; the password signs in, nothing else does', async () => {
    const m = await newMember(fixture.database);
    const result = await setPasswordCommand.run(fixture.database, { user: m.userId }, io('a new long passphrase\n'));
    expect(JSON.stringify(result)).not.toContain('passphrase');
    expect(await checkSignIn(fixture.database.em(), m.accountId, m.email.toUpperCase(), 'a new long passphrase')).toBe(m.userId);
    expect(await checkSignIn(fixture.database.em(), m.accountId, m.email, PASSWORD)).toBeUndefined();
    await expect(setPasswordCommand.run(fixture.database, { user: m.userId }, io('short\n'))).rejects.toMatchObject({ details: [expect.stringMatching(/12 to 256/)] });
    await expect(setPasswordCommand.run(fixture.database, { user: 'PNOSUCH' }, io('long enough password\n'))).rejects.toMatchObject({ details: [expect.stringMatching(/not found|user/i)] });
  });
});

describe('accessctl oauth', () => {
  test('rotate-keys makes a new signing key the first one (kept sealed); the previous one stays for verification', async () => {
    const sealer = sealersFor(fixture.serverSecret).signingKeys;
    // The running instances created the first key when they served discovery.
    expect((await fetch(`${fixture.instances[0]!.url}/oauth/jwks`)).status).toBe(200);
    const before = await loadSigningKeys(fixture.database.em(), sealer);
    const rotated = await rotateSigningKeysCommand.run(fixture.database, {}, io()) as { kid: string };
    const after = await loadSigningKeys(fixture.database.em(), sealer);
    expect(after[0]!.kid).toBe(rotated.kid);
    expect(after.map((key) => key.kid)).toEqual(expect.arrayContaining(before.map((key) => key.kid)));
    expect(after[0]).toHaveProperty('d');
  });

  test('purge removes expired records and nothing else', async () => {
    const m = await newMember(fixture.database);
    const app = await createApp(m.accountId, 'mobile', [MOBILE_REDIRECT]);
    const config = await discover(fixture.instances[0]!.url, app.client_id, client.None());
    const { tokens } = await signIn({ config, baseUrl: fixture.instances[0]!.url, redirectUri: MOBILE_REDIRECT, scope: 'users.read', email: m.email, password: PASSWORD });
    const em = fixture.database.em();
    await em.execute("update oauth_server_records set expires_at = now() - interval '1 minute' where model = 'AuthorizationCode'");
    const [expired] = await em.execute<{ count: string }[]>('select count(*) as count from oauth_server_records where expires_at < now()');
    expect(Number(expired!.count)).toBeGreaterThan(0);
    const result = await purgeCommand.run(fixture.database, {}, io()) as { removed: number };
    expect(result.removed).toBe(Number(expired!.count));
    const [left] = await em.execute<{ count: string }[]>('select count(*) as count from oauth_server_records where expires_at < now()');
    expect(Number(left!.count)).toBe(0);
    expect((await api(fixture.instances[0]!, 'GET', '/users/me', `Bearer ${tokens.access_token}`)).status).toBe(200);
  });
});

describe('client credentials (integration acting for the account)', () => {
  test('the token reads users with users.read, is refused a write naming users.write, and dies with the app', async () => {
    const m = await newMember(fixture.database);
    const app = await createApp(m.accountId, 'integration', [], 'users.read');
    const config = await discover(fixture.instances[0]!.url, app.client_id, client.ClientSecretBasic(app.client_secret!));
    const tokens = await client.clientCredentialsGrant(config, { scope: 'users.read' });
    expect(tokens.scope).toBe('users.read');
    expect(tokens.refresh_token).toBeUndefined();
    const bearer = `Bearer ${tokens.access_token}`;

    const listed = await api(fixture.instances[1]!, 'GET', '/users', bearer);
    expect(listed.status).toBe(200);
    expect(listed.body.users.map((user: { id: string }) => user.id)).toContain(m.userId);
    const write = await api(fixture.instances[0]!, 'POST', '/users', bearer, { user: { type: 'user', name: 'Nope', email: 'nope@example.com' } });
    expect(write.status).toBe(403);
    expect(write.body.error.code).toBe(2010);
    expect(JSON.stringify(write.body.error)).toContain('users.write');
    expect((await api(fixture.instances[0]!, 'GET', '/users/me', bearer)).status).toBe(400);
    // Asking for a scope the app was not registered with gets none of it.
    await expect(client.clientCredentialsGrant(config, { scope: 'users.write' })).rejects.toMatchObject({ error: 'invalid_scope' });
    // A wrong secret is refused.
    const impostor = await discover(fixture.instances[0]!.url, app.client_id, client.ClientSecretBasic('not-the-secret'));
    expect(await oauthError(client.clientCredentialsGrant(impostor, { scope: 'users.read' }))).toBe('invalid_client');

    const deleted = await deleteAppCommand.run(fixture.database, { 'client-id': app.client_id }, io());
    expect(deleted).toMatchObject({ revoked_delegations: 1 });
    expect((await api(fixture.instances[1]!, 'GET', '/users', bearer)).status).toBe(401);
    expect(await oauthError(client.clientCredentialsGrant(config, { scope: 'users.read' }))).toBe('invalid_client');
  });
});

describe('consent', () => {
  test('a third-party app shows the scopes it asks for; deny goes back with access_denied, allow issues an integration delegation', async () => {
    const m = await newMember(fixture.database);
    const app = await createApp(m.accountId, 'third_party', [PARTNER_REDIRECT], 'openid users.read subscribers.read');
    const config = await discover(fixture.instances[0]!.url, app.client_id, client.ClientSecretBasic(app.client_secret!));

    // Deny.
    const jar = new CookieJar();
    const verifier = client.randomPKCECodeVerifier();
    const url = client.buildAuthorizationUrl(config, { redirect_uri: PARTNER_REDIRECT, scope: 'users.read subscribers.read', code_challenge: await client.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256', state: 'st' });
    const login = await browse(jar, url, PARTNER_REDIRECT);
    if (login.kind !== 'page') throw new Error('expected the sign-in page');
    const loginForm = formOf(login.html);
    const consent = await browse(jar, new URL(loginForm.action, fixture.instances[0]!.url), PARTNER_REDIRECT, { method: 'POST', form: { csrf: loginForm.csrf, email: m.email, password: PASSWORD } });
    if (consent.kind !== 'page') throw new Error('expected the consent page');
    expect(consent.html).toContain('<code>users.read</code>');
    expect(consent.html).toContain('<code>subscribers.read</code>');
    expect(consent.html).not.toContain('name="password"');
    const consentForm = formOf(consent.html);
    const denied = await browse(jar, new URL(consentForm.action, fixture.instances[0]!.url), PARTNER_REDIRECT, { method: 'POST', form: { csrf: consentForm.csrf, decision: 'deny' } });
    expect(denied.kind).toBe('callback');
    if (denied.kind === 'callback') expect(denied.url.searchParams.get('error')).toBe('access_denied');

    // Allow.
    const pages: string[] = [];
    const { tokens } = await signIn({ config, baseUrl: fixture.instances[0]!.url, redirectUri: PARTNER_REDIRECT, scope: 'users.read subscribers.read', email: m.email, password: PASSWORD, approve: true, pages });
    expect(pages).toHaveLength(2);
    expect((await api(fixture.instances[0]!, 'GET', '/users/me', `Bearer ${tokens.access_token}`)).body.user.id).toBe(m.userId);
    const listed = await api(fixture.instances[0]!, 'GET', `/users/${m.userId}/oauth_delegations`, `Token token=${m.ownerKey}`);
    expect(listed.body.oauth_delegations).toHaveLength(1);
    expect(listed.body.oauth_delegations[0]).toMatchObject({ delegation_type: 'integration', client_id: app.client_id, scope: 'users.read subscribers.read', status: 'issued' });
  });

  test('first-party apps (web) skip consent: one page, the sign-in form', async () => {
    const m = await newMember(fixture.database);
    const app = await createApp(m.accountId, 'web', [WEB_REDIRECT]);
    const config = await discover(fixture.instances[0]!.url, app.client_id, client.ClientSecretBasic(app.client_secret!));
    const pages: string[] = [];
    const { tokens } = await signIn({ config, baseUrl: fixture.instances[0]!.url, redirectUri: WEB_REDIRECT, scope: 'openid profile users.read', email: m.email, password: PASSWORD, pages });
    expect(pages).toHaveLength(1);
    expect(pages[0]).toContain('name="password"');
    const info = await client.fetchUserInfo(config, tokens.access_token, m.userId).catch(() => undefined);
    // The access token is for the API (one audience), so the userinfo endpoint does not take it; the ID token carries the profile.
    expect(info).toBeUndefined();
    expect(tokens.claims()).toMatchObject({ sub: m.userId });
  });
});

describe('one database, two instances', () => {
  test('sign in through one, revoke through the other: the access token and the refresh token are refused at once by both', async () => {
    const m = await newMember(fixture.database);
    const app = await createApp(m.accountId, 'mobile', [MOBILE_REDIRECT]);
    const configA = await discover(fixture.instances[0]!.url, app.client_id, client.None());
    const metadata = JSON.parse(JSON.stringify(configA.serverMetadata())) as client.ServerMetadata;
    const configB = new client.Configuration({ ...metadata, token_endpoint: `${fixture.instances[1]!.url}/oauth/token` }, app.client_id, undefined, client.None());
    client.allowInsecureRequests(configB);

    const { tokens } = await signIn({ config: configA, baseUrl: fixture.instances[0]!.url, redirectUri: MOBILE_REDIRECT, scope: 'users.read', email: m.email, password: PASSWORD });
    // Instance B refreshes what instance A issued: shared storage, no process memory.
    const refreshed = await client.refreshTokenGrant(configB, tokens.refresh_token!);
    for (const instance of fixture.instances) expect((await api(instance, 'GET', '/users/me', `Bearer ${refreshed.access_token}`)).status).toBe(200);

    const revoked = await api(fixture.instances[1]!, 'DELETE', `/oauth_delegations?user_id=${m.userId}&type=mobile`, `Token token=${m.ownerKey}`);
    expect(revoked.status).toBe(200);
    for (const instance of fixture.instances) expect((await api(instance, 'GET', '/users/me', `Bearer ${refreshed.access_token}`)).status).toBe(401);
    await expect(client.refreshTokenGrant(configA, refreshed.refresh_token!)).rejects.toMatchObject({ error: 'invalid_grant' });
    await expect(client.refreshTokenGrant(configB, refreshed.refresh_token!)).rejects.toMatchObject({ error: 'invalid_grant' });
  });
});

describe('revocation and introspection endpoints, user deletion, GraphQL', () => {
  test('introspection reports a live token active and a revoked one inactive; RFC 7009 revocation of the refresh token revokes the delegation', async () => {
    const m = await newMember(fixture.database);
    const app = await createApp(m.accountId, 'web', [WEB_REDIRECT]);
    const config = await discover(fixture.instances[0]!.url, app.client_id, client.ClientSecretBasic(app.client_secret!));
    const { tokens } = await signIn({ config, baseUrl: fixture.instances[0]!.url, redirectUri: WEB_REDIRECT, scope: 'users.read', email: m.email, password: PASSWORD });
    const live = await client.tokenIntrospection(config, tokens.access_token);
    expect(live).toMatchObject({ active: true, sub: m.userId, client_id: app.client_id, scope: 'users.read' });
    // Another app of the same account learns nothing about it.
    const other = await createApp(m.accountId, 'web', [WEB_REDIRECT]);
    const otherConfig = await discover(fixture.instances[0]!.url, other.client_id, client.ClientSecretBasic(other.client_secret!));
    expect(await client.tokenIntrospection(otherConfig, tokens.access_token)).toEqual({ active: false });

    await client.tokenRevocation(config, tokens.refresh_token!);
    expect((await api(fixture.instances[1]!, 'GET', '/users/me', `Bearer ${tokens.access_token}`)).status).toBe(401);
    expect(await client.tokenIntrospection(config, tokens.access_token)).toMatchObject({ active: false });
    const listed = await api(fixture.instances[0]!, 'GET', `/users/${m.userId}/oauth_delegations`, `Token token=${m.ownerKey}`);
    expect(listed.body.oauth_delegations[0]).toMatchObject({ client_id: app.client_id, status: 'revoked' });
  });

  test('deleting the user revokes their grants: token 401, refresh invalid_grant', async () => {
    const m = await newMember(fixture.database);
    const app = await createApp(m.accountId, 'mobile', [MOBILE_REDIRECT]);
    const config = await discover(fixture.instances[0]!.url, app.client_id, client.None());
    const { tokens } = await signIn({ config, baseUrl: fixture.instances[0]!.url, redirectUri: MOBILE_REDIRECT, scope: 'users.read', email: m.email, password: PASSWORD });
    expect((await api(fixture.instances[0]!, 'DELETE', `/users/${m.userId}`, `Token token=${m.ownerKey}`)).status).toBe(204);
    expect((await api(fixture.instances[1]!, 'GET', '/users/me', `Bearer ${tokens.access_token}`)).status).toBe(401);
    await expect(client.refreshTokenGrant(config, tokens.refresh_token!)).rejects.toMatchObject({ error: 'invalid_grant' });
  });

  test('oauthApps lists the account\'s apps for can_update_user only; changeMyPassword needs the current password', async () => {
    const m = await newMember(fixture.database);
    const app = await createApp(m.accountId, 'mobile', [MOBILE_REDIRECT]);
    const listed = await graphqlCall(fixture.instances[0]!, `Token token=${m.ownerKey}`, '{ oauthApps { clientId name kind redirectUris scope } }');
    expect(listed.data.oauthApps).toEqual([{ clientId: app.client_id, name: 'mobile app', kind: 'MOBILE', redirectUris: [MOBILE_REDIRECT], scope: expect.stringContaining('users.read') }]);

    const config = await discover(fixture.instances[0]!.url, app.client_id, client.None());
    // changeMyPassword needs users.write.
    const { tokens } = await signIn({ config, baseUrl: fixture.instances[0]!.url, redirectUri: MOBILE_REDIRECT, scope: 'users.read users.write oauth_delegations.read', email: m.email, password: PASSWORD });
    const bearer = `Bearer ${tokens.access_token}`;
    const denied = await graphqlCall(fixture.instances[0]!, bearer, '{ oauthApps { clientId } }');
    expect(denied.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    // Read-only account keys and plain users' keys lack can_update_user too.
    const readOnlyKey = await fixture.database.transactions.run(fixture.database.em(), (tx) => new AccountsService(tx).createApiKey({ accountId: m.accountId, readOnly: true }));
    const userKey = await fixture.database.transactions.run(fixture.database.em(), (tx) => new AccountsService(tx).createApiKey({ accountId: m.accountId, userId: m.userId }));
    for (const key of [readOnlyKey.apiKey, userKey.apiKey]) {
      expect((await graphqlCall(fixture.instances[0]!, `Token token=${key}`, '{ oauthApps { clientId } }')).errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    }
    expect((await graphqlCall(fixture.instances[0]!, '', '{ oauthApps { clientId } }')).errors?.[0]?.extensions?.code).toBe('UNAUTHENTICATED');

    const change = 'mutation($input: ChangeMyPasswordInput!) { changeMyPassword(input: $input) { changed } }';
    const wrong = await graphqlCall(fixture.instances[1]!, bearer, change, { input: { currentPassword: 'not my password', newPassword: 'another long passphrase' } });
    // A form's mistake is BAD_USER_INPUT naming the field, not FORBIDDEN.
    expect(wrong.errors?.[0]?.extensions).toMatchObject({ code: 'BAD_USER_INPUT', fields: [{ path: ['input', 'currentPassword'], code: 'INCORRECT' }] });
    const changed = await graphqlCall(fixture.instances[1]!, bearer, change, { input: { currentPassword: PASSWORD, newPassword: 'another long passphrase' } });
    expect(changed.data).toEqual({ changeMyPassword: { changed: true } });
    expect(await checkSignIn(fixture.database.em(), m.accountId, m.email, 'another long passphrase')).toBe(m.userId);
    const accountLevel = await graphqlCall(fixture.instances[1]!, `Token token=${m.ownerKey}`, change, { input: { currentPassword: 'x', newPassword: 'another long passphrase' } });
    expect(accountLevel.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
  });
});
