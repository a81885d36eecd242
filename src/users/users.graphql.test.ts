import { startHarness, type Harness } from '../../test/support/harness.js';
import { UsersService } from './user.service.js';
import { User } from './user.entity.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h?.close();
});

const USER_FIELDS = 'id name email timeZone color role avatarUrl description invitationSent jobTitle createdViaSso self htmlUrl';

test('the same user reads the same through both faces', async () => {
  const account = await h.createAccount();
  const created = await h.rest('post', '/users', { key: account.key, body: { user: { name: 'Both Faces', email: 'both@example.com', time_zone: 'Europe/Paris', role: 'observer', job_title: 'Watcher', description: 'bio' } } });
  const rest = created.body.user;
  const graphql = await h.graphql(`query($id: ID!) { user(id: $id) { ${USER_FIELDS} } }`, { id: rest.id }, account.key);
  expect(graphql.errors).toBeUndefined();
  const user = graphql.data.user;
  expect({
    id: user.id, name: user.name, email: user.email, time_zone: user.timeZone, color: user.color, role: user.role.toLowerCase(),
    avatar_url: user.avatarUrl, description: user.description, invitation_sent: user.invitationSent, job_title: user.jobTitle,
    created_via_sso: user.createdViaSso, self: user.self, html_url: user.htmlUrl,
  }).toEqual({
    id: rest.id, name: rest.name, email: rest.email, time_zone: rest.time_zone, color: rest.color, role: rest.role,
    avatar_url: rest.avatar_url, description: rest.description, invitation_sent: rest.invitation_sent, job_title: rest.job_title,
    created_via_sso: rest.created_via_sso, self: rest.self, html_url: rest.html_url,
  });
});

test('users connection: cursor pages cover every user once, in order, with totalCount', async () => {
  const account = await h.createAccount();
  for (let i = 0; i < 7; i++) await h.createUser(account, { name: `Paged ${String.fromCharCode(71 - i)}` });
  const query = `query($after: String) { users(first: 3, after: $after, query: "paged") { totalCount nodes { id name } pageInfo { hasNextPage endCursor } } }`;
  const seen: string[] = [];
  let after: string | null = null;
  for (let page = 0; page < 5; page++) {
    const result: any = await h.graphql(query, { after }, account.key);
    expect(result.errors).toBeUndefined();
    expect(result.data.users.totalCount).toBe(7);
    seen.push(...result.data.users.nodes.map((node: { name: string }) => node.name));
    if (!result.data.users.pageInfo.hasNextPage) break;
    after = result.data.users.pageInfo.endCursor;
  }
  expect(seen).toEqual(['Paged A', 'Paged B', 'Paged C', 'Paged D', 'Paged E', 'Paged F', 'Paged G']);
});

test('a forged cursor is BAD_USER_INPUT', async () => {
  const account = await h.createAccount();
  const first = await h.graphql('{ users(first: 1) { pageInfo { endCursor } } }', {}, account.key);
  const cursor: string = first.data.users.pageInfo.endCursor;
  const [body, signature] = cursor.split('.');
  const payload = JSON.parse(Buffer.from(body!, 'base64url').toString());
  const forged = `${Buffer.from(JSON.stringify({ ...payload, n: '' })).toString('base64url')}.${signature}`;
  const result = await h.graphql('query($after: String) { users(first: 1, after: $after) { nodes { id } } }', { after: forged }, account.key);
  expect(result.errors?.[0].extensions).toMatchObject({ code: 'BAD_USER_INPUT', apiErrorCode: 2001 });
});

test('errors carry extensions.code and apiErrorCode', async () => {
  const account = await h.createAccount();
  const unauthenticated = await h.graphql('{ users { totalCount } }');
  expect(unauthenticated.errors?.[0].extensions).toMatchObject({ code: 'UNAUTHENTICATED', apiErrorCode: 2006 });
  const notFound = await h.graphql('{ user(id: "PNOPE00") { id } }', {}, account.key);
  expect(notFound.errors?.[0].extensions).toMatchObject({ code: 'NOT_FOUND', apiErrorCode: 2100 });
  const viewer = await h.graphql('{ viewer { id } }', {}, account.key);
  expect(viewer.errors?.[0].extensions).toMatchObject({ code: 'BAD_USER_INPUT', apiErrorCode: 2001 });
  const badEmail = await h.graphql('mutation { createUser(input: { name: "X", email: "nope" }) { user { id } } }', {}, account.key);
  expect(badEmail.errors?.[0].extensions?.code).toBe('GRAPHQL_VALIDATION_FAILED');
  expect(badEmail.errors?.[0].extensions?.apiErrorCode).toBe(2001);
  const readOnly = await h.accountKey(account, { readOnly: true });
  const denied = await h.graphql('mutation { createUser(input: { name: "X", email: "x@example.com" }) { user { id } } }', {}, readOnly);
  expect(denied.errors?.[0].extensions).toMatchObject({ code: 'FORBIDDEN', apiErrorCode: 2010 });
  const tooMany = await h.graphql('{ users(first: 101) { totalCount } }', {}, account.key);
  expect(tooMany.errors?.[0].extensions).toMatchObject({ code: 'BAD_USER_INPUT' });
});

test('updateUsers is all or nothing through GraphQL too', async () => {
  const account = await h.createAccount();
  const a = await h.createUser(account, { name: 'Keep A' });
  const b = await h.createUser(account, { name: 'Keep B' });
  const result = await h.graphql(
    'mutation($input: UpdateUsersInput!) { updateUsers(input: $input) { users { id } } }',
    { input: { users: [{ id: a.id, name: 'Changed A' }, { id: b.id, name: '' }] } },
    account.key,
  );
  expect(result.errors?.[0].extensions?.code).toBe('BAD_USER_INPUT');
  expect(result.errors?.[0].message).toContain('users[1].name');
  const names = (await h.database.em().find(User, { id: [a.id, b.id] })).map((user) => user.name).sort();
  expect(names).toEqual(['Keep A', 'Keep B']);
});

test('deleteUser returns the id and leaves a tombstone', async () => {
  const account = await h.createAccount();
  const user = await h.createUser(account);
  const result = await h.graphql('mutation($id: ID!) { deleteUser(input: { id: $id }) { deletedUserId } }', { id: user.id }, account.key);
  expect(result.data?.deleteUser.deletedUserId).toBe(user.id);
  const tombstone = await h.database.em().findOne(User, { id: user.id });
  expect(tombstone?.deletedAt).toBeInstanceOf(Date);
});

test('a deleted user\'s id is never issued again: a collision with the tombstone draws a new id', async () => {
  const account = await h.createAccount();
  const deleted = await h.createUser(account);
  await h.rest('delete', `/users/${deleted.id}`, { key: account.key });
  const ids = [deleted.id, 'PFRESH1'];
  const principal = { kind: 'account_key' as const, accountId: account.id, credentialId: 'test', readOnly: false, rateLimitKey: 'test' };
  const service = new UsersService(h.database.em(), principal, h.database.transactions, {}, () => ids.shift()!);
  const created = await service.create({ name: 'Newcomer', email: 'newcomer@example.com' });
  expect(created.id).toBe('PFRESH1');
  const tombstone = await h.database.em().findOne(User, { id: deleted.id });
  expect(tombstone?.name).toBe(deleted.name);
  expect(tombstone?.deletedAt).toBeInstanceOf(Date);
});

test('GraphQL over GET is refused without a CSRF-safe header, and introspection works', async () => {
  const agent = (await import('supertest')).default(h.app);
  const account = await h.createAccount();
  const csrf = await agent.get('/graphql?query=%7B__typename%7D').set('Accept', 'application/json').set('Authorization', `Token token=${(account.key as { token: string }).token}`);
  expect(csrf.status).toBe(400);
  const introspection = await h.graphql('{ __schema { queryType { name } } }', {}, account.key);
  expect(introspection.data.__schema.queryType.name).toBe('Query');
});

test('self, htmlUrl and avatarUrl (plain resolvers) are the same for a read row and a mutation\'s entity, through both faces', async () => {
  const account = await h.createAccount();
  const withAvatar = await h.createUser(account, { name: 'Has Avatar' });
  const without = await h.createUser(account, { name: 'No Avatar' });
  await h.database.em().nativeUpdate(User, { id: withAvatar.id }, { avatarUrl: 'https://cdn.example.com/a/b.png' });
  const urls = 'self htmlUrl avatarUrl';
  for (const { id } of [withAvatar, without]) {
    // Entity sources: the mutations return the loaded entity; rows: the reads' plain objects.
    const mutated = await h.graphql(`mutation($id: ID!) { updateUser(input: { id: $id, jobTitle: "Tester" }) { user { ${urls} } } }`, { id }, account.key);
    const read = await h.graphql(`query($id: ID!) { user(id: $id) { ${urls} } users(first: 10) { nodes { id ${urls} } } }`, { id }, account.key);
    expect(mutated.errors).toBeUndefined();
    expect(read.errors).toBeUndefined();
    const expected = {
      self: `https://api.test.example/users/${id}`,
      htmlUrl: `https://app.test.example/users/${id}`,
      avatarUrl: id === withAvatar.id ? 'https://cdn.example.com/a/b.png' : 'https://app.test.example/assets/blank-avatar.png',
    };
    expect(mutated.data.updateUser.user).toEqual(expected);
    expect(read.data.user).toEqual(expected);
    expect(read.data.users.nodes.find((node: { id: string }) => node.id === id)).toEqual({ id, ...expected });

    const restExpected = { self: expected.self, html_url: expected.htmlUrl, avatar_url: expected.avatarUrl };
    const put = await h.rest('put', `/users/${id}`, { key: account.key, body: { user: { job_title: 'Tester 2' } } });
    const shown = await h.rest('get', `/users/${id}`, { key: account.key });
    const listed = await h.rest('get', '/users', { key: account.key });
    expect(put.body.user).toMatchObject(restExpected);
    expect(shown.body.user).toMatchObject(restExpected);
    expect(listed.body.users.find((user: { id: string }) => user.id === id)).toMatchObject(restExpected);
  }
});

test('users(match:) looks users up by email (ignoring case), externalId or id; updateUser sets externalId and refuses a stale expectedVersion', async () => {
  const account = await h.createAccount();
  const create = 'mutation($input: CreateUserInput!) { createUser(input: $input) { user { id externalId active version } } }';
  const first = await h.graphql(create, { input: { name: 'Match One', email: 'match.one@example.com', externalId: 'idp-1' } }, account.key);
  const second = await h.graphql(create, { input: { name: 'Match Two', email: 'match.two@example.com', active: false } }, account.key);
  expect(first.data.createUser.user).toMatchObject({ externalId: 'idp-1', active: true });
  expect(second.data.createUser.user).toMatchObject({ externalId: null, active: false });
  const [one, two] = [first.data.createUser.user, second.data.createUser.user];

  const list = 'query($match: [UserMatchInput!], $query: String) { users(match: $match, query: $query, first: 10) { totalCount nodes { id active } } }';
  const ids = async (match: unknown) => (await h.graphql(list, { match }, account.key)).data.users.nodes.map((user: { id: string }) => user.id);
  expect(await ids([{ email: 'MATCH.ONE@example.com' }])).toEqual([one.id]);
  expect(await ids([{ externalId: 'idp-1' }, { id: two.id }])).toEqual([one.id, two.id]);
  expect(await ids([{ externalId: 'idp-1', email: 'match.two@example.com' }])).toEqual([]);
  expect(await ids([])).toEqual([]);
  const both = await h.graphql(list, { match: [{ id: one.id }], query: 'match' }, account.key);
  expect(both.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
  const empty = await h.graphql(list, { match: [{}] }, account.key);
  expect(empty.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');

  const update = 'mutation($input: UpdateUserInput!) { updateUser(input: $input) { user { externalId version } } }';
  const updated = await h.graphql(update, { input: { id: one.id, externalId: 'idp-1b', expectedVersion: one.version } }, account.key);
  expect(updated.data.updateUser.user.externalId).toBe('idp-1b');
  expect(updated.data.updateUser.user.version).not.toBe(one.version);
  const stale = await h.graphql(update, { input: { id: one.id, externalId: 'idp-1c', expectedVersion: one.version } }, account.key);
  expect(stale.errors?.[0]?.extensions?.code).toBe('CONFLICT');
  // Authorization decides first: a user who may not change this user learns nothing from a stale version.
  const plain = await h.createUser(account, { role: 'user' });
  const unauthorized = await h.graphql(update, { input: { id: one.id, externalId: 'idp-1d', expectedVersion: one.version } }, plain.key);
  expect(unauthorized.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
  const taken = await h.graphql(update, { input: { id: two.id, externalId: 'idp-1b' } }, account.key);
  expect(taken.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
  expect(await ids([{ externalId: 'idp-1b' }])).toEqual([one.id]);
});
