import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import * as client from 'openid-client';
import { PASSWORD, api, browse, formOf, givePassword, graphqlCall, newMember, useOAuthServers, type Member } from '../../test/support/oauth-server.js';
import { APP_REDIRECT, SAML_SSO_URL, chooseProvider, openSignIn, passIdentityProvider, readAuthnRequest, samlKeyPair, samlMetadata, samlResponse, startOidcIdentityProvider } from '../../test/support/sso.js';
import { AccountsService } from '../accounts/accounts.service.js';
import { Account } from '../accounts/account.entity.js';
import { User } from '../users/user.entity.js';

/**
 * No sequence of API calls lets an admin, or an app acting for one, sign in
 * through single sign-on as the owner or as another admin. Two fake OpenID providers that sign in
 * whoever types a login: the company's, and one an admin runs for themself.
 */
const fixture = useOAuthServers(1);
const instance = () => fixture.instances[0]!;
const base = () => instance().url;
const callbackPrefix = () => `${base()}/sso/oidc/callback`;
const COMPANY = { clientId: 'company-gateway', clientSecret: 'company-client-secret-0123456789' };
const ADMINS_OWN = { clientId: 'admins-own-gateway', clientSecret: 'admins-own-client-secret-012345' };
const IDP_ENTITY_ID = 'http://www.okta.com/exk-privileged-test';
let company: Awaited<ReturnType<typeof startOidcIdentityProvider>>;
let adminsOwn: Awaited<ReturnType<typeof startOidcIdentityProvider>>;
let companyKeys: ReturnType<typeof samlKeyPair>;
let adminsKeys: ReturnType<typeof samlKeyPair>;

beforeAll(async () => {
  company = await startOidcIdentityProvider([{ ...COMPANY, redirectUri: callbackPrefix() }]);
  adminsOwn = await startOidcIdentityProvider([{ ...ADMINS_OWN, redirectUri: callbackPrefix() }]);
  companyKeys = samlKeyPair();
  adminsKeys = samlKeyPair();
});
afterAll(async () => {
  await company?.stop();
  await adminsOwn?.stop();
});

const CONFIGURE = 'mutation($input: ConfigureSingleSignOnInput!) { configureSingleSignOn(input: $input) { singleSignOn { identityProvider { displayName } } } }';
const CREATE_USER = 'mutation($input: CreateUserInput!) { createUser(input: $input) { user { id email } } }';
const UPDATE_USER = 'mutation($input: UpdateUserInput!) { updateUser(input: $input) { user { id email role } } }';
const CONFIGURATION_REFUSED = 'until the owner saves the single sign-on configuration';
const EMAIL_REFUSED = 'saves that email';

interface Person { id: string; email: string; key: string }

/** An account: its owner (email set by bootstrap), a member, and the owner's and the account's keys. */
async function account(): Promise<{ member: Member; owner: Person; accountKey: string }> {
  const member = await newMember(fixture.database);
  const [owner] = await fixture.database.em().execute<{ id: string; email: string }[]>("select id, email from users where account_id = ? and role = 'owner'", [member.accountId]);
  return { member, owner: { ...owner!, key: await keyOf(member.accountId, owner!.id) }, accountKey: `Token token=${member.ownerKey}` };
}

async function keyOf(accountId: string, userId: string): Promise<string> {
  const { apiKey } = await fixture.database.transactions.run(fixture.database.em(), (tx) => new AccountsService(tx).createApiKey({ accountId, userId }));
  return `Token token=${apiKey}`;
}

async function graphql(authorization: string, query: string, variables: Record<string, unknown>) {
  const answer = await graphqlCall(instance(), authorization, query, variables);
  if (answer.errors) throw new Error(JSON.stringify(answer.errors));
  return answer.data;
}

/** An admin created through the API by `creator` (who thereby sets the admin's email). */
async function adminCreatedBy(accountId: string, creator: string, label = 'admin'): Promise<Person> {
  const email = `${label}-${randomUUID().slice(0, 8)}@example.com`;
  const { createUser } = await graphql(creator, CREATE_USER, { input: { name: label, email, role: 'ADMIN' } });
  return { id: createUser.user.id, email, key: await keyOf(accountId, createUser.user.id) };
}

/** An admin whose email nobody the rule trusts is known to have set (as every user was before the rule). */
async function adminOfUnknownEmail(accountId: string): Promise<Person> {
  const em = fixture.database.em();
  const email = `legacy-admin-${randomUUID().slice(0, 8)}@example.com`;
  const admin = em.create(User, { account: em.getReference(Account, accountId), name: 'Legacy admin', email, timeZone: 'Etc/UTC', color: 'green', role: 'admin' });
  await em.persist(admin).flush();
  return { id: admin.id, email, key: await keyOf(accountId, admin.id) };
}

function oidcInput(idp: { issuer: string }, credentials: typeof COMPANY, options: { requireSso?: boolean } = {}) {
  return { input: { name: 'Okta', oidc: { issuer: idp.issuer, ...credentials }, requireSso: options.requireSso ?? false, jit: true } };
}

/** A browser signing in through the account's OIDC provider, typing `login` there; the app's code is exchanged when it comes back. */
async function ssoSignIn(accountId: string, login: string) {
  const start = await openSignIn(fixture.database, fixture.serverSecret, base(), accountId);
  const atIdp = await chooseProvider(start.jar, base(), start.page.html, login, callbackPrefix());
  const back = await passIdentityProvider(start.jar, atIdp, login, callbackPrefix());
  if (back.kind !== 'callback') throw new Error(`the provider did not send the browser back: ${back.status} ${back.html.slice(0, 300)}`);
  const result = await browse(start.jar, back.url, APP_REDIRECT);
  if (result.kind === 'page') return { userId: undefined, page: result };
  const tokens = await client.authorizationCodeGrant(start.config, result.url, { pkceCodeVerifier: start.verifier, expectedState: start.state });
  return { userId: tokens.claims()?.sub, page: undefined };
}

async function expectSignedInAs(accountId: string, login: string, userId: string) {
  const attempt = await ssoSignIn(accountId, login);
  if (attempt.page) throw new Error(`refused ${attempt.page.status}: ${attempt.page.html.slice(0, 600)}`);
  expect(attempt.userId).toBe(userId);
}

async function expectRefused(accountId: string, login: string, says: string) {
  const attempt = await ssoSignIn(accountId, login);
  expect(attempt.userId).toBeUndefined();
  expect(attempt.page).toMatchObject({ kind: 'page', status: 403 });
  expect(attempt.page!.html).toContain(says);
}

async function linkOf(userId: string): Promise<string | undefined> {
  const [row] = await fixture.database.em().execute<{ subject: string }[]>('select subject from sso_subject_links where user_id = ?', [userId]);
  return row?.subject;
}

async function emailAuthorship(userId: string) {
  const [row] = await fixture.database.em().execute<{ email: string; email_set_by_user_id: string | null; email_set_with_owner_rights: boolean }[]>(
    'select email, email_set_by_user_id, email_set_with_owner_rights from users where id = ?', [userId],
  );
  return row!;
}

/** Tries to change a user's email over SCIM with a token the given key minted (it acts no higher than its creator); answers the status. */
async function scimSetsEmail(adminKey: string, userId: string, email: string): Promise<number> {
  const { createProvisioningToken } = await graphql(adminKey, 'mutation { createProvisioningToken(input: {description: "the admin\'s"}) { token } }', {});
  const response = await fetch(`${base()}/scim/v2/Users/${userId}`, {
    method: 'PATCH',
    headers: { Authorization: `Bearer ${createProvisioningToken.token}`, 'Content-Type': 'application/scim+json' },
    body: JSON.stringify({ schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'], Operations: [{ op: 'replace', path: 'emails[type eq "work"].value', value: email }] }),
  });
  return response.status;
}

describe('single sign-on never signs an admin in as the owner or another admin: configurations an admin saved', () => {
  test('an admin configures their own OIDC provider and asserts the unlinked owner\'s email: refused (audited, naming the owner), no link, no code; that admin and members still sign in', async () => {
    const { member, owner } = await account();
    const admin = await adminCreatedBy(member.accountId, owner.key);
    const otherAdmin = await adminCreatedBy(member.accountId, owner.key, 'other-admin');
    await graphql(admin.key, CONFIGURE, oidcInput(adminsOwn, ADMINS_OWN));
    const [saved] = await fixture.database.em().execute<{ saved_by_user_id: string; saved_with_owner_rights: boolean }[]>('select saved_by_user_id, saved_with_owner_rights from sso_configurations where account_id = ?', [member.accountId]);
    expect(saved).toEqual({ saved_by_user_id: admin.id, saved_with_owner_rights: false });

    await expectRefused(member.accountId, owner.email, CONFIGURATION_REFUSED);
    await expectRefused(member.accountId, otherAdmin.email, CONFIGURATION_REFUSED);
    expect(await linkOf(owner.id)).toBeUndefined();
    expect(await linkOf(otherAdmin.id)).toBeUndefined();
    const [refusal] = await fixture.database.em().execute<{ body: string }[]>(
      "select body::text as body from audit_records where account_id = ? and action = 'sign_in_failed' and body::text like ? order by position limit 1",
      [member.accountId, `%${owner.id}%`],
    );
    expect(refusal?.body).toContain('owner or admin');

    // The configuration was saved by this admin: it signs them in, and members as before.
    await expectSignedInAs(member.accountId, admin.email, admin.id);
    await expectSignedInAs(member.accountId, member.email, member.userId);
  });

  test('an admin swaps in the real provider\'s SAML entity id with a certificate of their own and asserts the linked owner\'s subject: refused', async () => {
    const { member, owner } = await account();
    const admin = await adminCreatedBy(member.accountId, owner.key);
    const samlSignIn = async (login: string, privateKey: string) => {
      const start = await openSignIn(fixture.database, fixture.serverSecret, base(), member.accountId);
      const atIdp = await chooseProvider(start.jar, base(), start.page.html, login, SAML_SSO_URL);
      if (atIdp.kind !== 'callback') throw new Error('not sent to the identity provider');
      const request = readAuthnRequest(atIdp.url);
      const SAMLResponse = samlResponse({ idpEntityId: IDP_ENTITY_ID, privateKey, inResponseTo: request.id, audience: request.issuer, destination: request.acs, email: login });
      return browse(start.jar, new URL(`${base()}/sso/saml/acs`), APP_REDIRECT, { method: 'POST', form: { SAMLResponse, RelayState: request.relayState } });
    };
    // The owner configures the company's provider and signs in once: linked to its subject (the email NameID).
    await graphql(owner.key, CONFIGURE, { input: { name: 'Entra ID', saml: { metadataXml: samlMetadata(IDP_ENTITY_ID, companyKeys.certificateBase64) } } });
    expect((await samlSignIn(owner.email, companyKeys.privateKey)).kind).toBe('callback');
    expect(await linkOf(owner.id)).toBe(owner.email);

    // The admin re-saves it with the same entity id and their own certificate, and signs an assertion for the owner's subject.
    await graphql(admin.key, CONFIGURE, { input: { name: 'Entra ID', saml: { metadataXml: samlMetadata(IDP_ENTITY_ID, adminsKeys.certificateBase64) } } });
    const spoofed = await samlSignIn(owner.email, adminsKeys.privateKey);
    expect(spoofed).toMatchObject({ kind: 'page', status: 403 });
    if (spoofed.kind === 'page') expect(spoofed.html).toContain(CONFIGURATION_REFUSED);
  });
});

describe('single sign-on never signs an admin in as the owner or another admin: emails an admin set', () => {
  test('an admin mints a provisioning token: over SCIM it may not give the owner (or another admin) the admin\'s own provider email (403, nothing changed), so nobody is linked by it', async () => {
    const { member, owner } = await account();
    const admin = await adminCreatedBy(member.accountId, owner.key);
    const otherAdmin = await adminCreatedBy(member.accountId, owner.key, 'other-admin');
    await graphql(owner.key, CONFIGURE, oidcInput(company, COMPANY));

    for (const target of [owner, otherAdmin]) {
      const adminsProviderEmail = `admin-at-provider-${randomUUID().slice(0, 8)}@example.com`;
      const before = await emailAuthorship(target.id);
      expect(await scimSetsEmail(admin.key, target.id, adminsProviderEmail)).toBe(403);
      expect(await emailAuthorship(target.id)).toEqual(before);
      expect(await linkOf(target.id)).toBeUndefined();
    }

    // The owner saves their own email again: single sign-on may link them by it.
    const ownerEmail = `owner-again-${randomUUID().slice(0, 8)}@example.com`;
    await graphql(owner.key, UPDATE_USER, { input: { id: owner.id, email: ownerEmail } });
    await expectSignedInAs(member.accountId, ownerEmail, owner.id);
  });

  test('an owner-saved configuration signs in the owner and admins whose email the owner or they themselves set; not an admin whose email nobody trusted set', async () => {
    const { member, owner } = await account();
    await graphql(owner.key, CONFIGURE, oidcInput(company, COMPANY));
    const [saved] = await fixture.database.em().execute<{ saved_by_user_id: string; saved_with_owner_rights: boolean }[]>('select saved_by_user_id, saved_with_owner_rights from sso_configurations where account_id = ?', [member.accountId]);
    expect(saved).toEqual({ saved_by_user_id: owner.id, saved_with_owner_rights: true });

    const ownersAdmin = await adminCreatedBy(member.accountId, owner.key);
    const selfSet = await adminOfUnknownEmail(member.accountId);
    const ownEmail = `self-set-${randomUUID().slice(0, 8)}@example.com`;
    await graphql(selfSet.key, UPDATE_USER, { input: { id: selfSet.id, email: ownEmail } });
    const unknown = await adminOfUnknownEmail(member.accountId);
    const accountKeysAdmin = await adminCreatedBy(member.accountId, `Token token=${member.ownerKey}`, 'account-key-admin');

    await expectSignedInAs(member.accountId, owner.email, owner.id);
    await expectSignedInAs(member.accountId, ownersAdmin.email, ownersAdmin.id);
    await expectSignedInAs(member.accountId, ownEmail, selfSet.id);
    await expectSignedInAs(member.accountId, member.email, member.userId);
    await expectRefused(member.accountId, unknown.email, EMAIL_REFUSED);
    await expectRefused(member.accountId, accountKeysAdmin.email, EMAIL_REFUSED);
    // Once linked, a person is their subject: a later email change (the provider's, over SCIM) does not matter.
    expect(await scimSetsEmail(owner.key, ownersAdmin.id, `renamed-${ownersAdmin.email}`)).toBe(200);
    await expectSignedInAs(member.accountId, ownersAdmin.email, ownersAdmin.id);
  });

  test('an admin sets a member\'s email to their own, signs in as the member, then promotes them: the link made for a member does not sign in an admin', async () => {
    const { member, owner } = await account();
    const admin = await adminCreatedBy(member.accountId, owner.key);
    await graphql(owner.key, CONFIGURE, oidcInput(company, COMPANY));
    const adminsProviderEmail = `admin-at-provider-${randomUUID().slice(0, 8)}@example.com`;
    await graphql(admin.key, UPDATE_USER, { input: { id: member.userId, email: adminsProviderEmail } });
    await expectSignedInAs(member.accountId, adminsProviderEmail, member.userId);
    await graphql(admin.key, UPDATE_USER, { input: { id: member.userId, role: 'ADMIN' } });
    await expectRefused(member.accountId, adminsProviderEmail, EMAIL_REFUSED);
    // The promoted user saves their email themself: from then on the link is theirs.
    const memberKey = await keyOf(member.accountId, member.userId);
    await graphql(memberKey, UPDATE_USER, { input: { id: member.userId, email: adminsProviderEmail } });
    await expectSignedInAs(member.accountId, adminsProviderEmail, member.userId);
  });
});

describe('who set a user\'s email is recorded', () => {
  test('who set an email is recorded on every path: GraphQL, REST (one and bulk), SCIM, bootstrap; saving it unchanged never takes trust away', async () => {
    const { member, owner, accountKey } = await account();
    expect(await emailAuthorship(owner.id)).toMatchObject({ email_set_by_user_id: null, email_set_with_owner_rights: true });
    const admin = await adminCreatedBy(member.accountId, owner.key);
    expect(await emailAuthorship(admin.id)).toMatchObject({ email_set_by_user_id: owner.id, email_set_with_owner_rights: true });
    const byAccountKey = await adminCreatedBy(member.accountId, accountKey, 'by-key');
    expect(await emailAuthorship(byAccountKey.id)).toMatchObject({ email_set_by_user_id: null, email_set_with_owner_rights: false });

    // An admin saving another admin's email unchanged does not make it theirs.
    await graphql(admin.key, UPDATE_USER, { input: { id: byAccountKey.id, email: byAccountKey.email } });
    expect(await emailAuthorship(byAccountKey.id)).toMatchObject({ email_set_by_user_id: null, email_set_with_owner_rights: false });
    expect((await api(instance(), 'PUT', `/users/${member.userId}`, admin.key, { user: { email: `rest-${member.email}` } })).status).toBe(200);
    expect(await emailAuthorship(member.userId)).toMatchObject({ email_set_by_user_id: admin.id, email_set_with_owner_rights: false });
    const bulk = await api(instance(), 'PUT', '/users', owner.key, { users: [{ id: member.userId, email: `bulk-${member.email}` }, { id: byAccountKey.id, email: byAccountKey.email }] });
    expect(bulk.status).toBe(200);
    for (const id of [member.userId, byAccountKey.id]) expect(await emailAuthorship(id)).toMatchObject({ email_set_by_user_id: owner.id, email_set_with_owner_rights: true });
    await graphql(admin.key, UPDATE_USER, { input: { id: byAccountKey.id, email: byAccountKey.email } });
    expect(await emailAuthorship(byAccountKey.id)).toMatchObject({ email_set_by_user_id: owner.id, email_set_with_owner_rights: true });
    await scimSetsEmail(admin.key, member.userId, `scim-${member.email}`);
    expect(await emailAuthorship(member.userId)).toMatchObject({ email_set_by_user_id: null, email_set_with_owner_rights: false });
  });
});

describe('a configuration an admin saved cannot lock the owner out', () => {
  test('SSO required, saved by an admin: the owner signs in with their password, a member cannot; once the owner saves it, the owner\'s password is refused too', async () => {
    const { member, owner } = await account();
    const admin = await adminCreatedBy(member.accountId, owner.key);
    await givePassword(fixture.database, owner.id, PASSWORD);
    await graphql(admin.key, CONFIGURE, oidcInput(company, COMPANY, { requireSso: true }));

    const withPassword = async (email: string) => {
      const start = await openSignIn(fixture.database, fixture.serverSecret, base(), member.accountId);
      const csrf = formOf(start.page.html).csrf;
      const loginAction = start.page.url.pathname.replace(/\/?$/, '/login');
      return { page: start.page, result: await browse(start.jar, new URL(loginAction, base()), APP_REDIRECT, { method: 'POST', form: { csrf, email, password: PASSWORD } }) };
    };
    const owners = await withPassword(owner.email);
    expect(owners.page.html).toContain('Owner or administrator? Sign in with your password');
    expect(owners.page.html).toContain('name="password"');
    expect(owners.result.kind).toBe('callback');
    const members = await withPassword(member.email);
    expect(members.result).toMatchObject({ kind: 'page', status: 403 });
    if (members.result.kind === 'page') expect(members.result.html).toContain('Passwords are not accepted here');

    // The owner saves the configuration: single sign-on now signs them in, so their password no longer does.
    await graphql(owner.key, CONFIGURE, oidcInput(company, COMPANY, { requireSso: true }));
    await givePassword(fixture.database, admin.id, PASSWORD);
    const after = await withPassword(owner.email);
    expect(after.page.html).not.toContain('name="password"');
    expect(after.result).toMatchObject({ kind: 'page', status: 403 });
    expect((await withPassword(admin.email)).result).toMatchObject({ kind: 'page', status: 403 });
  });
});
