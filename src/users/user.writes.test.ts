import { startHarness, type Harness, type TestAccount, type TestUser } from '../../test/support/harness.js';

// What an update of users answers and stores, pinned in detail: the write path (user.writes.ts)
// replaced entity loading and change sets with plain statements, and every message, its order,
// the all-or-nothing rule and which rows get a new updated_at must stay as they were.

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
}, 120_000);
afterAll(async () => {
  await h?.close();
});

interface Stored {
  id: string;
  name: string;
  email: string;
  time_zone: string;
  color: string;
  role: string;
  description: string | null;
  job_title: string | null;
  updated_at: string;
}

async function stored(ids: readonly string[]): Promise<Map<string, Stored>> {
  const rows = await h.database.em().execute<Stored[]>(
    `select id, name, email, time_zone, color, role, description, job_title, to_json(updated_at) #>> '{}' as updated_at from users where id in (?)`,
    [[...ids]],
  );
  return new Map(rows.map((row) => [row.id, row]));
}

async function users(account: TestAccount, count: number): Promise<TestUser[]> {
  const created: TestUser[] = [];
  for (let i = 0; i < count; i++) created.push(await h.createUser(account));
  return created;
}

const put = (account: TestAccount, body: unknown) => h.rest('put', '/users', { key: account.key, body });
const errorsOf = (response: { status: number; body: { error?: { code: number; errors: string[] } } }) => [response.status, response.body.error?.code, response.body.error?.errors];

const UPDATE_USERS = 'mutation($input: UpdateUsersInput!) { updateUsers(input: $input) { users { id name email jobTitle } } }';
const problemsOf = (result: { errors?: { message: string; extensions?: Record<string, unknown> }[] }) =>
  result.errors?.map((error) => [error.extensions?.code, error.extensions?.apiErrorCode, error.extensions?.details ?? [error.message]]);

test('every validation problem of every element is listed, in element order, and nothing is written', async () => {
  const account = await h.createAccount();
  const [a, b, c] = await users(account, 3);
  const before = await stored([a!.id, b!.id, c!.id, account.ownerId]);
  // GraphQL reaches the service with what the REST facade refuses per element before it.
  const result = await h.graphql(UPDATE_USERS, {
    input: {
      users: [
        { id: a!.id, name: ' ', email: 'Shared@Example.com' },
        { id: b!.id, color: '', email: 'shared@example.COM' },
        { id: a!.id, jobTitle: 'Again' },
        { id: 'PNOPE00', name: 'Nobody' },
        { id: 'not an id', name: 'Nobody' },
        { id: account.ownerId, role: 'ADMIN' },
        { id: c!.id, name: 'Valid change', description: null },
      ],
    },
    // The owner's own key: only the owner may change the owner (and even the owner keeps the owner role).
  }, await h.ownerKey(account));
  expect(problemsOf(result)).toEqual([['BAD_USER_INPUT', 2001, [
    'users[0].name must not be empty',
    'users[1].color must be a color name of at most 32 characters',
    'users[1].email is also given to users[0]',
    'users[2].id ' + a!.id + ' appears more than once',
    'users[3].id PNOPE00 is not a user of this account',
    'users[4].id not an id is not a user of this account',
    'users[5].role of the account owner cannot be changed',
  ]]]);
  expect(await stored([a!.id, b!.id, c!.id, account.ownerId])).toEqual(before);

  const rest = await put(account, { users: [{ id: c!.id, name: 'Fine' }, { id: a!.id, name: ' ' }, { id: b!.id, time_zone: 'Mars/Olympus' }] });
  expect(errorsOf(rest)).toEqual([400, 2001, ['users[1].name must not be empty']]);
  expect(await stored([a!.id, b!.id, c!.id, account.ownerId])).toEqual(before);
});

test('an email held by another live user fails every element that asks for it, all in one answer; a deleted user\'s email is free', async () => {
  const account = await h.createAccount();
  const [a, b, c, outsider, gone] = await users(account, 5);
  expect((await h.rest('delete', `/users/${gone!.id}`, { key: account.key })).status).toBe(204);
  const ownerEmail = (await stored([account.ownerId])).get(account.ownerId)!.email;
  const before = await stored([a!.id, b!.id, c!.id]);
  // Every taken email is reported at once, each at its element.
  const taken = await put(account, {
    users: [{ id: a!.id, email: `free-${a!.email}` }, { id: b!.id, email: outsider!.email.toUpperCase() }, { id: c!.id, email: ownerEmail }],
  });
  expect(errorsOf(taken)).toEqual([400, 2001, ['users[1].email has already been taken', 'users[2].email has already been taken']]);
  expect(await stored([a!.id, b!.id, c!.id])).toEqual(before);

  const freed = await put(account, { users: [{ id: a!.id, email: gone!.email }] });
  expect(freed.status).toBe(200);
  expect(freed.body.users[0].email).toBe(gone!.email);
  expect((await stored([a!.id])).get(a!.id)?.email).toBe(gone!.email);
});

test('an element may not take the email of another element that keeps it, and a swap in one request collides', async () => {
  const account = await h.createAccount();
  const [a, b, c] = await users(account, 3);
  const before = await stored([a!.id, b!.id, c!.id]);

  const keeps = await put(account, { users: [{ id: a!.id, email: b!.email }, { id: b!.id, name: 'Keeps the email' }] });
  expect(errorsOf(keeps)).toEqual([400, 2001, ['email has already been taken']]);

  const swap = await put(account, { users: [{ id: a!.id, email: b!.email }, { id: b!.id, email: a!.email }] });
  expect(errorsOf(swap)).toEqual([400, 2001, ['email has already been taken']]);
  expect(await stored([a!.id, b!.id, c!.id])).toEqual(before);
});

test('values are stored trimmed where the API trims, nullable fields clear, the answer is what a read shows, and only changed rows get a new updated_at', async () => {
  const account = await h.createAccount();
  const [a, b, c] = await users(account, 3);
  // Rows whose values do not change are not written at all (their updated_at stays).
  await h.database.em().execute(`update users set updated_at = '2020-01-01T00:00:00Z', description = 'Bio', job_title = 'Title' where id in (?)`, [[a!.id, b!.id, c!.id]]);
  const response = await put(account, {
    users: [
      { id: b!.id, name: '  Spaced Name  ', email: b!.email.toUpperCase(), time_zone: 'America/Lima', color: 'red', role: 'admin', description: null, job_title: null },
      { id: a!.id, type: 'user', description: 'Bio', job_title: 'Title' },
      { id: c!.id, job_title: 'New title' },
    ],
  });
  expect(response.status).toBe(200);
  expect(response.body.users.map((user: { id: string }) => user.id)).toEqual([b!.id, a!.id, c!.id]);
  const row = await stored([a!.id, b!.id, c!.id]);
  expect(row.get(b!.id)).toMatchObject({ name: 'Spaced Name', email: b!.email.toUpperCase(), time_zone: 'America/Lima', color: 'red', role: 'admin', description: null, job_title: null });
  expect(row.get(a!.id)).toMatchObject({ description: 'Bio', job_title: 'Title', updated_at: '2020-01-01T00:00:00+00:00' });
  expect(row.get(b!.id)?.updated_at).not.toBe('2020-01-01T00:00:00+00:00');
  expect(row.get(c!.id)?.updated_at).not.toBe('2020-01-01T00:00:00+00:00');
  for (const [index, id] of [b!.id, a!.id, c!.id].entries()) {
    const shown = await h.rest('get', `/users/${id}`, { key: account.key });
    expect(response.body.users[index]).toEqual(shown.body.user);
  }
  expect(response.body.users[0]).not.toHaveProperty('job_title');
  expect(response.body.users[0]).toMatchObject({ name: 'Spaced Name', role: 'admin', description: null, time_zone: 'America/Lima' });
});

test('one user: 404 for an unknown or deleted user, the single-user messages carry no element prefix', async () => {
  const account = await h.createAccount();
  const [a, gone] = await users(account, 2);
  expect((await h.rest('delete', `/users/${gone!.id}`, { key: account.key })).status).toBe(204);
  expect((await h.rest('put', `/users/${gone!.id}`, { key: account.key, body: { user: { name: 'Back' } } })).status).toBe(404);
  const bad = await h.graphql('mutation($input: UpdateUserInput!) { updateUser(input: $input) { user { id } } }', { input: { id: a!.id, name: '', color: '' } }, account.key);
  expect(problemsOf(bad)).toEqual([['BAD_USER_INPUT', 2001, ['name must not be empty', 'color must be a color name of at most 32 characters']]]);
  const unknown = await h.graphql('mutation($input: UpdateUserInput!) { updateUser(input: $input) { user { id } } }', { input: { id: 'PNOPE00', name: '' } }, account.key);
  expect(problemsOf(unknown)).toEqual([['NOT_FOUND', 2100, ['The requested user was not found.']]]);
  const owner = await h.rest('put', `/users/${account.ownerId}`, { key: await h.ownerKey(account), body: { user: { role: 'admin' } } });
  expect(errorsOf(owner)).toEqual([400, 2001, ['role of the account owner cannot be changed']]);
  const taken = await h.rest('put', `/users/${a!.id}`, { key: account.key, body: { user: { email: (await stored([account.ownerId])).get(account.ownerId)!.email } } });
  expect(errorsOf(taken)).toEqual([400, 2001, ['email has already been taken']]);
  const ownCase = await h.rest('put', `/users/${a!.id}`, { key: account.key, body: { user: { email: a!.email.toUpperCase() } } });
  expect([ownCase.status, ownCase.body.user.email]).toEqual([200, a!.email.toUpperCase()]);
});

test('without can_update_user: own profile fields only; the first other user or role change is refused as a whole', async () => {
  const account = await h.createAccount();
  const [self, other] = await users(account, 2);
  const before = await stored([self!.id, other!.id]);
  const peer = await h.graphql(UPDATE_USERS, { input: { users: [{ id: self!.id, name: '' }, { id: other!.id, name: 'Hijacked' }] } }, self!.key);
  expect(problemsOf(peer)).toEqual([['FORBIDDEN', 2010, ['Only the user themself or a holder of can_update_user may change this user.']]]);
  const role = await h.rest('put', '/users', { key: self!.key, body: { users: [{ id: self!.id, role: 'admin' }] } });
  expect(errorsOf(role)).toEqual([403, 2010, ['Changing a role requires the can_update_user permission.']]);
  const sameRole = await h.rest('put', '/users', { key: self!.key, body: { users: [{ id: self!.id, role: 'user', name: 'Me' }, { id: 'PNOPE00', name: 'x' }] } });
  expect(errorsOf(sameRole)).toEqual([400, 2001, ['users[1].id PNOPE00 is not a user of this account']]);
  expect(await stored([self!.id, other!.id])).toEqual(before);
  const own = await h.rest('put', '/users', { key: self!.key, body: { users: [{ id: self!.id, role: 'user', name: 'Me' }] } });
  expect([own.status, own.body.users[0].name]).toEqual([200, 'Me']);
});

test('GraphQL: updateUsers and updateUser present every selected field from the written row, other features\' fields included', async () => {
  const account = await h.createAccount();
  const [a, b] = await users(account, 2);
  const fields = 'id name email timeZone color role description jobTitle avatarUrl invitationSent createdViaSso createdAt self htmlUrl httpCalUrl notificationSubscriptions { totalCount }';
  const many = await h.graphql(
    `mutation($input: UpdateUsersInput!) { updateUsers(input: $input) { users { ${fields} } } }`,
    { input: { users: [{ id: b!.id, jobTitle: 'GQL', role: 'ADMIN' }, { id: a!.id, name: 'Renamed', description: 'Hi' }] } },
    account.key,
  );
  expect(many.errors).toBeUndefined();
  for (const [index, id] of [b!.id, a!.id].entries()) {
    const read = await h.graphql(`query($id: ID!) { user(id: $id) { ${fields} } }`, { id }, account.key);
    expect(many.data.updateUsers.users[index]).toEqual(read.data.user);
  }
  expect(many.data.updateUsers.users[0]).toMatchObject({ jobTitle: 'GQL', role: 'ADMIN' });
  const one = await h.graphql(`mutation($input: UpdateUserInput!) { updateUser(input: $input) { user { ${fields} } } }`, { input: { id: a!.id, jobTitle: null, color: 'teal' } }, account.key);
  const read = await h.graphql(`query($id: ID!) { user(id: $id) { ${fields} } }`, { id: a!.id }, account.key);
  expect(one.data.updateUser.user).toEqual(read.data.user);
  expect(one.data.updateUser.user).toMatchObject({ jobTitle: null, color: 'teal', name: 'Renamed' });
});
