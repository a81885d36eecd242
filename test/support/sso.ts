import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateKeyPairSync, randomUUID, sign, type KeyObject } from 'node:crypto';
import { inflateRawSync } from 'node:zlib';
import Provider from 'oidc-provider';
import * as client from 'openid-client';
import { signSamlPost } from '@node-saml/node-saml/lib/saml-post-signing.js';
import type { Database } from '../../src/db/database.js';
import { SsoService, ssoSecretSealer, type ConfigureSsoInput } from '../../src/sso/sso.service.js';
import { CookieJar, browse, discover, formOf, registerApp, type BrowseResult } from './oauth-server.js';

export const APP_REDIRECT = 'http://127.0.0.1/mobile/callback';

/** A company's OpenID provider: oidc-provider with its development login (any login, any password). */
export async function startOidcIdentityProvider(clients: Array<{ clientId: string; clientSecret: string; redirectUri: string }>, emailVerified: (sub: string) => boolean = () => true) {
  const server = http.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const provider = new Provider(issuer, {
    clients: clients.map((entry) => ({ client_id: entry.clientId, client_secret: entry.clientSecret, redirect_uris: [entry.redirectUri], response_types: ['code'], grant_types: ['authorization_code'] })),
    claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'] },
    scopes: ['openid', 'email', 'profile'],
    features: { devInteractions: { enabled: true } },
    cookies: { keys: ['test identity provider cookie key'] },
    ttl: { Interaction: 600, Session: 600, Grant: 600, AccessToken: 600, IdToken: 600, AuthorizationCode: 60 },
    // The ID token carries the claims itself, as Okta and Entra ID send them.
    conformIdTokenClaims: false,
    async findAccount(_ctx, sub) {
      return { accountId: sub, claims: () => ({ sub, email: sub, email_verified: emailVerified(sub), name: `IdP ${sub.split('@')[0]}` }) };
    },
  });
  server.on('request', provider.callback());
  return {
    issuer,
    async stop() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** Configures the account's provider as the operator would (owner rights) unless `savedBy` says who. */
export async function configureSso(database: Database, serverSecret: Buffer, input: Omit<ConfigureSsoInput, 'savedBy'> & Partial<Pick<ConfigureSsoInput, 'savedBy'>>) {
  return new SsoService(database.em(), database.transactions, ssoSecretSealer(serverSecret)).configure({ savedBy: 'operator', ...input });
}

/** A mobile app of the account and the sign-in page a browser gets for it. */
export async function openSignIn(database: Database, serverSecret: Buffer, baseUrl: string, accountId: string) {
  const { app } = await registerApp(database, serverSecret, { accountId, kind: 'mobile', redirectUris: [APP_REDIRECT], name: 'Mobile' });
  const config = await discover(baseUrl, app.clientId, client.None());
  const jar = new CookieJar();
  const verifier = client.randomPKCECodeVerifier();
  const state = client.randomState();
  const url = client.buildAuthorizationUrl(config, { redirect_uri: APP_REDIRECT, scope: 'openid users.read', code_challenge: await client.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256', state });
  const page = await browse(jar, url, APP_REDIRECT);
  if (page.kind !== 'page') throw new Error('expected the sign-in page');
  return { page, jar, config, verifier, state };
}

/** Posts the sign-in page's first form (the "Sign in with ..." one when offered), stopping at `stopAt`. */
export async function chooseProvider(jar: CookieJar, baseUrl: string, html: string, email: string, stopAt: string): Promise<BrowseResult> {
  const form = formOf(html);
  return browse(jar, new URL(form.action, baseUrl), stopAt, { method: 'POST', form: { csrf: form.csrf, email } });
}

/** The development login and consent pages of the oidc-provider IdP; stops at our callback. */
export async function passIdentityProvider(jar: CookieJar, page: BrowseResult, login: string, stopAt: string): Promise<BrowseResult> {
  let result = page;
  for (let step = 0; step < 3 && result.kind === 'page'; step += 1) {
    const action = /<form autocomplete="off" action="([^"]+)"/.exec(result.html)?.[1];
    if (!action) return result;
    const prompt = /name="prompt" value="(\w+)"/.exec(result.html)?.[1];
    const fields: Record<string, string> = prompt === 'login' ? { prompt, login, password: 'anything' } : { prompt: prompt ?? 'consent' };
    result = await browse(jar, new URL(action, result.url), stopAt, { method: 'POST', form: fields });
  }
  return result;
}

/** A SAML identity provider's key pair and self-signed certificate (openssl, made for the test). */
export function samlKeyPair(): { privateKey: string; certificate: string; certificateBase64: string } {
  const dir = mkdtempSync(join(tmpdir(), 'saml-idp-'));
  try {
    execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-subj', '/CN=test-idp', '-days', '2', '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem')], { stdio: 'ignore' });
    const certificate = readFileSync(join(dir, 'cert.pem'), 'utf8');
    return { privateKey: readFileSync(join(dir, 'key.pem'), 'utf8'), certificate, certificateBase64: certificate.replace(/-----[A-Z ]+-----|\s/g, '') };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export const SAML_SSO_URL = 'https://idp.example.test/saml/sso';

export function samlMetadata(entityId: string, certificateBase64: string): string {
  return `<?xml version="1.0"?>
<md:EntityDescriptor xmlns:md="urn:oasis:names:tc:SAML:2.0:metadata" entityID="${entityId}">
  <md:IDPSSODescriptor WantAuthnRequestsSigned="false" protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol">
    <md:KeyDescriptor use="signing"><ds:KeyInfo xmlns:ds="http://www.w3.org/2000/09/xmldsig#"><ds:X509Data><ds:X509Certificate>${certificateBase64}</ds:X509Certificate></ds:X509Data></ds:KeyInfo></md:KeyDescriptor>
    <md:NameIDFormat>urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress</md:NameIDFormat>
    <md:SingleSignOnService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect" Location="${SAML_SSO_URL}"/>
  </md:IDPSSODescriptor>
</md:EntityDescriptor>`;
}

/** What the SP's redirect to the IdP carried: the AuthnRequest's id and the RelayState. */
export function readAuthnRequest(url: URL): { id: string; relayState: string; issuer: string; acs: string } {
  const xml = inflateRawSync(Buffer.from(url.searchParams.get('SAMLRequest')!, 'base64')).toString('utf8');
  return {
    id: /ID="([^"]+)"/.exec(xml)![1]!,
    issuer: /<saml:Issuer[^>]*>([^<]+)</.exec(xml)![1]!,
    acs: /AssertionConsumerServiceURL="([^"]+)"/.exec(xml)![1]!,
    relayState: url.searchParams.get('RelayState')!,
  };
}

export interface SamlResponseOptions {
  idpEntityId: string;
  privateKey?: string;
  inResponseTo: string;
  audience: string;
  destination: string;
  email: string;
  notBefore?: Date;
  notOnOrAfter?: Date;
  nameIdFormat?: string;
}

const xmlEscape = (value: string) => value.replace(/[&<>"']/g, (char) => `&#${char.charCodeAt(0)};`);

/** A SAML Response as an IdP posts it, its assertion signed (unless no key is given). */
export function samlResponse(given: SamlResponseOptions): string {
  const options = { ...given, ...Object.fromEntries(Object.entries(given).filter(([key, value]) => key !== 'privateKey' && typeof value === 'string').map(([key, value]) => [key, xmlEscape(value as string)])) } as SamlResponseOptions;
  const now = new Date();
  const notBefore = (options.notBefore ?? new Date(now.getTime() - 60_000)).toISOString();
  const notOnOrAfter = (options.notOnOrAfter ?? new Date(now.getTime() + 5 * 60_000)).toISOString();
  const assertionId = `_a${randomUUID().replace(/-/g, '')}`;
  const assertion = `<saml:Assertion xmlns:saml="urn:oasis:names:tc:SAML:2.0:assertion" ID="${assertionId}" Version="2.0" IssueInstant="${now.toISOString()}"><saml:Issuer>${options.idpEntityId}</saml:Issuer><saml:Subject><saml:NameID Format="${options.nameIdFormat ?? 'urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress'}">${options.email}</saml:NameID><saml:SubjectConfirmation Method="urn:oasis:names:tc:SAML:2.0:cm:bearer"><saml:SubjectConfirmationData InResponseTo="${options.inResponseTo}" NotOnOrAfter="${notOnOrAfter}" Recipient="${options.destination}"/></saml:SubjectConfirmation></saml:Subject><saml:Conditions NotBefore="${notBefore}" NotOnOrAfter="${notOnOrAfter}"><saml:AudienceRestriction><saml:Audience>${options.audience}</saml:Audience></saml:AudienceRestriction></saml:Conditions><saml:AuthnStatement AuthnInstant="${now.toISOString()}" SessionIndex="${assertionId}"><saml:AuthnContext><saml:AuthnContextClassRef>urn:oasis:names:tc:SAML:2.0:ac:classes:PasswordProtectedTransport</saml:AuthnContextClassRef></saml:AuthnContext></saml:AuthnStatement></saml:Assertion>`;
  const response = `<samlp:Response xmlns:samlp="urn:oasis:names:tc:SAML:2.0:protocol" xmlns:saml="urn:oasis:names:tc:SAML:2.0:assertion" ID="_r${randomUUID().replace(/-/g, '')}" Version="2.0" IssueInstant="${now.toISOString()}" Destination="${options.destination}" InResponseTo="${options.inResponseTo}"><saml:Issuer>${options.idpEntityId}</saml:Issuer><samlp:Status><samlp:StatusCode Value="urn:oasis:names:tc:SAML:2.0:status:Success"/></samlp:Status>${assertion}</samlp:Response>`;
  const signed = options.privateKey
    ? signSamlPost(response, '/*[local-name()="Response"]/*[local-name()="Assertion"]', { privateKey: options.privateKey, signatureAlgorithm: 'sha256', digestAlgorithm: 'sha256' })
    : response;
  return Buffer.from(signed, 'utf8').toString('base64');
}

function signJwt(claims: Record<string, unknown>, privateKey: KeyObject, kid: string): string {
  const encode = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
  const input = `${encode({ alg: 'RS256', typ: 'JWT', kid })}.${encode(claims)}`;
  return `${input}.${sign('sha256', Buffer.from(input), privateKey).toString('base64url')}`;
}

/**
 * An OpenID provider whose token endpoint answers with an ID token signed by a key it never
 * published (as a forger would: right claims, right nonce, the published key's kid), or, with
 * `forge: false`, a genuine one: so a test can show the refusal is the signature's doing.
 */
export async function startForgingIdentityProvider(clientId: string, forge: () => boolean) {
  const published = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const forger = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const kid = 'published-key';
  const nonces = new Map<string, { nonce: string; email: string }>();
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', issuer);
    const json = (body: unknown) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    if (url.pathname === '/.well-known/openid-configuration') {
      return json({ issuer, authorization_endpoint: `${issuer}/authorize`, token_endpoint: `${issuer}/token`, jwks_uri: `${issuer}/jwks`, response_types_supported: ['code'], subject_types_supported: ['public'], id_token_signing_alg_values_supported: ['RS256'], code_challenge_methods_supported: ['S256'] });
    }
    if (url.pathname === '/jwks') return json({ keys: [{ ...published.publicKey.export({ format: 'jwk' }), kid, use: 'sig', alg: 'RS256' }] });
    if (url.pathname === '/authorize') {
      const code = randomUUID();
      nonces.set(code, { nonce: url.searchParams.get('nonce') ?? '', email: url.searchParams.get('login_hint') ?? '' });
      const back = new URL(url.searchParams.get('redirect_uri')!);
      back.searchParams.set('code', code);
      back.searchParams.set('state', url.searchParams.get('state') ?? '');
      return res.writeHead(302, { location: back.href }).end();
    }
    if (url.pathname === '/token') {
      let body = '';
      req.on('data', (chunk) => { body += String(chunk); });
      req.on('end', () => {
        const issued = nonces.get(new URLSearchParams(body).get('code') ?? '');
        const now = Math.floor(Date.now() / 1000);
        const claims = { iss: issuer, aud: clientId, sub: issued?.email, email: issued?.email, email_verified: true, nonce: issued?.nonce, iat: now, exp: now + 300 };
        json({ access_token: randomUUID(), token_type: 'Bearer', expires_in: 300, id_token: signJwt(claims, forge() ? forger.privateKey : published.privateKey, kid) });
      });
      return;
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    issuer,
    async stop() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
