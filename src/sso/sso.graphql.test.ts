import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { startHarness, type Harness } from '../../test/support/harness.js';
import { samlKeyPair, samlMetadata, startOidcIdentityProvider } from '../../test/support/sso.js';
import { fetchIssuerMetadata, isForbiddenAddress } from './sso.discovery.js';
import { checkedDestination } from '../http/outbound-fetch.js';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { issueDelegation } from '../oauth-delegations/oauth-delegation.service.js';

const CONFIGURE = `mutation($input: ConfigureSingleSignOnInput!) {
  configureSingleSignOn(input: $input) { singleSignOn { identityProvider { protocol displayName requireSso jit oidcIssuer oidcClientId oidcClientSecretStored samlIdpEntityId samlSsoUrl } } }
}`;
const DISABLE = 'mutation { disableSingleSignOn { singleSignOn { identityProvider { protocol } serviceProvider { samlEntityId } } } }';
const SHOW = '{ singleSignOn { identityProvider { protocol oidcIssuer } } }';
const SECRET = 'the provider client secret';

let harness: Harness;
let production: Harness;
let idp: Awaited<ReturnType<typeof startOidcIdentityProvider>>;
let certificateBase64: string;

beforeAll(async () => {
  harness = await startHarness();
  production = await startHarness({ settings: { nodeEnv: 'production' } });
  idp = await startOidcIdentityProvider([{ clientId: 'gateway', clientSecret: SECRET, redirectUri: 'https://api.test.example/sso/oidc/callback' }]);
  certificateBase64 = samlKeyPair().certificateBase64;
}, 90_000);

afterAll(async () => {
  await idp?.stop();
  await production?.close();
  await harness?.close();
});

function codeOf(result: { errors?: Array<{ extensions?: { code?: string } }> }): string | undefined {
  return result.errors?.[0]?.extensions?.code;
}

async function ssoRows(on: Harness, accountId: string): Promise<number> {
  const [row] = await on.database.em().execute<{ count: string }[]>('select count(*) as count from sso_configurations where account_id = ?', [accountId]);
  return Number(row!.count);
}

describe('configureSingleSignOn and disableSingleSignOn', () => {
  test('an owner configures OIDC (the discovery document fetched from a loopback issuer in development), then SAML, then disables; audited; the secret never answered', async () => {
    const account = await harness.createAccount();
    const oidc = await harness.graphql(CONFIGURE, { input: { name: 'Okta', oidc: { issuer: idp.issuer, clientId: 'gateway', clientSecret: SECRET }, requireSso: true, jit: true } }, account.key);
    expect(oidc.errors).toBeUndefined();
    expect(oidc.data.configureSingleSignOn.singleSignOn.identityProvider).toEqual({
      protocol: 'OIDC', displayName: 'Okta', requireSso: true, jit: true, oidcIssuer: idp.issuer, oidcClientId: 'gateway', oidcClientSecretStored: true, samlIdpEntityId: null, samlSsoUrl: null,
    });
    expect(JSON.stringify(oidc)).not.toContain(SECRET);

    const saml = await harness.graphql(CONFIGURE, { input: { saml: { metadataXml: samlMetadata('https://idp.example.test/entity', certificateBase64) } } }, account.key);
    expect(saml.data.configureSingleSignOn.singleSignOn.identityProvider).toMatchObject({ protocol: 'SAML', samlIdpEntityId: 'https://idp.example.test/entity', oidcIssuer: null, requireSso: false, jit: false });

    const disabled = await harness.graphql(DISABLE, {}, account.key);
    expect(disabled.data.disableSingleSignOn.singleSignOn.identityProvider).toBeNull();
    expect(disabled.data.disableSingleSignOn.singleSignOn.serviceProvider.samlEntityId).toContain(account.id);
    expect((await harness.graphql(SHOW, {}, account.key)).data.singleSignOn.identityProvider).toBeNull();

    const audit = await harness.database.em().execute<Array<{ action: string; body: unknown }>>(
      "select action, body::text as body from audit_records where account_id = ? and root_resource_type = 'sso_configuration' order by position",
      [account.id],
    );
    expect(audit.map((row) => row.action)).toEqual(['create', 'update', 'delete']);
    expect(audit.map((row) => String(row.body)).join(' ')).not.toContain(SECRET);
  });

  test('bad input is BAD_USER_INPUT and writes nothing: both or neither provider, a malformed metadata document, an issuer without a discovery document', async () => {
    const account = await harness.createAccount();
    const metadataXml = samlMetadata('https://idp.example.test/entity', certificateBase64);
    const refused: Array<Record<string, unknown>> = [
      {},
      { oidc: { issuer: idp.issuer, clientId: 'gateway', clientSecret: SECRET }, saml: { metadataXml } },
      { saml: { metadataXml: '<md:EntityDescriptor xmlns:md="urn:oasis:names:tc:SAML:2.0:metadata"><broken' } },
      { saml: { metadataXml: 'not xml at all' } },
      { oidc: { issuer: 'http://127.0.0.1:1', clientId: 'gateway', clientSecret: SECRET } },
      { oidc: { issuer: `${idp.issuer}/elsewhere`, clientId: 'gateway', clientSecret: SECRET } },
      { oidc: { issuer: 'ftp://idp.example.com', clientId: 'gateway', clientSecret: SECRET } },
    ];
    for (const input of refused) {
      const result = await harness.graphql(CONFIGURE, { input }, account.key);
      expect([input, codeOf(result)]).toEqual([input, 'BAD_USER_INPUT']);
    }
    expect(await ssoRows(harness, account.id)).toBe(0);
  });

});

describe('configureSingleSignOn answers every problem of the settings at once', () => {
  test('every problem of the provider\'s settings in one answer, each at its field', async () => {
    const account = await harness.createAccount();
    const pathsOf = (result: { errors?: Array<{ extensions?: { fields?: Array<{ path: unknown[] }> } }> }) => result.errors?.[0]?.extensions?.fields?.map((field) => field.path.join('.'));
    const bare = '<md:EntityDescriptor xmlns:md="urn:oasis:names:tc:SAML:2.0:metadata"><md:IDPSSODescriptor protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol"/></md:EntityDescriptor>';
    const saml = await harness.graphql(CONFIGURE, { input: { saml: { metadataXml: bare } } }, account.key);
    expect(saml.errors![0].extensions.fields.map((field: { message: string }) => field.message)).toEqual([
      'the SAML metadata names no entityID', 'the SAML metadata has no HTTP-Redirect SingleSignOnService', 'the SAML metadata has no signing certificate',
    ]);
    expect(pathsOf(saml)).toEqual(['input.saml.metadataXml', 'input.saml.metadataXml', 'input.saml.metadataXml']);
    const oidc = await harness.graphql(CONFIGURE, { input: { oidc: { issuer: 'ftp://idp.example.com', clientId: ' ', clientSecret: SECRET } } }, account.key);
    expect(pathsOf(oidc)).toEqual(['input.oidc.issuer', 'input.oidc.clientId']);
    expect(await ssoRows(harness, account.id)).toBe(0);
  });

  test('a name past its bound, the metadata\'s bad certificate and its missing pieces, and the choice of provider: each at its field, in one answer', async () => {
    const account = await harness.createAccount();
    const fieldsOf = (result: { errors?: Array<{ extensions: { code: string; fields: Array<{ path: unknown[]; code: string; message: string }> } }> }) => {
      expect(result.errors).toHaveLength(1);
      expect(result.errors![0]!.extensions.code).toBe('BAD_USER_INPUT');
      return result.errors![0]!.extensions.fields.map((field) => [field.path.join('.'), field.code, field.message]);
    };
    const longName = 'n'.repeat(101);
    const oidc = await harness.graphql(CONFIGURE, { input: { name: longName, oidc: { issuer: 'ftp://idp.example.com', clientId: ' ', clientSecret: SECRET } } }, account.key);
    expect(fieldsOf(oidc).map(([path, code]) => [path, code])).toEqual([['input.name', 'TOO_LONG'], ['input.oidc.issuer', 'INVALID'], ['input.oidc.clientId', 'INVALID']]);
    const broken = samlMetadata('https://idp.example.test/entity', '!!not base64!!').replace(' entityID="https://idp.example.test/entity"', '');
    expect(fieldsOf(await harness.graphql(CONFIGURE, { input: { saml: { metadataXml: broken } } }, account.key))).toEqual([
      ['input.saml.metadataXml', 'INVALID', 'the SAML metadata names no entityID'],
      ['input.saml.metadataXml', 'INVALID', 'the SAML metadata holds a signing certificate that is not base64'],
    ]);
    const both = await harness.graphql(CONFIGURE, { input: { name: longName, oidc: { issuer: idp.issuer, clientId: 'gateway', clientSecret: SECRET }, saml: { metadataXml: samlMetadata('https://idp.example.test/entity', certificateBase64) } } }, account.key);
    expect(fieldsOf(both).map(([path, code]) => [path, code])).toEqual([['input.name', 'TOO_LONG'], ['input.oidc', 'INVALID'], ['input.saml', 'INVALID']]);
    const neither = await harness.graphql(CONFIGURE, { input: { requireSso: true } }, account.key);
    expect(fieldsOf(neither).map(([path, code]) => [path, code])).toEqual([['input.oidc', 'REQUIRED'], ['input.saml', 'REQUIRED']]);
    expect(await ssoRows(harness, account.id)).toBe(0);
  });

});

describe('who may configure single sign-on', () => {
  test('only account admins: a member, a read-only user, a read-only account key are FORBIDDEN; another account is untouched', async () => {
    const account = await harness.createAccount();
    const other = await harness.createAccount();
    const input = { input: { saml: { metadataXml: samlMetadata('https://idp.example.test/entity', certificateBase64) } } };
    for (const role of ['user', 'read_only_user', 'limited_user'] as const) {
      const user = await harness.createUser(account, { role });
      expect(codeOf(await harness.graphql(CONFIGURE, input, user.key))).toBe('FORBIDDEN');
      expect(codeOf(await harness.graphql(DISABLE, {}, user.key))).toBe('FORBIDDEN');
    }
    const readOnly = await harness.accountKey(account, { readOnly: true });
    expect(codeOf(await harness.graphql(CONFIGURE, input, readOnly))).toBe('FORBIDDEN');
    expect(await ssoRows(harness, account.id)).toBe(0);

    const admin = await harness.createUser(account, { role: 'admin' });
    // An admin's token needs credentials.write; a member's token holding it is still not an admin.
    const token = async (userId: string, scopes: string) => ({ bearer: (await harness.database.transactions.run(harness.database.em(), (tx) => issueDelegation(tx, { userId, type: 'web', scopes }))).accessToken });
    const withoutScope = await harness.graphql(CONFIGURE, input, await token(admin.id, 'users.read users.write credentials.read'));
    expect(codeOf(withoutScope)).toBe('FORBIDDEN');
    expect(JSON.stringify(withoutScope.errors)).toContain('credentials.write');
    const member = await harness.createUser(account, { role: 'user' });
    expect(codeOf(await harness.graphql(CONFIGURE, input, await token(member.id, 'credentials.write')))).toBe('FORBIDDEN');
    expect(await ssoRows(harness, account.id)).toBe(0);
    expect((await harness.graphql(CONFIGURE, input, await token(admin.id, 'credentials.write'))).errors).toBeUndefined();
    expect((await harness.graphql(CONFIGURE, input, admin.key)).errors).toBeUndefined();
    expect(await ssoRows(harness, other.id)).toBe(0);
    expect((await harness.graphql(SHOW, {}, other.key)).data.singleSignOn.identityProvider).toBeNull();
    expect((await harness.graphql(DISABLE, {}, other.key)).errors).toBeUndefined();
    expect(await ssoRows(harness, account.id)).toBe(1);
  });
});

describe('the single sign-on page in a client cache', () => {
  test('SingleSignOn has one id per account, the same before and after every change: a normalized cache updates the page a change answers', async () => {
    const account = await harness.createAccount();
    const other = await harness.createAccount();
    const idOf = async (query: string, pick: (data: any) => { id: string }, variables: Record<string, unknown> = {}, key = account.key) => pick((await harness.graphql(query, variables, key)).data).id;
    const shown = await idOf('{ singleSignOn { id } }', (data) => data.singleSignOn);
    const configured = await idOf('mutation($input: ConfigureSingleSignOnInput!) { configureSingleSignOn(input: $input) { singleSignOn { id } } }', (data) => data.configureSingleSignOn.singleSignOn, { input: { saml: { metadataXml: samlMetadata('https://idp.example.test/cache', certificateBase64) } } });
    const disabled = await idOf('mutation { disableSingleSignOn { singleSignOn { id } } }', (data) => data.disableSingleSignOn.singleSignOn);
    expect(shown).toBeTruthy();
    expect([configured, disabled]).toEqual([shown, shown]);
    expect(await idOf('{ singleSignOn { id } }', (data) => data.singleSignOn, {}, other.key)).not.toBe(shown);
  });
});

describe('the issuer\'s discovery document is fetched without SSRF', () => {
  test('in production, through the API: private, link-local and loopback issuers and plain http are refused before anything is written', async () => {
    const account = await production.createAccount();
    for (const issuer of ['https://10.0.0.5', 'https://169.254.169.254', 'https://[::1]', 'https://localhost', 'https://127.0.0.1', idp.issuer, 'https://192.168.1.10:8443/realm']) {
      const result = await production.graphql(CONFIGURE, { input: { oidc: { issuer, clientId: 'gateway', clientSecret: SECRET } } }, account.key);
      expect([issuer, codeOf(result)]).toEqual([issuer, 'BAD_USER_INPUT']);
      // Refused for where it points, not because a connection failed.
      expect([issuer, JSON.stringify(result.errors)]).toEqual([issuer, expect.stringMatching(/private, loopback or link-local|https only/)]);
    }
    expect(await ssoRows(production, account.id)).toBe(0);
  });

  test('every resolved address is checked in production; a DNS name that resolves to a private address is refused', async () => {
    const resolvingTo = (...addresses: string[]) => async () => addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
    const refusal = (issuer: string, resolve: Parameters<typeof fetchIssuerMetadata>[1]['resolve']) =>
      fetchIssuerMetadata(issuer, { production: true, resolve }).then(() => 'fetched', (error: { details?: string[] }) => error.details?.join(' ') ?? 'error');
    expect(await refusal('https://idp.corp.example', resolvingTo('10.1.2.3'))).toMatch(/private, loopback or link-local/);
    expect(await refusal('https://idp.corp.example', resolvingTo('93.184.216.34', '172.16.0.9'))).toMatch(/private, loopback or link-local/);
    expect(await refusal('https://metadata.example', resolvingTo('169.254.169.254'))).toMatch(/private, loopback or link-local/);
    expect(await refusal('https://six.example', resolvingTo('fd00::1'))).toMatch(/private, loopback or link-local/);
    expect(await refusal('https://mapped.example', resolvingTo('::ffff:127.0.0.1'))).toMatch(/private, loopback or link-local/);
    expect(await refusal('https://localhost', undefined)).toMatch(/private, loopback or link-local/);
    expect(await refusal('http://idp.example.com', resolvingTo('93.184.216.34'))).toMatch(/https only/);
    for (const address of ['10.0.0.1', '127.0.0.1', '169.254.169.254', '192.168.0.1', '172.31.255.255', '100.64.0.1', '0.0.0.0', '::1', 'fe80::1', 'fc00::1', '::']) {
      expect([address, isForbiddenAddress(address)]).toEqual([address, true]);
    }
    for (const address of ['93.184.216.34', '8.8.8.8', '172.32.0.1', '2606:4700::1111']) {
      expect([address, isForbiddenAddress(address)]).toEqual([address, false]);
    }
  });

  test('the endpoints a discovery document names for the server to call pass the same guard: a token endpoint on a metadata or private address is refused', async () => {
    const server = http.createServer((req, res) => {
      const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ issuer, authorization_endpoint: `${issuer}/authorize`, token_endpoint: 'http://169.254.169.254/latest/meta-data', jwks_uri: `${issuer}/jwks` }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const refusal = (at: string, production: boolean) => fetchIssuerMetadata(at, { production }).then(() => 'fetched', (error: { details?: string[] }) => error.details?.join(' ') ?? 'error');
      expect(await refusal(issuer, false)).toMatch(/token_endpoint http:\/\/169\.254\.169\.254\/latest\/meta-data cannot be called/);
      // In production a named endpoint on a private address is refused like an issuer there.
      const production = await checkedDestination('https://10.0.0.7/jwks', { production: true }).then(() => 'allowed', (error: Error) => error.message);
      expect(production).toMatch(/private, loopback or link-local/);
    } finally {
      server.close();
    }
  });

  test('outside production, http on loopback is allowed; the connection goes to the address that was checked', async () => {
    const metadata = await fetchIssuerMetadata(idp.issuer, { production: false });
    expect(metadata.issuer).toBe(idp.issuer);
    expect(metadata.jwks_uri).toMatch(/^http:\/\/127\.0\.0\.1/);
    // `localhost` resolved (here, by the test) to the issuer's address: fetched from that address, whose document names another issuer.
    const port = new URL(idp.issuer).port;
    const pinned = await fetchIssuerMetadata(`http://localhost:${port}`, { production: false, resolve: async () => [{ address: '127.0.0.1', family: 4 }] })
      .then(() => 'fetched', (error: { details?: string[] }) => error.details?.join(' '));
    expect(pinned).toMatch(/names another issuer/);
    // http to anything but loopback is refused even in development.
    const remote = await fetchIssuerMetadata('http://idp.example.com', { production: false, resolve: async () => [{ address: '93.184.216.34', family: 4 }] })
      .then(() => 'fetched', (error: { details?: string[] }) => error.details?.join(' '));
    expect(remote).toMatch(/https only/);
  });
});
