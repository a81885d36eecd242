import { startHarness, type Harness } from './support/harness.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h?.close();
});

test('unexpected failures are masked on both faces: 500/2000 or INTERNAL_SERVER_ERROR, a request id, no SQL', async () => {
  const account = await h.createAccount();
  // Break the database under the running app: a column that listing users reads disappears.
  await h.database.em().execute('alter table users rename column name to name_gone');
  try {
    const rest = await h.rest('get', '/users', { key: account.key, headers: { 'X-Request-Id': 'req-mask-1' } });
    expect(rest.status).toBe(500);
    expect(rest.body.error.code).toBe(2000);
    // The server's own id (a client's is believed only from a trusted proxy), quoted in the body.
    expect(rest.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    expect(JSON.stringify(rest.body)).toContain(rest.headers['x-request-id']);
    expect(JSON.stringify(rest.body)).not.toMatch(/users|select|relation|stack/i);

    // Rows are read only when selected (a bare totalCount counts without the missing column).
    const graphql = await h.graphql('{ users { totalCount nodes { name } } }', {}, account.key);
    const error = graphql.errors?.[0];
    expect(error.extensions).toMatchObject({ code: 'INTERNAL_SERVER_ERROR', apiErrorCode: 2000 });
    expect(typeof error.extensions.requestId).toBe('string');
    expect(JSON.stringify(graphql.errors)).not.toMatch(/name_gone|select |does not exist|stacktrace/i);
    expect(h.logs.join('\n')).toMatch(/column .*name.* does not exist/);
  } finally {
    await h.database.em().execute('alter table users rename column name_gone to name');
  }
});

test('a failure before execution (authentication cannot reach its table) is masked too, GraphQL-shaped on /graphql', async () => {
  const account = await h.createAccount();
  await h.database.em().execute('alter table api_keys rename to api_keys_gone');
  try {
    const rest = await h.rest('get', '/users', { key: account.key });
    expect([rest.status, rest.body.error.code]).toEqual([500, 2000]);
    const graphql = await h.graphql('{ users { totalCount } }', {}, account.key);
    expect(graphql.status).toBe(500);
    expect(graphql.errors?.[0].extensions).toMatchObject({ code: 'INTERNAL_SERVER_ERROR', apiErrorCode: 2000 });
    expect(JSON.stringify(graphql.errors)).not.toMatch(/api_keys/);
  } finally {
    await h.database.em().execute('alter table api_keys_gone rename to api_keys');
  }
});

test('an API key never appears in the logs, even when a request with it fails', async () => {
  const account = await h.createAccount();
  const secret = (account.key as { token: string }).token;
  await h.rest('get', '/users', { key: account.key });
  await h.rest('get', '/users?limit=-1', { key: account.key });
  await h.graphql('{ users { totalCount } }', {}, account.key);
  expect(h.logs.join('\n')).not.toContain(secret);
});
