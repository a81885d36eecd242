import { randomUUID } from 'node:crypto';
import net from 'node:net';
import pg from 'pg';
import supertest from 'supertest';
import { startHarness, type Credential, type Harness, type TestAccount } from './support/harness.js';

let h: Harness;
let account: TestAccount;
beforeAll(async () => {
  h = await startHarness();
  account = await h.createAccount();
});
afterAll(async () => {
  await h?.close();
});

const newKey = () => `key-${randomUUID()}`;
const newEmail = () => `idem-${randomUUID().slice(0, 8)}@example.com`;
const CREATE_USER = 'mutation Create($input: CreateUserInput!) { createUser(input: $input) { user { id email } } }';
const authorization = (key: Credential) => ({ Authorization: `Token token=${(key as { token: string }).token}` });

async function usersWithEmail(email: string): Promise<number> {
  const rows = await h.database.em().execute('select count(*)::int as n from users where lower(email) = lower(?)', [email]);
  return rows[0].n;
}

function graphqlWithKey(idempotencyKey: string, query: string, variables: Record<string, unknown>, key: Credential = account.key) {
  return supertest(h.app).post('/graphql').set({ 'Content-Type': 'application/json', 'Idempotency-Key': idempotencyKey, ...authorization(key) }).send({ query, variables });
}

describe('REST', () => {
  test('a retry with the same key and body replays the first outcome without running again; another body is 422', async () => {
    const key = newKey();
    const email = newEmail();
    const first = await h.rest('post', '/users', { key: account.key, body: { user: { name: 'Idem', email } }, headers: { 'Idempotency-Key': key } });
    expect(first.status).toBe(201);
    expect(first.headers['idempotent-replayed']).toBeUndefined();
    const replay = await h.rest('post', '/users', { key: account.key, body: { user: { name: 'Idem', email } }, headers: { 'Idempotency-Key': key } });
    expect(replay.status).toBe(201);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.headers['content-type']).toBe(first.headers['content-type']);
    expect(replay.body).toEqual(first.body);
    expect(await usersWithEmail(email)).toBe(1);

    const other = await h.rest('post', '/users', { key: account.key, body: { user: { name: 'Idem', email: newEmail() } }, headers: { 'Idempotency-Key': key } });
    expect([other.status, other.body.error.code]).toEqual([422, 2001]);
    expect(other.body.error.errors[0]).toMatch(/different request/);
  });

  test('a stored 4xx is replayed too; DELETE replays its 204 instead of a 404', async () => {
    const invalidKey = newKey();
    const invalid = await h.rest('post', '/users', { key: account.key, body: { user: { name: 'No email' } }, headers: { 'Idempotency-Key': invalidKey } });
    expect(invalid.status).toBe(400);
    const invalidAgain = await h.rest('post', '/users', { key: account.key, body: { user: { name: 'No email' } }, headers: { 'Idempotency-Key': invalidKey } });
    expect([invalidAgain.status, invalidAgain.headers['idempotent-replayed']]).toEqual([400, 'true']);
    expect(invalidAgain.body).toEqual(invalid.body);

    const user = await h.createUser(account);
    const deleteKey = newKey();
    expect((await h.rest('delete', `/users/${user.id}`, { key: account.key, headers: { 'Idempotency-Key': deleteKey } })).status).toBe(204);
    const deletedAgain = await h.rest('delete', `/users/${user.id}`, { key: account.key, headers: { 'Idempotency-Key': deleteKey } });
    expect([deletedAgain.status, deletedAgain.headers['idempotent-replayed']]).toEqual([204, 'true']);
    expect((await h.rest('delete', `/users/${user.id}`, { key: account.key })).status).toBe(404);
  });

  test('keys are scoped to the credential, bounded in length, and ignored on reads', async () => {
    const key = newKey();
    const otherAccount = await h.createAccount();
    const mine = await h.rest('post', '/users', { key: account.key, body: { user: { name: 'Scoped', email: newEmail() } }, headers: { 'Idempotency-Key': key } });
    const theirs = await h.rest('post', '/users', { key: otherAccount.key, body: { user: { name: 'Scoped', email: newEmail() } }, headers: { 'Idempotency-Key': key } });
    expect([mine.status, theirs.status]).toEqual([201, 201]);
    expect(theirs.body.user.id).not.toBe(mine.body.user.id);

    const tooLong = await h.rest('post', '/users', { key: account.key, body: { user: { name: 'Long', email: newEmail() } }, headers: { 'Idempotency-Key': 'k'.repeat(256) } });
    expect([tooLong.status, tooLong.body.error.code]).toEqual([400, 2001]);
    expect(tooLong.body.error.errors[0]).toMatch(/255/);
    expect((await h.rest('post', '/users', { key: account.key, body: { user: { name: 'Long', email: newEmail() } }, headers: { 'Idempotency-Key': 'k'.repeat(255) } })).status).toBe(201);

    const read = await h.rest('get', '/users', { key: account.key, headers: { 'Idempotency-Key': key } });
    expect([read.status, read.headers['idempotent-replayed']]).toEqual([200, undefined]);
  });

  test('a regenerated calendar key is replayed to the client but never stored readable', async () => {
    const user = await h.createUser(account);
    const key = newKey();
    const first = await h.rest('post', `/users/${user.id}/regenerate_private_url_key`, { key: user.key, headers: { 'Idempotency-Key': key } });
    expect(first.status).toBe(200);
    const secret = first.body.private_url_key as string;
    const replay = await h.rest('post', `/users/${user.id}/regenerate_private_url_key`, { key: user.key, headers: { 'Idempotency-Key': key } });
    expect([replay.status, replay.body.private_url_key]).toEqual([200, secret]);
    const rows = await h.database.em().execute('select response_sealed from idempotency_keys where key = ?', [key]);
    const stored = Buffer.from(rows[0].response_sealed as Uint8Array);
    expect(stored.length).toBeGreaterThan(100);
    expect(stored.includes(Buffer.from(secret))).toBe(false);
    expect(stored.toString('latin1')).not.toMatch(/private_url_key|\/private\//);
  });

  test('expired keys are purged, and the key can then be used afresh', async () => {
    const key = newKey();
    expect((await h.rest('post', '/users', { key: account.key, body: { user: { name: 'Old', email: newEmail() } }, headers: { 'Idempotency-Key': key } })).status).toBe(201);
    await h.database.em().execute(`update idempotency_keys set expires_at = now() - interval '1 second' where key = ?`, [key]);
    expect(await h.server.idempotencyStore.purgeExpired()).toBeGreaterThanOrEqual(1);
    expect(await h.database.em().execute('select 1 from idempotency_keys where key = ?', [key])).toEqual([]);
    const fresh = await h.rest('post', '/users', { key: account.key, body: { user: { name: 'New', email: newEmail() } }, headers: { 'Idempotency-Key': key } });
    expect([fresh.status, fresh.headers['idempotent-replayed']]).toEqual([201, undefined]);
  });
});

test('a client whose connection broke before the answer retries with its key: the write exists once', async () => {
  await new Promise<void>((resolve) => h.server.httpServer.listen(0, '127.0.0.1', resolve));
  try {
    const port = (h.server.httpServer.address() as net.AddressInfo).port;
    const key = newKey();
    const email = newEmail();
    const body = JSON.stringify({ user: { name: 'Reset', email } });
    const socket = net.connect(port, '127.0.0.1');
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
    socket.write(`POST /users HTTP/1.1\r\nHost: t\r\nAuthorization: ${authorization(account.key).Authorization}\r\nIdempotency-Key: ${key}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
    // The server has the request and runs it; the client's connection breaks before any answer.
    await waitFor(async () => (await h.database.em().execute('select 1 from idempotency_keys where key = ?', [key])).length === 1);
    socket.resetAndDestroy();
    const statuses: number[] = [];
    for (let attempt = 0; attempt < 50; attempt++) {
      const retry = await h.rest('post', '/users', { key: account.key, body: JSON.parse(body), headers: { 'Idempotency-Key': key } });
      statuses.push(retry.status);
      if (retry.status !== 409) break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(statuses.at(-1)).toBe(201);
    expect(statuses.filter((status) => status !== 409 && status !== 201)).toEqual([]);
    expect(await usersWithEmail(email)).toBe(1);
  } finally {
    await new Promise<void>((resolve) => h.server.httpServer.close(() => resolve()));
  }
});

describe('GraphQL', () => {
  test('a mutation retried with its key is replayed; other variables are 422; a query with a key is not remembered', async () => {
    const key = newKey();
    const email = newEmail();
    const first = await graphqlWithKey(key, CREATE_USER, { input: { name: 'Graph', email } });
    expect(first.status).toBe(200);
    expect(first.body.data.createUser.user.email).toBe(email);
    const replay = await graphqlWithKey(key, CREATE_USER, { input: { name: 'Graph', email } });
    expect([replay.status, replay.headers['idempotent-replayed']]).toEqual([200, 'true']);
    expect(replay.body).toEqual(first.body);
    expect(await usersWithEmail(email)).toBe(1);

    const other = await graphqlWithKey(key, CREATE_USER, { input: { name: 'Graph', email: newEmail() } });
    expect(other.status).toBe(422);
    expect(other.body.errors[0].extensions).toMatchObject({ code: 'BAD_USER_INPUT', apiErrorCode: 2001 });

    const queryKey = newKey();
    const query = await graphqlWithKey(queryKey, '{ users { totalCount } }', {});
    expect([query.status, query.headers['idempotent-replayed']]).toEqual([200, undefined]);
    const mutationAfterQuery = await graphqlWithKey(queryKey, CREATE_USER, { input: { name: 'After query', email: newEmail() } });
    expect([mutationAfterQuery.status, mutationAfterQuery.body.data?.createUser.user.id !== undefined]).toEqual([200, true]);
  });
});

// Holding a table lock from a second connection keeps the first request running; PGlite has one connection only.
const describeWithPostgres = process.env.DATABASE_URL ? describe : describe.skip;

describeWithPostgres('a retry while the first request still runs', () => {
  test('is 409 with Retry-After on both faces; once the first finishes, the retry gets its outcome', async () => {
    const locker = new pg.Client({ connectionString: h.database.url });
    await locker.connect();
    try {
      await locker.query('begin');
      // Reads go on; the insert of a new user waits.
      await locker.query('lock table users in exclusive mode');
      const restKey = newKey();
      const restBody = { user: { name: 'Slow', email: newEmail() } };
      const graphqlKey = newKey();
      const graphqlVariables = { input: { name: 'Slow graph', email: newEmail() } };
      const restFirst = h.rest('post', '/users', { key: account.key, body: restBody, headers: { 'Idempotency-Key': restKey } });
      const graphqlFirst = graphqlWithKey(graphqlKey, CREATE_USER, graphqlVariables).then((response) => response);
      await waitFor(async () => (await h.database.em().execute(`select count(*)::int as n from idempotency_keys where key in (?, ?) and state = 'running'`, [restKey, graphqlKey]))[0].n === 2);

      const restRetry = await h.rest('post', '/users', { key: account.key, body: restBody, headers: { 'Idempotency-Key': restKey } });
      expect([restRetry.status, restRetry.body.error.code, restRetry.headers['retry-after']]).toEqual([409, 2002, '1']);
      const graphqlRetry = await graphqlWithKey(graphqlKey, CREATE_USER, graphqlVariables);
      expect(graphqlRetry.status).toBe(409);
      expect(graphqlRetry.body.errors[0].extensions).toMatchObject({ code: 'CONFLICT', apiErrorCode: 2002 });

      await locker.query('commit');
      const [restDone, graphqlDone] = await Promise.all([restFirst, graphqlFirst]);
      expect([restDone.status, graphqlDone.status]).toEqual([201, 200]);
      const restLater = await h.rest('post', '/users', { key: account.key, body: restBody, headers: { 'Idempotency-Key': restKey } });
      expect([restLater.status, restLater.body.user.id]).toEqual([201, restDone.body.user.id]);
      const graphqlLater = await graphqlWithKey(graphqlKey, CREATE_USER, graphqlVariables);
      expect(graphqlLater.body).toEqual(graphqlDone.body);
      expect(await usersWithEmail(restBody.user.email)).toBe(1);
      expect(await usersWithEmail(graphqlVariables.input.email)).toBe(1);
    } finally {
      await locker.query('rollback').catch(() => {});
      await locker.end();
    }
  });
});

async function waitFor(condition: () => Promise<boolean>, attempts = 100): Promise<void> {
  for (let attempt = 0; attempt < attempts; attempt++) {
    if (await condition()) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error('condition not met');
}
