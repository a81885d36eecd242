import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { parse } from 'graphql';
import supertest from 'supertest';
import { appSchema } from '../src/app/features.js';
import { createRateLimiter } from '../src/auth/rate-limit.js';
import { operationCost, ratePointsOf } from '../src/graphql/cost.js';
import { startHarness, type Harness, type TestAccount } from './support/harness.js';
import { authorizationOf, LiveTestClient } from './support/live-client.js';

const LIMIT = 200;
/** A settings page: 50 users with 50 delegations and 50 subscriptions each (about 51 points). */
const SETTINGS_PAGE = `{ users(first: 50) { nodes { id name
  oauthDelegations(first: 50) { nodes { id status } pageInfo { hasNextPage } }
  notificationSubscriptions(first: 50) { nodes { id subscribableName } pageInfo { hasNextPage } } } } }`;
/** A subscription asking for a lot with each event: it costs more than one point. */
const COSTLY_SUBSCRIPTION = `subscription($id: ID!) { userChanged(id: $id) { user { id
  oauthDelegations(first: 100) { totalCount nodes { id status clientId scopes } }
  notificationSubscriptions(first: 100) { totalCount nodes { id subscribableName subscribableType } } } } }`;

let h: Harness;
let account: TestAccount;
let points: (query: string, variables?: Record<string, unknown>) => number;

beforeAll(async () => {
  const schema = await appSchema();
  points = (query, variables) => ratePointsOf(operationCost(schema, parse(query), undefined, variables));
  h = await startHarness({ rateLimiter: (logger) => createRateLimiter({ perMinute: LIMIT, logger }) });
  account = await h.createAccount();
});
afterAll(async () => {
  await h?.close();
});

const post = (query: string, key: TestAccount['key'], variables?: Record<string, unknown>) =>
  supertest(h.app).post('/graphql').set({ 'Content-Type': 'application/json', Authorization: authorizationOf(key as { token: string }) }).send({ query, variables });
const remainingOf = (response: supertest.Response) => Number(response.headers['ratelimit-remaining']);

describe('the rate budget is charged by cost', () => {
  test('a request draws its cost in points (at least 1); rateLimit and the headers say where the caller stands after the charge', async () => {
    expect(points('{ viewer { id } }')).toBe(1);
    const pagePoints = points(`{ rateLimit { cost remaining resetAt limit } ${SETTINGS_PAGE.slice(1)}`);
    expect(pagePoints).toBeGreaterThan(20);
    expect(pagePoints).toBeLessThan(100);

    // The account's full-access key (its own budget), which may read every user's lists.
    const small = await post('{ users(first: 1) { totalCount } rateLimit { cost remaining limit } }', account.key);
    expect(small.body.data.rateLimit).toEqual({ cost: 1, remaining: LIMIT - 1, limit: LIMIT });
    expect(remainingOf(small)).toBe(LIMIT - 1);

    const page = await post(`{ rateLimit { cost remaining resetAt limit } ${SETTINGS_PAGE.slice(1)}`, account.key);
    expect(page.body.errors).toBeUndefined();
    expect(page.body.data.rateLimit).toMatchObject({ cost: pagePoints, remaining: LIMIT - 1 - pagePoints, limit: LIMIT });
    expect(remainingOf(page)).toBe(LIMIT - 1 - pagePoints);
    const resetIn = Date.parse(page.body.data.rateLimit.resetAt) - Date.now();
    expect(resetIn).toBeGreaterThan(0);
    expect(resetIn).toBeLessThanOrEqual(61_000);
    expect(Number(page.headers['ratelimit-reset'])).toBeGreaterThan(0);
  });

  test('rateLimit needs no scope or right beyond a credential that works: a read-only key reads its own budget', async () => {
    const readOnly = await h.accountKey(account, { readOnly: true });
    const answer = await post('{ rateLimit { cost limit } }', readOnly);
    expect(answer.body).toEqual({ data: { rateLimit: { cost: 1, limit: LIMIT } } });
    const anonymous = await supertest(h.app).post('/graphql').set('Content-Type', 'application/json').send({ query: '{ rateLimit { cost } }' });
    expect(anonymous.status).toBe(401);
  });

  test('an operation costing more than remains is refused with 429 and Retry-After before it runs, and does not spend what it could not use', async () => {
    const other = await h.createUser(account);
    const pagePoints = points(SETTINGS_PAGE);
    // Spend the budget down until a settings page no longer fits, one small request at a time.
    let remaining = LIMIT;
    while (remaining >= pagePoints) remaining = remainingOf(await post(`{ ${Array.from({ length: 10 }, (_, i) => `u${i}: users(first: 100) { nodes { id name email role } }`).join(' ')} }`, other.key));
    const refused = await post(SETTINGS_PAGE, other.key);
    expect(refused.status).toBe(429);
    expect(refused.body.data).toBeUndefined();
    expect(refused.body.errors[0].extensions).toMatchObject({ code: 'RATE_LIMITED', apiErrorCode: 2020 });
    expect(refused.body.errors[0].message).toMatch(new RegExp(`costs ${pagePoints} points`));
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
    // Only the point every request draws at the door was spent.
    expect(remainingOf(refused)).toBe(remaining - 1);
    const small = await post('{ viewer { id } }', other.key);
    expect(small.status).toBe(200);
    expect(remainingOf(small)).toBe(remaining - 2);
  });

  test('REST routes keep drawing one point a request', async () => {
    const other = await h.createUser(account);
    const first = await h.rest('get', '/users', { key: other.key });
    const second = await h.rest('get', '/users', { key: other.key });
    expect(remainingOf(second)).toBe(remainingOf(first) - 1);
  });

  test('a subscription over WebSocket draws its cost too', async () => {
    const member = await h.createUser(account);
    const subscriptionPoints = points(COSTLY_SUBSCRIPTION, { id: member.id });
    expect(subscriptionPoints).toBeGreaterThan(1);
    await new Promise<void>((resolve) => h.httpServer.listen(0, '127.0.0.1', resolve));
    const client = await LiveTestClient.connect(h.httpServer, authorizationOf(member.key as { token: string }));
    try {
      const before = remainingOf(await post('{ viewer { id } }', member.key));
      client.subscribe('1', COSTLY_SUBSCRIPTION, { id: member.id });
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(client.messages.filter((message) => message.type === 'error')).toEqual([]);
      const after = remainingOf(await post('{ viewer { id } }', member.key));
      expect(before - after).toBe(subscriptionPoints + 1);
    } finally {
      client.socket.close();
      await client.closed;
      await new Promise<void>((resolve) => h.httpServer.close(() => resolve()));
    }
  });
});
