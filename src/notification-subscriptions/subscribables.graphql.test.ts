import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { startHarness, type Harness, type TestAccount } from '../../test/support/harness.js';
import { issueDelegation } from '../oauth-delegations/oauth-delegation.issuing.js';
import { SubscribablesService } from './subscribables.service.js';

const PICKER = `query($first: Int, $after: String, $type: NotificationSubscribableType, $query: String) {
  subscribables(first: $first, after: $after, type: $type, query: $query) { totalCount pageInfo { hasNextPage endCursor } nodes { id subscribableId type name } }
}`;

let h: Harness;
let account: TestAccount;

beforeAll(async () => {
  h = await startHarness();
  account = await h.createAccount();
  const registry = new SubscribablesService(h.database.em());
  for (const [type, id, name] of [
    ['incident', 'PINC001', 'Checkout latency above SLO'],
    ['incident', 'PINC002', 'Database failover'],
    ['incident', 'P100%', 'Login errors: 100% of requests'],
    ['business_service', 'PBIZ001', 'Payments'],
    ['business_service', 'PINC001', 'Checkout'],
  ] as const) await registry.add({ accountId: account.id, type, id, name });
  const other = await h.createAccount();
  await registry.add({ accountId: other.id, type: 'incident', id: 'POTHER1', name: 'Checkout of another account' });
}, 90_000);

afterAll(async () => h?.close());

const names = (result: { data?: { subscribables: { nodes: Array<{ name: string }> } } }) => result.data!.subscribables.nodes.map((node) => node.name);

describe('subscribables (the registry for a picker)', () => {
  test('in name order, each with an id unique across types; a type filter; a case-insensitive substring of the name or the id', async () => {
    const all = await h.graphql(PICKER, {}, account.key);
    expect(all.errors).toBeUndefined();
    expect(names(all)).toEqual(['Checkout', 'Checkout latency above SLO', 'Database failover', 'Login errors: 100% of requests', 'Payments']);
    expect(all.data.subscribables.totalCount).toBe(5);
    const ids = all.data.subscribables.nodes.map((node: { id: string }) => node.id);
    expect(new Set(ids).size).toBe(5);
    expect(all.data.subscribables.nodes[0]).toMatchObject({ subscribableId: 'PINC001', type: 'BUSINESS_SERVICE' });

    expect(names(await h.graphql(PICKER, { type: 'INCIDENT' }, account.key))).toEqual(['Checkout latency above SLO', 'Database failover', 'Login errors: 100% of requests']);
    expect(names(await h.graphql(PICKER, { query: 'CHECKOUT' }, account.key))).toEqual(['Checkout', 'Checkout latency above SLO']);
    expect(names(await h.graphql(PICKER, { query: 'pbiz' }, account.key))).toEqual(['Payments']);
    expect(names(await h.graphql(PICKER, { query: 'pinc001', type: 'INCIDENT' }, account.key))).toEqual(['Checkout latency above SLO']);
    // The search text is text, not a pattern.
    expect(names(await h.graphql(PICKER, { query: '0%' }, account.key))).toEqual(['Login errors: 100% of requests']);
    expect(names(await h.graphql(PICKER, { query: '_' }, account.key))).toEqual([]);
    expect((await h.graphql(PICKER, { query: 'checkout' }, account.key)).data.subscribables.totalCount).toBe(2);
  });

  test('pages with cursors that belong to their query; bad arguments are BAD_USER_INPUT', async () => {
    const firstPage = await h.graphql(PICKER, { first: 2 }, account.key);
    expect(names(firstPage)).toEqual(['Checkout', 'Checkout latency above SLO']);
    expect(firstPage.data.subscribables.pageInfo.hasNextPage).toBe(true);
    const after = firstPage.data.subscribables.pageInfo.endCursor as string;
    const secondPage = await h.graphql(PICKER, { first: 2, after }, account.key);
    expect(names(secondPage)).toEqual(['Database failover', 'Login errors: 100% of requests']);
    const last = await h.graphql(PICKER, { first: 2, after: secondPage.data.subscribables.pageInfo.endCursor }, account.key);
    expect(names(last)).toEqual(['Payments']);
    expect(last.data.subscribables.pageInfo.hasNextPage).toBe(false);

    for (const variables of [{ first: 2, after, query: 'checkout' }, { first: 2, after, type: 'INCIDENT' }, { after: 'forged' }, { first: 0 }, { first: 101 }, { type: 'SERVICE' }]) {
      const result = await h.graphql(PICKER, variables, account.key);
      expect([variables, result.errors?.[0]?.extensions?.code]).toEqual([variables, 'BAD_USER_INPUT']);
    }
  });

  test('any member of the account may read it (subscribers.read for a token); nobody sees another account\'s', async () => {
    for (const role of ['user', 'limited_user', 'read_only_user', 'read_only_limited_user', 'observer', 'restricted_access'] as const) {
      const member = await h.createUser(account, { role });
      const result = await h.graphql(PICKER, {}, member.key);
      expect([role, names(result).length]).toEqual([role, 5]);
    }
    const member = await h.createUser(account);
    const reader = await h.database.transactions.run(h.database.em(), (tx) => issueDelegation(tx, { userId: member.id, type: 'mobile', scopes: 'subscribers.read' }));
    expect(names(await h.graphql(PICKER, {}, { bearer: reader.accessToken }))).toHaveLength(5);
    const other = await h.database.transactions.run(h.database.em(), (tx) => issueDelegation(tx, { userId: member.id, type: 'mobile', scopes: 'users.read subscribers.write' }));
    const refused = await h.graphql(PICKER, {}, { bearer: other.accessToken });
    expect(refused.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    expect(refused.errors?.[0]?.message).toContain('subscribers.read');
    expect((await h.graphql(PICKER, {}, undefined)).errors?.[0]?.extensions?.code).toBe('UNAUTHENTICATED');

    const stranger = await h.createAccount();
    expect(names(await h.graphql(PICKER, { query: 'checkout' }, stranger.key))).toEqual([]);
  });
});
