import zlib from 'node:zlib';
import fc from 'fast-check';
import type supertest from 'supertest';
import {
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
  OperationTypeNode,
} from 'graphql';
import type { Router } from 'express';
import { features } from '../src/app/features.js';
import type { HttpRouteDeps } from '../src/app/feature.js';
import type { Credential, Harness } from './support/harness.js';
import { createLogger } from '../src/logging/logger.js';
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
import { authorization, fingerprint, MAX_QUOTED, RUNS, SEED, useHostileTargets } from './support/hostile-harness.js';

/**
 * Hostile input on the REST facade and GraphQL, derived from what the product declares rather than
 * from a list: every REST row and plain HTTP route of every feature, and every root field of the
 * GraphQL schema as introspection shows it. The properties, and how to replay a failure from its
 * seed, are in test/support/hostile-harness.ts; hostile-input.sso-scim.property.test.ts covers the
 * single sign-on return routes and SCIM.
 */
let harness: Harness;
let agent: ReturnType<typeof supertest>;
let credentials: Credential[];
let realIds: string[];
let schema: GraphQLSchema;
useHostileTargets((started) => ({ harness, agent, credentials, realIds, schema } = started));

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
      const before = writes ? await fingerprint(harness) : '';
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
        const after = await fingerprint(harness);
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
      const before = plan.mutationField ? await fingerprint(harness) : '';
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
        const after = await fingerprint(harness);
        if (after !== before) throw new Error(`rejected mutation changed rows: ${where}`);
      }
    }),
    { seed: SEED, numRuns: RUNS, endOnFailure: true },
  );
});
