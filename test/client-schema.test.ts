import { createHash, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import supertest from 'supertest';
import { createRateLimiter } from '../src/auth/rate-limit.js';
import { issueDelegation } from '../src/oauth-delegations/oauth-delegation.service.js';
import { startHarness, type Credential, type Harness, type TestAccount } from './support/harness.js';
import { subscriptionFixtures } from './support/subscriptions.js';
import { useHarness } from './support/use-harness.js';

/** What Apollo Client 4's HttpLink sends as Accept. */
const APOLLO_ACCEPT = 'application/graphql-response+json,application/json;q=0.9';
const ORIGIN = 'https://app.test.example';

const authorization = (key: Credential) => ({ Authorization: `Token token=${(key as { token: string }).token}` });

// The schema and wire a client cache can rely on: these tests share one harness and account;
// the rate-limit and trusted-document blocks at the end start harnesses of their own.
let h: Harness;
let account: TestAccount;
useHarness({}, async (started) => {
  h = started;
  account = await h.createAccount();
});

describe('the schema: every part described, every field of a user page resolves or fails alone', () => {
  test('schema walk: every type, field, argument and enum value is described; every field of a user page and its connections resolves for an allowed caller', async () => {
    const { data } = await h.graphql(`{ __schema { types { name kind description
      fields(includeDeprecated: true) { name description args { name description } type { kind name ofType { kind name ofType { kind name ofType { kind name } } } } }
      inputFields { name description } enumValues(includeDeprecated: true) { name description } } } }`, {}, account.key);
    type Named = { name: string; description: string | null };
    type TypeRef = { kind: string; name: string | null; ofType: TypeRef | null };
    type Field = Named & { args: Named[]; type: TypeRef };
    type Type = Named & { kind: string; fields: Field[] | null; inputFields: Named[] | null; enumValues: Named[] | null };
    const types = (data.__schema.types as Type[]).filter((type) => !type.name.startsWith('__') && !['String', 'Int', 'Float', 'Boolean', 'ID'].includes(type.name));
    const undescribed: string[] = [];
    for (const type of types) {
      if (!type.description) undescribed.push(type.name);
      for (const field of [...(type.fields ?? []), ...(type.inputFields ?? [])]) {
        if (!field.description) undescribed.push(`${type.name}.${field.name}`);
        for (const arg of (field as Field).args ?? []) if (!arg.description) undescribed.push(`${type.name}.${field.name}(${arg.name})`);
      }
      for (const value of type.enumValues ?? []) if (!value.description) undescribed.push(`${type.name}.${value.name}`);
    }
    expect(undescribed).toEqual([]);

    // Every field of User, and of the nodes of its connections, selected at once by an allowed
    // caller (the account's full key) on a user with a delegation and a subscription: no errors.
    const byName = new Map(types.map((type) => [type.name, type]));
    const named = (ref: TypeRef): TypeRef => (ref.ofType ? named(ref.ofType) : ref);
    const leaves = (typeName: string) => (byName.get(typeName)!.fields ?? [])
      .filter((field) => ['SCALAR', 'ENUM'].includes(named(field.type).kind) && field.args.every((arg) => arg.name !== 'id'))
      .map((field) => field.name).join(' ');
    const userFields = byName.get('User')!.fields!;
    const selections = userFields.map((field) => {
      const type = byName.get(named(field.type).name!);
      if (type?.kind !== 'OBJECT') return field.name;
      const nodes = type.fields?.find((candidate) => candidate.name === 'nodes');
      if (!nodes) return `${field.name} { ${leaves(type.name)} }`;
      const counted = type.fields!.some((candidate) => candidate.name === 'totalCount') ? 'totalCount' : '';
      return `${field.name} { ${counted} pageInfo { ${leaves('PageInfo')} } edges { cursor } nodes { ${leaves(named(nodes.type).name!)} } }`;
    });
    const user = await h.createUser(account);
    await h.database.transactions.run(h.database.em(), (tx) => issueDelegation(tx, { userId: user.id, type: 'mobile', scopes: 'users.read' }));
    const { register } = subscriptionFixtures(() => h);
    await register(account, 'incident', `PWALK${user.id.slice(-3)}`, 'Walked');
    await h.graphql('mutation($input: CreateNotificationSubscriptionsInput!) { createNotificationSubscriptions(input: $input) { subscriptions { result } } }', { input: { userId: user.id, subscribables: [{ subscribableType: 'INCIDENT', subscribableId: `PWALK${user.id.slice(-3)}` }] } }, account.key);
    const walked = await h.graphql(`query($id: ID!) { user(id: $id) { ${selections.join(' ')} } viewerless: users(first: 2) { totalCount nodes { id } } }`, { id: user.id }, account.key);
    expect(walked.errors).toBeUndefined();
    for (const field of userFields) expect(walked.data.user).toHaveProperty(field.name);
    expect(walked.data.user.oauthDelegations.nodes).toHaveLength(1);
    expect(walked.data.user.notificationSubscriptions.nodes).toHaveLength(1);
  });

  test('no connection declares a field that always errors: AuditRecordConnection has no totalCount; the others count', async () => {
    const introspection = await h.graphql('{ __type(name: "AuditRecordConnection") { fields { name } } }', {}, account.key);
    expect(introspection.data.__type.fields.map((field: { name: string }) => field.name).sort()).toEqual(['edges', 'nodes', 'pageInfo']);
    const user = await h.createUser(account);
    const page = await h.graphql(
      `query($id: ID!) { users(first: 5) { totalCount } user(id: $id) { notificationSubscriptions { totalCount } oauthDelegations { totalCount } auditRecords { nodes { id } } } }`,
      { id: user.id },
      account.key,
    );
    expect(page.errors).toBeUndefined();
    expect(page.data.user).toEqual({ notificationSubscriptions: { totalCount: 0 }, oauthDelegations: { totalCount: 0 }, auditRecords: { nodes: [expect.objectContaining({ id: expect.any(String) })] } });
  });

  test('a FORBIDDEN on a user\'s subscriptions or audit records nulls that field only, not the user page', async () => {
    const reader = await h.createUser(account);
    const other = await h.createUser(account);
    const page = await h.graphql(
      `query($id: ID!) { user(id: $id) { id name notificationSubscriptions { nodes { subscribableId } } auditRecords { nodes { id } } } }`,
      { id: other.id },
      reader.key,
    );
    expect(page.data.user).toEqual({ id: other.id, name: other.name, notificationSubscriptions: null, auditRecords: null });
    const forbidden = page.errors!.map((error) => [error.path.join('.'), error.extensions.code]).sort();
    expect(forbidden).toEqual([['user.auditRecords', 'FORBIDDEN'], ['user.notificationSubscriptions', 'FORBIDDEN']]);
    // Allowed both ways: the user themself sees both lists.
    const own = await h.graphql(`query($id: ID!) { user(id: $id) { notificationSubscriptions { totalCount } auditRecords { nodes { id } } } }`, { id: other.id }, other.key);
    expect(own.errors).toBeUndefined();
    expect(own.data.user.notificationSubscriptions).toEqual({ totalCount: 0 });
  });
});

describe('what mutations and audit records return, as a client cache normalises it', () => {
  test('mutations return what they changed: revoked delegations with their status and the user; created and removed subscriptions with a stable id', async () => {
    const user = await h.createUser(account);
    const issued = await h.database.transactions.run(h.database.em(), (tx) => issueDelegation(tx, { userId: user.id, type: 'web', scopes: 'users.read' }));
    const revoke = await h.graphql(
      'mutation($input: DeleteOAuthDelegationsInput!) { deleteOAuthDelegations(input: $input) { revokedCount revokedOAuthDelegations { id status } user { id oauthDelegations { nodes { id status } } } } }',
      { input: { userId: user.id, types: ['WEB', 'MOBILE'] } },
      account.key,
    );
    expect(revoke.errors).toBeUndefined();
    const delegationId = issued.delegation.id;
    expect(revoke.data.deleteOAuthDelegations).toEqual({
      revokedCount: 1,
      revokedOAuthDelegations: [{ id: delegationId, status: 'REVOKED' }],
      user: { id: user.id, oauthDelegations: { nodes: [{ id: delegationId, status: 'REVOKED' }] } },
    });

    const { register } = subscriptionFixtures(() => h);
    await register(account, 'incident', `PMUT${user.id.slice(-4)}`, 'Mutation incident');
    const entity = { subscribableType: 'INCIDENT', subscribableId: `PMUT${user.id.slice(-4)}` };
    const subscribe = 'mutation($input: CreateNotificationSubscriptionsInput!) { createNotificationSubscriptions(input: $input) { subscriptions { result } createdSubscriptions { id subscribableId subscribableName } } }';
    const created = await h.graphql(subscribe, { input: { userId: user.id, subscribables: [entity] } }, account.key);
    expect(created.errors).toBeUndefined();
    const [subscription] = created.data.createNotificationSubscriptions.createdSubscriptions;
    expect(subscription).toEqual({ id: expect.any(String), subscribableId: entity.subscribableId, subscribableName: 'Mutation incident' });
    const listed = await h.graphql('query($id: ID!) { user(id: $id) { notificationSubscriptions { nodes { id } } } }', { id: user.id }, account.key);
    expect(listed.data.user.notificationSubscriptions.nodes).toEqual([{ id: subscription.id }]);
    const again = await h.graphql(subscribe, { input: { userId: user.id, subscribables: [entity] } }, account.key);
    expect(again.data.createNotificationSubscriptions).toEqual({ subscriptions: [{ result: 'DUPLICATE' }], createdSubscriptions: [] });

    const unsubscribe = 'mutation($input: RemoveNotificationSubscriptionsInput!) { removeNotificationSubscriptions(input: $input) { deletedCount removedSubscriptions { id subscribableId } } }';
    const removed = await h.graphql(unsubscribe, { input: { userId: user.id, subscribables: [entity] } }, account.key);
    expect(removed.data.removeNotificationSubscriptions).toEqual({ deletedCount: 1, removedSubscriptions: [{ id: subscription.id, subscribableId: entity.subscribableId }] });
    // Created again, it keeps its id (derived from its key): a client cache recognises it.
    const recreated = await h.graphql(subscribe, { input: { userId: user.id, subscribables: [entity] } }, account.key);
    expect(recreated.data.createNotificationSubscriptions.createdSubscriptions[0].id).toBe(subscription.id);
  });

  test('an audit reference is a snapshot: its id is its own per record, never the live object\'s', async () => {
    const user = await h.createUser(account);
    for (const name of ['First name', 'Second name']) {
      const update = await h.graphql('mutation($input: UpdateUserInput!) { updateUser(input: $input) { user { id } } }', { input: { id: user.id, name } }, account.key);
      expect(update.errors).toBeUndefined();
    }
    const records = await h.graphql(
      'query($id: ID!) { user(id: $id) { auditRecords { nodes { id rootResource { id resourceId type } } } } }',
      { id: user.id },
      account.key,
    );
    const roots = records.data.user.auditRecords.nodes.map((node: { rootResource: { id: string; resourceId: string } }) => node.rootResource);
    expect(roots.length).toBeGreaterThanOrEqual(2);
    for (const root of roots) expect(root.resourceId).toBe(user.id);
    expect(new Set(roots.map((root: { id: string }) => root.id)).size).toBe(roots.length);
    expect(roots.map((root: { id: string }) => root.id)).not.toContain(user.id);
    // REST keeps the resource's id under `id`.
    const rest = await h.rest('get', `/users/${user.id}/audit/records`, { key: account.key });
    expect(rest.status).toBe(200);
    expect(rest.body.records[0].root_resource.id).toBe(user.id);
  });
});

describe('input errors name every bad field', () => {
  test('form errors name every bad field at once, by its GraphQL path and name; REST keeps its own names', async () => {
    const create = 'mutation($input: CreateUserInput!) { createUser(input: $input) { user { id } } }';
    // Values the input's scalars refuse: every one at once, each at its path.
    const scalars = await h.graphql(create, { input: { email: 'not-an-email', timeZone: 'Mars/Olympus' } }, account.key);
    expect(scalars.errors![0].extensions.code).toBe('BAD_USER_INPUT');
    const scalarFields = scalars.errors![0].extensions.fields as { path: string[]; code: string; message: string }[];
    expect(scalarFields.map((field) => [field.path.join('.'), field.code]).sort()).toEqual([['input.email', 'INVALID'], ['input.name', 'REQUIRED'], ['input.timeZone', 'INVALID']]);
    for (const field of scalarFields) expect(field.message.startsWith(`${field.path.join('.')}: `)).toBe(true);
    // Values the service refuses: every one at once, named as GraphQL names them.
    const bad = await h.graphql(create, { input: { name: ' ', email: 'fine@example.com', timeZone: 'Etc/UTC', role: 'OWNER' } }, account.key);
    expect(bad.data).toBeNull();
    const [error] = bad.errors!;
    expect(error.extensions.code).toBe('BAD_USER_INPUT');
    expect(error.extensions.fields).toEqual([
      { path: ['input', 'name'], code: 'REQUIRED', message: 'name must not be empty' },
      { path: ['input', 'role'], code: 'NOT_ALLOWED', message: 'role owner cannot be assigned through the API' },
    ]);
    const zone = await h.graphql(
      'mutation($input: UpdateUserInput!) { updateUser(input: $input) { user { id } } }',
      { input: { id: (await h.createUser(account)).id, name: ' ', timeZone: null } },
      account.key,
    );
    expect(zone.errors![0].extensions.fields).toEqual([
      { path: ['input', 'timeZone'], code: 'NOT_NULL', message: 'timeZone must not be null (omit it to keep the current value)' },
      { path: ['input', 'name'], code: 'REQUIRED', message: 'name must not be empty' },
    ]);
    expect(JSON.stringify([bad.errors, zone.errors])).not.toContain('time_zone');
    const twice = await h.createUser(account);
    const bulk = await h.graphql(
      'mutation($input: UpdateUsersInput!) { updateUsers(input: $input) { users { id } } }',
      { input: { users: [{ id: twice.id, name: 'Fine' }, { id: twice.id, color: ' ' }] } },
      account.key,
    );
    expect(bulk.errors![0].extensions.fields).toEqual([
      { path: ['input', 'users', 1, 'id'], code: 'DUPLICATE', message: `users[1].id ${twice.id} appears more than once` },
      { path: ['input', 'users', 1, 'color'], code: 'INVALID', message: 'users[1].color must be a color name of at most 32 characters' },
    ]);
    const tooLong = await h.graphql(create, { input: { name: 'n'.repeat(300), email: 'long@example.com' } }, account.key);
    expect(tooLong.errors![0].extensions).toMatchObject({ code: 'BAD_USER_INPUT', fields: [{ path: ['input', 'name'], code: 'TOO_LONG' }] });
    const rest = await h.rest('post', '/users', { key: account.key, body: { user: { name: 'Zone', email: 'zone@example.com', time_zone: 'Mars/Olympus' } } });
    expect(rest.status).toBe(400);
    expect(JSON.stringify(rest.body.error.errors)).toContain('time_zone');
  });
});

describe('query limits and cursors', () => {
  test('the cost limit counts `first` from literals, variables and defaults alike: the settings pages pass, a page 4 times larger does not', async () => {
    const page = (users: string, delegations: string, subscriptions: string, variables = '($users: Int!, $delegations: Int = 50, $subscriptions: Int)') => `query Settings${variables} {
      users(first: ${users}) {
        nodes { id name email role
          oauthDelegations(first: ${delegations}) { nodes { id delegationType status clientId createdAt scopes } pageInfo { hasNextPage endCursor } }
          notificationSubscriptions${subscriptions} { nodes { id subscribableId subscribableName subscribableType } pageInfo { hasNextPage endCursor } }
        }
        pageInfo { hasNextPage endCursor }
      }
    }`;
    const literal = await h.graphql(page('50', '50', '(first: 50)', ''), {}, account.key);
    expect(literal.errors).toBeUndefined();
    const variables = await h.graphql(page('$users', '$delegations', '(first: $subscriptions)'), { users: 50, subscriptions: 50 }, account.key);
    expect(variables.errors).toBeUndefined();
    const auditLog = await h.graphql(
      'query($first: Int!) { auditRecords(first: $first) { nodes { id action executionTime actors { id resourceId type summary } method { type truncatedToken description } rootResource { id resourceId type summary self htmlUrl } details { resource { id type summary } fields { name value beforeValue } references { name added { id type } removed { id type } } } executionContext { requestId remoteAddress } } pageInfo { hasNextPage endCursor } } }',
      { first: 100 },
      account.key,
    );
    expect(auditLog.errors).toBeUndefined();

    const tooLarge = [
      await h.graphql(page('100', '100', '(first: 100)', ''), {}, account.key),
      await h.graphql(page('$users', '$delegations', '(first: $subscriptions)'), { users: 100, delegations: 100, subscriptions: 100 }, account.key),
      // The variable's default (100 here) and the argument's default count like literals.
      await h.graphql(page('$users', '$delegations', '(first: $subscriptions)').replace('$delegations: Int = 50', '$delegations: Int = 100'), { users: 100, subscriptions: 100 }, account.key),
    ];
    for (const refused of tooLarge) {
      expect(refused.data).toBeUndefined();
      expect(refused.errors?.[0].extensions).toMatchObject({ code: 'BAD_USER_INPUT', queryLimit: 'cost' });
      expect(refused.errors?.[0].message).toMatch(/more than the limit of 100000/);
    }
  });

  test('a cursor continues only the list it came from: a search cursor with another query (or none) is BAD_USER_INPUT', async () => {
    const tag = `cur${randomUUID().slice(0, 6)}`;
    for (let i = 0; i < 3; i++) await h.createUser(account, { name: `${tag} ${i}` });
    const query = 'query($query: String, $after: String) { users(first: 1, query: $query, after: $after) { nodes { name } pageInfo { endCursor } } }';
    const first = await h.graphql(query, { query: tag }, account.key);
    const after = first.data.users.pageInfo.endCursor;
    const same = await h.graphql(query, { query: tag, after }, account.key);
    expect(same.errors).toBeUndefined();
    expect(same.data.users.nodes[0].name).toBe(`${tag} 1`);
    for (const variables of [{ after }, { query: 'someone else', after }]) {
      const other = await h.graphql(query, variables, account.key);
      expect(other.data).toBeNull();
      expect(other.errors?.[0].extensions.code).toBe('BAD_USER_INPUT');
      expect(other.errors?.[0].message).toMatch(/after/);
    }
    // The same for the audit log: a cursor of the unfiltered log is no cursor for a filtered one.
    const audit = await h.graphql('query($after: String, $filter: AuditRecordFilter) { auditRecords(first: 1, after: $after, filter: $filter) { nodes { id } pageInfo { endCursor } } }', {}, account.key);
    const auditCursor = audit.data.auditRecords.pageInfo.endCursor;
    expect(auditCursor).toEqual(expect.any(String));
    const next = await h.graphql('query($after: String) { auditRecords(first: 1, after: $after) { nodes { id } } }', { after: auditCursor }, account.key);
    expect(next.errors).toBeUndefined();
    const filtered = await h.graphql('query($after: String) { auditRecords(first: 1, after: $after, filter: { rootResourceTypes: [USERS] }) { nodes { id } } }', { after: auditCursor }, account.key);
    expect(filtered.errors?.[0].extensions.code).toBe('BAD_USER_INPUT');
  });
});

describe('the wire: idempotency refusals and CORS', () => {
  test('an idempotency refusal is a GraphQL response in the media type the client accepted', async () => {
    const key = `key-${randomUUID()}`;
    const create = 'mutation($input: CreateUserInput!) { createUser(input: $input) { user { id } } }';
    const send = (email: string, accept: string) =>
      supertest(h.app).post('/graphql').set({ 'Content-Type': 'application/json', Accept: accept, 'Idempotency-Key': key, ...authorization(account.key) })
        .send({ query: create, variables: { input: { name: 'Idem', email } } });
    expect((await send(`idem-${randomUUID().slice(0, 6)}@example.com`, APOLLO_ACCEPT)).status).toBe(200);
    const refused = await send(`idem-${randomUUID().slice(0, 6)}@example.com`, APOLLO_ACCEPT);
    expect(refused.status).toBe(422);
    expect(refused.headers['content-type']).toBe('application/graphql-response+json; charset=utf-8');
    expect(JSON.parse(refused.text).errors[0].extensions.code).toBe('BAD_USER_INPUT');
    const plain = await send(`idem-${randomUUID().slice(0, 6)}@example.com`, 'application/json');
    expect(plain.headers['content-type']).toBe('application/json; charset=utf-8');
  });

  test('CORS preflights allow what browser clients send and expose what they read', async () => {
    const preflight = await supertest(h.app).options('/graphql').set({
      Origin: ORIGIN,
      'Access-Control-Request-Method': 'POST',
      'Access-Control-Request-Headers': 'authorization, content-type, idempotency-key, apollographql-client-name, apollographql-client-version, traceparent, apollo-require-preflight',
    });
    expect(preflight.status).toBe(204);
    const allowed = preflight.headers['access-control-allow-headers'].toLowerCase().split(/,\s*/);
    for (const header of ['authorization', 'content-type', 'idempotency-key', 'apollographql-client-name', 'apollographql-client-version', 'traceparent', 'apollo-require-preflight']) {
      expect(allowed).toContain(header);
    }
    const answer = await supertest(h.app).post('/graphql').set({ Origin: ORIGIN, 'Content-Type': 'application/json' }).send({ query: '{ __typename }' });
    const exposed = answer.headers['access-control-expose-headers'].toLowerCase().split(/,\s*/);
    for (const header of ['retry-after', 'idempotent-replayed', 'x-request-id', 'ratelimit-limit', 'ratelimit-remaining', 'ratelimit-reset']) expect(exposed).toContain(header);
  });
});

describe('the rate limit answers GraphQL clients in their media type', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ rateLimiter: (logger) => createRateLimiter({ perMinute: 1, windowSeconds: 60, logger }) });
  });
  afterAll(async () => {
    await h?.close();
  });

  test('the 429 is application/graphql-response+json with RATE_LIMITED and Retry-After when the client accepts it', async () => {
    const account = await h.createAccount();
    const ask = () => supertest(h.app).post('/graphql').set({ 'Content-Type': 'application/json', Accept: APOLLO_ACCEPT, ...authorization(account.key) }).send({ query: '{ viewer { id } }' });
    expect((await ask()).status).toBe(200);
    const limited = await ask();
    expect(limited.status).toBe(429);
    expect(limited.headers['content-type']).toBe('application/graphql-response+json; charset=utf-8');
    expect(limited.headers['retry-after']).toBeDefined();
    expect(JSON.parse(limited.text).errors[0].extensions).toMatchObject({ code: 'RATE_LIMITED' });
  });
});

describe('GRAPHQL_TRUSTED_DOCUMENTS: only the manifest\'s operations run', () => {
  const listed = 'query Viewerless { users(first: 1) { totalCount } }';
  const id = createHash('sha256').update(listed).digest('hex');
  let h: Harness;
  beforeAll(async () => {
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'trusted-')), 'manifest.json');
    fs.writeFileSync(file, JSON.stringify({ format: 'apollo-persisted-query-manifest', version: 1, operations: [{ id, name: 'Viewerless', type: 'query', body: listed }] }));
    h = await startHarness({ settings: { graphqlTrustedDocuments: file } });
  });
  afterAll(async () => {
    await h?.close();
  });

  test('listed operations run by id or by their text; any other document is PERSISTED_QUERY_NOT_FOUND; REST keeps working', async () => {
    const account = await h.createAccount();
    const post = (body: object) => supertest(h.app).post('/graphql').set({ 'Content-Type': 'application/json', Accept: APOLLO_ACCEPT, ...authorization(account.key) }).send(body);
    const byId = await post({ extensions: { persistedQuery: { version: 1, sha256Hash: id } } });
    expect([byId.status, JSON.parse(byId.text).data]).toEqual([200, { users: { totalCount: 1 } }]);
    const byText = await post({ query: listed });
    expect(JSON.parse(byText.text).data).toEqual({ users: { totalCount: 1 } });
    for (const body of [{ query: '{ users(first: 1) { totalCount } }' }, { extensions: { persistedQuery: { version: 1, sha256Hash: 'a'.repeat(64) } } }]) {
      const refused = await post(body);
      expect(refused.headers['content-type']).toBe('application/graphql-response+json; charset=utf-8');
      expect(JSON.parse(refused.text).errors[0].extensions.code).toBe('PERSISTED_QUERY_NOT_FOUND');
      expect(JSON.parse(refused.text).data).toBeUndefined();
    }
    // The REST face runs its own documents, not through /graphql.
    expect((await h.rest('get', '/users', { key: account.key })).status).toBe(200);
  });
});
