import { randomBytes, randomUUID } from 'node:crypto';
import supertest from 'supertest';
import { createApp } from '../src/app/create-app.js';
import { createRateLimiter } from '../src/auth/rate-limit.js';
import { AccountsService } from '../src/accounts/accounts.service.js';
import { createLogger } from '../src/logging/logger.js';
import { startHarness, TEST_SETTINGS, type Harness } from './support/harness.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('rate limits (in memory)', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ rateLimiter: (logger) => createRateLimiter({ perMinute: 3, windowSeconds: 2, logger }) });
  });
  afterAll(async () => {
    await h?.close();
  });

  test('the (limit+1)th request in a window is 429/2020 with the headers, and the window resets', async () => {
    const account = await h.createAccount();
    const remaining: string[] = [];
    for (let i = 0; i < 3; i++) {
      const response = await h.rest('get', '/users', { key: account.key });
      expect(response.status).toBe(200);
      expect(response.headers['ratelimit-limit']).toBe('3');
      remaining.push(response.headers['ratelimit-remaining']);
      expect(Number(response.headers['ratelimit-reset'])).toBeGreaterThan(0);
    }
    expect(remaining).toEqual(['2', '1', '0']);
    const limited = await h.rest('get', '/users', { key: account.key });
    expect([limited.status, limited.body.error.code]).toEqual([429, 2020]);
    expect(limited.headers['ratelimit-remaining']).toBe('0');
    expect(limited.headers['retry-after']).toBeDefined();
    const graphql = await h.graphql('{ users { totalCount } }', {}, account.key);
    expect(graphql.status).toBe(429);
    expect(graphql.errors?.[0].extensions).toMatchObject({ code: 'RATE_LIMITED', apiErrorCode: 2020 });

    await sleep(2200);
    expect((await h.rest('get', '/users', { key: account.key })).status).toBe(200);
  });

  test('a user\'s keys share one budget; another user\'s budget is separate', async () => {
    const account = await h.createAccount();
    const user = await h.createUser(account);
    const secondKey = { token: (await h.database.transactions.run(h.database.em(), (tx) => new AccountsService(tx).createApiKey({ accountId: account.id, userId: user.id }))).apiKey };
    for (let i = 0; i < 3; i++) expect((await h.rest('get', '/users/me', { key: i % 2 ? secondKey : user.key })).status).toBe(200);
    expect((await h.rest('get', '/users/me', { key: secondKey })).status).toBe(429);
    const other = await h.createUser(account);
    expect((await h.rest('get', '/users/me', { key: other.key })).status).toBe(200);
  });
});

describe('rate limits shared through Redis', () => {
  const redisUrl = process.env.TEST_REDIS_URL;
  // CI always sets TEST_REDIS_URL (see .ci/run); on a laptop without Redis this one test reports as skipped.
  const withRedis = redisUrl ? test : test.skip;

  withRedis('two app instances draw on one budget', async () => {
    const keyPrefix = `aag-test-${randomUUID()}`;
    // What is shown is the shared budget, not the command timeout (test/redis-outage.test.ts covers that):
    // a generous timeout keeps a busy CI machine from answering with the per-instance insurance limiter.
    const redisCommandTimeoutMs = 2_000;
    const h = await startHarness({ rateLimiter: (logger) => createRateLimiter({ perMinute: 4, redisUrl, keyPrefix, logger, redisCommandTimeoutMs }) });
    const logger = createLogger({ logLevel: 'silent' });
    const secondLimiter = createRateLimiter({ perMinute: 4, redisUrl, keyPrefix, logger, redisCommandTimeoutMs });
    const second = await createApp({ settings: TEST_SETTINGS, database: h.database, logger, serverSecret: randomBytes(32), rateLimiter: secondLimiter });
    try {
      const account = await h.createAccount();
      const auth = { Authorization: `Token token=${(account.key as { token: string }).token}` };
      const statuses: number[] = [];
      for (let i = 0; i < 4; i++) {
        const app = i % 2 ? second.app : h.app;
        statuses.push((await supertest(app).get('/users').set(auth)).status);
      }
      expect(statuses).toEqual([200, 200, 200, 200]);
      const fromFirst = await supertest(h.app).get('/users').set(auth);
      const fromSecond = await supertest(second.app).get('/users').set(auth);
      expect([fromFirst.status, fromSecond.status]).toEqual([429, 429]);
      expect(fromSecond.body.error.code).toBe(2020);
    } finally {
      await second.stop();
      await secondLimiter.close();
      await h.close();
    }
  });
});

describe('GraphQL hardening', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ settings: { graphqlMaxDepth: 5, graphqlMaxCost: 200, introspection: false } });
  });
  afterAll(async () => {
    await h?.close();
  });

  test('too deep or too costly operations are BAD_USER_INPUT and say which limit', async () => {
    const account = await h.createAccount();
    const deep = await h.graphql('{ users { edges { node { oauthDelegations { edges { node { id } } } } } } }', {}, account.key);
    expect(deep.errors?.[0].extensions).toMatchObject({ code: 'BAD_USER_INPUT', apiErrorCode: 2001, queryLimit: 'depth' });
    expect(deep.errors?.[0].message).toMatch(/depth/i);
    // Within the root-field limit: the cost limit is what refuses it (each count weighs the rows it counts).
    const fields = Array.from({ length: 10 }, (_, i) => `a${i}: users { totalCount }`).join(' ');
    const costly = await h.graphql(`{ ${fields} }`, {}, account.key);
    expect(costly.errors?.[0].extensions).toMatchObject({ code: 'BAD_USER_INPUT', queryLimit: 'cost' });
    const fine = await h.graphql('{ users { totalCount } }', {}, account.key);
    expect(fine.data?.users.totalCount).toBe(1);
  });

  test('introspection can be switched off (the production default)', async () => {
    const introspection = await h.graphql('{ __schema { queryType { name } } }', {}, (await h.createAccount()).key);
    expect(introspection.data).toBeUndefined();
    expect(introspection.errors?.[0].message).toMatch(/introspection/i);
  });

  test('CORS: the allow-listed origin gets preflight answers and headers; others get none', async () => {
    const agent = supertest(h.app);
    const preflight = await agent.options('/graphql').set({ Origin: 'https://app.test.example', 'Access-Control-Request-Method': 'POST' });
    expect(preflight.status).toBe(204);
    expect(preflight.headers['access-control-allow-origin']).toBe('https://app.test.example');
    expect(preflight.headers['access-control-allow-headers']).toMatch(/Authorization/);
    const foreign = await agent.options('/graphql').set({ Origin: 'https://evil.example', 'Access-Control-Request-Method': 'POST' });
    expect(foreign.headers['access-control-allow-origin']).toBeUndefined();
  });
});
