import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import type { AddressInfo } from 'node:net';
import { ApolloClient, CombinedGraphQLErrors, HttpLink, InMemoryCache, gql } from '@apollo/client';
import { issueDelegation } from '../src/oauth-delegations/oauth-delegation.service.js';
import { startHarness, type Credential, type Harness, type TestAccount } from './support/harness.js';
import { subscriptionFixtures } from './support/subscriptions.js';

/**
 * The GraphQL schema for client applications, from a frontend's side: Apollo Client 4 with its normalized InMemoryCache,
 * over HTTP against the real app, as a settings page would use it.
 */
let h: Harness;
let account: TestAccount;
let url: string;
beforeAll(async () => {
  h = await startHarness();
  account = await h.createAccount();
  await new Promise<void>((resolve) => h.httpServer.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(h.httpServer.address() as AddressInfo).port}/graphql`;
});
afterAll(async () => {
  await h?.close();
});

/** A client of its own cache, sending the credential on every request and counting the requests it sends. */
function clientFor(credential: Credential) {
  const token = (credential as { token: string }).token;
  const sent = { requests: 0 };
  const link = new HttpLink({
    uri: url,
    fetch: (input, init) => {
      sent.requests += 1;
      const headers = new Headers(init?.headers);
      headers.set('Authorization', `Token token=${token}`);
      return fetch(input, { ...init, headers });
    },
  });
  return { client: new ApolloClient({ link, cache: new InMemoryCache() }), sent };
}

const USER_PAGE = gql`
  query UserPage($id: ID!) {
    user(id: $id) {
      id
      name
      oauthDelegations { nodes { id status } }
      notificationSubscriptions { nodes { id subscribableId } }
    }
  }
`;

interface UserPage {
  user: {
    id: string;
    name: string;
    oauthDelegations: { nodes: { id: string; status: string }[] } | null;
    notificationSubscriptions: { nodes: { id: string; subscribableId: string }[] } | null;
  };
}

describe('Apollo Client 4 with a normalized cache against the real server', () => {
  test('mutations update the cached user page without a refetch: the new name, the revoked delegation, the removed subscription', async () => {
    const user = await h.createUser(account);
    const issued = await h.database.transactions.run(h.database.em(), (tx) => issueDelegation(tx, { userId: user.id, type: 'web', scopes: 'users.read' }));
    const subscribableId = `PAC${user.id.slice(-4)}`;
    await subscriptionFixtures(() => h).register(account, 'incident', subscribableId, 'Apollo Client incident');
    const { client, sent } = clientFor(account.key);

    const created = await client.mutate({
      mutation: gql`mutation Subscribe($input: CreateNotificationSubscriptionsInput!) { createNotificationSubscriptions(input: $input) { createdSubscriptions { id subscribableId } } }`,
      variables: { input: { userId: user.id, subscribables: [{ subscribableType: 'INCIDENT', subscribableId }] } },
    });
    const subscriptionId = (created.data as { createNotificationSubscriptions: { createdSubscriptions: { id: string }[] } }).createNotificationSubscriptions.createdSubscriptions[0]!.id;

    const page = await client.query<UserPage>({ query: USER_PAGE, variables: { id: user.id } });
    expect(page.error).toBeUndefined();
    expect(page.data!.user).toEqual({
      __typename: 'User',
      id: user.id,
      name: user.name,
      oauthDelegations: { __typename: expect.any(String), nodes: [{ __typename: 'OAuthDelegation', id: issued.delegation.id, status: 'ISSUED' }] },
      notificationSubscriptions: { __typename: expect.any(String), nodes: [{ __typename: 'NotificationSubscription', id: subscriptionId, subscribableId }] },
    });
    const requestsForThePage = sent.requests;

    await client.mutate({
      mutation: gql`mutation Rename($input: UpdateUserInput!) { updateUser(input: $input) { user { id name } } }`,
      variables: { input: { id: user.id, name: 'Renamed through Apollo' } },
    });
    await client.mutate({
      mutation: gql`mutation Revoke($input: DeleteOAuthDelegationsInput!) { deleteOAuthDelegations(input: $input) { revokedOAuthDelegations { id status } } }`,
      variables: { input: { userId: user.id, types: ['WEB', 'MOBILE'] } },
    });
    await client.mutate({
      mutation: gql`mutation Unsubscribe($input: RemoveNotificationSubscriptionsInput!) { removeNotificationSubscriptions(input: $input) { removedSubscriptions { id subscribableId } } }`,
      variables: { input: { userId: user.id, subscribables: [{ subscribableType: 'INCIDENT', subscribableId }] } },
      // The removed subscriptions come back with their ids, so the cache can drop exactly them.
      update(cache, { data }) {
        const removed = (data as { removeNotificationSubscriptions: { removedSubscriptions: { __typename?: string; id: string }[] } }).removeNotificationSubscriptions.removedSubscriptions;
        for (const subscription of removed) cache.evict({ id: cache.identify({ __typename: 'NotificationSubscription', id: subscription.id }) });
        cache.gc();
      },
    });
    expect(sent.requests).toBe(requestsForThePage + 3);

    const cached = await client.query<UserPage>({ query: USER_PAGE, variables: { id: user.id }, fetchPolicy: 'cache-only' });
    expect(sent.requests).toBe(requestsForThePage + 3);
    expect(cached.data!.user.name).toBe('Renamed through Apollo');
    expect(cached.data!.user.oauthDelegations!.nodes).toEqual([{ __typename: 'OAuthDelegation', id: issued.delegation.id, status: 'REVOKED' }]);
    expect(cached.data!.user.notificationSubscriptions!.nodes).toEqual([]);
    // What the cache shows is what the server now answers.
    const fresh = await clientFor(account.key).client.query<UserPage>({ query: USER_PAGE, variables: { id: user.id } });
    expect(fresh.data).toEqual(cached.data);
  });

  test('a forbidden corner nulls only that field: with errorPolicy all the page has its data and each error its path', async () => {
    const member = await h.createUser(account);
    const other = await h.createUser(account);
    const query = gql`query OtherUser($id: ID!) { user(id: $id) { id name notificationSubscriptions { nodes { id } } auditRecords { nodes { id } } } }`;
    const { client } = clientFor(member.key);
    const page = await client.query<{ user: { id: string; name: string; notificationSubscriptions: unknown; auditRecords: unknown } }>({ query, variables: { id: other.id }, errorPolicy: 'all' });
    expect(page.data!.user).toEqual({ __typename: 'User', id: other.id, name: other.name, notificationSubscriptions: null, auditRecords: null });
    expect(CombinedGraphQLErrors.is(page.error)).toBe(true);
    const errors = (page.error as CombinedGraphQLErrors).errors.map((error) => [error.path?.join('.'), error.extensions?.code]).sort();
    expect(errors).toEqual([['user.auditRecords', 'FORBIDDEN'], ['user.notificationSubscriptions', 'FORBIDDEN']]);
    // Allowed both ways: the user themself reads the same page whole, without an error.
    const own = await clientFor(other.key).client.query<{ user: { notificationSubscriptions: unknown; auditRecords: unknown } }>({ query, variables: { id: other.id }, errorPolicy: 'all' });
    expect(own.error).toBeUndefined();
    expect(own.data!.user.notificationSubscriptions).toEqual({ __typename: expect.any(String), nodes: [] });
    expect(own.data!.user.auditRecords).not.toBeNull();
  });

  test('field errors map to the form\'s inputs: every bad value at once, at its path in GraphQL names', async () => {
    const { client } = clientFor(account.key);
    const failed = await client
      .mutate({
        mutation: gql`mutation CreateUser($input: CreateUserInput!) { createUser(input: $input) { user { id } } }`,
        variables: { input: { name: 'Form user', email: 'not-an-email', timeZone: 'Mars/Olympus' } },
      })
      .then(() => undefined, (error: unknown) => error);
    expect(CombinedGraphQLErrors.is(failed)).toBe(true);
    const [error] = (failed as CombinedGraphQLErrors).errors;
    expect(error!.extensions?.code).toBe('BAD_USER_INPUT');
    const fields = error!.extensions?.fields as { path: (string | number)[]; code: string; message: string }[];
    expect(fields.map((field) => [field.path, field.code]).sort()).toEqual([[['input', 'email'], 'INVALID'], [['input', 'timeZone'], 'INVALID']]);

    const user = await h.createUser(account);
    const update = await client.mutate({
      mutation: gql`mutation UpdateUser($input: UpdateUserInput!) { updateUser(input: $input) { user { id name } } }`,
      variables: { input: { id: user.id, name: ' ', timeZone: null } },
      errorPolicy: 'all',
    });
    expect(CombinedGraphQLErrors.is(update.error)).toBe(true);
    expect((update.error as CombinedGraphQLErrors).errors[0]!.extensions?.fields).toEqual([
      { path: ['input', 'timeZone'], code: 'NOT_NULL', message: 'timeZone must not be null (omit it to keep the current value)' },
      { path: ['input', 'name'], code: 'REQUIRED', message: 'name must not be empty' },
    ]);
    expect(JSON.stringify(update.error)).not.toContain('time_zone');
  });
});
