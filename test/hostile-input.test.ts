import http from 'node:http';
import { appSchema } from '../src/app/features.js';
import type { AddressInfo } from 'node:net';
import supertest from 'supertest';
import { startHarness, type Harness, type TestAccount } from './support/harness.js';
import { unboundedStringInputs } from '../src/graphql/input-bounds.js';
import { classifyError } from '../src/graphql/errors.js';
import { USER_FIELD_LIMITS } from '../src/users/user.validation.js';
import { deeplyNestedJson } from './support/hostile.js';

/**
 * One example of each class of hostile input (docs/ARCHITECTURE.md, "Hostile input"), asserted on both
 * faces where both apply; the property tests (hostile-input.property.test.ts for REST and GraphQL,
 * hostile-input.sso-scim.property.test.ts for single sign-on and SCIM) cover the classes at large.
 */
let harness: Harness;
let agent: ReturnType<typeof supertest>;
let account: TestAccount;
let auth: Record<string, string>;
const statements: string[] = [];

const REST = { Accept: 'application/vnd.pagerduty+json;version=2' };

beforeAll(async () => {
  harness = await startHarness({ onQuery: (sql) => statements.push(sql) });
  agent = supertest(harness.app);
  account = await harness.createAccount();
  auth = { Authorization: `Token token=${(account.key as { token: string }).token}` };
});

afterAll(async () => {
  await harness.close();
});

const graphql = (query: string, variables?: Record<string, unknown>) => agent.post('/graphql').set(auth).send({ query, variables });

function expectEnvelope(response: supertest.Response, status: number, code: number, detail: RegExp) {
  expect({ status: response.status, code: response.body.error?.code }).toEqual({ status, code });
  expect(response.body.error.errors.join(' ')).toMatch(detail);
}

function expectGraphQLError(response: supertest.Response, code: string, detail: RegExp) {
  expect(response.status).toBeLessThan(500);
  expect(response.body.errors?.[0]?.extensions?.code).toBe(code);
  expect(response.body.errors[0].message).toMatch(detail);
}

test('1. an undecodable percent-escape in a path parameter is 400/2001 on every {id} route and on the feed', async () => {
  for (const path of ['/users/%ff', '/users/%E0%A4%A/notification_subscriptions', `/users/${account.ownerId}/oauth_delegations/%ED%A0%80`]) {
    expectEnvelope(await agent.get(path).set({ ...REST, ...auth }), 400, 2001, /path parameter is not valid percent-encoded UTF-8/);
  }
  expectEnvelope(await agent.put('/users/%').set({ ...REST, ...auth }).send({ user: { name: 'x' } }), 400, 2001, /percent-encoded/);
  expectEnvelope(await agent.get('/private/%ff/feed'), 400, 2001, /percent-encoded/);
});

test('2. NUL and unpaired surrogates are refused with the field named on every REST input and GraphQL argument, before SQL', async () => {
  expectEnvelope(await agent.get('/users?query=%00').set({ ...REST, ...auth }), 400, 2001, /^query contains a NUL character/);
  expectEnvelope(await agent.get(`/users/%00/oauth_delegations/P000000`).set({ ...REST, ...auth }), 400, 2001, /path parameter id contains a NUL/);
  expectEnvelope(await agent.post('/users').set({ ...REST, ...auth }).send({ user: { name: 'Ann\u0000', email: 'ann@example.com' } }), 400, 2001, /^user\.name contains a NUL/);
  expectEnvelope(await agent.put('/users').set({ ...REST, ...auth }).send({ users: [{ id: account.ownerId, job_title: 'a\ud800' }] }), 400, 2001, /users\[0\]\.job_title contains an unpaired UTF-16 surrogate/);
  expectEnvelope(
    await agent.post(`/users/${account.ownerId}/notification_subscriptions`).set({ ...REST, ...auth }).send({ subscribables: [{ subscribable_type: 'incident', subscribable_id: 'P\u0000' }] }),
    400, 2001, /subscribables\[0\]\.subscribable_id contains a NUL/,
  );
  const before = statements.length;
  expectGraphQLError(await graphql('{ users(query: "a\\u0000b") { totalCount } }'), 'BAD_USER_INPUT', /^query contains a NUL character/);
  const afterLiteral = statements.length;
  expectGraphQLError(await graphql('mutation($input: CreateUserInput!) { createUser(input: $input) { user { id } } }', { input: { name: 'x\udc00', email: 'x@example.com' } }), 'BAD_USER_INPUT', /^input\.name contains an unpaired UTF-16 surrogate/);
  // Only authentication ran: one statement per request, none of them the search or the insert.
  expect(afterLiteral - before).toBe(1);
  expect(statements.length - afterLiteral).toBe(1);
});

test('3. a 10,000-level JSON value inside a body field is a 4xx whose message quotes a short excerpt', async () => {
  const deepType = await agent.post('/users').set({ ...REST, ...auth, 'Content-Type': 'application/json' }).send(`{"user":{"type":${deeplyNestedJson(10_000, 'array')},"name":"A","email":"a@example.com"}}`);
  expectEnvelope(deepType, 400, 2001, /^user\.type must be "user" \(got an array\)$/);
  const deepSubscribable = await agent
    .post(`/users/${account.ownerId}/notification_subscriptions`)
    .set({ ...REST, ...auth, 'Content-Type': 'application/json' })
    .send(`{"subscribables":[{"subscribable_type":${deeplyNestedJson(10_000, 'object')},"subscribable_id":"P1"}]}`);
  expectEnvelope(deepSubscribable, 422, 2001, /subscribable_type must be one of .* \(got an object\)/);
  const longType = await agent.post('/users').set({ ...REST, ...auth }).send({ user: { type: 'y'.repeat(50_000), name: 'A', email: 'a@example.com' } });
  expect(longType.text.length).toBeLessThan(300);
});

test('4. Content-Encoding gzip, deflate or br on a body that is not compressed keeps the parser\'s 400, shaped per face', async () => {
  for (const encoding of ['gzip', 'deflate', 'br']) {
    const rest = await agent.post('/users').set({ ...REST, ...auth, 'Content-Type': 'application/json', 'Content-Encoding': encoding }).send('{"user":{}}');
    expectEnvelope(rest, 400, 2001, /does not decode with its Content-Encoding/);
    const viaGraphql = await agent.post('/graphql').set({ ...auth, 'Content-Type': 'application/json', 'Content-Encoding': encoding }).send('{"query":"{ viewer { id } }"}');
    expect(viaGraphql.status).toBe(400);
    expectGraphQLError(viaGraphql, 'BAD_USER_INPUT', /does not decode with its Content-Encoding/);
  }
});

test('5. /graphql answers body problems GraphQL-shaped; REST keeps its envelope', async () => {
  const post = (body: string, contentType = 'application/json') => agent.post('/graphql').set({ ...auth, 'Content-Type': contentType }).send(body);
  for (const body of ['{"query":', 'null', '42', '"{ viewer { id } }"']) {
    const response = await post(body);
    expect(response.status).toBe(400);
    expectGraphQLError(response, 'BAD_USER_INPUT', /not valid JSON/);
    expect(response.body.errors[0].extensions.apiErrorCode).toBe(2001);
  }
  expectGraphQLError(await post(JSON.stringify({ query: `{ viewer { id } } #${'x'.repeat(1_100_000)}` })), 'BAD_USER_INPUT', /larger than 1 MB/);
  const latin1 = await post('{"query":"{ viewer { id } }"}', 'application/json; charset=latin1');
  expect(latin1.status).toBe(415);
  expectGraphQLError(latin1, 'BAD_USER_INPUT', /UTF-8 JSON/);
  expectEnvelope(await agent.post('/users').set({ ...REST, ...auth, 'Content-Type': 'application/json' }).send('null'), 400, 2001, /not valid JSON/);
  expectEnvelope(await agent.post('/users').set({ ...REST, ...auth, 'Content-Type': 'application/json; charset=latin1' }).send('{}'), 415, 2001, /UTF-8 JSON/);
});

test('6. a 10,000-level document, and a deep list literal argument, are refused cheaply as GRAPHQL_PARSE_FAILED', async () => {
  const deep = `{${'a{'.repeat(10_000)}${'}'.repeat(10_001)}`;
  // GraphQL over HTTP: a document error is 200 under application/json, 400 under application/graphql-response+json, as Apollo's own parse failures.
  const selections = await graphql(deep);
  expect([selections.status, selections.headers['content-type']]).toEqual([200, 'application/json; charset=utf-8']);
  expectGraphQLError(selections, 'GRAPHQL_PARSE_FAILED', /nests deeper than 100 levels/);
  const strict = await agent.post('/graphql').set({ ...auth, Accept: 'application/graphql-response+json' }).send({ query: deep });
  expect([strict.status, strict.headers['content-type']]).toEqual([400, 'application/graphql-response+json; charset=utf-8']);
  expectGraphQLError(strict, 'GRAPHQL_PARSE_FAILED', /nests deeper than 100 levels/);
  expectGraphQLError(await graphql(`{ users(query: ${'['.repeat(10_000)}${']'.repeat(10_000)}) { totalCount } }`), 'GRAPHQL_PARSE_FAILED', /nests deeper than 100 levels/);
  expectGraphQLError(await graphql(`{ users(query: ${'{a:'.repeat(10_000)}1${'}'.repeat(10_000)}) { totalCount } }`), 'GRAPHQL_PARSE_FAILED', /nests deeper/);
  expectGraphQLError(await graphql(`{ ${Array.from({ length: 2_000 }, (_, index) => `a${index}: __typename`).join(' ')} }`), 'GRAPHQL_PARSE_FAILED', /more than 5000 tokens/);
});

test('7. automatic persisted queries: an unknown hash is PERSISTED_QUERY_NOT_FOUND, a malformed one is 400 BAD_USER_INPUT', async () => {
  const persisted = (sha256Hash: unknown) => agent.post('/graphql').set(auth).send({ extensions: { persistedQuery: { version: 1, sha256Hash } } });
  const unknown = await persisted('a'.repeat(64));
  expectGraphQLError(unknown, 'PERSISTED_QUERY_NOT_FOUND', /PersistedQueryNotFound/);
  for (const malformed of ['zz', 42, 'g'.repeat(64)]) {
    const response = await persisted(malformed);
    expect(response.status).toBe(400);
    expectGraphQLError(response, 'BAD_USER_INPUT', /sha256Hash must be the 64 hexadecimal digits/);
  }
  const viaGet = await agent.get(`/graphql?extensions=${encodeURIComponent(JSON.stringify({ persistedQuery: { version: 1, sha256Hash: 'nope' } }))}`).set({ ...auth, 'apollo-require-preflight': 'true' });
  expect(viaGet.status).toBe(400);
});

test('8. email: null on updateUser/updateUsers is BAD_USER_INPUT, as REST answers 400/2001', async () => {
  const member = await harness.createUser(account);
  expectGraphQLError(
    await graphql('mutation($input: UpdateUserInput!) { updateUser(input: $input) { user { id } } }', { input: { id: member.id, email: null } }),
    'BAD_USER_INPUT', /^email must not be null \(omit it to keep the current value\)$/,
  );
  expectGraphQLError(
    await graphql('mutation($input: UpdateUsersInput!) { updateUsers(input: $input) { users { id } } }', { input: { users: [{ id: member.id, email: null, name: null }] } }),
    'BAD_USER_INPUT', /users\[0\]\.name must not be null/,
  );
  expectEnvelope(await agent.put(`/users/${member.id}`).set({ ...REST, ...auth }).send({ user: { email: null } }), 400, 2001, /^user\.email must not be null/);
  const unchanged = await graphql(`{ user(id: "${member.id}") { email } }`);
  expect(unchanged.body.data.user.email).toBe(member.email);
});

describe('9. Node\'s own refusals carry the REST envelope', () => {
  let port: number;
  beforeAll(async () => {
    await new Promise<void>((resolve) => harness.httpServer.listen(0, '127.0.0.1', resolve));
    port = (harness.httpServer.address() as AddressInfo).port;
  });
  afterAll(async () => {
    await new Promise<void>((resolve) => harness.httpServer.close(() => resolve()));
  });

  const send = (headers: Record<string, string>) =>
    new Promise<{ status: number; body: string }>((resolve, reject) => {
      const request = http.request({ host: '127.0.0.1', port, path: '/users', method: 'GET', headers: { ...REST, ...auth, ...headers } }, (response) => {
        let body = '';
        response.setEncoding('utf8').on('data', (chunk) => (body += chunk)).on('end', () => resolve({ status: response.statusCode ?? 0, body }));
      });
      request.on('error', reject).end();
    });

  test('a request head over 16 KB is 431 with the envelope', async () => {
    const response = await send({ 'X-Padding': 'p'.repeat(20_000) });
    expect(response.status).toBe(431);
    expect(JSON.parse(response.body)).toEqual({ error: { message: 'Request Header Fields Too Large', code: 2001, errors: [expect.stringMatching(/16 KB/)] } });
  });

  test('an Expect other than 100-continue is 417 with the envelope', async () => {
    const response = await send({ Expect: 'the-unexpected' });
    expect(response.status).toBe(417);
    expect(JSON.parse(response.body)).toEqual({ error: { message: 'Expectation Failed', code: 2001, errors: [expect.stringMatching(/Expect: the-unexpected is not supported/)] } });
  });

  test('the server still serves afterwards', async () => {
    expect((await send({})).status).toBe(200);
  });
});

describe('10. length bounds on every string input', () => {
  test('every String input of the schema declares its bound (the server refuses to start otherwise)', async () => {
    expect(unboundedStringInputs(await appSchema())).toEqual([]);
  });

  test('a 100 KB search term is refused before any SQL beyond authentication runs, on both faces', async () => {
    const term = 'x'.repeat(100_000);
    const before = statements.length;
    const response = await graphql('query($q: String) { users(query: $q) { totalCount } }', { q: term });
    expectGraphQLError(response, 'BAD_USER_INPUT', new RegExp(`^query must be at most ${USER_FIELD_LIMITS.searchQuery} characters \\(got 100000\\)$`));
    expect(statements.slice(before)).toEqual([expect.stringMatching(/from api_keys/)]);
    // On REST a URL that long never gets past Node's 16 KB head limit; 10 KB reaches the bound.
    const restBefore = statements.length;
    expectEnvelope(await agent.get(`/users?query=${'x'.repeat(10_000)}`).set({ ...REST, ...auth }), 400, 2001, /^query must be at most 100 characters/);
    expect(statements.slice(restBefore)).toEqual([expect.stringMatching(/from api_keys/)]);
  });

  test('ids, cursors and other strings are bounded on both faces', async () => {
    expectEnvelope(await agent.get(`/users/${'P'.repeat(65)}`).set({ ...REST, ...auth }), 400, 2001, /^id must be at most 64 characters/);
    expectEnvelope(await agent.get(`/users/${account.ownerId}/oauth_delegations?cursor=${'c'.repeat(600)}`).set({ ...REST, ...auth }), 400, 2001, /^after must be at most 512 characters/);
    expectGraphQLError(await graphql(`{ oauthDelegations(userId: "${account.ownerId}", after: "${'c'.repeat(600)}") { totalCount } }`), 'BAD_USER_INPUT', /^after must be at most 512 characters/);
    expectGraphQLError(
      await graphql('mutation($input: CreateNotificationSubscriptionsInput!) { createNotificationSubscriptions(input: $input) { subscriptions { result } } }', { input: { userId: account.ownerId, subscribables: [{ subscribableType: 'INCIDENT', subscribableId: 's'.repeat(256) }] } }),
      'BAD_USER_INPUT', /^input\.subscribables\[0\]\.subscribableId must be at most 255 characters/,
    );
    expectGraphQLError(
      await graphql('mutation($input: CreateUserInput!) { createUser(input: $input) { user { id } } }', { input: { name: 'Long Email', email: `${'a'.repeat(95)}@example.com` } }),
      'BAD_USER_INPUT', new RegExp(`^input\\.email must be at most ${USER_FIELD_LIMITS.email.max} characters`),
    );
    expectEnvelope(await agent.get(`/oauth_delegations/revocation_requests/status?requested_at_end=${'2'.repeat(5_000)}`).set({ ...REST, ...auth }), 400, 2001, /requested_at_end must be an ISO 8601 date-time .*\(got "2{40}…"\)$/);
  });
});

test('production: validation errors do not suggest schema names when introspection is off', async () => {
  const closed = await startHarness({ settings: { introspection: false } });
  try {
    const key = (await closed.createAccount()).key as { token: string };
    const response = await supertest(closed.app).post('/graphql').set({ Authorization: `Token token=${key.token}` }).send({ query: '{ userz { id } }' });
    expect(response.body.errors[0].message).toBe('Cannot query field "userz" on type "Query".');
  } finally {
    await closed.close();
  }
});

// statement_timeout is a PostgreSQL setting; embedded PGlite accepts it but cannot enforce it (docs/rest-api.md, "Input limits").
const onPostgreSQL = process.env.DATABASE_URL ? describe : describe.skip;

onPostgreSQL('statement_timeout (PostgreSQL)', () => {
  let slow: Harness;
  let slowAuth: Record<string, string>;
  let ownerId: string;
  beforeAll(async () => {
    // Every outage line logged (no throttling), so each request's line can be found.
    slow = await startHarness({ statementTimeoutMs: 300, outageLogIntervalMs: 0 });
    const slowAccount = await slow.createAccount();
    ownerId = slowAccount.ownerId;
    slowAuth = { Authorization: `Token token=${(slowAccount.key as { token: string }).token}` };
  });
  afterAll(async () => {
    await slow.close();
  });

  test('a statement running past the timeout is cancelled (57014) and classified as unavailable', async () => {
    const error = await slow.database.em().execute('select pg_sleep(2)').then(() => undefined, (caught: unknown) => caught);
    expect(classifyError(error).kind).toBe('unavailable');
  });

  test('a request whose statement is held past the timeout ends as 503 + Retry-After / SERVICE_UNAVAILABLE, logged with the request id, and the server keeps serving', async () => {
    const app = supertest(slow.app);
    const requestIds: string[] = [];
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let locked!: () => void;
    const lockTaken = new Promise<void>((resolve) => (locked = resolve));
    // Another session holds the subscriptions table: the listing's statement waits until statement_timeout ends it.
    const holder = slow.database.em().transactional(async (em) => {
      await em.execute('lock table notification_subscriptions in access exclusive mode');
      locked();
      await held;
    });
    await lockTaken;
    try {
      const rest = await app.get(`/users/${ownerId}/notification_subscriptions`).set({ ...REST, ...slowAuth });
      requestIds.push(rest.headers['x-request-id']!);
      expect({ status: rest.status, retryAfter: rest.headers['retry-after'], body: rest.body }).toEqual({
        status: 503,
        retryAfter: '1',
        body: { error: { message: 'Service Unavailable', code: 2000, errors: ['The database is unavailable or busy; retry shortly.'] } },
      });
      const viaGraphql = await app.post('/graphql').set({ ...slowAuth }).send({ query: `{ notificationSubscriptions(userId: "${ownerId}") { totalCount } }` });
      requestIds.push(viaGraphql.headers['x-request-id']!);
      expect(viaGraphql.body.errors[0].extensions).toEqual({ code: 'SERVICE_UNAVAILABLE', apiErrorCode: 2000 });
    } finally {
      release();
      await holder;
    }
    const logged = slow.logs.filter((line) => /database unavailable: answering/.test(line) && /"level":40/.test(line));
    for (const requestId of requestIds) expect(logged.some((line) => line.includes(`"requestId":"${requestId}"`))).toBe(true);
    expect(requestIds).toHaveLength(2);
    const again = await app.get(`/users/${ownerId}/notification_subscriptions`).set({ ...REST, ...slowAuth });
    expect(again.status).toBe(200);
  });
});
