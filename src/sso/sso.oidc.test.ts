import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import * as client from 'openid-client';
import { CookieJar, PASSWORD, api, authorizeAgain, browse, givePassword, graphqlCall, newMember, useOAuthServers, type BrowseResult, type Member } from '../../test/support/oauth-server.js';
import { AccountsService } from '../accounts/accounts.service.js';
import { Account } from '../accounts/account.entity.js';
import { User } from '../users/user.entity.js';
import { configureSsoCommand, disableSsoCommand, showSsoCommand } from '../cli/commands/sso.commands.js';
import { formOf } from '../../test/support/oauth-server.js';
import type { Response } from 'express';
import { createLogger } from '../logging/logger.js';
import { ssoSignInMethod } from './sso.sign-in.js';
import { APP_REDIRECT, chooseProvider, configureSso, openSignIn, passIdentityProvider, startForgingIdentityProvider, startOidcIdentityProvider } from '../../test/support/sso.js';

const fixture = useOAuthServers(1);
const base = () => fixture.instances[0]!.url;
const callbackPrefix = () => `${base()}/sso/oidc/callback`;
const CLIENT_A = { clientId: 'gateway-a', clientSecret: 'secret-of-client-a-0123456789' };
const CLIENT_B = { clientId: 'gateway-b', clientSecret: 'secret-of-client-b-0123456789' };
let idp: Awaited<ReturnType<typeof startOidcIdentityProvider>>;
const unverified = new Set<string>();

beforeAll(async () => {
  idp = await startOidcIdentityProvider([
    { ...CLIENT_A, redirectUri: `${base()}/sso/oidc/callback` },
    { ...CLIENT_B, redirectUri: `${base()}/sso/oidc/callback` },
  ], (sub) => !unverified.has(sub));
});
afterAll(async () => idp?.stop());

async function ssoAccount(options: { requireSso?: boolean; jit?: boolean; client?: typeof CLIENT_A } = {}): Promise<Member> {
  const member = await newMember(fixture.database);
  const { clientId, clientSecret } = options.client ?? CLIENT_A;
  await configureSso(fixture.database, fixture.serverSecret, { accountId: member.accountId, displayName: 'Okta', oidc: { issuer: idp.issuer, clientId, clientSecret }, requireSso: options.requireSso ?? false, jit: options.jit ?? false });
  return member;
}

/** The browser up to the moment the IdP sends it back to us: returns our callback URL and the jar. */
async function toCallback(member: Member, idpLogin: string) {
  const start = await openSignIn(fixture.database, fixture.serverSecret, base(), member.accountId);
  expect(start.page.html).toContain('Sign in with Okta');
  const atIdp = await chooseProvider(start.jar, base(), start.page.html, member.email, callbackPrefix());
  const back = await passIdentityProvider(start.jar, atIdp, idpLogin, callbackPrefix());
  if (back.kind !== 'callback') throw new Error(`did not come back: ${back.status} ${back.html.slice(0, 300)}`);
  return { ...start, callbackUrl: back.url };
}

async function finish(start: Awaited<ReturnType<typeof toCallback>>) {
  return browse(start.jar, start.callbackUrl, APP_REDIRECT);
}

describe('OIDC sign-in end to end, and the sign-in sessions it makes', () => {
  test('end to end in HTML forms: the IdP vouches, the app gets tokens, /users/me is that user, the delegation is ordinary', async () => {
    const member = await ssoAccount();
    const start = await toCallback(member, member.email);
    const done = await finish(start);
    expect(done.kind).toBe('callback');
    const tokens = await client.authorizationCodeGrant(start.config, done.url, { pkceCodeVerifier: start.verifier, expectedState: start.state });
    expect(tokens.claims()?.sub).toBe(member.userId);
    const me = await api(fixture.instances[0]!, 'GET', '/users/me', `Bearer ${tokens.access_token}`);
    expect(me.status).toBe(200);
    expect(me.body.user.id).toBe(member.userId);
    const delegations = await api(fixture.instances[0]!, 'GET', `/users/${member.userId}/oauth_delegations`, `Token token=${member.ownerKey}`);
    expect(delegations.body.oauth_delegations).toHaveLength(1);
    expect(delegations.body.oauth_delegations[0]).toMatchObject({ delegation_type: 'mobile', status: 'issued' });
    // The browser's sign-in session says how it was made.
    const sessions = await graphqlCall(fixture.instances[0]!, `Token token=${member.ownerKey}`, 'query($id: ID!) { user(id: $id) { signInSessions { method identityProvider current } } }', { id: member.userId });
    expect(sessions.data.user.signInSessions).toEqual([{ method: 'SINGLE_SIGN_ON', identityProvider: 'Okta', current: false }]);
    // Revocation refuses the token at once, as for any delegation.
    expect((await api(fixture.instances[0]!, 'DELETE', `/oauth_delegations?user_id=${member.userId}&type=mobile`, `Token token=${member.ownerKey}`)).status).toBe(200);
    expect((await api(fixture.instances[0]!, 'GET', '/users/me', `Bearer ${tokens.access_token}`)).status).toBe(401);
  });

  test('replacing or removing the provider ends the sessions it made; a password-made session stays', async () => {
    const replaced = await ssoAccount();
    const removed = await ssoAccount();
    const signedIn = async (member: Member) => {
      const start = await toCallback(member, member.email);
      expect((await finish(start)).kind).toBe('callback');
      return () => authorizeAgain(start.jar, start.config, APP_REDIRECT);
    };
    const passwordField = async (again: () => Promise<BrowseResult>) => {
      const page = await again();
      return page.kind === 'page' && page.html.includes('name="password"');
    };
    // (A password set ends the user's sessions: set before any of them.)
    await givePassword(fixture.database, removed.userId, PASSWORD);
    const replacedAgain = await signedIn(replaced);
    const removedAgain = await signedIn(removed);
    // Signed in: the browser is not asked again.
    expect(await passwordField(replacedAgain)).toBe(false);
    expect(await passwordField(removedAgain)).toBe(false);
    // Another browser of the same user signs in with a password.
    const byPassword = await openSignIn(fixture.database, fixture.serverSecret, base(), removed.accountId);
    const passwordForm = byPassword.page.html.split('<form').find((form) => form.includes('name="password"'))!;
    const { action, csrf } = formOf(`<form${passwordForm}`);
    expect((await browse(byPassword.jar, new URL(action, base()), APP_REDIRECT, { method: 'POST', form: { csrf, email: removed.email, password: PASSWORD } })).kind).toBe('callback');
    const passwordAgain = () => authorizeAgain(byPassword.jar, byPassword.config, APP_REDIRECT);
    expect(await passwordField(passwordAgain)).toBe(false);

    // The same provider saved again (another display name) changes nothing; another client registration is another provider.
    await configureSso(fixture.database, fixture.serverSecret, { accountId: replaced.accountId, displayName: 'Okta again', oidc: { issuer: idp.issuer, ...CLIENT_A }, requireSso: false, jit: false });
    expect(await passwordField(replacedAgain)).toBe(false);
    await configureSso(fixture.database, fixture.serverSecret, { accountId: replaced.accountId, displayName: 'Okta', oidc: { issuer: idp.issuer, ...CLIENT_B }, requireSso: false, jit: false });
    expect(await passwordField(replacedAgain)).toBe(true);

    expect(await disableSsoCommand.run(fixture.database, { account: removed.accountId, json: true }, { info: () => {}, serverSecret: () => fixture.serverSecret })).toEqual({ account_id: removed.accountId, disabled: true });
    expect(await passwordField(removedAgain)).toBe(true);
    expect(await passwordField(passwordAgain)).toBe(false);
    const [record] = await fixture.database.em().execute<{ body: unknown }[]>(
      `select body from audit_records where account_id = ? and root_resource_type = 'sso_configuration' and action = 'delete'`, [removed.accountId]);
    expect(JSON.stringify(record!.body)).toContain('sign_in_sessions_ended');
  });
});

describe('OIDC sign-in cannot be taken over through another browser or another email', () => {
  test('a provider link begun in one browser and finished in another signs nobody in (the attacker resuming gets no code)', async () => {
    const victim = await ssoAccount();
    // The attacker begins a sign-in for the victim's email and stops before the provider.
    const attacker = await openSignIn(fixture.database, fixture.serverSecret, base(), victim.accountId);
    const setCookies: string[] = [];
    const providerLink = await browse(attacker.jar, new URL(formOf(attacker.page.html).action, base()), idp.issuer, { method: 'POST', form: { csrf: formOf(attacker.page.html).csrf, email: victim.email } }, setCookies);
    if (providerLink.kind !== 'callback') throw new Error('the attacker was not sent to the provider');
    // The victim opens the link and signs in at the provider; their browser comes back to us.
    const victimJar = new CookieJar();
    const atIdp = await browse(victimJar, providerLink.url, callbackPrefix());
    const back = await passIdentityProvider(victimJar, atIdp, victim.email, callbackPrefix());
    if (back.kind !== 'callback') throw new Error('the provider did not send the victim back');
    const victimSees = await browse(victimJar, back.url, APP_REDIRECT);
    // The attacker resumes the sign-in, or replays the victim's callback in their own browser: no code.
    const uid = attacker.page.url.pathname.split('/').pop()!;
    const resumed = await browse(attacker.jar, new URL(`/oauth/authorize/${uid}`, base()), APP_REDIRECT);
    expect(resumed.kind).toBe('page');
    const replayed = await browse(attacker.jar, back.url, APP_REDIRECT);
    expect(replayed.kind).toBe('page');
    // The victim was told the sign-in was refused; the binding cookie is HttpOnly and SameSite=Lax.
    expect(victimSees).toMatchObject({ kind: 'page', status: 403 });
    if (victimSees.kind === 'page') expect(victimSees.html).toContain('Sign-in refused');
    const binding = setCookies.find((header) => header.startsWith('sso_browser='));
    expect(binding).toMatch(/HttpOnly/i);
    expect(binding).toMatch(/SameSite=Lax/i);
    const delegations = await api(fixture.instances[0]!, 'GET', `/users/${victim.userId}/oauth_delegations`, `Token token=${victim.ownerKey}`);
    expect(delegations.body.oauth_delegations).toHaveLength(0);
  });

  test('the email swap fails: an admin cannot move the owner\'s email, and a linked person is their subject whatever their email says', async () => {
    const member = await ssoAccount();
    const [owner] = await fixture.database.em().execute<{ id: string; email: string }[]>("select id, email from users where account_id = ? and role = 'owner'", [member.accountId]);
    const em = fixture.database.em();
    const admin = em.create(User, { account: em.getReference(Account, member.accountId), name: 'Admin', email: `admin-${member.email}`, timeZone: 'Etc/UTC', color: 'green', role: 'admin' });
    const otherAdmin = em.create(User, { account: em.getReference(Account, member.accountId), name: 'Other admin', email: `other-admin-${member.email}`, timeZone: 'Etc/UTC', color: 'green', role: 'admin' });
    await em.persist([admin, otherAdmin]).flush();
    const keyOf = async (userId: string) => (await fixture.database.transactions.run(fixture.database.em(), (tx) => new AccountsService(tx).createApiKey({ accountId: member.accountId, userId }))).apiKey;
    const adminKey = `Token token=${await keyOf(admin.id)}`;
    const ownerKey = `Token token=${await keyOf(owner!.id)}`;
    const setEmail = (authorization: string, id: string, email: string) => graphqlCall(fixture.instances[0]!, authorization, 'mutation($input: UpdateUserInput!) { updateUser(input: $input) { user { id email } } }', { input: { id, email } });

    // The admin renames themself (allowed), then tries to give the owner, and another admin, the freed email.
    expect((await setEmail(adminKey, admin.id, `renamed-${member.email}`)).errors).toBeUndefined();
    for (const target of [owner!.id, otherAdmin.id]) {
      const refused = await setEmail(adminKey, target, `admin-${member.email}`);
      expect(refused.errors?.[0]?.extensions.code).toBe('FORBIDDEN');
    }
    // A full-access account key is not the owner either; the owner may change an admin's email.
    expect((await setEmail(`Token token=${member.ownerKey}`, owner!.id, `admin-${member.email}`)).errors?.[0]?.extensions.code).toBe('FORBIDDEN');
    expect((await setEmail(ownerKey, otherAdmin.id, `moved-${member.email}`)).errors).toBeUndefined();
    const [unchanged] = await fixture.database.em().execute<{ email: string }[]>('select email from users where id = ?', [owner!.id]);
    expect(unchanged!.email).toBe(owner!.email);

    // The owner signs in through the provider once: linked to that subject.
    const first = await toCallback({ ...member, email: owner!.email }, owner!.email);
    const signedIn = await finish(first);
    expect(signedIn.kind).toBe('callback');
    // The identity provider (SCIM may) renames the owner to an address another subject asserts:
    // that subject still is not the owner, and the owner's subject still is.
    await fixture.database.em().execute('update users set email = ? where id = ?', [`admin-${member.email}`, owner!.id]);
    const impostor = await finish(await toCallback(member, `admin-${member.email}`));
    expect(impostor).toMatchObject({ kind: 'page', status: 403 });
    const again = await toCallback(member, owner!.email);
    const back = await finish(again);
    expect(back.kind).toBe('callback');
    const tokens = await client.authorizationCodeGrant(again.config, back.url, { pkceCodeVerifier: again.verifier, expectedState: again.state });
    expect(tokens.claims()?.sub).toBe(owner!.id);
  });
});

describe('OIDC callbacks that are replayed, forged or crossed between accounts', () => {
  test('a replayed callback is refused with a page that says so', async () => {
    const member = await ssoAccount();
    const start = await toCallback(member, member.email);
    expect((await finish(start)).kind).toBe('callback');
    const replayed = await browse(start.jar, start.callbackUrl, APP_REDIRECT);
    expect(replayed).toMatchObject({ kind: 'page', status: 400 });
    if (replayed.kind === 'page') {
      expect(replayed.html).toContain('expired or was already used');
      expect(replayed.html).not.toContain(start.callbackUrl.searchParams.get('code')!);
    }
  });

  test('a callback whose state was never issued, or carries no state, is refused', async () => {
    const member = await ssoAccount();
    const start = await toCallback(member, member.email);
    const forged = new URL(start.callbackUrl);
    forged.searchParams.set('state', 'x'.repeat(43));
    expect(await browse(start.jar, forged, APP_REDIRECT)).toMatchObject({ kind: 'page', status: 400 });
    forged.searchParams.delete('state');
    expect(await browse(start.jar, forged, APP_REDIRECT)).toMatchObject({ kind: 'page', status: 400 });
    // The genuine one still works: the forgeries did not use it up.
    expect((await finish(start)).kind).toBe('callback');
  });

  test('a code from another account\'s provider registration is refused; so is an email of another account', async () => {
    const a = await ssoAccount({ client: CLIENT_A });
    const b = await ssoAccount({ client: CLIENT_B });
    const fromA = await toCallback(a, a.email);
    const fromB = await toCallback(b, b.email);
    // B's state with A's code: the code was issued to A's client, the IdP refuses to redeem it for B.
    const mixed = new URL(fromB.callbackUrl);
    mixed.searchParams.set('code', fromA.callbackUrl.searchParams.get('code')!);
    const refused = await browse(fromB.jar, mixed, APP_REDIRECT);
    expect(refused).toMatchObject({ kind: 'page', status: 401 });
    if (refused.kind === 'page') expect(refused.html).toContain('could not be accepted');

    // A's provider vouching for B's member: nobody of A has that email.
    const crossing = await toCallback(a, b.email);
    const page = await finish(crossing);
    expect(page).toMatchObject({ kind: 'page', status: 403 });
    if (page.kind === 'page') expect(page.html).not.toContain(b.userId);
  });
});

describe('which users OIDC sign-in lets in', () => {
  test('an unverified email, and a deleted user, are refused', async () => {
    const member = await ssoAccount();
    unverified.add(member.email);
    expect(await finish(await toCallback(member, member.email))).toMatchObject({ kind: 'page', status: 401 });
    unverified.delete(member.email);
    await fixture.database.em().execute('update users set deleted_at = now() where id = ?', [member.userId]);
    expect(await finish(await toCallback(member, member.email))).toMatchObject({ kind: 'page', status: 403 });
  });

  test('a suspended user is refused; the sign-in and the refusal are audit records of method browser naming the provider', async () => {
    const member = await ssoAccount();
    expect((await finish(await toCallback(member, member.email))).kind).toBe('callback');
    await fixture.database.em().execute('update users set suspended_at = now() where id = ?', [member.userId]);
    expect(await finish(await toCallback(member, member.email))).toMatchObject({ kind: 'page', status: 403 });

    const audit = await api(fixture.instances[0]!, 'GET', '/audit/records?limit=100', `Token token=${member.ownerKey}`);
    expect(audit.status).toBe(200);
    const records = audit.body.records as Array<{ action: string; method: { type: string }; root_resource: { id: string }; details: { fields?: Array<{ name: string; value: string | null }> } }>;
    const signIns = records.filter((record) => record.action === 'sign_in');
    expect(signIns).toHaveLength(1);
    expect(signIns[0]).toMatchObject({ method: { type: 'browser' }, root_resource: { id: member.userId } });
    expect(signIns[0]!.details.fields).toContainEqual(expect.objectContaining({ name: 'single_sign_on', value: 'oidc: Okta' }));
    const refused = records.filter((record) => record.action === 'sign_in_failed');
    expect(refused).toHaveLength(1);
    expect(refused[0]!.method.type).toBe('browser');
  });

  test('SSO required: the page offers only the provider and the password form refuses the account\'s users', async () => {
    const member = await ssoAccount({ requireSso: true });
    const start = await openSignIn(fixture.database, fixture.serverSecret, base(), member.accountId);
    expect(start.page.html).toContain('Sign in with Okta');
    expect(start.page.html).not.toContain('name="password"');
    const loginAction = start.page.url.pathname.replace(/\/?$/, '/login');
    const csrf = /name="csrf" value="([^"]+)"/.exec(start.page.html)![1]!;
    const refused = await browse(start.jar, new URL(loginAction, base()), APP_REDIRECT, { method: 'POST', form: { csrf, email: member.email, password: PASSWORD } });
    expect(refused).toMatchObject({ kind: 'page', status: 403 });
    if (refused.kind === 'page') expect(refused.html).toContain('Passwords are not accepted here');
    // Not required: both are offered, and the password still works.
    const optional = await ssoAccount();
    const page = await openSignIn(fixture.database, fixture.serverSecret, base(), optional.accountId);
    expect(page.page.html).toContain('Sign in with Okta');
    expect(page.page.html).toContain('name="password"');
  });

  test('JIT: a first sign-in creates the user (role user, created_via_sso); without JIT it is refused', async () => {
    const withoutJit = await ssoAccount();
    expect(await finish(await toCallback(withoutJit, `new-${withoutJit.email}`))).toMatchObject({ kind: 'page', status: 403 });

    const member = await ssoAccount({ jit: true });
    const email = `jit-${member.email}`;
    const start = await toCallback(member, email);
    const done = await finish(start);
    expect(done.kind).toBe('callback');
    const tokens = await client.authorizationCodeGrant(start.config, done.url, { pkceCodeVerifier: start.verifier, expectedState: start.state });
    const me = await api(fixture.instances[0]!, 'GET', '/users/me', `Bearer ${tokens.access_token}`);
    expect(me.body.user).toMatchObject({ email, role: 'user', created_via_sso: true });
  });
});

describe('how far the OIDC identity provider is trusted', () => {
  test('an ID token signed with a key the provider never published is refused (the same token genuinely signed is accepted)', async () => {
    let forge = true;
    const forging = await startForgingIdentityProvider('forged-client', () => forge);
    try {
      const member = await newMember(fixture.database);
      await configureSso(fixture.database, fixture.serverSecret, { accountId: member.accountId, displayName: 'Okta', oidc: { issuer: forging.issuer, clientId: 'forged-client', clientSecret: 'forged-client-secret' }, requireSso: false, jit: false });
      const attempt = async () => {
        const start = await openSignIn(fixture.database, fixture.serverSecret, base(), member.accountId);
        const back = await chooseProvider(start.jar, base(), start.page.html, member.email, callbackPrefix());
        if (back.kind !== 'callback') throw new Error('the provider did not send the browser back');
        return browse(start.jar, back.url, APP_REDIRECT);
      };
      const refused = await attempt();
      expect(refused).toMatchObject({ kind: 'page', status: 401 });
      if (refused.kind === 'page') expect(refused.html).toContain('could not be accepted');
      forge = false;
      expect((await attempt()).kind).toBe('callback');
    } finally {
      await forging.stop();
    }
  });

  test('at sign-in the issuer\'s discovery document is fetched through the SSRF guard: in production a loopback issuer is refused', async () => {
    const member = await ssoAccount();
    const instance = fixture.instances[0]!;
    const begin = (production: boolean) => ssoSignInMethod({ database: fixture.database, runtime: { ...instance.app.runtime, production }, logger: createLogger({ logLevel: 'silent' }), limitPerAddress: (_req, _res, next) => next() })
      .begin({ interactionUid: 'an-interaction', accountId: member.accountId, loginHint: member.email }, { cookie: () => undefined } as unknown as Response);
    // Outside production, a provider on this machine is allowed: the browser is sent to it.
    expect(await begin(false)).toMatch(new RegExp(`^${idp.issuer}`));
    await expect(begin(true)).rejects.toMatchObject({ details: [expect.stringContaining('https only')] });
  });
});

describe('configuring OIDC single sign-on', () => {
  test('the secret is never shown and not stored in plaintext', async () => {
    const member = await ssoAccount();
    const [row] = await fixture.database.em().execute<{ oidc_client_secret_sealed: string }[]>('select oidc_client_secret_sealed from sso_configurations where account_id = ?', [member.accountId]);
    expect(row!.oidc_client_secret_sealed).not.toContain(CLIENT_A.clientSecret);
    const response = await fetch(`${base()}/graphql`, { method: 'POST', headers: { 'Content-Type': 'application/json', Authorization: `Token token=${member.ownerKey}` }, body: JSON.stringify({ query: '{ singleSignOn { identityProvider { protocol displayName oidcIssuer oidcClientId oidcClientSecretStored requireSso jit } serviceProvider { oidcRedirectUri samlEntityId samlMetadataUrl samlMetadataXml } } }' }) });
    const text = await response.text();
    expect(text).not.toContain(CLIENT_A.clientSecret);
    const body = JSON.parse(text);
    expect(body.data.singleSignOn.identityProvider).toEqual({ protocol: 'OIDC', displayName: 'Okta', oidcIssuer: idp.issuer, oidcClientId: CLIENT_A.clientId, oidcClientSecretStored: true, requireSso: false, jit: false });
    expect(body.data.singleSignOn.serviceProvider.oidcRedirectUri).toBe(`${base()}/sso/oidc/callback`);
    // can_update_user: a plain user's key is refused, an admin's is not.
    const query = JSON.stringify({ query: '{ singleSignOn { identityProvider { protocol } } }' });
    for (const [role, allowed] of [['user', false], ['admin', true]] as const) {
      const em = fixture.database.em();
      const person = em.create(User, { account: em.getReference(Account, member.accountId), name: role, email: `${role}-${member.email}`, timeZone: 'Etc/UTC', color: 'green', role });
      await em.persist(person).flush();
      const { apiKey } = await fixture.database.transactions.run(fixture.database.em(), (tx) => new AccountsService(tx).createApiKey({ accountId: member.accountId, userId: person.id }));
      const answer = await (await fetch(`${base()}/graphql`, { method: 'POST', headers: { 'Content-Type': 'application/json', Authorization: `Token token=${apiKey}` }, body: query })).json() as { data?: { singleSignOn: unknown }; errors?: Array<{ extensions: { code: string } }> };
      if (allowed) expect(answer.data?.singleSignOn).toEqual({ identityProvider: { protocol: 'OIDC' } });
      else expect(answer.errors?.[0]?.extensions.code).toBe('FORBIDDEN');
    }
    const metadata = await fetch(body.data.singleSignOn.serviceProvider.samlMetadataUrl);
    expect(metadata.status).toBe(200);
    expect(await metadata.text()).toBe(body.data.singleSignOn.serviceProvider.samlMetadataXml);
  });

  test('accessctl sso configure (secret on stdin) | show | disable', async () => {
    const member = await newMember(fixture.database);
    const io = (stdin = '') => ({ info: () => {}, serverSecret: () => fixture.serverSecret, readStdin: async () => stdin, apiUrl: () => base() });
    const configured = await configureSsoCommand.run(fixture.database, { account: member.accountId, 'oidc-issuer': idp.issuer, 'client-id': CLIENT_A.clientId, name: 'Okta', 'require-sso': true, json: true }, io(`${CLIENT_A.clientSecret}\n`));
    const shown = await showSsoCommand.run(fixture.database, { account: member.accountId, json: true }, io());
    for (const output of [configured, shown]) {
      expect(JSON.stringify(output)).not.toContain(CLIENT_A.clientSecret);
      expect(output).toMatchObject({
        identity_provider: { protocol: 'oidc', display_name: 'Okta', require_sso: true, jit: false, oidc_issuer: idp.issuer, oidc_client_id: CLIENT_A.clientId, oidc_client_secret_stored: true },
        service_provider: { oidc_redirect_uri: `${base()}/sso/oidc/callback` },
      });
    }
    // The secret went in intact (the provider authenticates the client with it).
    expect((await finish(await toCallback(member, member.email))).kind).toBe('callback');

    expect(await disableSsoCommand.run(fixture.database, { account: member.accountId, json: true }, io())).toEqual({ account_id: member.accountId, disabled: true });
    const page = await openSignIn(fixture.database, fixture.serverSecret, base(), member.accountId);
    expect(page.page.html).not.toContain('Sign in with');
    expect(page.page.html).toContain('name="password"');
    await expect(configureSsoCommand.run(fixture.database, { account: member.accountId, json: true }, io())).rejects.toThrow(/--oidc-issuer|--saml-metadata/);

    // Configuring and disabling are access changes of the account: both recorded, the secret nowhere.
    const audit = await api(fixture.instances[0]!, 'GET', '/audit/records?limit=100&root_resource_types[]=sso_configurations', `Token token=${member.ownerKey}`);
    expect(audit.status).toBe(200);
    expect((audit.body.records as Array<{ action: string }>).map((record) => record.action)).toEqual(['delete', 'create']);
    expect(JSON.stringify(audit.body)).not.toContain(CLIENT_A.clientSecret);
  });
});
