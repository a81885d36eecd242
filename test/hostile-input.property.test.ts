import zlib from 'node:zlib';
import fc from 'fast-check';
import supertest from 'supertest';
import {
  buildClientSchema,
  getIntrospectionQuery,
  getNamedType,
  isEnumType,
  isInputObjectType,
  isListType,
  isNonNullType,
  isObjectType,
  isInterfaceType,
  parse,
  type GraphQLField,
  type GraphQLInputType,
  type GraphQLSchema,
  type IntrospectionQuery,
  OperationTypeNode,
} from 'graphql';
import type { Router } from 'express';
import { features } from '../src/app/features.js';
import type { HttpRouteDeps } from '../src/app/feature.js';
import { startHarness, type Credential, type Harness } from './support/harness.js';
import { createLogger } from '../src/logging/logger.js';
import { scimUserRoutes } from '../src/scim/scim.user-routes.js';
import { ProvisioningTokensService } from '../src/scim/provisioning-tokens.service.js';
import {
  GRAPHQL_CLIENT_ERROR_CODES,
  REST_CLIENT_ERROR_CODES,
  deeplyNestedJson,
  hostileAny,
  hostileQueryValue,
  hostileSegment,
  hostileString,
  snakeCase,
  toJson,
} from './support/hostile.js';
import { digestSecret } from '../src/auth/secrets.js';
import { configureSso, samlKeyPair, samlMetadata, samlResponse } from './support/sso.js';

/**
 * Hostile input, derived from what the product declares rather than from a list: every REST row
 * and plain HTTP route of every feature, and every root field of the GraphQL schema as
 * introspection shows it. Properties: never a 5xx; every REST error is the v2 envelope with a
 * documented code; every GraphQL error carries extensions.code (a client-error code); no message quotes
 * more than a short excerpt of the input; a rejected write changes no row. Seeded: set
 * HOSTILE_INPUT_SEED to replay a failure (fast-check prints the seed and the shrunk
 * counterexample); HOSTILE_INPUT_RUNS raises the number of runs per face.
 */
const SEED = Number(process.env.HOSTILE_INPUT_SEED ?? Math.floor(Math.random() * 2 ** 31));
const RUNS = Number(process.env.HOSTILE_INPUT_RUNS ?? 100);
/** No error message may carry more than a short excerpt of what the client sent. */
const MAX_QUOTED = 1_000;

let harness: Harness;
let agent: ReturnType<typeof supertest>;
let credentials: Credential[];
let realIds: string[];
let schema: GraphQLSchema;
let provisioningCredentials: Credential[];

function authorization(credential: Credential): Record<string, string> {
  if (!credential) return {};
  if ('token' in credential) return { Authorization: `Token token=${credential.token}` };
  if ('bearer' in credential) return { Authorization: `Bearer ${credential.bearer}` };
  return { Authorization: credential.header };
}

/**
 * Rows a refused request writes on purpose: a failed sign-in is counted (that is the per-email and
 * per-address limit), and the authorization server makes its signing key on first use.
 */
const BOOKKEEPING_TABLES = new Set(['sign_in_attempts', 'oauth_signing_keys']);

/** A digest of every row of every product table: equal before and after means nothing was written. */
async function fingerprint(): Promise<string> {
  const em = harness.database.em();
  const tables = await em.execute<{ tablename: string }[]>("select tablename from pg_tables where schemaname = 'public' order by tablename");
  const parts: string[] = [];
  for (const { tablename } of tables) {
    if (BOOKKEEPING_TABLES.has(tablename)) continue;
    // A credential's `last_used_at` is bookkeeping too: any request with a credential may record its use.
    const [row] = await em.execute<{ digest: string | null }[]>(`select md5(coalesce(string_agg(r, '|' order by r), '')) as digest from (select (to_jsonb(t) - 'last_used_at')::text as r from "${tablename}" t) rows`);
    parts.push(`${tablename}:${row?.digest}`);
  }
  return parts.join(',');
}

beforeAll(async () => {
  harness = await startHarness();
  // The app's own server, so Node's refusals (431 for a head over 16 KB) go through its clientError handling too.
  await new Promise<void>((resolve) => harness.httpServer.listen(0, '127.0.0.1', resolve));
  agent = supertest(harness.httpServer);
  const account = await harness.createAccount();
  const member = await harness.createUser(account, { role: 'user' });
  const admin = await harness.createUser(account, { role: 'admin' });
  credentials = [account.key, await harness.accountKey(account, { readOnly: true }), member.key, admin.key, undefined, { header: 'Token token=forged' }, { bearer: 'x'.repeat(300) }];
  realIds = [account.ownerId, member.id, admin.id, 'P000000', 'me'];
  const provisioning = await harness.database.transactions.run(harness.database.em(), (tx) => new ProvisioningTokensService(tx).create(account.id));
  const otherAccount = await harness.createAccount();
  const otherProvisioning = await harness.database.transactions.run(harness.database.em(), (tx) => new ProvisioningTokensService(tx).create(otherAccount.id));
  provisioningCredentials = [{ bearer: provisioning.token }, { bearer: otherProvisioning.token }, { bearer: provisioning.token }];
  const introspection = await agent.post('/graphql').set(authorization(account.key)).send({ query: getIntrospectionQuery() });
  schema = buildClientSchema(introspection.body.data as IntrospectionQuery);
});

afterAll(async () => {
  await harness.close();
});

// ---------------------------------------------------------------------------------------------
// REST: the route table
// ---------------------------------------------------------------------------------------------

interface DerivedRoute {
  method: 'get' | 'post' | 'put' | 'delete';
  path: string;
  /** Query parameter names the row reads, from its variable mapping and its GraphQL variables. */
  queryNames: string[];
  /** Body keys: snake_case names of the operation's input fields, and the row's envelope keys. */
  bodyKeys: string[];
  envelopeKeys: string[];
}

function inputFieldNames(type: GraphQLInputType, into: Set<string>, seen = new Set<string>()): void {
  const named = getNamedType(type);
  if (!isInputObjectType(named) || seen.has(named.name)) return;
  seen.add(named.name);
  for (const field of Object.values(named.getFields())) {
    into.add(snakeCase(field.name));
    inputFieldNames(field.type, into, seen);
  }
}

/**
 * The v2 error envelope is the REST facade's shape. The calendar feed answers calendar apps, and
 * the sign-in pages and OAuth endpoints answer browsers and OAuth clients in their own standard
 * shapes (HTML pages, RFC 6749 errors, SAML metadata); for those the properties are the other ones: no 5xx, no leak.
 */
function speaksV2Envelope(path: string): boolean {
  return !path.startsWith('/private/') && !path.startsWith('/oauth/') && !path.startsWith('/.well-known/') && !path.startsWith('/sso/');
}

function deriveRestRoutes(deps: HttpRouteDeps): DerivedRoute[] {
  const rows = features.flatMap((feature) => feature.routes).map((route) => {
    const source = route.variables.toString();
    const queryNames = new Set<string>();
    const bodyKeys = new Set<string>();
    const document = parse(route.operation.source);
    for (const definition of document.definitions) {
      if (definition.kind !== 'OperationDefinition') continue;
      for (const variable of definition.variableDefinitions ?? []) {
        queryNames.add(snakeCase(variable.variable.name.value));
        const typeName = (function unwrap(node): string { return 'type' in node ? unwrap(node.type) : node.name.value; })(variable.type);
        const type = schema.getType(typeName);
        if (type && isInputObjectType(type)) inputFieldNames(type, bodyKeys);
      }
    }
    for (const match of source.matchAll(/\(\s*query\s*,\s*'([\w[\]]+)'/g)) queryNames.add(match[1]!);
    if (/classicPagination/.test(source)) ['limit', 'offset', 'total'].forEach((name) => queryNames.add(name));
    if (/cursorPagination/.test(source)) ['limit', 'cursor'].forEach((name) => queryNames.add(name));
    if (/includes\(/.test(source)) queryNames.add('include');
    const envelopeKeys = [...source.matchAll(/bodyField\(\s*body\s*,\s*'(\w+)'/g)].map((match) => match[1]!);
    for (const key of [...queryNames]) queryNames.add(`${key}[]`);
    return { method: route.method, path: route.path, queryNames: [...queryNames], bodyKeys: [...bodyKeys], envelopeKeys };
  });
  // Features' plain routes (the calendar feed), recorded by registering them on a stand-in router.
  const plain: DerivedRoute[] = [];
  const recorder = new Proxy({}, {
    // Middleware without a path (`use`) is not a route of its own.
    get: (_target, method: string) => (path: unknown) => {
      if (method === 'use' || typeof path !== 'string') return;
      plain.push({ method: method as DerivedRoute['method'], path, queryNames: [], bodyKeys: [], envelopeKeys: [] });
    },
  }) as unknown as Router;
  for (const feature of features) feature.httpRoutes?.(recorder, deps);
  return [...rows, ...plain];
}

function bodyValue(keys: string[], depth: number): fc.Arbitrary<unknown> {
  const leaf = fc.oneof({ weight: 3, arbitrary: hostileAny }, { weight: 2, arbitrary: fc.constantFrom(...realIds, 'user', 'incident', 'business_service', 'web', 'mobile', 'x@example.com', 'Europe/Paris') });
  if (depth === 0 || keys.length === 0) return leaf;
  const object = fc.dictionary(fc.constantFrom(...keys), bodyValue(keys, depth - 1), { maxKeys: 5 });
  return fc.oneof({ weight: 3, arbitrary: leaf }, { weight: 2, arbitrary: object }, { weight: 1, arbitrary: fc.array(object, { maxLength: 3 }) });
}

interface RestRequestPlan {
  route: DerivedRoute;
  path: string;
  query: string;
  credential: Credential;
  headers: Record<string, string>;
  body: string | Buffer | undefined;
}

const CONTENT_TYPES = ['application/json', 'application/json; charset=utf-8', 'application/json; charset=latin1', 'application/vnd.api+json', 'text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x'];
const ACCEPTS = ['application/vnd.pagerduty+json;version=2', 'application/json', '*/*', 'application/vnd.pagerduty+json;version=1', 'text/html', ''];

function restPlan(routes: DerivedRoute[]): fc.Arbitrary<RestRequestPlan> {
  return fc.constantFrom(...routes).chain((route) => {
    const segments = route.path.split('/').map((segment) => (segment.startsWith(':') ? hostileSegment(realIds) : fc.constant(segment)));
    const names = route.queryNames.length ? route.queryNames : ['query'];
    const queryPairs = fc.array(fc.tuple(fc.oneof({ weight: 5, arbitrary: fc.constantFrom(...names) }, { weight: 1, arbitrary: fc.constantFrom('%ff', 'a%00b', 'unknown') }), hostileQueryValue), { maxLength: 4 });
    const keys = [...route.bodyKeys, ...route.envelopeKeys, 'type', 'id'];
    const jsonBody = fc.oneof(
      { weight: 4, arbitrary: fc.tuple(fc.constantFrom(...(route.envelopeKeys.length ? route.envelopeKeys : ['subscribables', 'user'])), bodyValue(keys, 3)).map(([key, value]) => toJson({ [key]: value })) },
      { weight: 2, arbitrary: bodyValue(keys, 3).map((value) => toJson(value)) },
      { weight: 1, arbitrary: fc.constantFrom('{', 'null', '42', '"text"', '[]', '{"user":', deeplyNestedJson(10_000, 'array'), `{"user":{"type":${deeplyNestedJson(10_000, 'object')}}}`, `{"subscribables":[{"subscribable_type":${deeplyNestedJson(10_000, 'array')},"subscribable_id":"x"}]}`, `{"user":{"name":"${'x'.repeat(1_100_000)}"}}`) },
    );
    const encoding = fc.constantFrom(undefined, undefined, undefined, 'gzip', 'deflate', 'br', 'identity', 'compress', 'gzip-real');
    return fc.record({
      route: fc.constant(route),
      path: fc.tuple(...segments).map((parts) => parts.join('/')),
      query: queryPairs.map((pairs) => pairs.map(([name, value]) => `${name.includes('%') ? name : encodeURIComponent(name)}=${value}`).join('&')),
      credential: fc.constantFrom(...credentials),
      contentType: fc.oneof({ weight: 4, arbitrary: fc.constant('application/json') }, { weight: 1, arbitrary: fc.constantFrom(...CONTENT_TYPES) }),
      accept: fc.oneof({ weight: 4, arbitrary: fc.constant(ACCEPTS[0]!) }, { weight: 1, arbitrary: fc.constantFrom(...ACCEPTS) }),
      encoding,
      body: route.method === 'get' || route.method === 'delete' ? fc.option(jsonBody, { freq: 6 }) : jsonBody,
    }).map(({ route, path, query, credential, contentType, accept, encoding, body }) => {
      const headers: Record<string, string> = { ...authorization(credential), ...(accept ? { Accept: accept } : {}) };
      let payload: string | Buffer | undefined = body ?? undefined;
      if (payload !== undefined) {
        headers['Content-Type'] = contentType;
        if (encoding === 'gzip-real') {
          headers['Content-Encoding'] = 'gzip';
          payload = zlib.gzipSync(payload);
        } else if (encoding) {
          headers['Content-Encoding'] = encoding;
        }
      }
      return { route, path, query, credential, headers, body: payload };
    });
  });
}

function describeRest(plan: RestRequestPlan): string {
  const body = plan.body === undefined ? '' : ` body(${plan.body.length} bytes): ${plan.body.toString().slice(0, 120)}`;
  return `${plan.route.method.toUpperCase()} ${plan.path.slice(0, 120)}?${plan.query.slice(0, 120)} ${JSON.stringify(plan.headers).slice(0, 200)}${body}`;
}

test('REST: hostile requests derived from the route table are 4xx with the v2 envelope, and rejected writes change nothing', async () => {
  const routes = deriveRestRoutes({ database: harness.database, runtime: harness.runtime, logger: createLogger({ logLevel: 'silent' }), limitPerAddress: (_req, _res, next) => next() });
  expect(routes.length).toBeGreaterThanOrEqual(15);
  await fc.assert(
    fc.asyncProperty(restPlan(routes), async (plan) => {
      const writes = plan.route.method !== 'get';
      const before = writes ? await fingerprint() : '';
      let request = agent[plan.route.method](`${plan.path}${plan.query ? `?${plan.query}` : ''}`).set(plan.headers);
      if (plan.body !== undefined) request = request.send(plan.body);
      const response = await request.buffer(true);
      const where = describeRest(plan);
      if (response.status >= 500) throw new Error(`${response.status} for ${where}: ${response.text.slice(0, 300)}`);
      expect(response.text).not.toMatch(/\n\s+at |SELECT |INSERT |UPDATE /i);
      if (response.status >= 400 && speaksV2Envelope(plan.route.path)) {
        expect(response.headers['content-type']).toMatch(/^application\/json/);
        const error = JSON.parse(response.text).error;
        if (typeof error?.message !== 'string' || !REST_CLIENT_ERROR_CODES.has(error.code) || !Array.isArray(error.errors) || !error.errors.every((detail: unknown) => typeof detail === 'string')) {
          throw new Error(`no v2 envelope with a documented code for ${where}: ${response.status} ${response.text.slice(0, 300)}`);
        }
        if (error.errors.some((detail: string) => detail.length > MAX_QUOTED)) throw new Error(`an error detail quotes unbounded input for ${where}`);
      }
      if (writes && response.status >= 400) {
        const after = await fingerprint();
        if (after !== before) throw new Error(`rejected write (${response.status}) changed rows: ${where}`);
      }
    }),
    { seed: SEED, numRuns: RUNS, endOnFailure: true },
  );
});

// ---------------------------------------------------------------------------------------------
// GraphQL: every root field, arguments and input fields from introspection
// ---------------------------------------------------------------------------------------------

function plausibleScalar(name: string): fc.Arbitrary<unknown> {
  switch (name) {
    case 'Int': return fc.oneof(fc.integer({ min: -5, max: 150 }), fc.constantFrom(0, 1, 25, 100, 101, 10_001, 2 ** 31, -(2 ** 31)));
    case 'Float': return fc.double();
    case 'Boolean': return fc.boolean();
    case 'ID': return fc.constantFrom(...realIds);
    case 'EmailAddress': return fc.constantFrom('someone@example.com', 'a@b.co', `${'x'.repeat(200)}@example.com`);
    case 'TimeZone': return fc.constantFrom('Europe/Paris', 'Etc/UTC', 'Not/AZone');
    case 'DateTime': return fc.constantFrom('2026-01-01T00:00:00Z', '2026-13-01T00:00:00Z');
    default: return fc.string({ maxLength: 10 });
  }
}

function argumentValue(type: GraphQLInputType, depth = 0): fc.Arbitrary<unknown> {
  if (isNonNullType(type)) return fc.oneof({ weight: 8, arbitrary: argumentValue(type.ofType, depth) }, { weight: 1, arbitrary: fc.constant(null) });
  const hostile = { weight: 1, arbitrary: hostileAny };
  if (isListType(type)) {
    return fc.oneof({ weight: 5, arbitrary: fc.array(argumentValue(type.ofType, depth + 1), { maxLength: 3 }) }, { weight: 1, arbitrary: fc.array(argumentValue(type.ofType, depth + 1), { minLength: 101, maxLength: 102 }) }, hostile);
  }
  if (isInputObjectType(type)) {
    if (depth > 4) return fc.constant({});
    const fields = Object.values(type.getFields());
    const record = fc.record(Object.fromEntries(fields.map((field) => [field.name, argumentValue(field.type, depth + 1)])), {
      requiredKeys: fields.filter((field) => isNonNullType(field.type)).map((field) => field.name),
    });
    return fc.oneof({ weight: 6, arbitrary: record }, hostile, { weight: 1, arbitrary: fc.record(Object.fromEntries(fields.map((field) => [field.name, argumentValue(field.type, depth + 1)])), { requiredKeys: [] }) });
  }
  if (isEnumType(type)) return fc.oneof({ weight: 5, arbitrary: fc.constantFrom(...type.getValues().map((value) => value.name)) }, hostile);
  const name = getNamedType(type).name;
  return fc.oneof({ weight: 4, arbitrary: plausibleScalar(name) }, { weight: 3, arbitrary: hostileString }, hostile, { weight: 1, arbitrary: fc.constant(null) });
}

interface RootField {
  operation: 'query' | 'mutation';
  field: GraphQLField<unknown, unknown>;
}

function selectionFor(field: GraphQLField<unknown, unknown>): string {
  const named = getNamedType(field.type);
  return isObjectType(named) || isInterfaceType(named) ? ' { __typename }' : '';
}

interface GraphQLPlan {
  label: string;
  mutationField?: string;
  credential: Credential;
  headers: Record<string, string>;
  body: string | Buffer;
}

function operationPlan(root: RootField): fc.Arbitrary<GraphQLPlan> {
  const args = root.field.args;
  const argumentValues = fc.record(Object.fromEntries(args.map((argument) => [argument.name, argumentValue(argument.type)])), { requiredKeys: [] });
  const inlineLiteral = fc.constantFrom(undefined, undefined, undefined, `[${'['.repeat(10_000)}${']'.repeat(10_000)}]`, '"a\\u0000b"', `"${'x'.repeat(100_000)}"`, `{${'a:{'.repeat(3_000)}${'}'.repeat(3_000)}}`);
  return fc.record({ values: argumentValues, literal: inlineLiteral, credential: fc.constantFrom(...credentials) }).map(({ values, literal, credential }) => {
    const given = args.filter((argument) => argument.name in values && values[argument.name as keyof typeof values] !== undefined);
    const declarations = given.map((argument, index) => `$v${index}: ${argument.type.toString()}`);
    const passed = given.map((argument, index) => `${argument.name}: $v${index}`);
    if (literal && args[0]) passed.push(`${args[0].name}: ${literal}`);
    const variables = Object.fromEntries(given.map((argument, index) => [`v${index}`, values[argument.name as keyof typeof values]]));
    const query = `${root.operation} Hostile${declarations.length ? `(${declarations.join(', ')})` : ''} { ${root.field.name}${passed.length ? `(${passed.join(', ')})` : ''}${selectionFor(root.field)} }`;
    return {
      label: `${root.operation} ${root.field.name}`,
      mutationField: root.operation === 'mutation' ? root.field.name : undefined,
      credential,
      headers: { 'Content-Type': 'application/json', ...authorization(credential) },
      body: toJson({ query, variables }),
    };
  });
}

/** Hostility in the document and the HTTP body rather than in arguments. */
function envelopePlan(): fc.Arbitrary<GraphQLPlan> {
  const bodies = fc.constantFrom(
    'null', '42', '"query"', '[]', '{', '{"query": 42}', '{"query": null}', JSON.stringify({ query: `{${'a{'.repeat(10_000)}${'}'.repeat(10_001)}` }),
    JSON.stringify({ query: `{ users(query: ${'['.repeat(10_000)}${']'.repeat(10_000)}) { totalCount } }` }),
    JSON.stringify({ query: `{ ${Array.from({ length: 3_000 }, (_, index) => `a${index}: viewer { id }`).join(' ')} }` }),
    JSON.stringify({ query: 'x'.repeat(1_100_000) }),
    JSON.stringify({ extensions: { persistedQuery: { version: 1, sha256Hash: 'a'.repeat(64) } } }),
    JSON.stringify({ extensions: { persistedQuery: { version: 1, sha256Hash: 'not a hash' } } }),
    JSON.stringify({ extensions: { persistedQuery: { version: 1, sha256Hash: 42 } } }),
    JSON.stringify({ query: '{ viewer { id } }', variables: '{"not": "an object"}' }),
    JSON.stringify({ query: '{ viewer { id } }', operationName: { a: 1 } }),
    JSON.stringify({ query: '{ userz { id } }' }),
  );
  return fc.record({
    body: bodies,
    contentType: fc.constantFrom('application/json', 'application/json; charset=latin1', 'text/plain', 'application/graphql'),
    encoding: fc.constantFrom(undefined, undefined, 'gzip', 'deflate', 'br', 'gzip-real'),
    credential: fc.constantFrom(...credentials),
  }).map(({ body, contentType, encoding, credential }) => {
    const headers: Record<string, string> = { 'Content-Type': contentType, 'apollo-require-preflight': 'true', ...authorization(credential) };
    let payload: string | Buffer = body;
    if (encoding === 'gzip-real') {
      headers['Content-Encoding'] = 'gzip';
      payload = zlib.gzipSync(body);
    } else if (encoding) {
      headers['Content-Encoding'] = encoding;
    }
    return { label: `envelope ${contentType} ${encoding ?? ''} ${body.slice(0, 100)}`, credential, headers, body: payload };
  });
}

test('GraphQL: hostile arguments for every root field from introspection never answer 5xx, every error has a client-error code, rejected mutations change nothing', async () => {
  const roots: RootField[] = [
    ...Object.values(schema.getQueryType()!.getFields()).map((field) => ({ operation: OperationTypeNode.QUERY as const, field })),
    ...Object.values(schema.getMutationType()!.getFields()).map((field) => ({ operation: OperationTypeNode.MUTATION as const, field })),
  ];
  expect(roots.length).toBeGreaterThanOrEqual(15);
  const plans = fc.oneof({ weight: 6, arbitrary: fc.constantFrom(...roots).chain(operationPlan) }, { weight: 1, arbitrary: envelopePlan() });
  await fc.assert(
    fc.asyncProperty(plans, async (plan) => {
      const before = plan.mutationField ? await fingerprint() : '';
      const response = await agent.post('/graphql').set(plan.headers).send(plan.body).buffer(true);
      const where = `${plan.label} ${plan.body.toString().slice(0, 300)}`;
      if (response.status >= 500) throw new Error(`${response.status} for ${where}: ${response.text.slice(0, 300)}`);
      const body = JSON.parse(response.text);
      if (!('errors' in body) && !('data' in body)) throw new Error(`not a GraphQL response for ${where}: ${response.text.slice(0, 300)}`);
      for (const error of body.errors ?? []) {
        if (typeof error.message !== 'string' || !GRAPHQL_CLIENT_ERROR_CODES.has(error.extensions?.code)) {
          throw new Error(`error without a client-error extensions.code for ${where}: ${JSON.stringify(error).slice(0, 300)}`);
        }
        if (error.message.length > MAX_QUOTED) throw new Error(`an error message quotes unbounded input for ${where}`);
      }
      if (plan.mutationField && body.errors?.length && body.data?.[plan.mutationField] == null) {
        const after = await fingerprint();
        if (after !== before) throw new Error(`rejected mutation changed rows: ${where}`);
      }
    }),
    { seed: SEED, numRuns: RUNS, endOnFailure: true },
  );
});

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
      const before = writes ? await fingerprint() : '';
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
          const after = await fingerprint();
          if (after !== before) throw new Error(`rejected write (${response.status}) changed rows: ${where}`);
        }
      }
    }),
    { seed: SEED, numRuns: RUNS, endOnFailure: true },
  );
});
