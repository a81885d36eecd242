import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { appSchema } from '../app/features.js';
import { execute, parse } from 'graphql';
import { startHarness, type Harness } from '../../test/support/harness.js';
import { subscriptionFixtures } from '../../test/support/subscriptions.js';
import { createContext } from '../graphql/context.js';
import { classifyError } from '../graphql/errors.js';
import type { OAuthPrincipal } from '../auth/principal.js';

let h: Harness;
const { register, stored, countsScenario } = subscriptionFixtures(() => h);
/** SQL statements seen while `counting` is on (every statement the app runs goes through onQuery). */
let counting = false;
let queries: string[] = [];
/**
 * A key's first use is written off the request's path (credential-usage.ts): on PostgreSQL, with
 * a pool, that write of the previous request may land while the next one is counted. Not a
 * statement of the request (test/query-counts.test.ts sets it aside likewise).
 */
const RECORDS_CREDENTIAL_USE = /^update (api_keys|provisioning_tokens) set last_used_at = /;

beforeAll(async () => {
  h = await startHarness({
    onQuery: (sql) => {
      if (counting && !RECORDS_CREDENTIAL_USE.test(sql)) queries.push(sql);
    },
  });
});
afterAll(async () => {
  await h.close();
});


const SUBSCRIBE = `mutation ($input: CreateNotificationSubscriptionsInput!) {
  createNotificationSubscriptions(input: $input) {
    subscriptions { subscriberId subscriberType subscribableId subscribableType accountId result }
  }
}`;
const UNSUBSCRIBE = `mutation ($input: RemoveNotificationSubscriptionsInput!) {
  removeNotificationSubscriptions(input: $input) { deletedCount unauthorizedCount nonExistentCount }
}`;
const LIST = `query ($id: ID!, $first: Int, $after: String, $offset: Int) {
  user(id: $id) {
    id
    notificationSubscriptions(first: $first, after: $after, offset: $offset) {
      totalCount
      pageInfo { hasNextPage hasPreviousPage endCursor }
      edges { cursor node { subscriberId subscriberType subscribableId subscribableType subscribableName accountId createdAt } }
    }
  }
}`;

const item = (subscribableType: 'INCIDENT' | 'BUSINESS_SERVICE', subscribableId: string) => ({ subscribableType, subscribableId });

describe('GraphQL counts scenario', () => {
  test('createNotificationSubscriptions and removeNotificationSubscriptions report the same outcomes as REST', async () => {
    const { account, user } = await countsScenario();

    const first = await h.graphql(SUBSCRIBE, { input: { userId: user.id, subscribables: [item('INCIDENT', 'PINC001'), item('BUSINESS_SERVICE', 'PBIZ001'), item('INCIDENT', 'PFOREIGN')] } }, user.key);
    expect(first.errors).toBeUndefined();
    expect(first.data.createNotificationSubscriptions.subscriptions).toEqual([
      { subscriberId: user.id, subscriberType: 'USER', subscribableId: 'PINC001', subscribableType: 'INCIDENT', accountId: account.id, result: 'SUCCESS' },
      { subscriberId: user.id, subscriberType: 'USER', subscribableId: 'PBIZ001', subscribableType: 'BUSINESS_SERVICE', accountId: account.id, result: 'SUCCESS' },
      { subscriberId: user.id, subscriberType: 'USER', subscribableId: 'PFOREIGN', subscribableType: 'INCIDENT', accountId: account.id, result: 'UNAUTHORIZED' },
    ]);
    const second = await h.graphql(SUBSCRIBE, { input: { userId: user.id, subscribables: [item('BUSINESS_SERVICE', 'PBIZ001'), item('INCIDENT', 'PINC002')] } }, user.key);
    expect(second.data.createNotificationSubscriptions.subscriptions.map((s: { result: string }) => s.result)).toEqual(['DUPLICATE', 'SUCCESS']);

    const listed = await h.graphql(LIST, { id: user.id }, user.key);
    expect(listed.errors).toBeUndefined();
    const connection = listed.data.user.notificationSubscriptions;
    expect(connection.totalCount).toBe(3);
    expect(connection.edges.map((edge: { node: { subscribableId: string; subscribableName: string } }) => [edge.node.subscribableId, edge.node.subscribableName])).toEqual([
      ['PINC001', 'Checkout is slow'],
      ['PBIZ001', 'Payments'],
      ['PINC002', 'Disk full'],
    ]);

    const mix = [item('INCIDENT', 'PINC001'), item('INCIDENT', 'PINC003'), item('INCIDENT', 'PFOREIGN'), item('BUSINESS_SERVICE', 'PBIZ001')];
    const removed = await h.graphql(UNSUBSCRIBE, { input: { userId: user.id, subscribables: mix } }, user.key);
    expect(removed.data.removeNotificationSubscriptions).toEqual({ deletedCount: 2, unauthorizedCount: 1, nonExistentCount: 1 });
    const again = await h.graphql(UNSUBSCRIBE, { input: { userId: user.id, subscribables: mix } }, user.key);
    expect(again.data.removeNotificationSubscriptions).toEqual({ deletedCount: 0, unauthorizedCount: 1, nonExistentCount: 3 });
    expect(await stored(user.id)).toEqual(['incident:PINC002']);
  });

  test('ids with quotes, backslashes and question marks are matched literally', async () => {
    const account = await h.createAccount();
    const user = await h.createUser(account);
    const odd = ["O'Brien\\?", 'a?b', "'); drop table users; --"];
    for (const id of odd) await register(account, 'incident', id, `name of ${id}`);
    const result = await h.graphql(SUBSCRIBE, { input: { userId: user.id, subscribables: [...odd.map((id) => item('INCIDENT', id)), item('INCIDENT', "O'Brien")] } }, user.key);
    expect(result.data.createNotificationSubscriptions.subscriptions.map((s: { result: string }) => s.result)).toEqual(['SUCCESS', 'SUCCESS', 'SUCCESS', 'UNAUTHORIZED']);
    expect(await stored(user.id)).toEqual(odd.map((id) => `incident:${id}`));
  });
});

describe('GraphQL validation and paging', () => {
  test('payload rules answer BAD_USER_INPUT and change nothing', async () => {
    const account = await h.createAccount();
    const user = await h.createUser(account);
    await register(account, 'incident', 'PINC001');
    await h.graphql(SUBSCRIBE, { input: { userId: user.id, subscribables: [item('INCIDENT', 'PINC001')] } }, user.key);
    const cases: unknown[][] = [
      [],
      Array.from({ length: 101 }, (_, i) => item('INCIDENT', `P${i}`)),
      [item('INCIDENT', 'PX'), item('INCIDENT', 'PX')],
      [item('INCIDENT', '')],
      [{ subscribableType: 'TEAM', subscribableId: 'PX' }],
      [{ subscribableType: 'INCIDENT' }],
    ];
    for (const subscribables of cases) {
      for (const mutation of [SUBSCRIBE, UNSUBSCRIBE]) {
        const result = await h.graphql(mutation, { input: { userId: user.id, subscribables } }, user.key);
        expect(result.errors?.[0]?.extensions?.code).toMatch(/BAD_USER_INPUT/);
      }
    }
    expect(await stored(user.id)).toEqual(['incident:PINC001']);
  });

  test('cursor paging walks the list without repeats; forged and foreign cursors are refused', async () => {
    const account = await h.createAccount();
    const user = await h.createUser(account);
    const peer = await h.createUser(account);
    const ids = ['PA', 'PB', 'PC', 'PD', 'PE'];
    for (const id of ids) await register(account, 'incident', id);
    await h.graphql(SUBSCRIBE, { input: { userId: user.id, subscribables: ids.map((id) => item('INCIDENT', id)) } }, account.key);
    await h.graphql(SUBSCRIBE, { input: { userId: peer.id, subscribables: [item('INCIDENT', 'PA'), item('INCIDENT', 'PB'), item('INCIDENT', 'PC')] } }, account.key);

    const seen: string[] = [];
    let after: string | null = null;
    for (let page = 0; page < 5; page++) {
      const result: { data?: any; errors?: any[] } = await h.graphql(LIST, { id: user.id, first: 2, after }, account.key);
      const connection = result.data.user.notificationSubscriptions;
      seen.push(...connection.edges.map((edge: { node: { subscribableId: string } }) => edge.node.subscribableId));
      if (!connection.pageInfo.hasNextPage) break;
      after = connection.pageInfo.endCursor;
    }
    expect(seen).toEqual(ids);

    const byOffset = await h.graphql(LIST, { id: user.id, first: 2, offset: 3 }, account.key);
    expect(byOffset.data.user.notificationSubscriptions.edges.map((edge: { node: { subscribableId: string } }) => edge.node.subscribableId)).toEqual(['PD', 'PE']);

    const firstPage = await h.graphql(LIST, { id: user.id, first: 1 }, account.key);
    const cursor: string = firstPage.data.user.notificationSubscriptions.pageInfo.endCursor;
    const forged = `${cursor.slice(0, -2)}${cursor.endsWith('AA') ? 'BB' : 'AA'}`;
    for (const [id, bad] of [[user.id, forged], [peer.id, cursor]] as const) {
      const result = await h.graphql(LIST, { id, first: 1, after: bad }, account.key);
      expect(result.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
    }
    for (const first of [0, 101]) {
      const result = await h.graphql(LIST, { id: user.id, first }, account.key);
      expect(result.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
    }
  });
});

describe('GraphQL access', () => {
  test('another user gets FORBIDDEN on the field and the mutations; an admin may', async () => {
    const account = await h.createAccount();
    const target = await h.createUser(account);
    const peer = await h.createUser(account, { role: 'user' });
    const admin = await h.createUser(account, { role: 'admin' });
    await register(account, 'incident', 'PINC001');

    const denied = await h.graphql(LIST, { id: target.id }, peer.key);
    expect(denied.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    expect(denied.errors?.[0]?.path).toEqual(['user', 'notificationSubscriptions']);
    const deniedWrite = await h.graphql(SUBSCRIBE, { input: { userId: target.id, subscribables: [item('INCIDENT', 'PINC001')] } }, peer.key);
    expect(deniedWrite.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    expect(await stored(target.id)).toEqual([]);

    const allowed = await h.graphql(SUBSCRIBE, { input: { userId: target.id, subscribables: [item('INCIDENT', 'PINC001')] } }, admin.key);
    expect(allowed.data.createNotificationSubscriptions.subscriptions[0].result).toBe('SUCCESS');
    const listed = await h.graphql(LIST, { id: target.id }, admin.key);
    expect(listed.data.user.notificationSubscriptions.totalCount).toBe(1);
  });

  test('OAuth tokens need subscribers.read to list and subscribers.write to change, and nothing more', async () => {
    const schema = await appSchema();
    const account = await h.createAccount();
    const user = await h.createUser(account);
    await register(account, 'incident', 'PINC001');
    const run = (scopes: string[], source: string, variableValues: Record<string, unknown>) => {
      const principal: OAuthPrincipal = { kind: 'oauth', accountId: account.id, credentialId: 'test-delegation', rateLimitKey: `user:${user.id}`, userId: user.id, role: 'user', scopes: new Set(scopes) };
      const contextValue = createContext({ em: h.database.em(), authentication: { status: 'authenticated', principal }, requestId: 'test', runtime: h.runtime, transactions: h.database.transactions });
      return execute({ schema, document: parse(source), contextValue, variableValues });
    };
    const denial = (errors: readonly unknown[] | undefined) => (errors?.length ? classifyError(errors[0]) : undefined);
    const subscribe = { input: { userId: user.id, subscribables: [item('INCIDENT', 'PINC001')] } };
    const list = `query ($userId: ID!) { notificationSubscriptions(userId: $userId) { totalCount nodes { subscribableId } } }`;

    const noWrite = await run(['subscribers.read', 'users.write'], SUBSCRIBE, subscribe);
    expect(denial(noWrite.errors)).toEqual({ kind: 'forbidden', message: 'Access Denied', details: ['This OAuth token lacks the required scope: subscribers.write'] });
    expect(await stored(user.id)).toEqual([]);
    const written = await run(['subscribers.write'], SUBSCRIBE, subscribe);
    expect(written.errors).toBeUndefined();
    expect(await stored(user.id)).toEqual(['incident:PINC001']);

    const noRead = await run(['users.read', 'subscribers.write'], list, { userId: user.id });
    expect(denial(noRead.errors)).toEqual({ kind: 'forbidden', message: 'Access Denied', details: ['This OAuth token lacks the required scope: subscribers.read'] });
    const read = await run(['subscribers.read'], list, { userId: user.id });
    expect(read.errors).toBeUndefined();
    expect(read.data).toEqual({ notificationSubscriptions: { totalCount: 1, nodes: [{ subscribableId: 'PINC001' }] } });

    const removed = await run(['subscribers.write'], UNSUBSCRIBE, subscribe);
    expect(removed.data).toEqual({ removeNotificationSubscriptions: { deletedCount: 1, unauthorizedCount: 0, nonExistentCount: 0 } });
  });
});

describe('N+1', () => {
  /** Subscribes a fresh user to `count` entities and counts the SQL statements of one GraphQL listing. */
  async function measure(count: number): Promise<number> {
    const account = await h.createAccount();
    const user = await h.createUser(account);
    const em = h.database.em();
    await em.execute(
      `insert into subscribables (id, account_id, type, public_id, name)
       select gen_random_uuid(), ?, 'incident', 'PN' || n, 'Incident number ' || n from generate_series(1, ?) as n`,
      [account.id, count],
    );
    const subscribe = await h.graphql(SUBSCRIBE, {
      input: { userId: user.id, subscribables: Array.from({ length: count }, (_, i) => item('INCIDENT', `PN${i + 1}`)) },
    }, user.key);
    expect(subscribe.data.createNotificationSubscriptions.subscriptions.every((s: { result: string }) => s.result === 'SUCCESS')).toBe(true);

    queries = [];
    counting = true;
    const listed = await h.graphql(LIST, { id: user.id, first: 100 }, user.key);
    counting = false;
    expect(listed.errors).toBeUndefined();
    const edges = listed.data.user.notificationSubscriptions.edges;
    expect(edges).toHaveLength(count);
    expect(edges[count - 1].node.subscribableName).toBe(`Incident number ${count}`);
    return queries.length;
  }

  test('listing 50 subscriptions with their names issues as many SQL statements as listing 5', async () => {
    const five = await measure(5);
    const fifty = await measure(50);
    expect(fifty).toBe(five);
    // authentication, the user, the page (joined with the entities), the total
    expect(fifty).toBeLessThanOrEqual(4);
  });

  test('a page of users with their subscriptions costs the same statements for 3 users as for 12', async () => {
    async function measureUsers(users: number): Promise<number> {
      const account = await h.createAccount();
      await register(account, 'incident', 'PSHARED', 'Shared incident');
      await register(account, 'business_service', 'PSVC', 'Shared service');
      for (let i = 0; i < users; i++) {
        const user = await h.createUser(account);
        const input = { userId: user.id, subscribables: [item('INCIDENT', 'PSHARED'), item('BUSINESS_SERVICE', 'PSVC')] };
        expect((await h.graphql(SUBSCRIBE, { input }, account.key)).errors).toBeUndefined();
      }
      queries = [];
      counting = true;
      const listed = await h.graphql(
        '{ users(first: 50) { nodes { id notificationSubscriptions(first: 1) { totalCount pageInfo { hasNextPage } nodes { subscribableName } } } } }',
        {},
        account.key,
      );
      counting = false;
      expect(listed.errors).toBeUndefined();
      const withSubscriptions = listed.data.users.nodes.filter((node: any) => node.notificationSubscriptions.totalCount === 2);
      expect(withSubscriptions).toHaveLength(users);
      for (const node of withSubscriptions) {
        expect(node.notificationSubscriptions.nodes.map((n: { subscribableName: string }) => n.subscribableName)).toEqual(['Shared incident']);
        expect(node.notificationSubscriptions.pageInfo.hasNextPage).toBe(true);
      }
      return queries.length;
    }
    const few = await measureUsers(3);
    const many = await measureUsers(12);
    expect(many).toBe(few);
    // authentication, the users page, the page ids (LATERAL), the subscriptions with entities, the counts
    expect(many).toBeLessThanOrEqual(5);
  });
});
