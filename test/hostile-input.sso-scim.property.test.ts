import fc from 'fast-check';
import type supertest from 'supertest';
import type { Credential, Harness } from './support/harness.js';
import { scimUserRoutes } from '../src/scim/scim.user-routes.js';
import { deeplyNestedJson, hostileAny, hostileQueryValue, hostileSegment, hostileString, toJson } from './support/hostile.js';
import { authorization, fingerprint, MAX_QUOTED, RUNS, SEED, useHostileTargets } from './support/hostile-harness.js';
import { digestSecret } from '../src/auth/secrets.js';
import { configureSso, samlKeyPair, samlMetadata, samlResponse } from './support/sso.js';

/**
 * Hostile input on the single sign-on return routes (what an identity provider, or anyone, posts
 * back) and on SCIM's /scim/v2 route table. The properties, and how to replay a failure from its
 * seed, are in test/support/hostile-harness.ts; hostile-input.property.test.ts covers REST and GraphQL.
 */
let harness: Harness;
let agent: ReturnType<typeof supertest>;
let credentials: Credential[];
let realIds: string[];
let provisioningCredentials: Credential[];
useHostileTargets((started) => ({ harness, agent, credentials, realIds, provisioningCredentials } = started));

// ---------------------------------------------------------------------------------------------
// Single sign-on return routes: what an identity provider (or anyone) posts back
// ---------------------------------------------------------------------------------------------

test('SSO: garbage assertions and callbacks, with live and made-up state, never answer 5xx and leak nothing', async () => {
  const saml = await harness.createAccount();
  const oidc = await harness.createAccount();
  const keys = samlKeyPair();
  const idpEntityId = 'https://idp.example.test/entity';
  await configureSso(harness.database, harness.runtime.serverSecret, { accountId: saml.id, samlMetadataXml: samlMetadata(idpEntityId, keys.certificateBase64), requireSso: false, jit: true });
  // A provider nobody listens for: discovery fails, as when an IdP is down.
  await configureSso(harness.database, harness.runtime.serverSecret, { accountId: oidc.id, oidc: { issuer: 'http://127.0.0.1:9', clientId: 'c', clientSecret: 's' }, requireSso: false, jit: false });
  const REQUEST_ID = '_hostile-request';
  let trips = 0;
  /** A round trip in flight, so the library's verification runs instead of the state check refusing first. */
  async function liveState(accountId: string, protocol: 'oidc' | 'saml'): Promise<string> {
    const state = `live-state-${trips++}-${Math.random().toString(36).slice(2)}`;
    await harness.database.em().execute(
      `insert into sso_round_trips (state_digest, account_id, interaction_uid, protocol, oidc_nonce, oidc_code_verifier_sealed, saml_request_id, expires_at)
       values (?, ?, 'no-such-interaction', ?, 'nonce', ?, ?, now() + interval '10 minutes')`,
      [digestSecret(state), accountId, protocol, protocol === 'oidc' ? 'not-a-sealed-value' : null, protocol === 'saml' ? REQUEST_ID : null],
    );
    return state;
  }
  const genuine = (overrides: Partial<Parameters<typeof samlResponse>[0]>) => samlResponse({ idpEntityId, privateKey: keys.privateKey, inResponseTo: REQUEST_ID, audience: `http://api.example.test/sso/saml/${saml.id}/metadata`, destination: 'http://api.example.test/sso/saml/acs', email: 'someone@example.com', ...overrides });
  const tampered = fc.tuple(fc.nat(), hostileString).map(([at, insert]) => {
    const xml = Buffer.from(genuine({}), 'base64').toString('utf8');
    const index = at % xml.length;
    return Buffer.from(`${xml.slice(0, index)}${insert}${xml.slice(index + 1)}`, 'utf8').toString('base64');
  });
  const samlResponses = fc.oneof(
    { weight: 2, arbitrary: hostileString },
    { weight: 2, arbitrary: hostileString.map((value) => Buffer.from(value, 'utf8').toString('base64')) },
    { weight: 3, arbitrary: tampered },
    { weight: 2, arbitrary: fc.record({ email: hostileString, audience: hostileString, inResponseTo: hostileString, nameIdFormat: hostileString }, { requiredKeys: [] }).map((overrides) => genuine(overrides)) },
    { weight: 1, arbitrary: fc.constantFrom(Buffer.from('<?xml version="1.0"?><!DOCTYPE r [<!ENTITY x SYSTEM "file:///etc/passwd">]><r>&x;</r>').toString('base64'), Buffer.from(`<r>${'<a>'.repeat(50_000)}</r>`).toString('base64'), 'A'.repeat(600_000)) },
  );
  const relay = fc.oneof({ weight: 3, arbitrary: fc.constant('live') }, { weight: 2, arbitrary: hostileString }, { weight: 1, arbitrary: fc.constant(undefined) });
  const samlPlan = fc.record({ kind: fc.constant('saml' as const), response: fc.option(samlResponses, { freq: 8 }), relay, contentType: fc.constantFrom('application/x-www-form-urlencoded', 'application/x-www-form-urlencoded', 'application/json', 'text/plain') });
  const oidcPlan = fc.record({ kind: fc.constant('oidc' as const), state: fc.oneof({ weight: 3, arbitrary: fc.constant('live') }, { weight: 2, arbitrary: hostileQueryValue }, { weight: 1, arbitrary: fc.constant(undefined) }), code: fc.option(hostileQueryValue), extra: fc.array(fc.tuple(fc.constantFrom('error', 'iss', 'state', 'code', 'session_state'), hostileQueryValue), { maxLength: 3 }) });
  await fc.assert(
    fc.asyncProperty(fc.oneof(samlPlan, oidcPlan), async (plan) => {
      let response: supertest.Response;
      if (plan.kind === 'saml') {
        const fields: Record<string, string> = {};
        if (plan.response !== null) fields.SAMLResponse = plan.response;
        if (plan.relay !== undefined) fields.RelayState = plan.relay === 'live' ? await liveState(saml.id, 'saml') : plan.relay;
        const body = plan.contentType === 'application/json' ? JSON.stringify(fields) : new URLSearchParams(fields).toString();
        response = await agent.post('/sso/saml/acs').set('Content-Type', plan.contentType).send(body).buffer(true);
      } else {
        const pairs: [string, string][] = [];
        if (plan.state !== undefined) pairs.push(['state', plan.state === 'live' ? await liveState(oidc.id, 'oidc') : plan.state]);
        if (plan.code !== null) pairs.push(['code', plan.code]);
        pairs.push(...plan.extra);
        response = await agent.get(`/sso/oidc/callback?${pairs.map(([name, value]) => `${name}=${value}`).join('&')}`).buffer(true);
      }
      const where = `${plan.kind} ${JSON.stringify(plan).slice(0, 300)}`;
      if (response.status >= 500) throw new Error(`${response.status} for ${where}: ${response.text.slice(0, 300)}`);
      expect(response.status).toBeGreaterThanOrEqual(400);
      expect(response.text).not.toMatch(/\n\s+at |SELECT |INSERT |UPDATE |signature|InResponseTo|audience/i);
    }),
    { seed: SEED, numRuns: RUNS, endOnFailure: true },
  );
});

// ---------------------------------------------------------------------------------------------
// SCIM: the /scim/v2 route table
// ---------------------------------------------------------------------------------------------

const SCIM_TYPES = new Set(['invalidFilter', 'tooMany', 'uniqueness', 'mutability', 'invalidSyntax', 'invalidPath', 'noTarget', 'invalidValue', 'invalidVers', 'sensitive']);
const SCIM_ATTRIBUTES = ['userName', 'displayName', 'name', 'name.givenName', 'name.familyName', 'name.formatted', 'emails', 'emails[type eq "work"].value', 'emails[value eq "x"]', 'title', 'timezone', 'externalId', 'active', 'roles', 'id', 'meta', 'meta.version', 'groups', 'schemas', 'nickName', 'bogus', 'a.b.c', 'emails[type eq', '[]', 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:department', 'urn:ietf:params:scim:schemas:core:2.0:User:title'];
const scimLeaf = fc.oneof(
  { weight: 3, arbitrary: hostileAny },
  { weight: 3, arbitrary: fc.constantFrom('False', 'true', 'TRUE', true, false, 'x@example.com', 'admin', 'owner', 'Europe/Paris', 'Not/AZone', '', ' ', 'a\u0000b', 'x'.repeat(101), ...(['P000000'])) },
);
const scimObject: fc.Arbitrary<Record<string, unknown>> = fc.dictionary(fc.constantFrom(...SCIM_ATTRIBUTES), fc.oneof(
  { weight: 3, arbitrary: scimLeaf },
  { weight: 1, arbitrary: fc.array(fc.dictionary(fc.constantFrom('value', 'type', 'primary', 'display'), scimLeaf, { maxKeys: 3 }), { maxLength: 3 }) },
  { weight: 1, arbitrary: fc.dictionary(fc.constantFrom('givenName', 'familyName', 'formatted'), scimLeaf, { maxKeys: 3 }) },
), { maxKeys: 8 });
const scimOperation = fc.record({
  op: fc.constantFrom('add', 'replace', 'remove', 'Replace', 'REMOVE', 'frob', 42, null),
  path: fc.option(fc.oneof(fc.constantFrom(...SCIM_ATTRIBUTES), hostileString), { freq: 3 }),
  value: fc.option(fc.oneof(scimLeaf, scimObject), { freq: 5 }),
}, { requiredKeys: [] });
const scimFilter = fc.oneof(
  { weight: 3, arbitrary: fc.tuple(fc.constantFrom('userName', 'externalId', 'id', 'emails.value', 'emails[type eq "work"].value', 'name.givenName', 'active', 'meta.created'), fc.constantFrom('eq', 'EQ', 'ne', 'co', 'sw', 'pr', 'gt'), scimLeaf).map(([attribute, op, value]) => `${attribute} ${op} ${JSON.stringify(value) ?? ''}`) },
  { weight: 1, arbitrary: fc.array(fc.constantFrom('userName eq "a@b.co"', 'id eq "P000000"', 'externalId eq "x"'), { minLength: 2, maxLength: 30 }).chain((terms) => fc.constantFrom(' and ', ' or ').map((join) => terms.join(join))) },
  { weight: 1, arbitrary: fc.constantFrom('not (userName eq "a")', 'userName eq', '((((', 'emails[type eq "work"]', 'emails[type eq "home"].value eq "x"', `userName eq "${'x'.repeat(2_000)}"`, '"', 'userName eq "a" and (', 'groups[value eq "x"]') },
  { weight: 1, arbitrary: hostileString },
);

interface ScimPlan {
  method: 'get' | 'post' | 'put' | 'patch' | 'delete';
  path: string;
  query: string;
  headers: Record<string, string>;
  body?: string;
}

function scimPlan(): fc.Arbitrary<ScimPlan> {
  const routes = [...scimUserRoutes.map((route) => ({ method: route.method, path: route.path })), ...['/ServiceProviderConfig', '/Schemas', '/Schemas/:id', '/ResourceTypes', '/Nope'].map((path) => ({ method: 'get' as const, path }))];
  return fc.constantFrom(...routes).chain((route) => {
    const segments = route.path.split('/').map((segment) => (segment.startsWith(':') ? hostileSegment(realIds) : fc.constant(segment)));
    const body = fc.oneof(
      { weight: 3, arbitrary: fc.array(scimOperation, { minLength: 0, maxLength: 4 }).map((operations) => toJson({ schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'], Operations: operations })) },
      { weight: 3, arbitrary: scimObject.map((object) => toJson({ schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'], ...object })) },
      { weight: 1, arbitrary: fc.constantFrom('{', 'null', '[]', '"x"', `{"Operations":${deeplyNestedJson(10_000, 'array')}}`, toJson({ Operations: Array.from({ length: 101 }, () => ({ op: 'replace', path: 'title', value: 'x' })) }), `{"userName":"${'x'.repeat(1_100_000)}"}`) },
      { weight: 1, arbitrary: hostileAny.map((value) => toJson(value)) },
    );
    return fc.record({
      path: fc.tuple(...segments).map((parts) => parts.join('/')),
      query: fc.array(fc.tuple(fc.constantFrom('filter', 'startIndex', 'count', 'attributes', 'filter'), fc.oneof(scimFilter.map((filter) => encodeURIComponent(filter.replace(/[\uD800-\uDFFF]/g, '\uFFFD'))), hostileQueryValue, fc.constantFrom('0', '-1', '1', '100', '101', '9999', '10001', '1.5', 'x'))), { maxLength: 3 }),
      credential: fc.oneof({ weight: 3, arbitrary: fc.constantFrom(...provisioningCredentials) }, { weight: 2, arbitrary: fc.constantFrom(...credentials) }),
      contentType: fc.oneof({ weight: 4, arbitrary: fc.constantFrom('application/scim+json', 'application/json') }, { weight: 1, arbitrary: fc.constantFrom('text/plain', 'application/x-www-form-urlencoded', 'application/scim+json; charset=latin1') }),
      ifMatch: fc.option(fc.constantFrom('W/"1"', '*', '"x"', '', ',,,', 'W/"' + '9'.repeat(50) + '"'), { freq: 4 }),
      body: route.method === 'get' || route.method === 'delete' ? fc.option(body, { freq: 8 }) : body,
    }).map(({ path, query, credential, contentType, ifMatch, body }) => ({
      method: route.method,
      path: `/scim/v2${path}`,
      query: query.map(([name, value]) => `${name}=${value}`).join('&'),
      headers: { ...authorization(credential), Accept: 'application/scim+json', ...(body !== null ? { 'Content-Type': contentType } : {}), ...(ifMatch !== null ? { 'If-Match': ifMatch } : {}) },
      ...(body !== null ? { body } : {}),
    }));
  });
}

test('SCIM: hostile requests on /scim/v2 are 4xx in the SCIM error shape, and rejected writes change nothing', async () => {
  await fc.assert(
    fc.asyncProperty(scimPlan(), async (plan) => {
      const writes = plan.method !== 'get';
      const before = writes ? await fingerprint(harness) : '';
      let request = agent[plan.method](`${plan.path}${plan.query ? `?${plan.query}` : ''}`).set(plan.headers);
      if (plan.body !== undefined) request = request.send(plan.body);
      const response = await request.buffer(true);
      const where = `${plan.method.toUpperCase()} ${plan.path.slice(0, 120)}?${plan.query.slice(0, 200)} ${JSON.stringify(plan.headers).slice(0, 200)} ${plan.body?.slice(0, 300) ?? ''}`;
      if (response.status >= 500) throw new Error(`${response.status} for ${where}: ${response.text.slice(0, 300)}`);
      expect(response.text).not.toMatch(/\n\s+at |SELECT |INSERT |UPDATE /i);
      // Node refuses a head over 16 KB before the request line is read, so before anyone knows it was for SCIM.
      if (response.status === 431) return;
      if (response.status >= 400) {
        expect(response.headers['content-type']).toMatch(/^application\/scim\+json/);
        const error = JSON.parse(response.text);
        const shaped = Array.isArray(error.schemas) && error.schemas[0] === 'urn:ietf:params:scim:api:messages:2.0:Error' && error.status === String(response.status)
          && typeof error.detail === 'string' && (error.scimType === undefined || SCIM_TYPES.has(error.scimType));
        if (!shaped) throw new Error(`not the SCIM error shape for ${where}: ${response.status} ${response.text.slice(0, 300)}`);
        if (error.detail.length > MAX_QUOTED) throw new Error(`an error detail quotes unbounded input for ${where}`);
        if (writes) {
          const after = await fingerprint(harness);
          if (after !== before) throw new Error(`rejected write (${response.status}) changed rows: ${where}`);
        }
      }
    }),
    { seed: SEED, numRuns: RUNS, endOnFailure: true },
  );
});
