import fs from 'node:fs';
import path from 'node:path';
import supertest from 'supertest';
import { Validator } from '@seriousme/openapi-schema-validator';
import { startHarness, TEST_SETTINGS, type Harness, type TestAccount, type TestUser } from './support/harness.js';
import { ServedDocumentChecker } from './support/openapi.js';
import { buildOpenApiDocument } from '../src/faces/rest/openapi-document.js';
import { features } from '../src/app/features.js';
import type { RestRoute } from '../src/rest/route.js';
import { loadConfig } from '../src/config/config.js';
import { SCOPES } from '../src/auth/scopes.js';
import { issueDelegation } from '../src/oauth-delegations/oauth-delegation.service.js';

type Operation = { operationId: string; deprecated?: boolean; parameters?: any[]; requestBody?: any; responses: Record<string, any>; security?: any[] };
type Document = { openapi: string; servers: { url: string }[]; paths: Record<string, Record<string, Operation>>; components: any };

const reference = JSON.parse(fs.readFileSync(process.env.OPENAPI_REFERENCE ?? path.resolve(process.cwd(), '../shared/reference/pagerduty-rest-v2.subset.openapi.json'), 'utf8')) as Document;
const METHODS = ['get', 'post', 'put', 'delete'];

let h: Harness;
let document: Document;
let account: TestAccount;
let user: TestUser;
beforeAll(async () => {
  h = await startHarness({ settings: { apiDocsPage: true } });
  document = (await supertest(h.app).get('/openapi.json').expect(200)).body;
  account = await h.createAccount();
  user = await h.createUser(account);
});
afterAll(async () => {
  await h?.close();
});

const operations = (doc: Document) =>
  Object.entries(doc.paths).flatMap(([template, item]) => METHODS.filter((method) => item[method]).map((method) => ({ template, method, operation: item[method]! })));

/** A `$ref` inside a document, resolved (one level is all the documents use for parameters). */
function resolve(doc: Document, value: any): any {
  if (!value?.$ref) return value;
  return (value.$ref as string).slice(2).split('/').map((part) => part.replace(/~1/g, '/').replace(/~0/g, '~')).reduce((node: any, part) => node?.[part], doc);
}

describe('GET /openapi.json', () => {
  test('is a valid OpenAPI 3.1 document (checked by a validator library)', async () => {
    const validator = new Validator();
    const result = await validator.validate(structuredClone(document) as Record<string, unknown>);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    expect(validator.version).toBe('3.1');
  });

  test('is public (no credential, no rate-limit budget), cacheable with an ETag, and also served as YAML', async () => {
    const agent = supertest(h.app);
    const first = await agent.get('/openapi.json');
    expect(first.status).toBe(200);
    expect(first.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(first.headers['ratelimit-limit']).toBeUndefined();
    expect(first.headers.etag).toMatch(/^"[A-Za-z0-9_-]+"$/);
    const again = await agent.get('/openapi.json').set('If-None-Match', first.headers.etag);
    expect([again.status, again.text]).toEqual([304, '']);
    // Even with a credential that is wrong, the document is served: it needs none.
    expect((await agent.get('/openapi.json').set('Authorization', 'Token token=wrong')).status).toBe(200);
    const yaml = await agent.get('/openapi.yaml');
    expect([yaml.status, yaml.headers['content-type']]).toEqual([200, 'application/yaml; charset=utf-8']);
    expect(yaml.text).toMatch(/^openapi: 3\.1\.0$/m);
    expect(yaml.text).toContain('operationId: updateUsers');
  });

  test('names the servers, credentials, versioning header, rate-limit headers, every route and the deprecated one', () => {
    expect(document.openapi).toBe('3.1.0');
    expect(document.servers).toEqual([{ url: TEST_SETTINGS.publicApiUrl }]);
    expect(document.components.securitySchemes.api_key).toMatchObject({ type: 'apiKey', in: 'header', name: 'Authorization' });
    expect(document.components.securitySchemes.api_key.description).toContain('Token token=');
    expect(document.components.securitySchemes.oauth_bearer).toMatchObject({ type: 'http', scheme: 'bearer' });
    expect(document.components.parameters.Accept.schema.default).toBe('application/vnd.pagerduty+json;version=2');
    expect(Object.keys(document.components.headers)).toEqual(expect.arrayContaining(['ratelimit-limit', 'ratelimit-remaining', 'ratelimit-reset']));
    expect(Object.keys(document.components.responses.BadRequest.headers)).toEqual(['ratelimit-limit', 'ratelimit-remaining', 'ratelimit-reset']);

    // Every row of the route table, and the feed, is in the document with the method and path it is served at.
    const routeKeys = features.flatMap((feature) => feature.routes).map((route) => `${route.method} ${route.path.replace(/:(\w+)/g, '{$1}')}`);
    const described = operations(document).map(({ method, template }) => `${method} ${template}`);
    const plainRoutes = features.flatMap((feature) => feature.httpRouteDescriptions ?? []).map((plain) => `${plain.method} ${plain.path}`);
    expect(plainRoutes).toEqual(expect.arrayContaining(['get /private/{key}/feed', 'post /credentials/revoke']));
    expect(described.sort()).toEqual([...routeKeys, ...plainRoutes].sort());
    expect(document.paths['/credentials/revoke']!.post!.security).toEqual([]);
    expect(document.paths['/users']!.put!.operationId).toBe('updateUsers');
    expect(document.paths['/private/{key}/feed']!.get!.security).toEqual([]);
    expect((document.paths['/private/{key}/feed'] as any).servers).toEqual([{ url: TEST_SETTINGS.publicFeedUrl }]);

    const status = document.paths['/oauth_delegations/revocation_requests/status']!.get!;
    expect(status.deprecated).toBe(true);
    expect(Object.keys(status.responses['200'].headers)).toEqual(expect.arrayContaining(['Deprecation', 'Link']));
    expect(operations(document).filter(({ operation }) => operation.deprecated).map(({ operation }) => operation.operationId)).toEqual(['getOauthDelegationsRevocationRequestsStatus']);

    // Scopes: a bearer token's needed scope on every API operation.
    expect(document.paths['/users']!.get!.security).toEqual([{ api_key: [] }, { oauth_bearer: ['users.read'] }]);
    expect(document.paths['/oauth_delegations']!.delete!.security).toEqual([{ api_key: [] }, { oauth_bearer: ['oauth_delegations.write'] }]);
  });

  test('publishes the bounds validation enforces (USER_FIELD_LIMITS, pagination)', () => {
    const changes = document.components.schemas.UserChanges.properties;
    expect([changes.name.maxLength, changes.email.minLength, changes.email.maxLength, changes.job_title.maxLength, changes.description.maxLength]).toEqual([100, 6, 100, 100, 1024]);
    const list = document.paths['/users']!.get!.parameters!.map((parameter) => resolve(document, parameter));
    const byName = Object.fromEntries(list.map((parameter) => [parameter.name, parameter]));
    expect(byName.limit.schema).toMatchObject({ type: 'integer', minimum: 1 });
    expect(byName.offset.schema).toMatchObject({ type: 'integer', minimum: 0, maximum: 9999 });
    expect(byName.query.schema).toMatchObject({ type: 'string', maxLength: 100 });
    expect(byName['include[]'].schema.items.enum).toEqual(['contact_methods', 'notification_rules', 'teams', 'subdomains']);
  });

  test('OPENAPI_DOCUMENT=false turns it off; the /docs page is off unless enabled', async () => {
    const quiet = await startHarness({ settings: { openapiDocument: false } });
    try {
      const agent = supertest(quiet.app);
      expect((await agent.get('/openapi.json')).status).toBe(404);
      expect((await agent.get('/docs')).status).toBe(404);
    } finally {
      await quiet.close();
    }
  });
});

describe('a route cannot exist without its description', () => {
  const routes = features.flatMap((feature) => feature.routes);
  const sources = (changed: RestRoute[]) => ({ routes: changed, schemas: Object.assign({}, ...features.map((feature) => feature.schemas ?? {})), plainOperations: [] });

  test('a row without a description, or with an undescribed path parameter, stops the document (and so the start)', () => {
    const [first, ...rest] = routes;
    const undescribed = { ...first!, description: undefined } as unknown as RestRoute;
    expect(() => buildOpenApiDocument(sources([undescribed, ...rest]), TEST_SETTINGS)).toThrow(/GET \/users has no description/);
    const show = routes.find((route) => route.path === '/users/:id' && route.method === 'get')!;
    const noPathParameter = { ...show, description: { ...show.description, parameters: [] } };
    expect(() => buildOpenApiDocument(sources([noPathParameter]), TEST_SETTINGS)).toThrow(/describes path parameters \[\] but its path has \[id\]/);
    const dangling = { ...show, description: { ...show.description, operationId: 'x', responses: { 200: { description: 'x', schema: { $ref: '#/components/schemas/Nope' } } } } };
    expect(() => buildOpenApiDocument(sources([dangling]), TEST_SETTINGS)).toThrow(/missing components: #\/components\/schemas\/Nope/);
  });

  test('the served-document check of the test helper fails on a response the document does not allow', () => {
    const checker = new ServedDocumentChecker(document as any);
    const headers = { 'ratelimit-limit': '1', 'ratelimit-remaining': '1', 'ratelimit-reset': '1' };
    expect(() => checker.check('get', '/users/PABCDEF', 200, headers, { user: { id: 'PABCDEF' } })).toThrow(/does not match the served document/);
    expect(() => checker.check('get', '/users/PABCDEF', 409, headers, { error: { message: 'x', code: 2002, errors: [] } })).toThrow(/status 409 is not documented/);
    expect(() => checker.check('get', '/users', 400, {}, { error: { message: 'x', code: 2001, errors: [] } })).toThrow(/promises the ratelimit-limit header/);
    expect(() => checker.check('get', '/users', 400, headers, { error: { message: 'x', code: 2020, errors: [] } })).toThrow(/does not match/);
  });
});

describe('compatibility with the reference document', () => {
  /** Documented there, not part of this product: accepting them would promise behaviour that does not exist. */
  const UNSUPPORTED_PARAMETERS = new Set(['team_ids[]']);
  /** Header parameters are the `Accept` versioning header (described once for all), `Content-Type` and `From` (not used). */
  const isHeader = (parameter: any) => parameter.in === 'header';

  test('every reference operation is served at the same method and path, with its operationId', () => {
    for (const { template, method, operation } of operations(reference)) {
      const ours = document.paths[template]?.[method];
      expect({ at: `${method} ${template}`, operationId: ours?.operationId }).toEqual({ at: `${method} ${template}`, operationId: operation.operationId });
    }
  });

  test('every documented parameter the product supports is accepted, in the same place', () => {
    for (const { template, method, operation } of operations(reference)) {
      const ours = (document.paths[template]![method]!.parameters ?? []).map((parameter) => resolve(document, parameter));
      for (const parameter of (operation.parameters ?? []).map((entry) => resolve(reference, entry))) {
        if (isHeader(parameter) || UNSUPPORTED_PARAMETERS.has(parameter.name)) continue;
        const match = ours.find((candidate) => candidate.name === parameter.name && candidate.in === parameter.in);
        expect({ at: `${method} ${template}`, parameter: parameter.name, in: match?.in, required: match?.required ?? false }).toEqual({
          at: `${method} ${template}`,
          parameter: parameter.name,
          in: parameter.in,
          required: parameter.required ?? false,
        });
        // Every value the reference enumerates is one we accept.
        const theirValues: string[] = parameter.schema.enum ?? parameter.schema.items?.enum ?? [];
        const ourValues: string[] | undefined = match.schema.enum ?? match.schema.items?.enum;
        if (theirValues.length) expect({ at: `${method} ${template} ${parameter.name}`, values: ourValues }).toEqual({ at: `${method} ${template} ${parameter.name}`, values: expect.arrayContaining(theirValues) });
      }
    }
  });

  test('every writable body field the product supports is in the body schema', () => {
    const writable = (schema: any): string[] => {
      const resolved = resolve(reference, schema);
      if (resolved.allOf) return resolved.allOf.flatMap(writable);
      return Object.entries(resolved.properties ?? {}).filter(([, property]: [string, any]) => !property.readOnly).map(([name]) => name);
    };
    const ourFields = (schema: any): string[] => {
      const resolved = resolve(document, schema);
      if (resolved.allOf) return resolved.allOf.flatMap(ourFields);
      return Object.keys(resolved.properties ?? {});
    };
    const UNSUPPORTED_FIELDS = new Set(['license', 'label']); // licenses and tags: not part of this product
    for (const { template, method, operation } of operations(reference)) {
      if (!operation.requestBody) continue;
      const theirs = operation.requestBody.content['application/json'].schema;
      const ours = document.paths[template]![method]!.requestBody.content['application/json'].schema;
      for (const [wrapper, property] of Object.entries(theirs.properties as Record<string, any>)) {
        const inner = resolve(document, ours).properties[wrapper];
        expect({ at: `${method} ${template}`, wrapper, present: inner !== undefined }).toEqual({ at: `${method} ${template}`, wrapper, present: true });
        const item = (schema: any) => (resolve(reference, schema).type === 'array' ? resolve(reference, schema).items : schema);
        const ourItem = (schema: any) => (resolve(document, schema).type === 'array' ? resolve(document, schema).items : schema);
        const missing = writable(item(property)).filter((field) => !UNSUPPORTED_FIELDS.has(field) && !ourFields(ourItem(inner)).includes(field));
        expect({ at: `${method} ${template}`, missing }).toEqual({ at: `${method} ${template}`, missing: [] });
      }
    }
  });
});

describe('the document validates the service\'s own requests', () => {
  /** Values the parameter's schema refuses: each must be refused by the service, naming the parameter. */
  function violations(schema: any): string[] {
    const values: string[] = [];
    if (schema.type === 'integer') {
      values.push('2.5', 'abc');
      if (schema.minimum !== undefined) values.push(String(schema.minimum - 1));
      if (schema.maximum !== undefined) values.push(String(schema.maximum + 1));
    }
    if (schema.type === 'boolean') values.push('maybe');
    if (schema.type === 'string' && schema.maxLength !== undefined) values.push('x'.repeat(schema.maxLength + 1));
    if (schema.type === 'string' && schema.format === 'date-time') values.push('yesterday');
    if (schema.type === 'array' && schema.items?.enum) values.push('no_such_value');
    return values;
  }

  function fill(template: string): string {
    return template.replace('{id}', user.id).replace('{delegation_id}', '00000000-0000-4000-8000-000000000000');
  }

  test('a query parameter value outside its schema is 400/2001 naming the parameter; a missing required one is 400/2003', async () => {
    let checked = 0;
    for (const { template, method, operation } of operations(document)) {
      if (template.startsWith('/private/')) continue;
      const parameters = (operation.parameters ?? []).map((parameter) => resolve(document, parameter)).filter((parameter) => parameter.in === 'query');
      // The required parameters, valid, so each violation is the only thing wrong.
      const valid: Record<string, string> = { user_id: user.id, type: 'mobile' };
      for (const parameter of parameters) {
        for (const value of violations(parameter.schema)) {
          const query = new URLSearchParams({ ...Object.fromEntries(parameters.filter((p) => p.required).map((p) => [p.name, valid[p.name]!])), [parameter.name]: value });
          const response = await h.rest(method as 'get', `${fill(template)}?${query}`, { key: account.key });
          expect({ at: `${method} ${template}`, parameter: parameter.name, value: value.slice(0, 20), status: response.status, code: response.body.error?.code }).toEqual({
            at: `${method} ${template}`, parameter: parameter.name, value: value.slice(0, 20), status: 400, code: 2001,
          });
          expect(response.body.error.errors.join(' ')).toContain(parameter.name);
          checked += 1;
        }
        if (parameter.required) {
          const query = new URLSearchParams(Object.fromEntries(parameters.filter((p) => p.required && p.name !== parameter.name).map((p) => [p.name, valid[p.name]!])));
          const response = await h.rest(method as 'get', `${fill(template)}?${query}`, { key: account.key });
          expect([parameter.name, response.status, response.body.error?.code]).toEqual([parameter.name, 400, 2003]);
          expect(response.body.error.errors.join(' ')).toContain(parameter.name);
          checked += 1;
        }
      }
    }
    expect(checked).toBeGreaterThan(25);
  });

  test('values at the bounds the document gives are accepted', async () => {
    const ok = await h.rest('get', `/users?limit=1&offset=9999&total=true&query=${'x'.repeat(100)}&include[]=teams,subdomains`, { key: account.key });
    expect([ok.status, ok.body.limit, ok.body.offset]).toEqual([200, 1, 9999]);
  });

  test('a body field outside the user schema is 400/2001 naming user.<field>', async () => {
    const properties = document.components.schemas.UserChanges.properties as Record<string, any>;
    let checked = 0;
    for (const [field, schema] of Object.entries(properties)) {
      const bad = schema.enum ? 'no_such_value' : schema.maxLength !== undefined ? 'x'.repeat(schema.maxLength + 1) : undefined;
      if (bad === undefined) continue;
      const body = { user: { name: 'Bounded', email: `bounded-${checked}@example.com`, [field]: bad } };
      const response = await h.rest('post', '/users', { key: account.key, body });
      expect({ field, status: response.status, code: response.body.error?.code }).toEqual({ field, status: 400, code: 2001 });
      expect(response.body.error.errors.join(' ')).toContain(`user.${field}`);
      checked += 1;
    }
    expect(checked).toBeGreaterThanOrEqual(7);
  });

  test('a subscriptions payload outside its schema is 422 naming the element', async () => {
    const subscribable = document.components.schemas.NotificationSubscribable.properties;
    const bounds = document.paths['/users/{id}/notification_subscriptions']!.post!.requestBody.content['application/json'].schema.properties.subscribables;
    const item = (type: string, id: string) => ({ subscribable_type: type, subscribable_id: id });
    const cases: [string, unknown[], string][] = [
      ['too long an id', [item('incident', 'x'.repeat(subscribable.subscribable_id.maxLength + 1))], 'subscribables[0].subscribable_id'],
      ['unknown type', [item('no_such_type', 'P1')], 'subscribables[0].subscribable_type'],
      ['too many', Array.from({ length: bounds.maxItems + 1 }, (_, index) => item('incident', `P${index}`)), 'subscribables'],
      ['none', [], 'subscribables'],
      ['duplicates', [item('incident', 'P1'), item('incident', 'P1')], 'subscribables[1]'],
    ];
    for (const [label, subscribables, named] of cases) {
      const response = await h.rest('post', `/users/${user.id}/notification_subscriptions`, { key: user.key, body: { subscribables } });
      expect({ label, status: response.status, code: response.body.error?.code }).toEqual({ label, status: 422, code: 2001 });
      expect(response.body.error.errors.join(' ')).toContain(named);
    }
  });
});

describe('configuration', () => {
  const SECRET_KEY = 'x'.repeat(32);
  test('the document is served everywhere unless OPENAPI_DOCUMENT=false; the page only outside production unless API_DOCS_PAGE=true', () => {
    expect([loadConfig({}).openapiDocument, loadConfig({}).apiDocsPage]).toEqual([true, true]);
    const production = loadConfig({ NODE_ENV: 'production', SECRET_KEY });
    expect([production.openapiDocument, production.apiDocsPage]).toEqual([true, false]);
    expect(loadConfig({ NODE_ENV: 'production', SECRET_KEY, API_DOCS_PAGE: 'true' }).apiDocsPage).toBe(true);
    expect(loadConfig({ NODE_ENV: 'production', SECRET_KEY, OPENAPI_DOCUMENT: 'false' }).openapiDocument).toBe(false);
    expect([loadConfig({ OPENAPI_DOCUMENT: 'false' }).openapiDocument, loadConfig({ OPENAPI_DOCUMENT: 'false' }).apiDocsPage]).toEqual([false, false]);
    expect(() => loadConfig({ OPENAPI_DOCUMENT: 'false', API_DOCS_PAGE: 'true' })).toThrow(/API_DOCS_PAGE needs OPENAPI_DOCUMENT/);
    expect(() => loadConfig({ OPENAPI_DOCUMENT: 'sometimes' })).toThrow(/OPENAPI_DOCUMENT must be true or false/);
  });
});

describe('the scopes the document states are the ones enforced', () => {
  test('each operation refuses a bearer token holding every scope but its own (403 naming it) and serves one holding only its own', async () => {
    const admin = await h.createUser(account, { role: 'admin' });
    const victim = await h.createUser(account);
    const bodies: Record<string, unknown> = {
      createUser: { user: { name: 'Scoped', email: `scoped-${admin.id}@example.com` } },
      updateUser: { user: { name: 'Scoped Admin' } },
      updateUsers: { users: [{ id: admin.id, name: 'Scoped Admin' }] },
      createUserNotificationSubscriptions: { subscribables: [{ subscribable_type: 'incident', subscribable_id: 'PSCOPE1' }] },
      unsubscribeUserNotificationSubscriptions: { subscribables: [{ subscribable_type: 'incident', subscribable_id: 'PSCOPE1' }] },
    };
    const queries: Record<string, string> = { deleteOauthDelegations: `?user_id=${admin.id}&type=mobile` };
    const token = async (scopes: string[]) => ({ bearer: (await h.database.transactions.run(h.database.em(), (tx) => issueDelegation(tx, { userId: admin.id, type: 'web', scopes: scopes.join(' ') }))).accessToken });
    let checked = 0;
    // Deleting comes last: it needs its own user, and the credential of the admin stays valid throughout.
    const ordered = operations(document).filter(({ operation }) => operation.security?.length).sort((a, b) => Number(a.method === 'delete' && a.template.includes('{id}')) - Number(b.method === 'delete' && b.template.includes('{id}')));
    for (const { template, method, operation } of ordered) {
      const scope = operation.security!.find((requirement) => requirement.oauth_bearer)!.oauth_bearer[0] as string;
      const target = method === 'delete' && template === '/users/{id}' ? victim.id : admin.id;
      const url = `${template.replace('{id}', target).replace('{delegation_id}', '00000000-0000-4000-8000-000000000000')}${queries[operation.operationId] ?? ''}`;
      const call = (key: { bearer: string }) => h.rest(method as 'get', url, { key, body: bodies[operation.operationId] });

      const without = await call(await token(SCOPES.filter((candidate) => candidate !== scope)));
      expect({ operation: operation.operationId, status: without.status, names: without.body.error?.errors.join(' ').includes(scope) }).toEqual({ operation: operation.operationId, status: 403, names: true });
      const only = await call(await token([scope]));
      expect({ operation: operation.operationId, refused: only.status === 403 || only.status === 401 }).toEqual({ operation: operation.operationId, refused: false });
      checked += 1;
    }
    // The 15 operations in scope (docs/rest-api.md), the single-delegation revoke and the two audit-record routes.
    expect(checked).toBe(18);
  });
});
