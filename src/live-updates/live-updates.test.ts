import { describe, expect, test } from '@jest/globals';
import type { Harness } from '../../test/support/harness.js';
import { authorizationOf, LiveTestClient, sleep } from '../../test/support/live-client.js';
import { bearerOn, gauge, USER_CHANGED, useTwoLiveInstances, V2, VIEWER_REVOKED } from '../../test/support/live-instances.js';
import type { TwoInstances } from '../../test/support/two-instances.js';

let a: Harness;
let bRest: TwoInstances['bRest'];
useTwoLiveInstances((started) => ({ a, bRest } = started));
const bearer = (userId: string, type: 'web' | 'mobile', scopes?: string, expiresInSeconds?: number) => bearerOn(a, userId, type, scopes, expiresInSeconds);


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
