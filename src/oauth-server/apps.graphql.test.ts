import { describe, expect, test } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import * as client from 'openid-client';
import { Account } from '../accounts/account.entity.js';
import { AccountsService } from '../accounts/accounts.service.js';
import { scannableSecretKind } from '../auth/secret-format.js';
import type { UserRole } from '../auth/roles.js';
import { User } from '../users/user.entity.js';
import { disableAppCommand, enableAppCommand, rotateAppSecretCommand } from '../cli/commands/oauth-server.commands.js';
import { LiveTestClient, sleep } from '../../test/support/live-client.js';
import { CookieJar, PASSWORD, api, browse, discover, formOf, givePassword, graphqlCall, newMember, registerApp, signIn, useOAuthServers, type Member, oauthError } from '../../test/support/oauth-server.js';

const fixture = useOAuthServers();
const WEB_REDIRECT = 'https://web.example.com/callback';
const PARTNER_REDIRECT = 'https://partner.example.net/oauth/callback';
const io = () => ({ info: () => {}, serverSecret: () => fixture.serverSecret });

const APP_FIELDS = 'id clientId name kind redirectUris scope disabled createdAt delegation { id userId status delegationType }';
const REGISTER = `mutation($input: RegisterOAuthAppInput!) { registerOAuthApp(input: $input) { clientSecret app { ${APP_FIELDS} } } }`;
const ROTATE = `mutation($input: RotateOAuthAppSecretInput!) { rotateOAuthAppSecret(input: $input) { clientSecret app { id } } }`;
const UPDATE = `mutation($input: UpdateOAuthAppInput!) { updateOAuthApp(input: $input) { app { ${APP_FIELDS} } } }`;
const DELETE = `mutation($input: DeleteOAuthAppInput!) { deleteOAuthApp(input: $input) { revokedDelegationCount app { id name } } }`;
const APPS = `{ oauthApps { ${APP_FIELDS} } }`;

const first = () => fixture.instances[0]!;
const second = () => fixture.instances[1]!;

function codeOf(result: { errors?: Array<{ extensions?: { code?: string } }> }): string | undefined {
  return result.errors?.[0]?.extensions?.code;
}

async function userWithRole(accountId: string, role: UserRole): Promise<{ userId: string; email: string }> {
  const em = fixture.database.em();
  const suffix = randomUUID().slice(0, 8);
  const user = em.create(User, { account: em.getReference(Account, accountId), name: `${role} ${suffix}`, email: `${role}-${suffix}@example.com`, timeZone: 'Etc/UTC', color: 'green', role });
  await em.persist(user).flush();
  await givePassword(fixture.database, user.id, PASSWORD);
  return { userId: user.id, email: user.email };
}

async function keyFor(accountId: string, options: { userId?: string; readOnly?: boolean } = {}): Promise<string> {
  const issued = await fixture.database.transactions.run(fixture.database.em(), (tx) => new AccountsService(tx).createApiKey({ accountId, ...options }));
  return `Token token=${issued.apiKey}`;
}

async function integrationToken(accountId: string, scopes: string): Promise<string> {
  const { app, clientSecret } = await registerApp(fixture.database, fixture.serverSecret, { accountId, kind: 'integration', scopes });
  const config = await discover(first().url, app.clientId, client.ClientSecretBasic(clientSecret!));
  return `Bearer ${(await client.clientCredentialsGrant(config, { scope: scopes })).access_token}`;
}

async function appCount(accountId: string): Promise<number> {
  const [row] = await fixture.database.em().execute<{ count: string }[]>('select count(*) as count from oauth_apps where account_id = ?', [accountId]);
  return Number(row!.count);
}

async function appAudit(accountId: string, clientId: string): Promise<Array<{ action: string; fields: string }>> {
  const rows = await fixture.database.em().execute<Array<{ action: string; body: unknown }>>(
    `select action, body from audit_records where account_id = ? and root_resource_type = 'app' and root_resource_id = ? order by position`,
    [accountId, clientId],
  );
  return rows.map((row) => {
    const body = (typeof row.body === 'string' ? JSON.parse(row.body) : row.body) as { details: { fields: Array<{ name: string }> } };
    return { action: row.action, fields: body.details.fields.map((field) => field.name).join(',') };
  });
}

async function register(member: Member, input: Record<string, unknown>, authorization = `Token token=${member.ownerUserKey}`) {
  return graphqlCall(first(), authorization, REGISTER, { input: { name: 'An app', redirectUris: [], ...input } });
}

describe('registerOAuthApp', () => {
  test('an owner registers each kind: a scannable secret for confidential kinds only, an integration\'s delegation shown; audited', async () => {
    const m = await newMember(fixture.database);
    const web = await register(m, { kind: 'WEB', redirectUris: [WEB_REDIRECT], scopes: ['openid', 'users.read', 'credentials.read'] });
    expect(web.errors).toBeUndefined();
    expect(scannableSecretKind(web.data.registerOAuthApp.clientSecret)).toBe('appClientSecret');
    expect(web.data.registerOAuthApp.app).toMatchObject({ kind: 'WEB', disabled: false, scope: 'openid users.read credentials.read', delegation: null, redirectUris: [WEB_REDIRECT] });
    expect(web.data.registerOAuthApp.app.id).toBe(web.data.registerOAuthApp.app.clientId);

    const spa = await register(m, { kind: 'SPA', redirectUris: ['https://spa.example.com/cb'], scopes: ['users.read'] });
    expect(spa.data.registerOAuthApp.clientSecret).toBeNull();
    const mobile = await register(m, { kind: 'MOBILE', redirectUris: ['com.example.app:/cb'], scopes: ['users.read'] });
    expect(mobile.data.registerOAuthApp.clientSecret).toBeNull();

    const integration = await register(m, { kind: 'INTEGRATION', scopes: ['users.read', 'credentials.write'] });
    const created = integration.data.registerOAuthApp;
    expect(created.app.delegation).toMatchObject({ userId: null, status: 'ISSUED', delegationType: 'INTEGRATION' });
    // The secret the answer showed authenticates the app.
    const config = await discover(first().url, created.app.clientId, client.ClientSecretBasic(created.clientSecret));
    expect((await client.clientCredentialsGrant(config, { scope: 'users.read' })).access_token).toBeTruthy();

    const listed = await graphqlCall(second(), `Token token=${m.ownerKey}`, APPS);
    expect(listed.data.oauthApps.map((app: { kind: string }) => app.kind).sort()).toEqual(['INTEGRATION', 'MOBILE', 'SPA', 'WEB']);
    expect(JSON.stringify(listed)).not.toContain(web.data.registerOAuthApp.clientSecret);
    expect(await appAudit(m.accountId, created.app.clientId)).toEqual([{ action: 'create', fields: 'name,kind,scope,redirect_uris' }]);
  });

  test('bad input is BAD_USER_INPUT and registers nothing', async () => {
    const m = await newMember(fixture.database);
    const refused: Array<Record<string, unknown>> = [
      { kind: 'DESKTOP', redirectUris: [WEB_REDIRECT], scopes: ['users.read'] },
      { kind: 'WEB', redirectUris: ['http://web.example.com/cb'], scopes: ['users.read'] },
      { kind: 'WEB', redirectUris: ['com.example.app:/cb'], scopes: ['users.read'] },
      { kind: 'SPA', redirectUris: ['https://*.example.com/cb'], scopes: ['users.read'] },
      { kind: 'SPA', redirectUris: ['https://spa.example.com/cb#x'], scopes: ['users.read'] },
      { kind: 'SPA', redirectUris: [], scopes: ['users.read'] },
      { kind: 'INTEGRATION', redirectUris: [WEB_REDIRECT], scopes: ['users.read'] },
      { kind: 'WEB', redirectUris: [WEB_REDIRECT], scopes: ['users.read', 'admin.everything'] },
      { kind: 'THIRD_PARTY', redirectUris: [PARTNER_REDIRECT], scopes: ['users.read', 'credentials.read'] },
      { kind: 'WEB', name: ' ', redirectUris: [WEB_REDIRECT], scopes: ['users.read'] },
    ];
    for (const input of refused) {
      const result = await register(m, input);
      expect([input, codeOf(result)]).toEqual([input, 'BAD_USER_INPUT']);
    }
    expect(await appCount(m.accountId)).toBe(0);
    // Loopback http is allowed outside production (these instances are not in production).
    expect((await register(m, { kind: 'WEB', redirectUris: ['http://localhost:3000/cb'], scopes: ['users.read'] })).errors).toBeUndefined();
    // A browser settings app may manage credentials: its tokens need a recent sign-in for that (step-up) and last ten minutes.
    expect((await register(m, { kind: 'SPA', redirectUris: ['https://spa.example.com/cb'], scopes: ['credentials.write'] })).errors).toBeUndefined();
  });

  test('who may: owner, admin, full-access key, an integration with credentials.write (never beyond its own scopes); who may not', async () => {
    const m = await newMember(fixture.database);
    const other = await newMember(fixture.database);
    const input = { kind: 'INTEGRATION', scopes: ['users.read'] };
    const admin = await userWithRole(m.accountId, 'admin');
    const readOnly = await userWithRole(m.accountId, 'read_only_user');
    expect((await register(m, input, await keyFor(m.accountId, { userId: admin.userId }))).errors).toBeUndefined();
    expect(codeOf(await register(m, input, await keyFor(m.accountId, { userId: m.userId })))).toBe('FORBIDDEN');
    expect(codeOf(await register(m, input, await keyFor(m.accountId, { userId: readOnly.userId })))).toBe('FORBIDDEN');
    expect(codeOf(await register(m, input, await keyFor(m.accountId, { readOnly: true })))).toBe('FORBIDDEN');

    const withScope = await integrationToken(m.accountId, 'users.read credentials.read credentials.write');
    const byIntegration = await register(m, input, withScope);
    expect(byIntegration.errors).toBeUndefined();
    // No token creates an app with more scopes than it holds.
    expect(codeOf(await register(m, { kind: 'INTEGRATION', scopes: ['users.write'] }, withScope))).toBe('BAD_USER_INPUT');
    const withoutScope = await integrationToken(m.accountId, 'users.read users.write');
    const refused = await register(m, input, withoutScope);
    expect(codeOf(refused)).toBe('FORBIDDEN');
    expect(refused.errors![0].message + JSON.stringify(refused.errors![0].extensions)).toContain('credentials.write');

    // A third-party app's token as the owner: it can never hold credentials.*, so it is refused.
    const { app: partner, clientSecret } = await registerApp(fixture.database, fixture.serverSecret, { accountId: m.accountId, kind: 'third_party', redirectUris: [PARTNER_REDIRECT], scopes: 'users.read users.write' });
    const owner = await userWithRole(m.accountId, 'admin');
    const config = await discover(first().url, partner.clientId, client.ClientSecretBasic(clientSecret!));
    const { tokens } = await signIn({ config, baseUrl: first().url, redirectUri: PARTNER_REDIRECT, scope: 'users.read users.write', email: owner.email, password: PASSWORD, approve: true });
    expect(codeOf(await register(m, input, `Bearer ${tokens.access_token}`))).toBe('FORBIDDEN');

    // Another account's owner registers in their own account only.
    const theirs = await register(other, input);
    expect(theirs.errors).toBeUndefined();
    const [row] = await fixture.database.em().execute<{ account_id: string }[]>('select account_id from oauth_apps where client_id = ?', [theirs.data.registerOAuthApp.app.clientId]);
    expect(row!.account_id).toBe(other.accountId);
    expect(await appCount(m.accountId)).toBe(5);
  });
});

describe('rotateOAuthAppSecret', () => {
  test('the new secret works at once; the old one until its grace period ends (time moved in the database); audited, nothing secret recorded', async () => {
    const m = await newMember(fixture.database);
    const { app, clientSecret: original } = await registerApp(fixture.database, fixture.serverSecret, { accountId: m.accountId, kind: 'integration', scopes: 'users.read' });
    const rotated = await graphqlCall(first(), `Token token=${m.ownerKey}`, ROTATE, { input: { clientId: app.clientId, previousExpiresIn: 3600 } });
    expect(rotated.errors).toBeUndefined();
    const fresh = rotated.data.rotateOAuthAppSecret.clientSecret as string;
    expect(scannableSecretKind(fresh)).toBe('appClientSecret');
    expect(fresh).not.toBe(original);

    const grant = async (secret: string) => oauthError(client.clientCredentialsGrant(await discover(first().url, app.clientId, client.ClientSecretBasic(secret)), { scope: 'users.read' }));
    expect(await grant(fresh)).toBe('granted');
    expect(await grant(original!)).toBe('granted');
    const [stored] = await fixture.database.em().execute<{ seconds: string }[]>('select extract(epoch from previous_secret_expires_at - now()) as seconds from oauth_apps where client_id = ?', [app.clientId]);
    expect(Number(stored!.seconds)).toBeGreaterThan(3500);
    expect(Number(stored!.seconds)).toBeLessThanOrEqual(3600);

    await fixture.database.em().execute("update oauth_apps set previous_secret_expires_at = now() - interval '1 second' where client_id = ?", [app.clientId]);
    expect(await grant(original!)).toBe('invalid_client');
    expect(await grant(fresh)).toBe('granted');
    expect(await grant('aagcs_notthesecret')).toBe('invalid_client');

    const audit = await appAudit(m.accountId, app.clientId);
    expect(audit.at(-1)).toEqual({ action: 'update', fields: 'client_secret,previous_secret_expires_at' });
    const [text] = await fixture.database.em().execute<{ text: string }[]>("select string_agg(body::text, ' ') as text from audit_records where account_id = ?", [m.accountId]);
    expect(text!.text).not.toContain(fresh);
    expect(text!.text).not.toContain(original);
  });

  test('0 ends the old secret now, and a second rotation ends the first one\'s grace; bounds, public clients, another account, rights', async () => {
    const m = await newMember(fixture.database);
    const other = await newMember(fixture.database);
    const { app, clientSecret: original } = await registerApp(fixture.database, fixture.serverSecret, { accountId: m.accountId, kind: 'integration', scopes: 'users.read' });
    const grant = async (secret: string) => oauthError(client.clientCredentialsGrant(await discover(first().url, app.clientId, client.ClientSecretBasic(secret)), { scope: 'users.read' }));
    const rotate = (input: Record<string, unknown>, authorization = `Token token=${m.ownerKey}`) => graphqlCall(first(), authorization, ROTATE, { input: { clientId: app.clientId, ...input } });

    const once = (await rotate({})).data.rotateOAuthAppSecret.clientSecret as string;
    expect(await grant(original!)).toBe('granted');
    const twice = (await rotate({ previousExpiresIn: 0 })).data.rotateOAuthAppSecret.clientSecret as string;
    expect(await grant(original!)).toBe('invalid_client');
    expect(await grant(once)).toBe('invalid_client');
    expect(await grant(twice)).toBe('granted');

    expect(codeOf(await rotate({ previousExpiresIn: -1 }))).toBe('BAD_USER_INPUT');
    expect(codeOf(await rotate({ previousExpiresIn: 604_801 }))).toBe('BAD_USER_INPUT');
    expect(await grant(twice)).toBe('granted');
    const { app: mobile } = await registerApp(fixture.database, fixture.serverSecret, { accountId: m.accountId, kind: 'mobile', redirectUris: ['com.example.app:/cb'], scopes: 'users.read' });
    expect(codeOf(await graphqlCall(first(), `Token token=${m.ownerKey}`, ROTATE, { input: { clientId: mobile.clientId } }))).toBe('BAD_USER_INPUT');
    expect(codeOf(await rotate({}, `Token token=${other.ownerKey}`))).toBe('NOT_FOUND');
    expect(codeOf(await rotate({}, await keyFor(m.accountId, { userId: m.userId })))).toBe('FORBIDDEN');
    expect(codeOf(await rotate({}, await integrationToken(m.accountId, 'users.read users.write')))).toBe('FORBIDDEN');
    expect(await grant(twice)).toBe('granted');

    // The operator CLI rotates through the same service.
    const cli = await rotateAppSecretCommand.run(fixture.database, { 'client-id': app.clientId, 'previous-expires-in': '60' }, io()) as { client_secret: string; previous_secret_expires_at: string };
    expect(scannableSecretKind(cli.client_secret)).toBe('appClientSecret');
    expect(await grant(twice)).toBe('granted');
    expect(await grant(cli.client_secret)).toBe('granted');
  });
});

describe('updateOAuthApp', () => {
  test('disabling refuses the app\'s tokens at once on the other instance and fails its flows; enabling restores them; audited', async () => {
    const m = await newMember(fixture.database);
    const { app, clientSecret } = await registerApp(fixture.database, fixture.serverSecret, { accountId: m.accountId, kind: 'integration', scopes: 'users.read' });
    const config = await discover(first().url, app.clientId, client.ClientSecretBasic(clientSecret!));
    const bearer = `Bearer ${(await client.clientCredentialsGrant(config, { scope: 'users.read' })).access_token}`;
    const { app: web, clientSecret: webSecret } = await registerApp(fixture.database, fixture.serverSecret, { accountId: m.accountId, kind: 'web', redirectUris: [WEB_REDIRECT], scopes: 'users.read' });
    const webConfig = await discover(first().url, web.clientId, client.ClientSecretBasic(webSecret!));
    const { tokens: webTokens } = await signIn({ config: webConfig, baseUrl: first().url, redirectUri: WEB_REDIRECT, scope: 'users.read', email: m.email, password: PASSWORD });
    expect((await api(second(), 'GET', '/users', bearer)).status).toBe(200);

    const update = (clientId: string, input: Record<string, unknown>) => graphqlCall(first(), `Token token=${m.ownerKey}`, UPDATE, { input: { clientId, ...input } });
    const disabled = await update(app.clientId, { disabled: true });
    expect(disabled.data.updateOAuthApp.app.disabled).toBe(true);
    expect((await update(web.clientId, { disabled: true })).errors).toBeUndefined();
    expect((await api(second(), 'GET', '/users', bearer)).status).toBe(401);
    expect((await api(second(), 'GET', '/users/me', `Bearer ${webTokens.access_token}`)).status).toBe(401);
    expect(await oauthError(client.clientCredentialsGrant(config, { scope: 'users.read' }))).toBe('invalid_client');
    expect(await oauthError(client.refreshTokenGrant(webConfig, webTokens.refresh_token!))).toBe('invalid_client');
    await expect(signIn({ config: webConfig, baseUrl: first().url, redirectUri: WEB_REDIRECT, scope: 'users.read', email: m.email, password: PASSWORD })).rejects.toThrow();

    const enabled = await update(app.clientId, { disabled: false });
    expect(enabled.data.updateOAuthApp.app.disabled).toBe(false);
    expect((await api(second(), 'GET', '/users', bearer)).status).toBe(200);
    expect(await appAudit(m.accountId, app.clientId)).toEqual([
      { action: 'create', fields: 'name,kind,scope,redirect_uris' },
      { action: 'update', fields: 'disabled' },
      { action: 'update', fields: 'disabled' },
    ]);

    // The CLI switches through the same service.
    await disableAppCommand.run(fixture.database, { 'client-id': app.clientId }, io());
    expect((await api(first(), 'GET', '/users', bearer)).status).toBe(401);
    await enableAppCommand.run(fixture.database, { 'client-id': app.clientId }, io());
    expect((await api(first(), 'GET', '/users', bearer)).status).toBe(200);
  });

  test('a sign-in page left open while its app is disabled approves nothing', async () => {
    const m = await newMember(fixture.database);
    const { app, clientSecret } = await registerApp(fixture.database, fixture.serverSecret, { accountId: m.accountId, kind: 'web', redirectUris: [WEB_REDIRECT], scopes: 'users.read' });
    const config = await discover(first().url, app.clientId, client.ClientSecretBasic(clientSecret!));
    const jar = new CookieJar();
    const page = await browse(jar, client.buildAuthorizationUrl(config, {
      redirect_uri: WEB_REDIRECT, scope: 'users.read', code_challenge: await client.calculatePKCECodeChallenge(client.randomPKCECodeVerifier()), code_challenge_method: 'S256', state: client.randomState(),
    }), WEB_REDIRECT);
    expect(page.kind).toBe('page');
    const { action, csrf } = formOf(page.kind === 'page' ? page.html : '');

    expect((await graphqlCall(first(), `Token token=${m.ownerKey}`, UPDATE, { input: { clientId: app.clientId, disabled: true } })).errors).toBeUndefined();
    const submitted = await browse(jar, new URL(action, first().url), WEB_REDIRECT, { method: 'POST', form: { csrf, email: m.email, password: PASSWORD } });
    expect(submitted).toMatchObject({ kind: 'page', status: 403 });
    if (submitted.kind === 'page') expect(submitted.html).toContain('App disabled');
    const [delegations] = await fixture.database.em().execute<{ count: string }[]>('select count(*) as count from oauth_delegations where client_id = ?', [app.clientId]);
    expect(Number(delegations!.count)).toBe(0);
  });

  test('name, redirect URIs and scopes change under the registration rules; bad input changes nothing; rights', async () => {
    const m = await newMember(fixture.database);
    const other = await newMember(fixture.database);
    const { app } = await registerApp(fixture.database, fixture.serverSecret, { accountId: m.accountId, kind: 'web', redirectUris: [WEB_REDIRECT], scopes: 'users.read' });
    const update = (input: Record<string, unknown>, authorization = `Token token=${m.ownerUserKey}`) => graphqlCall(first(), authorization, UPDATE, { input: { clientId: app.clientId, ...input } });
    const changed = await update({ name: 'Renamed', redirectUris: ['https://web.example.com/new'], scopes: ['users.read', 'users.write'] });
    expect(changed.data.updateOAuthApp.app).toMatchObject({ name: 'Renamed', redirectUris: ['https://web.example.com/new'], scope: 'users.read users.write' });
    expect(codeOf(await update({ name: 'Again', redirectUris: ['ftp://web.example.com/x'] }))).toBe('BAD_USER_INPUT');
    expect(codeOf(await update({ name: 'Again', scopes: ['nope.read'] }))).toBe('BAD_USER_INPUT');
    expect(codeOf(await update({ name: 'x'.repeat(101) }))).toBe('BAD_USER_INPUT');
    expect(codeOf(await update({ name: 'Theirs' }, `Token token=${other.ownerKey}`))).toBe('NOT_FOUND');
    expect(codeOf(await update({ name: 'Member' }, await keyFor(m.accountId, { userId: m.userId })))).toBe('FORBIDDEN');
    const listed = await graphqlCall(first(), `Token token=${m.ownerKey}`, APPS);
    expect(listed.data.oauthApps[0]).toMatchObject({ name: 'Renamed', scope: 'users.read users.write' });
    expect(await appAudit(m.accountId, app.clientId)).toHaveLength(2);
  });
});

describe('deleteOAuthApp and the integration\'s account-wide delegation', () => {
  test('delete answers the app and what it revoked; its tokens die on the other instance; another account or a member cannot', async () => {
    const m = await newMember(fixture.database);
    const other = await newMember(fixture.database);
    const { app, clientSecret } = await registerApp(fixture.database, fixture.serverSecret, { accountId: m.accountId, kind: 'integration', scopes: 'users.read' });
    const config = await discover(first().url, app.clientId, client.ClientSecretBasic(clientSecret!));
    const bearer = `Bearer ${(await client.clientCredentialsGrant(config, { scope: 'users.read' })).access_token}`;
    const remove = (authorization: string) => graphqlCall(first(), authorization, DELETE, { input: { clientId: app.clientId } });
    expect(codeOf(await remove(`Token token=${other.ownerKey}`))).toBe('NOT_FOUND');
    expect(codeOf(await remove(await keyFor(m.accountId, { userId: m.userId })))).toBe('FORBIDDEN');
    expect((await api(second(), 'GET', '/users', bearer)).status).toBe(200);
    const deleted = await remove(`Token token=${m.ownerKey}`);
    expect(deleted.data.deleteOAuthApp).toEqual({ revokedDelegationCount: 1, app: { id: app.clientId, name: app.name } });
    expect((await api(second(), 'GET', '/users', bearer)).status).toBe(401);
    expect(codeOf(await remove(`Token token=${m.ownerKey}`))).toBe('NOT_FOUND');
    expect((await appAudit(m.accountId, app.clientId)).map((row) => row.action)).toEqual(['create', 'delete', 'revoke']);
  });

  test('oauthDelegation(id) shows it and revokeOAuthDelegation(input: {id}) ends it, for account admins only', async () => {
    const m = await newMember(fixture.database);
    const other = await newMember(fixture.database);
    const { app, clientSecret } = await registerApp(fixture.database, fixture.serverSecret, { accountId: m.accountId, kind: 'integration', scopes: 'users.read' });
    const config = await discover(first().url, app.clientId, client.ClientSecretBasic(clientSecret!));
    const bearer = `Bearer ${(await client.clientCredentialsGrant(config, { scope: 'users.read' })).access_token}`;
    const listed = await graphqlCall(first(), `Token token=${m.ownerKey}`, APPS);
    const delegationId = listed.data.oauthApps[0].delegation.id as string;
    const show = (authorization: string) => graphqlCall(first(), authorization, 'query($id: ID!) { oauthDelegation(id: $id) { id userId clientId status self } }', { id: delegationId });
    const revoke = (authorization: string) => graphqlCall(first(), authorization, 'mutation($id: ID!) { revokeOAuthDelegation(input: {id: $id}) { oauthDelegation { id status } } }', { id: delegationId });

    expect((await show(`Token token=${m.ownerKey}`)).data.oauthDelegation).toEqual({ id: delegationId, userId: null, clientId: app.clientId, status: 'ISSUED', self: null });
    const memberKey = await keyFor(m.accountId, { userId: m.userId });
    expect(codeOf(await show(memberKey))).toBe('FORBIDDEN');
    expect(codeOf(await show(`Token token=${other.ownerKey}`))).toBe('NOT_FOUND');
    // A token without credentials.read lists the apps, but not the delegation: that field alone is null.
    const lister = await integrationToken(m.accountId, 'oauth_delegations.read users.write');
    const partial = await graphqlCall(first(), lister, APPS);
    expect(partial.data.oauthApps.find((row: { clientId: string }) => row.clientId === app.clientId)).toMatchObject({ clientId: app.clientId, delegation: null });
    expect(codeOf(partial)).toBe('FORBIDDEN');

    expect(codeOf(await revoke(memberKey))).toBe('FORBIDDEN');
    expect(codeOf(await revoke(`Token token=${other.ownerKey}`))).toBe('NOT_FOUND');
    expect(codeOf(await revoke(await integrationToken(m.accountId, 'oauth_delegations.write')))).toBe('FORBIDDEN');
    expect((await api(second(), 'GET', '/users', bearer)).status).toBe(200);
    const revoked = await revoke(`Token token=${m.ownerKey}`);
    expect(revoked.data.revokeOAuthDelegation.oauthDelegation).toEqual({ id: delegationId, status: 'REVOKED' });
    expect((await api(second(), 'GET', '/users', bearer)).status).toBe(401);
  });
});

describe('open sockets', () => {
  test('disabling an app closes the live connections of its users\' tokens on the other instance; another app\'s stay open', async () => {
    const m = await newMember(fixture.database);
    const webApp = async (name: string) => {
      const { app, clientSecret } = await registerApp(fixture.database, fixture.serverSecret, { accountId: m.accountId, kind: 'web', redirectUris: [WEB_REDIRECT], scopes: 'users.read', name });
      const config = await discover(first().url, app.clientId, client.ClientSecretBasic(clientSecret!));
      const { tokens } = await signIn({ config, baseUrl: first().url, redirectUri: WEB_REDIRECT, scope: 'users.read', email: m.email, password: PASSWORD });
      return { app, bearer: `Bearer ${tokens.access_token}` };
    };
    const disabledOne = await webApp('To be disabled');
    const kept = await webApp('Kept');
    const revoked = await LiveTestClient.connect(second().server, disabledOne.bearer);
    const untouched = await LiveTestClient.connect(second().server, kept.bearer);
    const subscription = 'subscription { viewerAccessRevoked { reason } }';
    revoked.subscribe('revoked', subscription);
    untouched.subscribe('revoked', subscription);
    await sleep(100);

    const at = Date.now();
    const result = await graphqlCall(first(), `Token token=${m.ownerKey}`, UPDATE, { input: { clientId: disabledOne.app.clientId, disabled: true } });
    expect(result.errors).toBeUndefined();
    const closed = await revoked.closed;
    expect(closed.code).toBe(4403);
    expect(closed.at - at).toBeLessThan(2_000);
    await sleep(300);
    expect(untouched.socket.readyState).toBe(untouched.socket.OPEN);
    untouched.close();
  });
});
