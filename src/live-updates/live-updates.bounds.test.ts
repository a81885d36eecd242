import { describe, expect, test } from '@jest/globals';
import type { App } from '../app/create-app.js';
import { ProvisioningTokensService } from '../scim/provisioning-tokens.service.js';
import type { Harness } from '../../test/support/harness.js';
import { authorizationOf, LiveTestClient, sleep } from '../../test/support/live-client.js';
import { bearerOn, gauge, LIVE_TEST_LIMITS as LIMITS, USER_CHANGED, useTwoLiveInstances, V2, VIEWER_REVOKED } from '../../test/support/live-instances.js';
import type { TwoInstances } from '../../test/support/two-instances.js';

let instances: TwoInstances;
let a: Harness;
let b: App;
let bRest: TwoInstances['bRest'];
useTwoLiveInstances((started) => ({ a, b, bRest } = instances = started));
const bearer = (userId: string, type: 'web' | 'mobile', scopes?: string, expiresInSeconds?: number) => bearerOn(a, userId, type, scopes, expiresInSeconds);

describe('handshake and authorization', () => {
  test('without a credential, or with a bad one, the connection is refused (4401)', async () => {
    const anonymous = await LiveTestClient.open(a.httpServer);
    expect((await anonymous.closed).code).toBe(4401);
    const bad = await LiveTestClient.open(a.httpServer, 'Bearer not-a-token');
    expect((await bad.closed).code).toBe(4401);
    const malformed = await LiveTestClient.open(a.httpServer, 'Basic xyz');
    expect((await malformed.closed).code).toBe(4401);
    expect(anonymous.messages.concat(bad.messages, malformed.messages).some((message) => message.type === 'connection_ack')).toBe(false);
  });

  test('a provisioning token is refused on the socket (4403) and is delivered nothing, as on HTTP outside /scim/v2', async () => {
    const account = await a.createAccount();
    const user = await a.createUser(account);
    const { token } = await a.database.transactions.run(a.database.em(), (tx) => new ProvisioningTokensService(tx).create(account.id));
    const client = await LiveTestClient.open(a.httpServer, `Bearer ${token}`);
    const acked = await Promise.race([client.waitFor((message) => message.type === 'connection_ack').then(() => true, () => false), client.closed.then(() => false)]);
    if (acked) client.subscribe('1', USER_CHANGED, { id: user.id });
    expect((await client.closed).code).toBe(4403);
    expect(client.messages).toEqual([]);
    expect((await a.rest('get', `/users/${user.id}`, { key: { bearer: token } })).status).toBe(401);
  });

  test('a token without users.read gets FORBIDDEN for userChanged, naming the scope; queries are refused over the socket', async () => {
    const account = await a.createAccount();
    const user = await a.createUser(account);
    const client = await LiveTestClient.connect(a.httpServer, await bearer(user.id, 'mobile', 'oauth_delegations.read'));
    client.subscribe('1', USER_CHANGED, { id: user.id });
    const denied = await client.waitFor((message) => message.id === '1' && (message.type === 'next' || message.type === 'error'));
    const errors = denied.type === 'next' ? denied.payload.errors : denied.payload;
    expect(errors[0].extensions).toMatchObject({ code: 'FORBIDDEN', apiErrorCode: 2010 });
    expect(errors[0].message).toContain('users.read');
    client.subscribe('2', '{ viewer { id } }');
    const query = await client.waitFor((message) => message.id === '2' && message.type === 'error');
    expect(query.payload[0].extensions.code).toBe('BAD_USER_INPUT');
    client.close();
  });

  test('another account\'s user ids see nothing: NOT_FOUND, as for an id that never existed, and no event', async () => {
    const account = await a.createAccount();
    const other = await a.createAccount();
    const stranger = await a.createUser(other);
    const client = await LiveTestClient.connect(a.httpServer, authorizationOf(account.key as { token: string }));
    client.subscribe('foreign', USER_CHANGED, { id: stranger.id });
    client.subscribe('missing', USER_CHANGED, { id: 'PNOSUCH' });
    const foreign = await client.waitFor((message) => message.id === 'foreign' && message.type === 'next');
    const missing = await client.waitFor((message) => message.id === 'missing' && message.type === 'next');
    expect(foreign.payload.errors[0].extensions.code).toBe('NOT_FOUND');
    expect(foreign.payload.errors.map((error: any) => error.message)).toEqual(missing.payload.errors.map((error: any) => error.message));
    expect((await bRest.put(`/users/${stranger.id}`).set({ ...V2, Authorization: `Token token=${(other.key as { token: string }).token}` }).send({ user: { job_title: 'Secret' } })).status).toBe(200);
    await sleep(300);
    expect(client.messages.filter((message) => message.type === 'next' && message.payload.data)).toEqual([]);
    client.close();
  });

  test('a subscription sent over HTTP is refused as bad input, never a 5xx', async () => {
    const account = await a.createAccount();
    const response = await a.graphql(VIEWER_REVOKED, undefined, account.key);
    expect(response.status).toBeLessThan(500);
    expect(response.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
  });

  test('a credential may hold a bounded number of connections', async () => {
    const account = await a.createAccount();
    const key = authorizationOf(await a.accountKey(account) as { token: string });
    const open = await Promise.all(Array.from({ length: LIMITS.maxConnectionsPerCredential }, () => LiveTestClient.connect(a.httpServer, key)));
    const refused = await LiveTestClient.open(a.httpServer, key);
    expect((await refused.closed).code).toBe(4429);
    for (const client of open) client.close();
  });

  test('a token that expires: its connection is told and closed (4403) at the expiry', async () => {
    const account = await a.createAccount();
    const user = await a.createUser(account);
    const client = await LiveTestClient.connect(a.httpServer, await bearer(user.id, 'web', 'users.read', 2));
    client.subscribe('revoked', VIEWER_REVOKED);
    const event = await client.waitFor((message) => message.id === 'revoked' && message.type === 'next', 4_000);
    expect(event.payload.data.viewerAccessRevoked.reason).toBe('CREDENTIAL_EXPIRED');
    expect((await client.closed).code).toBe(4403);
  });
});

describe('grouped delivery: one execution per event for subscribers with the same document, variables and rights', () => {
  test('subscribers of one event get the payload their own rights give, whoever shares their group; one that lost its access gets nothing', async () => {
    const account = await a.createAccount();
    const target = await a.createUser(account, { role: 'user' });
    const colleague = await a.createUser(account, { role: 'user' });
    const signedOut = await a.createUser(account, { role: 'user' });
    const CALENDAR = 'subscription ($id: ID!) { userChanged(id: $id) { kind user { id jobTitle httpCalUrl } } }';
    const NAME = 'subscription ($id: ID!) { userChanged(id: $id) { kind user { name } } }';
    const sentBefore = await gauge('live_events_sent_total', { field: 'userChanged' });

    // The signed-out user's web session subscribes before its mobile one (same user, same scopes: one group), so it comes first in that group.
    const web = await LiveTestClient.connect(a.httpServer, await bearer(signedOut.id, 'web'));
    const mobile = await LiveTestClient.connect(a.httpServer, await bearer(signedOut.id, 'mobile'));
    const admin = await LiveTestClient.connect(a.httpServer, authorizationOf(account.key as { token: string }));
    const otherKey = await LiveTestClient.connect(a.httpServer, authorizationOf(await a.accountKey(account) as { token: string }));
    const self = await LiveTestClient.connect(a.httpServer, authorizationOf(target.key as { token: string }));
    const selfReadOnlyToken = await LiveTestClient.connect(a.httpServer, await bearer(target.id, 'mobile', 'users.read'));
    const peer = await LiveTestClient.connect(a.httpServer, authorizationOf(colleague.key as { token: string }));
    const subscribers = [web, mobile, admin, otherKey, self, selfReadOnlyToken, peer];
    for (const client of subscribers) client.subscribe('calendar', CALENDAR, { id: target.id });
    admin.subscribe('name', NAME, { id: target.id });
    await sleep(200);

    const key = `Token token=${(account.key as { token: string }).token}`;
    expect((await bRest.delete(`/oauth_delegations?user_id=${signedOut.id}&type=web`).set({ ...V2, Authorization: key })).status).toBe(200);
    expect((await web.closed).code).toBe(4403);
    expect((await bRest.put(`/users/${target.id}`).set({ ...V2, Authorization: key }).send({ user: { job_title: 'SRE' } })).status).toBe(200);

    const payloadOf = async (client: LiveTestClient, id = 'calendar') => (await client.waitFor((message) => message.id === id && message.type === 'next')).payload;
    const seen = { id: target.id, jobTitle: 'SRE', httpCalUrl: expect.stringMatching(/^https:\/\//) };
    const hidden = { id: target.id, jobTitle: 'SRE', httpCalUrl: null };
    const forbidden = (message: string) => [expect.objectContaining({ message: expect.stringContaining(message), path: ['userChanged', 'user', 'httpCalUrl'], extensions: expect.objectContaining({ code: 'FORBIDDEN' }) })];

    // Holders of can_update_user, and the user themself with a key: the URL.
    const adminPayload = await payloadOf(admin);
    expect(adminPayload).toEqual({ data: { userChanged: { kind: 'UPDATED', user: seen } } });
    expect(await payloadOf(otherKey)).toEqual(adminPayload);
    expect(await payloadOf(self)).toEqual({ data: { userChanged: { kind: 'UPDATED', user: seen } } });
    // The same document with other rights: the user themself through a token without users.write, a colleague, the other session of the signed-out user.
    expect(await payloadOf(selfReadOnlyToken)).toEqual({ errors: forbidden('users.write'), data: { userChanged: { kind: 'UPDATED', user: hidden } } });
    expect(await payloadOf(peer)).toEqual({ errors: forbidden('themself'), data: { userChanged: { kind: 'UPDATED', user: hidden } } });
    expect(await payloadOf(mobile)).toEqual({ errors: forbidden('users.write'), data: { userChanged: { kind: 'UPDATED', user: hidden } } });
    // The same rights with another document.
    expect(await payloadOf(admin, 'name')).toEqual({ data: { userChanged: { kind: 'UPDATED', user: { name: target.name } } } });

    await sleep(200);
    // The signed-out session was not sent the event, and nobody was sent it twice.
    expect(web.events('calendar')).toEqual([]);
    for (const client of subscribers.slice(1)) expect(client.events('calendar')).toHaveLength(1);
    expect(await gauge('live_events_sent_total', { field: 'userChanged' })).toBe(sentBefore + 7);
    for (const client of subscribers) client.close();
  });
});

describe('bounds', () => {
  test('a client that never reads is closed, and what the server holds for it stays bounded', async () => {
    const account = await a.createAccount();
    const user = await a.createUser(account);
    const key = `Token token=${(account.key as { token: string }).token}`;
    expect((await bRest.put(`/users/${user.id}`).set({ ...V2, Authorization: key }).send({ user: { name: 'N'.repeat(100) } })).status).toBe(200);
    const droppedBefore = await gauge('live_events_dropped_total', { reason: 'slow_client' });
    const connectionsBefore = await gauge('live_connections');
    const client = await LiveTestClient.connect(a.httpServer, key);
    // Each event is ~20 KB (the name aliased 200 times): a few writes overflow any socket buffer.
    const aliases = Array.from({ length: 200 }, (_, index) => `n${index}: name`).join(' ');
    for (let index = 0; index < 50; index++) client.subscribe(`s${index}`, `subscription ($id: ID!) { userChanged(id: $id) { user { ${aliases} } } }`, { id: user.id });
    await sleep(300);
    (client.socket as unknown as { _socket: import('node:net').Socket })._socket.pause();
    let writes = 0;
    while (writes < 30 && (await gauge('live_connections')) > connectionsBefore) {
      await bRest.put(`/users/${user.id}`).set({ ...V2, Authorization: key }).send({ user: { job_title: `Title ${writes++}` } });
      await sleep(50);
    }
    // Cut by the server while the client was still not reading: the send buffer was the bound, not the client's goodwill.
    expect(await gauge('live_connections')).toBe(connectionsBefore);
    expect(await gauge('live_events_dropped_total', { reason: 'slow_client' })).toBeGreaterThan(droppedBefore);
    (client.socket as unknown as { _socket: import('node:net').Socket })._socket.resume();
    await client.closed;
  });

  test('subscriptions per connection are bounded', async () => {
    const account = await a.createAccount();
    const client = await LiveTestClient.connect(a.httpServer, authorizationOf(await a.accountKey(account) as { token: string }));
    for (let index = 0; index <= LIMITS.maxSubscriptionsPerConnection; index++) client.subscribe(`v${index}`, VIEWER_REVOKED);
    const refused = await client.waitFor((message) => message.type === 'error');
    expect(refused.id).toBe(`v${LIMITS.maxSubscriptionsPerConnection}`);
    expect(refused.payload[0].message).toContain(`At most ${LIMITS.maxSubscriptionsPerConnection}`);
    client.close();
  });

  test('graceful shutdown closes subscribers with 1001 after the drain', async () => {
    const account = await a.createAccount();
    const client = await LiveTestClient.connect(b.httpServer, authorizationOf(account.key as { token: string }));
    client.subscribe('revoked', VIEWER_REVOKED);
    await sleep(100);
    b.beginDraining();
    await sleep(100);
    expect(client.socket.readyState).toBe(client.socket.OPEN);
    const refused = await LiveTestClient.open(b.httpServer, authorizationOf(account.key as { token: string })).catch((error: Error) => error);
    expect(refused).toBeInstanceOf(Error);
    const stopping = instances.stopB(2_000);
    expect((await client.closed).code).toBe(1001);
    await stopping;
  });
});
