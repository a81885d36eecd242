import { describe, expect, test } from '@jest/globals';
import * as client from 'openid-client';
import { AccountsService } from '../accounts/accounts.service.js';
import { Account } from '../accounts/account.entity.js';
import { User } from '../users/user.entity.js';
import { AppsService } from './apps.service.js';
import { sealersFor } from './provider.js';
import { CookieJar, PASSWORD, browse, discover, formOf, givePassword, graphqlCall, newMember, registerApp, useOAuthServers, type Member } from '../../test/support/oauth-server.js';

/**
 * Apps that sign people in without a consent page hand whoever controls their redirect URIs the
 * tokens of everyone who opens their link: only owner rights register them or widen them. An app an
 * admin registers is a consent app, whose page names its redirect host and who registered it.
 */
const fixture = useOAuthServers(1);
const first = () => fixture.instances[0]!;
const ATTACKER_REDIRECT = 'https://console-example.attacker.test/callback';
const REGISTER = 'mutation($input: RegisterOAuthAppInput!) { registerOAuthApp(input: $input) { clientSecret app { clientId kind redirectUris } } }';
const UPDATE = 'mutation($input: UpdateOAuthAppInput!) { updateOAuthApp(input: $input) { app { clientId redirectUris scope disabled } } }';
const codeOf = (result: { errors?: Array<{ extensions?: { code?: string } }> }) => result.errors?.[0]?.extensions?.code;

/** An admin of the member's account, with a password and a user key of their own. */
async function adminOf(member: Member): Promise<{ id: string; email: string; key: string }> {
  const em = fixture.database.em();
  const admin = em.create(User, { account: em.getReference(Account, member.accountId), name: 'Mallory Admin', email: `mallory-${member.userId}@example.com`, timeZone: 'Etc/UTC', color: 'red', role: 'admin' });
  await em.persist(admin).flush();
  await givePassword(fixture.database, admin.id, PASSWORD);
  const issued = await fixture.database.transactions.run(fixture.database.em(), (tx) => new AccountsService(tx).createApiKey({ accountId: member.accountId, userId: admin.id }));
  return { id: admin.id, email: admin.email, key: `Token token=${issued.apiKey}` };
}

async function appRow(clientId: string): Promise<{ redirect_uris: unknown; scope: string; disabled_at: Date | null }> {
  const [row] = await fixture.database.em().execute<{ redirect_uris: unknown; scope: string; disabled_at: Date | null }[]>('select redirect_uris, scope, disabled_at from oauth_apps where client_id = ?', [clientId]);
  return row!;
}

describe('registering apps that skip consent takes owner rights', () => {
  test('an admin and a full-access account key may not register a WEB, MOBILE or SPA app; a consent app they may; the owner may', async () => {
    const m = await newMember(fixture.database);
    const admin = await adminOf(m);
    for (const [kind, redirectUris] of [['WEB', [ATTACKER_REDIRECT]], ['MOBILE', ['com.example.app:/callback']], ['SPA', [ATTACKER_REDIRECT]]] as const) {
      for (const authorization of [admin.key, `Token token=${m.ownerKey}`]) {
        const refused = await graphqlCall(first(), authorization, REGISTER, { input: { name: 'Example Console', kind, redirectUris, scopes: ['openid', 'users.read'] } });
        expect([kind, codeOf(refused)]).toEqual([kind, 'FORBIDDEN']);
        expect(refused.errors![0].message).toContain('only the account owner');
      }
      const byOwner = await graphqlCall(first(), `Token token=${m.ownerUserKey}`, REGISTER, { input: { name: 'Example Console', kind, redirectUris, scopes: ['openid', 'users.read'] } });
      expect([kind, byOwner.errors]).toEqual([kind, undefined]);
    }
    const consentApp = await graphqlCall(first(), admin.key, REGISTER, { input: { name: 'Partner', kind: 'THIRD_PARTY', redirectUris: [ATTACKER_REDIRECT], scopes: ['openid', 'users.read'] } });
    expect(consentApp.errors).toBeUndefined();
    const [{ n }] = await fixture.database.em().execute<{ n: string }[]>('select count(*) as n from oauth_apps where account_id = ? and kind in (\'web\', \'mobile\', \'spa\')', [m.accountId]);
    expect(Number(n)).toBe(3);
  });

  test('an admin may not add a redirect URI or a scope to the account\'s web app, nor re-enable it; may rename and disable it', async () => {
    const m = await newMember(fixture.database);
    const admin = await adminOf(m);
    const { app } = await registerApp(fixture.database, fixture.serverSecret, { accountId: m.accountId, kind: 'web', redirectUris: ['https://console.example.com/callback'], scopes: 'openid users.read' });
    const update = (input: Record<string, unknown>, authorization = admin.key) => graphqlCall(first(), authorization, UPDATE, { input: { clientId: app.clientId, ...input } });
    expect(codeOf(await update({ redirectUris: ['https://console.example.com/callback', ATTACKER_REDIRECT] }))).toBe('FORBIDDEN');
    expect(codeOf(await update({ scopes: ['openid', 'users.read', 'credentials.write'] }))).toBe('FORBIDDEN');
    expect(codeOf(await update({ redirectUris: [ATTACKER_REDIRECT] }, `Token token=${m.ownerKey}`))).toBe('FORBIDDEN');
    expect(await appRow(app.clientId)).toMatchObject({ redirect_uris: ['https://console.example.com/callback'], scope: 'openid users.read', disabled_at: null });
    expect((await update({ name: 'Console (old)', disabled: true })).errors).toBeUndefined();
    expect(codeOf(await update({ disabled: false }))).toBe('FORBIDDEN');
    expect((await appRow(app.clientId)).disabled_at).not.toBeNull();
    expect((await update({ disabled: false, redirectUris: ['https://console.example.com/callback', 'https://console.example.com/other'] }, `Token token=${m.ownerUserKey}`)).errors).toBeUndefined();
    expect(await appRow(app.clientId)).toMatchObject({ redirect_uris: ['https://console.example.com/callback', 'https://console.example.com/other'], disabled_at: null });
  });
});

describe('an app an admin registers asks every user', () => {
  test('the owner, signed in, opening the admin\'s link gets a consent page naming the app\'s redirect host and the admin, and no code without allowing', async () => {
    const m = await newMember(fixture.database);
    const admin = await adminOf(m);
    const registered = await graphqlCall(first(), admin.key, REGISTER, { input: { name: 'Example Console', kind: 'THIRD_PARTY', redirectUris: [ATTACKER_REDIRECT], scopes: ['openid', 'users.read'] } });
    const { clientId } = registered.data.registerOAuthApp.app;
    const config = await discover(first().url, clientId, client.ClientSecretBasic(registered.data.registerOAuthApp.clientSecret));
    const jar = new CookieJar();
    const authorize = client.buildAuthorizationUrl(config, {
      redirect_uri: ATTACKER_REDIRECT,
      scope: 'openid users.read',
      code_challenge: await client.calculatePKCECodeChallenge(client.randomPKCECodeVerifier()),
      code_challenge_method: 'S256',
      state: client.randomState(),
    });
    const signInPage = await browse(jar, authorize, ATTACKER_REDIRECT);
    if (signInPage.kind !== 'page') throw new Error('expected the sign-in page');
    const login = formOf(signInPage.html);
    const [owner] = await fixture.database.em().execute<{ id: string; email: string }[]>('select id, email from users where account_id = ? and role = \'owner\'', [m.accountId]);
    await givePassword(fixture.database, owner!.id, PASSWORD);
    const consent = await browse(jar, new URL(login.action, first().url), ATTACKER_REDIRECT, { method: 'POST', form: { csrf: login.csrf, email: owner!.email, password: PASSWORD } });
    expect(consent.kind).toBe('page');
    if (consent.kind !== 'page') return;
    expect(consent.html).toContain('console-example.attacker.test');
    expect(consent.html).toContain(`Mallory Admin &#60;${admin.email}&#62;`);
    // The owner's session is live now: opening the link again still asks, it never answers a code by itself.
    const again = await browse(jar, authorize, ATTACKER_REDIRECT);
    expect(again.kind).toBe('page');
  });
});

describe('redirect URIs no app may use', () => {
  const service = (production: boolean) => new AppsService(fixture.database.em(), sealersFor(fixture.serverSecret).clientSecrets, fixture.database.transactions, { production });
  const problem = (production: boolean, kind: string, uri: string) => service(production).create({ accountId: 'PNOTHER', name: 'x', kind, redirectUris: [uri] })
    .then(() => 'registered', (error: { details?: string[] }) => error.details?.join(' ') ?? String(error));

  test('a scheme that runs something where it lands is refused for every kind, the mobile app included', async () => {
    for (const kind of ['mobile', 'web', 'spa', 'third_party']) {
      for (const uri of ['javascript:alert(1)//', 'data:text/html,hi', 'vbscript:msgbox', 'file:///etc/passwd', 'blob:https://a.example/x']) {
        expect([kind, uri, await problem(false, kind, uri)]).toEqual([kind, uri, expect.stringMatching(/scheme no app may use/)]);
      }
    }
  });

  test('in production, a loopback or private-network host is refused for every kind; development keeps loopback', async () => {
    for (const kind of ['mobile', 'web', 'spa', 'third_party']) {
      for (const uri of ['https://127.0.0.1/cb', 'https://localhost/cb', 'https://10.0.0.5/cb', 'https://[::1]/cb', 'https://169.254.169.254/cb', 'https://app.localhost/cb']) {
        expect([kind, uri, await problem(true, kind, uri)]).toEqual([kind, uri, expect.stringMatching(/loopback or private-network host/)]);
      }
    }
    expect(await problem(true, 'mobile', 'http://127.0.0.1:5555/cb')).toMatch(/loopback or private-network host/);
    // Development: the refusal is about the account given here (none such), not the redirect URI.
    expect(await problem(false, 'mobile', 'http://127.0.0.1:5555/cb')).toMatch(/account PNOTHER does not exist/);
    expect(await problem(false, 'web', 'http://localhost:3000/cb')).toMatch(/account PNOTHER does not exist/);
  });
});

describe('client-credentials tokens and a rotated secret', () => {
  test('tokens issued with the secret a rotation replaced end when its grace period does, whenever they were issued', async () => {
    const m = await newMember(fixture.database);
    const { app, clientSecret } = await registerApp(fixture.database, fixture.serverSecret, { accountId: m.accountId, kind: 'integration', scopes: 'users.read' });
    const tokenWith = async (secret: string) => (await client.clientCredentialsGrant(await discover(first().url, app.clientId, client.ClientSecretBasic(secret)), { scope: 'users.read' })).access_token;
    const before = await tokenWith(clientSecret!);
    const rotated = await graphqlCall(first(), `Token token=${m.ownerKey}`, 'mutation($input: RotateOAuthAppSecretInput!) { rotateOAuthAppSecret(input: $input) { clientSecret } }', { input: { clientId: app.clientId, previousExpiresIn: 2 } });
    const fresh = rotated.data.rotateOAuthAppSecret.clientSecret as string;
    const duringGrace = await tokenWith(clientSecret!);
    const withNew = await tokenWith(fresh);
    const answers = async () => Promise.all([before, duringGrace, withNew].map(async (token) => (await fetch(`${first().url}/users?limit=1`, { headers: { Authorization: `Bearer ${token}`, Accept: 'application/json' } })).status));
    expect(await answers()).toEqual([200, 200, 200]);
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    expect(await answers()).toEqual([401, 401, 200]);
  });
});

describe('a registration hears of every problem at once', () => {
  test('an empty name, a bad redirect URI among good ones and a scope the kind may not hold: one answer, each at its field', async () => {
    const m = await newMember(fixture.database);
    const admin = await adminOf(m);
    const refused = await graphqlCall(first(), admin.key, REGISTER, {
      input: { name: ' ', kind: 'THIRD_PARTY', redirectUris: ['https://partner.example.com/cb', 'javascript:alert(1)//'], scopes: ['openid', 'credentials.write'] },
    });
    expect(refused.errors).toHaveLength(1);
    expect(refused.errors![0].extensions.code).toBe('BAD_USER_INPUT');
    expect(refused.errors![0].extensions.fields.map((field: { path: unknown[]; code: string }) => [field.path.join('.'), field.code])).toEqual([
      ['input.name', 'INVALID'],
      ['input.redirectUris.1', 'INVALID'],
      ['input.scopes', 'NOT_ALLOWED'],
    ]);
    const [{ n }] = await fixture.database.em().execute<{ n: string }[]>('select count(*) as n from oauth_apps where account_id = ?', [m.accountId]);
    expect(Number(n)).toBe(0);
  });
});

describe('a registration\'s bounds, scalars and the app rules answer together', () => {
  const fieldsOf = (result: { errors?: Array<{ extensions: { code: string; fields: Array<{ path: unknown[]; code: string }> } }> }) => {
    expect(result.errors).toHaveLength(1);
    expect(result.errors![0]!.extensions.code).toBe('BAD_USER_INPUT');
    return result.errors![0]!.extensions.fields.map((field) => [field.path.join('.'), field.code]).sort();
  };

  test('registerOAuthApp: a redirect URI past its bound beside an empty name, a dangerous URI and a scope the kind may not hold', async () => {
    const m = await newMember(fixture.database);
    const admin = await adminOf(m);
    const tooLong = `https://partner.example.com/${'x'.repeat(2000)}`;
    const refused = await graphqlCall(first(), admin.key, REGISTER, {
      input: { name: ' ', kind: 'THIRD_PARTY', redirectUris: [tooLong, 'javascript:alert(1)//'], scopes: ['openid', 'credentials.write'] },
    });
    expect(fieldsOf(refused)).toEqual([['input.name', 'INVALID'], ['input.redirectUris.0', 'TOO_LONG'], ['input.redirectUris.1', 'INVALID'], ['input.scopes', 'NOT_ALLOWED']]);
    // A kind the enum refuses still lets the name be checked in the same answer.
    const badKind = await graphqlCall(first(), admin.key, REGISTER, { input: { name: ' ', kind: 'ROBOT', redirectUris: ['https://partner.example.com/cb'], scopes: ['openid'] } });
    expect(fieldsOf(badKind)).toEqual([['input.kind', 'INVALID'], ['input.name', 'INVALID']]);
  });

  test('updateOAuthApp: an empty name beside a redirect URI past its bound', async () => {
    const m = await newMember(fixture.database);
    const app = await graphqlCall(first(), `Token token=${m.ownerUserKey}`, REGISTER, { input: { name: 'Partner', kind: 'THIRD_PARTY', redirectUris: ['https://partner.example.com/cb'], scopes: ['openid'] } });
    const refused = await graphqlCall(first(), `Token token=${m.ownerUserKey}`, UPDATE, {
      input: { clientId: app.data.registerOAuthApp.app.clientId, name: '', redirectUris: [`https://partner.example.com/${'x'.repeat(2000)}`] },
    });
    expect(fieldsOf(refused)).toEqual([['input.name', 'INVALID'], ['input.redirectUris.0', 'TOO_LONG']]);
  });
});
