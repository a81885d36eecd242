import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import type { App } from '../app/create-app.js';
import { issueDelegation } from '../oauth-delegations/oauth-delegation.service.js';
import { ProvisioningTokensService } from '../scim/provisioning-tokens.service.js';
import { metricsRegistry } from '../observability/metrics.js';
import type { Harness } from '../../test/support/harness.js';
import { authorizationOf, LiveTestClient, sleep } from '../../test/support/live-client.js';
import { startTwoInstances, type TwoInstances } from '../../test/support/two-instances.js';

const LIMITS = { maxConnectionsPerCredential: 3, maxSubscriptionsPerConnection: 60, maxBufferedBytes: 16_384, keepAliveMs: 60_000 };
const V2 = { Accept: 'application/vnd.pagerduty+json;version=2' };

const VIEWER_REVOKED = 'subscription { viewerAccessRevoked { reason occurredAt } }';
const USER_CHANGED = 'subscription ($id: ID!) { userChanged(id: $id) { kind userId changedFields user { id name jobTitle } } }';

let instances: TwoInstances;
let a: Harness;
let b: App;
let bRest: TwoInstances['bRest'];

async function bearer(userId: string, type: 'web' | 'mobile', scopes = 'users.read', expiresInSeconds?: number): Promise<string> {
  const { accessToken } = await a.database.transactions.run(a.database.em(), (tx) => issueDelegation(tx, { userId, type, scopes, expiresInSeconds }));
  return `Bearer ${accessToken}`;
}

const gauge = async (name: string, labels: Record<string, string> = {}) =>
  (await metricsRegistry.getSingleMetric(name)!.get()).values
    .filter((value) => Object.entries(labels).every(([label, wanted]) => value.labels[label] === wanted))
    .reduce((sum, value) => sum + value.value, 0);

beforeAll(async () => {
  instances = await startTwoInstances(LIMITS);
  ({ a, b, bRest } = instances);
});

afterAll(async () => instances.close());

describe('an instance nobody is subscribed to', () => {
  // First in the file: until a client connects, neither instance has a connection or a topic.
  test('drops what it hears unread (an undecodable payload is not counted); once a subscriber connects, it is sent the next change', async () => {
    const account = await a.createAccount();
    const user = await a.createUser(account);
    const key = `Token token=${(account.key as { token: string }).token}`;
    const undecodable = () => gauge('live_events_dropped_total', { reason: 'undecodable' });
    const droppedBefore = await undecodable();
    await a.database.em().execute(`select pg_notify('live_changes', 'not json')`);
    expect((await bRest.put(`/users/${user.id}`).set({ ...V2, Authorization: key }).send({ user: { job_title: 'Unheard' } })).status).toBe(200);
    await sleep(200);
    expect(await undecodable()).toBe(droppedBefore);

    const viewer = await LiveTestClient.connect(a.httpServer, authorizationOf(account.key as { token: string }));
    viewer.subscribe('changes', USER_CHANGED, { id: user.id });
    await sleep(100);
    // Instance A has a connection now (B still has none): A alone decodes, and counts, what it hears.
    await a.database.em().execute(`select pg_notify('live_changes', 'not json')`);
    expect((await bRest.put(`/users/${user.id}`).set({ ...V2, Authorization: key }).send({ user: { job_title: 'Heard' } })).status).toBe(200);
    const event = await viewer.waitFor((message) => message.id === 'changes' && message.type === 'next');
    expect(event.payload.data.userChanged).toEqual({ kind: 'UPDATED', userId: user.id, changedFields: ['jobTitle'], user: { id: user.id, name: user.name, jobTitle: 'Heard' } });
    expect(await undecodable()).toBe(droppedBefore + 1);
    await sleep(200);
    expect(viewer.events('changes')).toHaveLength(1);
    viewer.close();
  });
});

describe('across instances', () => {
  test('a sign-out through B: the web session subscribed on A gets viewerAccessRevoked, then its socket closes 4403 within a second', async () => {
    const account = await a.createAccount();
    const user = await a.createUser(account);
    const web = await LiveTestClient.connect(a.httpServer, await bearer(user.id, 'web'));
    const mobile = await LiveTestClient.connect(a.httpServer, await bearer(user.id, 'mobile'));
    web.subscribe('revoked', VIEWER_REVOKED);
    mobile.subscribe('revoked', VIEWER_REVOKED);
    await sleep(100);

    const signedOutAt = Date.now();
    expect((await bRest.delete(`/oauth_delegations?user_id=${user.id}&type=web`).set({ ...V2, Authorization: `Token token=${(account.key as { token: string }).token}` })).status).toBe(200);

    const event = await web.waitFor((message) => message.id === 'revoked' && message.type === 'next');
    expect(event.payload).toEqual({ data: { viewerAccessRevoked: { reason: 'CREDENTIAL_REVOKED', occurredAt: expect.any(String) } } });
    const closed = await web.closed;
    expect(closed.code).toBe(4403);
    expect(closed.at - signedOutAt).toBeLessThan(1_000);
    // The mobile session of the same user keeps its access and its connection.
    await sleep(300);
    expect(mobile.socket.readyState).toBe(mobile.socket.OPEN);
    expect(mobile.events('revoked')).toEqual([]);
    mobile.close();
  });

  test('userChanged.changedFields names GraphQL fields only: a sign-out of the user is a CHANGED event naming none (not revocation_reason)', async () => {
    const account = await a.createAccount();
    const user = await a.createUser(account);
    await bearer(user.id, 'web');
    const viewer = await LiveTestClient.connect(a.httpServer, authorizationOf(account.key as { token: string }));
    viewer.subscribe('changes', USER_CHANGED, { id: user.id });
    await sleep(100);
    const key = `Token token=${(account.key as { token: string }).token}`;
    expect((await bRest.delete(`/oauth_delegations?user_id=${user.id}&type=web`).set({ ...V2, Authorization: key })).status).toBe(200);
    const event = await viewer.waitFor((message) => message.id === 'changes' && message.type === 'next');
    expect(event.payload.data.userChanged).toMatchObject({ kind: 'CHANGED', userId: user.id, changedFields: [] });
    viewer.close();
  });

  test('userChanged after a PUT on B, with the fields and the user as it is now; a refused write announces nothing', async () => {
    const account = await a.createAccount();
    const user = await a.createUser(account);
    const sentBefore = await gauge('live_events_sent_total', { field: 'userChanged' });
    const viewer = await LiveTestClient.connect(a.httpServer, authorizationOf(account.key as { token: string }));
    viewer.subscribe('changes', USER_CHANGED, { id: user.id });
    await sleep(100);
    expect(await gauge('live_subscriptions')).toBeGreaterThanOrEqual(1);

    const key = `Token token=${(account.key as { token: string }).token}`;
    const refused = await bRest.put(`/users/${user.id}`).set({ ...V2, Authorization: key }).send({ user: { name: 'Renamed', email: 'not-an-email' } });
    expect(refused.status).toBe(400);
    expect((await bRest.put(`/users/${user.id}`).set({ ...V2, Authorization: key }).send({ user: { job_title: 'SRE' } })).status).toBe(200);

    const event = await viewer.waitFor((message) => message.id === 'changes' && message.type === 'next');
    expect(event.payload.data.userChanged).toEqual({ kind: 'UPDATED', userId: user.id, changedFields: ['jobTitle'], user: { id: user.id, name: user.name, jobTitle: 'SRE' } });
    await sleep(200);
    // Only the committed write was announced: the refused one (and its name) never reached anyone.
    expect(viewer.events('changes')).toHaveLength(1);
    expect(await gauge('live_events_sent_total', { field: 'userChanged' })).toBe(sentBefore + 1);
    viewer.close();
  });

  test('a deleted user: subscribers of the user see DELETED, the user\'s own connections are told and closed', async () => {
    const account = await a.createAccount();
    const user = await a.createUser(account);
    const own = await LiveTestClient.connect(a.httpServer, authorizationOf(user.key as { token: string }));
    own.subscribe('revoked', VIEWER_REVOKED);
    const admin = await LiveTestClient.connect(a.httpServer, authorizationOf(account.key as { token: string }));
    admin.subscribe('changes', USER_CHANGED, { id: user.id });
    await sleep(100);
    expect((await bRest.delete(`/users/${user.id}`).set({ ...V2, Authorization: `Token token=${(account.key as { token: string }).token}` })).status).toBe(204);
    const revoked = await own.waitFor((message) => message.id === 'revoked' && message.type === 'next');
    expect(revoked.payload.data.viewerAccessRevoked.reason).toBe('USER_DELETED');
    expect((await own.closed).code).toBe(4403);
    const deleted = await admin.waitFor((message) => message.id === 'changes' && message.type === 'next' && message.payload.data.userChanged.kind === 'DELETED');
    expect(deleted.payload.data.userChanged.user).toBeNull();
    admin.close();
  });
});

describe('suspension (SCIM `active: false`, GraphQL updateUser)', () => {
  test('suspending a user through B: the user\'s key and token on A are told USER_SUSPENDED and closed (4403) within a second', async () => {
    const account = await a.createAccount();
    const user = await a.createUser(account);
    const viaKey = await LiveTestClient.connect(a.httpServer, authorizationOf(user.key as { token: string }));
    const viaToken = await LiveTestClient.connect(a.httpServer, await bearer(user.id, 'mobile'));
    viaKey.subscribe('revoked', VIEWER_REVOKED);
    viaToken.subscribe('revoked', VIEWER_REVOKED);
    await sleep(100);

    const suspendedAt = Date.now();
    const suspended = await bRest.post('/graphql').set({ 'Content-Type': 'application/json', Authorization: `Token token=${(account.key as { token: string }).token}` })
      .send({ query: 'mutation ($id: ID!) { updateUser(input: { id: $id, active: false }) { user { id active } } }', variables: { id: user.id } });
    expect(suspended.body.errors).toBeUndefined();
    expect(suspended.body.data.updateUser.user).toEqual({ id: user.id, active: false });

    for (const client of [viaKey, viaToken]) {
      const told = await client.waitFor((message) => message.id === 'revoked' && message.type === 'next');
      expect(told.payload.data.viewerAccessRevoked.reason).toBe('USER_SUSPENDED');
      const closed = await client.closed;
      expect(closed.code).toBe(4403);
      expect(closed.at - suspendedAt).toBeLessThan(1_000);
    }
  });
});

describe('access that changes without a revocation', () => {
  const AUDIT = 'subscription { auditRecordAdded { kind } }';
  const SELF = 'subscription ($id: ID!) { userChanged(id: $id) { kind changedFields user { id role } } }';
  const CALENDAR = 'subscription ($id: ID!) { userChanged(id: $id) { kind user { id jobTitle httpCalUrl } } }';

  test('a demotion through B: the admin\'s socket on A stays open, no viewerAccessRevoked; only the subscriptions it may no longer see end (FORBIDDEN), the rest continue with the new rights', async () => {
    const account = await a.createAccount();
    const user = await a.createUser(account, { role: 'admin' });
    const bystander = await a.createUser(account, { role: 'admin' });
    const target = await a.createUser(account, { role: 'user' });
    const demoted = await LiveTestClient.connect(a.httpServer, authorizationOf(user.key as { token: string }));
    const other = await LiveTestClient.connect(a.httpServer, authorizationOf(bystander.key as { token: string }));
    for (const client of [demoted, other]) {
      client.subscribe('revoked', VIEWER_REVOKED);
      client.subscribe('audit', AUDIT);
      client.subscribe('calendar', CALENDAR, { id: target.id });
    }
    demoted.subscribe('self', SELF, { id: user.id });
    await sleep(200);
    const key = `Token token=${(account.key as { token: string }).token}`;
    const nextOf = async (client: LiveTestClient, id: string, match: (payload: any) => boolean = () => true) =>
      (await client.waitFor((message) => message.id === id && message.type === 'next' && match(message.payload))).payload;
    const withUrl = (jobTitle: string) => ({ data: { userChanged: { kind: 'UPDATED', user: { id: target.id, jobTitle, httpCalUrl: expect.stringMatching(/^https:\/\//) } } } });

    // As an admin, the user is sent another user's calendar URL.
    expect((await bRest.put(`/users/${target.id}`).set({ ...V2, Authorization: key }).send({ user: { job_title: 'Before' } })).status).toBe(200);
    expect(await nextOf(demoted, 'calendar')).toEqual(withUrl('Before'));
    const demotedAt = Date.now();
    expect((await bRest.put(`/users/${user.id}`).set({ ...V2, Authorization: key }).send({ user: { role: 'user' } })).status).toBe(200);

    // The audit trail needs can_update_user: that subscription alone ends, with its own error message.
    const ended = await demoted.waitFor((message) => message.id === 'audit' && message.type === 'error');
    expect(ended.payload).toEqual([expect.objectContaining({ extensions: expect.objectContaining({ code: 'FORBIDDEN', apiErrorCode: 2010 }) })]);
    expect(Date.now() - demotedAt).toBeLessThan(1_000);
    // The viewer's own userChanged continues and tells the app what changed.
    expect(await nextOf(demoted, 'self')).toEqual({ data: { userChanged: { kind: 'UPDATED', changedFields: ['role'], user: { id: user.id, role: 'USER' } } } });

    // Still subscribed to another user's changes, now presented with a user's rights: no calendar URL.
    expect((await bRest.put(`/users/${target.id}`).set({ ...V2, Authorization: key }).send({ user: { job_title: 'After' } })).status).toBe(200);
    const after = await nextOf(demoted, 'calendar', (payload) => payload.data?.userChanged?.user?.jobTitle === 'After');
    expect(after.data.userChanged.user.httpCalUrl).toBeNull();
    expect(after.errors).toEqual([expect.objectContaining({ path: ['userChanged', 'user', 'httpCalUrl'], extensions: expect.objectContaining({ code: 'FORBIDDEN' }) })]);
    // The admin who kept the role still gets the URL, and its audit subscription goes on.
    expect(await nextOf(other, 'calendar', (payload) => payload.data?.userChanged?.user?.jobTitle === 'After')).toEqual(withUrl('After'));
    await sleep(200);
    expect(other.messages.filter((message) => message.type === 'error')).toEqual([]);
    expect(other.events('audit').length).toBeGreaterThan(0);

    // Not a revocation: nothing on viewerAccessRevoked, the socket open, no other subscription ended.
    expect(demoted.socket.readyState).toBe(demoted.socket.OPEN);
    expect(demoted.events('revoked')).toEqual([]);
    expect(demoted.messages.filter((message) => message.type === 'error' || message.type === 'complete').map((message) => message.id)).toEqual(['audit']);
    // A new subscription is authorized with the new rights too.
    demoted.subscribe('audit-again', AUDIT);
    const refused = await demoted.waitFor((message) => message.id === 'audit-again' && (message.type === 'error' || message.type === 'next'));
    expect(JSON.stringify(refused.payload)).toContain('FORBIDDEN');
    demoted.close();
    other.close();
  });

  test('a promotion through B: the socket stays open and the same subscription is presented with the new rights (the calendar URL appears)', async () => {
    const account = await a.createAccount();
    const user = await a.createUser(account, { role: 'user' });
    const target = await a.createUser(account, { role: 'user' });
    const promoted = await LiveTestClient.connect(a.httpServer, authorizationOf(user.key as { token: string }));
    promoted.subscribe('revoked', VIEWER_REVOKED);
    promoted.subscribe('calendar', CALENDAR, { id: target.id });
    await sleep(200);
    const key = `Token token=${(account.key as { token: string }).token}`;
    const jobTitled = (jobTitle: string) => (message: any) => message.id === 'calendar' && message.type === 'next' && message.payload.data?.userChanged?.user?.jobTitle === jobTitle;

    expect((await bRest.put(`/users/${target.id}`).set({ ...V2, Authorization: key }).send({ user: { job_title: 'Before' } })).status).toBe(200);
    const before = await promoted.waitFor(jobTitled('Before'));
    expect(before.payload.data.userChanged.user.httpCalUrl).toBeNull();
    expect(before.payload.errors[0].extensions.code).toBe('FORBIDDEN');

    expect((await bRest.put(`/users/${user.id}`).set({ ...V2, Authorization: key }).send({ user: { role: 'admin' } })).status).toBe(200);
    await sleep(300);
    expect((await bRest.put(`/users/${target.id}`).set({ ...V2, Authorization: key }).send({ user: { job_title: 'After' } })).status).toBe(200);
    const after = await promoted.waitFor(jobTitled('After'));
    expect(after.payload).toEqual({ data: { userChanged: { kind: 'UPDATED', user: { id: target.id, jobTitle: 'After', httpCalUrl: expect.stringMatching(/^https:\/\//) } } } });
    expect(promoted.socket.readyState).toBe(promoted.socket.OPEN);
    expect(promoted.events('revoked')).toEqual([]);
    promoted.close();
  });
});

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
