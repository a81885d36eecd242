import { beforeAll, describe, expect, test } from '@jest/globals';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as client from 'openid-client';
import { configureSsoCommand } from '../cli/commands/sso.commands.js';
import { CookieJar, api, browse, newMember, useOAuthServers, type Member } from '../../test/support/oauth-server.js';
import { APP_REDIRECT, SAML_SSO_URL, chooseProvider, configureSso, openSignIn, readAuthnRequest, samlKeyPair, samlMetadata, samlResponse, type SamlResponseOptions } from '../../test/support/sso.js';

const fixture = useOAuthServers(1);
const base = () => fixture.instances[0]!.url;
const IDP_ENTITY_ID = 'http://www.okta.com/exk-test-idp';
let idpKeys: ReturnType<typeof samlKeyPair>;
let otherKeys: ReturnType<typeof samlKeyPair>;

beforeAll(() => {
  idpKeys = samlKeyPair();
  otherKeys = samlKeyPair();
});

async function samlAccount(options: { jit?: boolean } = {}): Promise<Member> {
  const member = await newMember(fixture.database);
  await configureSso(fixture.database, fixture.serverSecret, { accountId: member.accountId, displayName: 'Entra ID', samlMetadataXml: samlMetadata(IDP_ENTITY_ID, idpKeys.certificateBase64), requireSso: false, jit: options.jit ?? false });
  return member;
}

/** The browser sent to the IdP with an AuthnRequest; returns what the IdP needs to answer it. */
async function toIdentityProvider(member: Member) {
  const start = await openSignIn(fixture.database, fixture.serverSecret, base(), member.accountId);
  expect(start.page.html).toContain('Sign in with Entra ID');
  const atIdp = await chooseProvider(start.jar, base(), start.page.html, member.email, SAML_SSO_URL);
  if (atIdp.kind !== 'callback') throw new Error(`not sent to the IdP: ${atIdp.status} ${atIdp.html.slice(0, 300)}`);
  const request = readAuthnRequest(atIdp.url);
  const answer = (overrides: Partial<SamlResponseOptions> = {}) => samlResponse({
    idpEntityId: IDP_ENTITY_ID,
    privateKey: idpKeys.privateKey,
    inResponseTo: request.id,
    audience: request.issuer,
    destination: request.acs,
    email: member.email,
    ...overrides,
  });
  const post = (SAMLResponse: string, RelayState = request.relayState) =>
    browse(start.jar, new URL(`${base()}/sso/saml/acs`), APP_REDIRECT, { method: 'POST', form: { SAMLResponse, RelayState } });
  return { ...start, request, answer, post };
}

async function expectRefused(result: Awaited<ReturnType<typeof browse>>, status: number) {
  expect(result).toMatchObject({ kind: 'page', status });
  if (result.kind === 'page') {
    expect(result.html).toMatch(/Sign-in (refused|expired)/);
    expect(result.html).not.toMatch(/signature|audience|InResponseTo|stack/i);
  }
}

describe('SAML 2.0 sign-in end to end, bound to the browser that began it', () => {
  test('a signed response signs the user in end to end; the app gets tokens for that user', async () => {
    const member = await samlAccount();
    const trip = await toIdentityProvider(member);
    expect(trip.request.acs).toBe(`${base()}/sso/saml/acs`);
    expect(trip.request.issuer).toBe(`${base()}/sso/saml/${member.accountId}/metadata`);
    const done = await trip.post(trip.answer());
    if (done.kind === 'page') throw new Error(`refused: ${done.status} ${fixture.logs.filter((line) => line.includes('refused')).join('')}`);
    const tokens = await client.authorizationCodeGrant(trip.config, done.url, { pkceCodeVerifier: trip.verifier, expectedState: trip.state });
    const me = await api(fixture.instances[0]!, 'GET', '/users/me', `Bearer ${tokens.access_token}`);
    expect(me.status).toBe(200);
    expect(me.body.user.id).toBe(member.userId);
  });

  test('an answer posted from another browser than the one that began the round trip signs nobody in', async () => {
    const victim = await samlAccount();
    const attacker = await toIdentityProvider(victim);
    // The victim signs in at the provider, whose page posts the answer from the victim's browser.
    const victimJar = new CookieJar();
    const victimSees = await browse(victimJar, new URL(`${base()}/sso/saml/acs`), APP_REDIRECT, { method: 'POST', form: { SAMLResponse: attacker.answer(), RelayState: attacker.request.relayState } });
    // The attacker resumes, or comes for the answer in their own browser: no code.
    const uid = attacker.page.url.pathname.split('/').pop()!;
    expect((await browse(attacker.jar, new URL(`/oauth/authorize/${uid}`, base()), APP_REDIRECT)).kind).toBe('page');
    expect(victimSees).toMatchObject({ kind: 'page', status: 403 });
    if (victimSees.kind === 'page') expect(victimSees.html).toContain('Sign-in refused');
    expect((await browse(attacker.jar, new URL(`/sso/saml/continue?RelayState=${encodeURIComponent(attacker.request.relayState)}`, base()), APP_REDIRECT)).kind).toBe('page');
    await expectRefused(await attacker.post(attacker.answer()), 400);
    const delegations = await api(fixture.instances[0]!, 'GET', `/users/${victim.userId}/oauth_delegations`, `Token token=${victim.ownerKey}`);
    expect(delegations.body.oauth_delegations).toHaveLength(0);
  });
});

describe('SAML 2.0 responses that are refused', () => {
  test('unsigned, re-signed with another key, expired, wrong audience and not-an-email responses are refused', async () => {
    const member = await samlAccount();
    const cases: Array<[string, (trip: Awaited<ReturnType<typeof toIdentityProvider>>) => string]> = [
      ['unsigned', (trip) => trip.answer({ privateKey: undefined })],
      ['another key', (trip) => trip.answer({ privateKey: otherKeys.privateKey })],
      ['expired', (trip) => trip.answer({ notBefore: new Date(Date.now() - 20 * 60_000), notOnOrAfter: new Date(Date.now() - 10 * 60_000) })],
      ['wrong audience', (trip) => trip.answer({ audience: 'https://another-service.example.com/saml' })],
      ['another IdP entity', (trip) => trip.answer({ idpEntityId: 'http://www.okta.com/exk-someone-else' })],
      ['NameID not an email', (trip) => trip.answer({ nameIdFormat: 'urn:oasis:names:tc:SAML:2.0:nameid-format:persistent' })],
      ['another request', (trip) => trip.answer({ inResponseTo: '_not-our-request' })],
    ];
    const outcomes: string[] = [];
    for (const [name, build] of cases) {
      const trip = await toIdentityProvider(member);
      const result = await trip.post(build(trip));
      outcomes.push(`${name}: ${result.kind === 'page' ? result.status : 'signed in'}`);
      if (result.kind === 'page') await expectRefused(result, 401);
    }
    expect(outcomes).toEqual(cases.map(([name]) => `${name}: 401`));
  });

  test('a replayed response is refused, with the same RelayState or a fresh one', async () => {
    const member = await samlAccount();
    const trip = await toIdentityProvider(member);
    const response = trip.answer();
    expect((await trip.post(response)).kind).toBe('callback');
    await expectRefused(await trip.post(response), 400);
    const fresh = await toIdentityProvider(member);
    await expectRefused(await fresh.post(response), 401);
  });

  test('garbage is refused, never a server error', async () => {
    const member = await samlAccount();
    const trip = await toIdentityProvider(member);
    for (const garbage of ['', 'not base64 at all!', Buffer.from('<xml').toString('base64'), Buffer.from('<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "aaaa">]><x>&a;</x>').toString('base64')]) {
      const result = await trip.post(garbage);
      expect(result.kind).toBe('page');
      if (result.kind === 'page') expect(result.status).toBeLessThan(500);
    }
    const noRelay = await browse(trip.jar, new URL(`${base()}/sso/saml/acs`), APP_REDIRECT, { method: 'POST', form: { SAMLResponse: trip.answer() } });
    await expectRefused(noRelay, 400);
  });
});

describe('SAML 2.0 just-in-time users and configuration', () => {
  test('JIT under concurrent first sign-ins creates exactly one user', async () => {
    const member = await samlAccount({ jit: true });
    const email = `jit-saml-${member.email}`;
    const trips = await Promise.all(Array.from({ length: 6 }, () => toIdentityProvider(member)));
    const results = await Promise.all(trips.map((trip) => trip.post(trip.answer({ email }))));
    expect(results.map((result) => result.kind)).toEqual(trips.map(() => 'callback'));
    const rows = await fixture.database.em().execute<{ id: string; role: string; created_via_sso: boolean }[]>('select id, role, created_via_sso from users where account_id = ? and lower(email) = lower(?)', [member.accountId, email]);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ role: 'user', created_via_sso: true });
  });

  test('accessctl sso configure --saml-metadata FILE reads the provider\'s metadata', async () => {
    const member = await newMember(fixture.database);
    const dir = mkdtempSync(join(tmpdir(), 'sso-metadata-'));
    try {
      const file = join(dir, 'idp.xml');
      writeFileSync(file, samlMetadata(IDP_ENTITY_ID, idpKeys.certificateBase64));
      const io = { info: () => {}, serverSecret: () => fixture.serverSecret, apiUrl: () => base() };
      const result = await configureSsoCommand.run(fixture.database, { account: member.accountId, 'saml-metadata': file, name: 'Entra ID', jit: true, json: true }, io);
      expect(result).toMatchObject({
        identity_provider: { protocol: 'saml', saml_idp_entity_id: IDP_ENTITY_ID, saml_sso_url: SAML_SSO_URL, jit: true, require_sso: false },
        service_provider: { saml_entity_id: `${base()}/sso/saml/${member.accountId}/metadata`, saml_acs_url: `${base()}/sso/saml/acs` },
      });
      writeFileSync(file, '<md:EntityDescriptor xmlns:md="urn:oasis:names:tc:SAML:2.0:metadata" entityID="x"/>');
      await expect(configureSsoCommand.run(fixture.database, { account: member.accountId, 'saml-metadata': file, json: true }, io)).rejects.toMatchObject({ details: [expect.stringMatching(/IDPSSODescriptor/)] });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    const trip = await toIdentityProvider(member);
    expect((await trip.post(trip.answer())).kind).toBe('callback');
  });
});
