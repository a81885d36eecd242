import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { startHarness, type Harness } from '../../test/support/harness.js';
import { subscriptionFixtures } from '../../test/support/subscriptions.js';

let h: Harness;
const { register, stored, countsScenario } = subscriptionFixtures(() => h);
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h.close();
});


const ref = (subscribable_type: string, subscribable_id: string) => ({ subscribable_type, subscribable_id });
const path = (userId: string) => `/users/${userId}/notification_subscriptions`;

describe('REST counts scenario', () => {
  test('subscribe reports success/duplicate/unauthorized in request order; unsubscribe counts deleted/unauthorized/non-existent', async () => {
    const { account, other, user } = await countsScenario();

    const first = await h.rest('post', path(user.id), {
      key: user.key,
      body: { subscribables: [ref('incident', 'PINC001'), ref('business_service', 'PBIZ001'), ref('incident', 'PFOREIGN')] },
    });
    expect(first.status).toBe(200);
    expect(first.body).toEqual({
      subscriptions: [
        { subscriber_id: user.id, subscriber_type: 'user', subscribable_id: 'PINC001', subscribable_type: 'incident', account_id: account.id, result: 'success' },
        { subscriber_id: user.id, subscriber_type: 'user', subscribable_id: 'PBIZ001', subscribable_type: 'business_service', account_id: account.id, result: 'success' },
        { subscriber_id: user.id, subscriber_type: 'user', subscribable_id: 'PFOREIGN', subscribable_type: 'incident', account_id: account.id, result: 'unauthorized' },
      ],
    });

    const second = await h.rest('post', path(user.id), {
      key: user.key,
      body: { subscribables: [ref('business_service', 'PBIZ001'), ref('incident', 'PINC002')] },
    });
    expect(second.status).toBe(200);
    expect(second.body.subscriptions.map((s: { subscribable_id: string; result: string }) => `${s.subscribable_id}=${s.result}`)).toEqual(['PBIZ001=duplicate', 'PINC002=success']);
    expect(await stored(user.id)).toEqual(['incident:PINC001', 'business_service:PBIZ001', 'incident:PINC002']);

    const listed = await h.rest('get', `${path(user.id)}?total=true`, { key: user.key });
    expect(listed.status).toBe(200);
    expect(listed.body).toEqual({
      subscriptions: [
        ['PINC001', 'incident', 'Checkout is slow'],
        ['PBIZ001', 'business_service', 'Payments'],
        ['PINC002', 'incident', 'Disk full'],
      ].map(([id, type, name]) => ({
        subscription: { subscriber_id: user.id, subscriber_type: 'user', subscribable_id: id, subscribable_type: type, account_id: account.id, subscribable_name: name },
        subscribable_name: name,
      })),
      limit: 25,
      offset: 0,
      more: false,
      total: 3,
    });

    const mix = { subscribables: [ref('incident', 'PINC001'), ref('incident', 'PINC003'), ref('incident', 'PFOREIGN'), ref('business_service', 'PBIZ001')] };
    const removed = await h.rest('post', `${path(user.id)}/unsubscribe`, { key: user.key, body: mix });
    expect(removed.status).toBe(200);
    expect(removed.body).toEqual({ deleted_count: 2, unauthorized_count: 1, non_existent_count: 1 });
    expect(await stored(user.id)).toEqual(['incident:PINC002']);

    const again = await h.rest('post', `${path(user.id)}/unsubscribe`, { key: user.key, body: mix });
    expect(again.status).toBe(200);
    expect(again.body).toEqual({ deleted_count: 0, unauthorized_count: 1, non_existent_count: 3 });
    expect(await stored(user.id)).toEqual(['incident:PINC002']);

    // The foreign entity stays untouched in its own account's registry, with nobody subscribed.
    const [foreign] = await h.database.em().execute<{ n: number }[]>('select count(*)::int as n from notification_subscriptions where account_id = ?', [other.id]);
    expect(foreign!.n).toBe(0);
  });
});

describe('REST validation', () => {
  test('bad payloads answer 422 with the error envelope and change nothing, on both write operations', async () => {
    const account = await h.createAccount();
    const user = await h.createUser(account);
    await register(account, 'incident', 'PINC001');
    await register(account, 'incident', 'PINC002');
    const ok = await h.rest('post', path(user.id), { key: user.key, body: { subscribables: [ref('incident', 'PINC001')] } });
    expect(ok.status).toBe(200);

    const hundredAndOne = Array.from({ length: 101 }, (_, i) => ref('incident', `PX${i}`));
    const bad: [string, unknown][] = [
      ['empty list', { subscribables: [] }],
      ['101 items', { subscribables: hundredAndOne }],
      ['duplicates in the list', { subscribables: [ref('incident', 'PINC002'), ref('incident', 'PINC001'), ref('incident', 'PINC002')] }],
      ['unknown subscribable_type', { subscribables: [ref('incident', 'PINC002'), ref('team', 'PINC001')] }],
      ['missing subscribable_id', { subscribables: [ref('incident', 'PINC002'), { subscribable_type: 'incident' }] }],
      ['missing subscribable_type', { subscribables: [ref('incident', 'PINC002'), { subscribable_id: 'PINC001' }] }],
      ['empty subscribable_id', { subscribables: [ref('incident', 'PINC002'), ref('incident', '')] }],
      ['numeric subscribable_id', { subscribables: [ref('incident', 'PINC002'), { subscribable_type: 'incident', subscribable_id: 7 }] }],
      ['element not an object', { subscribables: [ref('incident', 'PINC002'), 'PINC001'] }],
      ['subscribables not an array', { subscribables: ref('incident', 'PINC002') }],
      ['subscribables missing', { subscribable: [ref('incident', 'PINC002')] }],
    ];
    for (const [label, body] of bad) {
      for (const suffix of ['', '/unsubscribe']) {
        const response = await h.rest('post', `${path(user.id)}${suffix}`, { key: user.key, body });
        expect({ label, suffix, status: response.status, code: response.body.error?.code }).toEqual({ label, suffix, status: 422, code: 2001 });
        expect(response.body.error.errors.length).toBeGreaterThan(0);
      }
    }
    // Read back: still exactly the one subscription, through the API and in the database.
    expect(await stored(user.id)).toEqual(['incident:PINC001']);
    const listed = await h.rest('get', `${path(user.id)}?total=true`, { key: user.key });
    expect(listed.body.total).toBe(1);
    expect(listed.body.subscriptions[0].subscription.subscribable_id).toBe('PINC001');
  });

  test('the duplicate error names both positions', async () => {
    const account = await h.createAccount();
    const user = await h.createUser(account);
    const response = await h.rest('post', path(user.id), { key: user.key, body: { subscribables: [ref('incident', 'A'), ref('incident', 'B'), ref('incident', 'A')] } });
    expect(response.status).toBe(422);
    expect(response.body.error.errors.join(' ')).toMatch(/subscribables\[2\].*subscribables\[0\]/);
  });

  test('list parameters follow classic pagination', async () => {
    const account = await h.createAccount();
    const user = await h.createUser(account);
    for (const id of ['PA', 'PB', 'PC']) await register(account, 'incident', id);
    await h.rest('post', path(user.id), { key: user.key, body: { subscribables: ['PA', 'PB', 'PC'].map((id) => ref('incident', id)) } });

    const page1 = await h.rest('get', `${path(user.id)}?limit=2`, { key: user.key });
    expect(page1.status).toBe(200);
    expect({ limit: page1.body.limit, offset: page1.body.offset, more: page1.body.more, total: page1.body.total }).toEqual({ limit: 2, offset: 0, more: true, total: null });
    const page2 = await h.rest('get', `${path(user.id)}?limit=2&offset=2&total=true`, { key: user.key });
    expect({ more: page2.body.more, total: page2.body.total }).toEqual({ more: false, total: 3 });
    const ids = [...page1.body.subscriptions, ...page2.body.subscriptions].map((s: { subscription: { subscribable_id: string } }) => s.subscription.subscribable_id);
    expect(ids).toEqual(['PA', 'PB', 'PC']);
    const capped = await h.rest('get', `${path(user.id)}?limit=500`, { key: user.key });
    expect(capped.body.limit).toBe(100);
    for (const query of ['limit=-1', 'offset=abc', 'offset=9999&limit=2', 'total=maybe']) {
      const response = await h.rest('get', `${path(user.id)}?${query}`, { key: user.key });
      expect({ query, status: response.status }).toEqual({ query, status: 400 });
    }
  });
});

describe('REST concurrency', () => {
  test('10 parallel identical subscribe calls create exactly one subscription and no 500s', async () => {
    const account = await h.createAccount();
    const user = await h.createUser(account);
    await register(account, 'business_service', 'PBIZ001');
    const responses = await Promise.all(
      Array.from({ length: 10 }, () => h.rest('post', path(user.id), { key: user.key, body: { subscribables: [ref('business_service', 'PBIZ001')] } })),
    );
    expect(responses.map((response) => response.status)).toEqual(Array(10).fill(200));
    const results = responses.map((response) => response.body.subscriptions[0].result).sort();
    expect(results).toEqual(['duplicate', 'duplicate', 'duplicate', 'duplicate', 'duplicate', 'duplicate', 'duplicate', 'duplicate', 'duplicate', 'success']);
    expect(await stored(user.id)).toEqual(['business_service:PBIZ001']);
  });

  test('parallel subscribe and unsubscribe calls naming the same entities in opposite orders neither deadlock nor fail', async () => {
    const account = await h.createAccount();
    const user = await h.createUser(account);
    await register(account, 'incident', 'PA');
    await register(account, 'incident', 'PB');
    const forward = { subscribables: [ref('incident', 'PA'), ref('incident', 'PB')] };
    const backward = { subscribables: [ref('incident', 'PB'), ref('incident', 'PA')] };
    const responses = await Promise.all(
      Array.from({ length: 10 }, (_, i) => h.rest('post', path(user.id), { key: user.key, body: i % 2 ? backward : forward })),
    );
    expect(responses.map((response) => response.status)).toEqual(Array(10).fill(200));
    const successes = responses.flatMap((response) => response.body.subscriptions).filter((s: { result: string }) => s.result === 'success');
    expect(successes.map((s: { subscribable_id: string }) => s.subscribable_id).sort()).toEqual(['PA', 'PB']);
    expect((await stored(user.id)).sort()).toEqual(['incident:PA', 'incident:PB']);

    const mixed = await Promise.all(
      Array.from({ length: 10 }, (_, i) => h.rest('post', `${path(user.id)}${i % 3 === 0 ? '' : '/unsubscribe'}`, { key: user.key, body: i % 2 ? backward : forward })),
    );
    expect(mixed.map((response) => response.status)).toEqual(Array(10).fill(200));
  });
});

describe('REST permissions', () => {
  test('the user themself and can_update_user holders may act; another user gets 403; other accounts and unknown ids get 404', async () => {
    const account = await h.createAccount();
    const other = await h.createAccount();
    const target = await h.createUser(account);
    const peer = await h.createUser(account, { role: 'user' });
    const admin = await h.createUser(account, { role: 'admin' });
    const readOnly = await h.createUser(account, { role: 'read_only_user' });
    const stranger = await h.createUser(other, { role: 'admin' });
    await register(account, 'incident', 'PINC001');
    await register(account, 'incident', 'PINC002');
    const body = { subscribables: [ref('incident', 'PINC001')] };

    for (const [method, suffix] of [['get', ''], ['post', ''], ['post', '/unsubscribe']] as const) {
      const denied = await h.rest(method, `${path(target.id)}${suffix}`, { key: peer.key, body: method === 'post' ? body : undefined });
      expect({ method, suffix, status: denied.status, code: denied.body.error?.code }).toEqual({ method, suffix, status: 403, code: 2010 });
      const foreign = await h.rest(method, `${path(target.id)}${suffix}`, { key: stranger.key, body: method === 'post' ? body : undefined });
      expect({ method, suffix, status: foreign.status, code: foreign.body.error?.code }).toEqual({ method, suffix, status: 404, code: 2100 });
      const missing = await h.rest(method, `${path('PZZZZZZ')}${suffix}`, { key: account.key, body: method === 'post' ? body : undefined });
      expect({ method, suffix, status: missing.status }).toEqual({ method, suffix, status: 404 });
    }
    expect(await stored(target.id)).toEqual([]);

    const byAdmin = await h.rest('post', path(target.id), { key: admin.key, body });
    expect(byAdmin.status).toBe(200);
    expect(byAdmin.body.subscriptions[0].result).toBe('success');
    const byAccountKey = await h.rest('post', path(target.id), { key: account.key, body: { subscribables: [ref('incident', 'PINC002')] } });
    expect(byAccountKey.body.subscriptions[0].result).toBe('success');
    expect((await h.rest('get', path(target.id), { key: admin.key })).body.subscriptions).toHaveLength(2);
    expect((await h.rest('get', path(target.id), { key: target.key })).body.subscriptions).toHaveLength(2);

    // A read-only role may read its own list but not write it; a read-only account key has no can_update_user.
    expect((await h.rest('get', path(readOnly.id), { key: readOnly.key })).status).toBe(200);
    expect((await h.rest('post', path(readOnly.id), { key: readOnly.key, body })).status).toBe(403);
    expect((await h.rest('post', path(target.id), { key: await h.accountKey(account, { readOnly: true }), body })).status).toBe(403);
    expect((await h.rest('get', path(target.id))).status).toBe(401);
    expect(await stored(readOnly.id)).toEqual([]);
    expect(await stored(target.id)).toEqual(['incident:PINC001', 'incident:PINC002']);
  });
});

describe('user deletion', () => {
  test('deleting a user removes the user\'s subscriptions and nobody else\'s', async () => {
    const account = await h.createAccount();
    const doomed = await h.createUser(account);
    const survivor = await h.createUser(account);
    await register(account, 'incident', 'PINC001');
    await register(account, 'business_service', 'PBIZ001');
    const body = { subscribables: [ref('incident', 'PINC001'), ref('business_service', 'PBIZ001')] };
    expect((await h.rest('post', path(doomed.id), { key: doomed.key, body })).status).toBe(200);
    expect((await h.rest('post', path(survivor.id), { key: survivor.key, body })).status).toBe(200);

    expect((await h.rest('delete', `/users/${doomed.id}`, { key: account.key })).status).toBe(204);
    expect(await stored(doomed.id)).toEqual([]);
    expect(await stored(survivor.id)).toEqual(['incident:PINC001', 'business_service:PBIZ001']);
    expect((await h.rest('get', path(doomed.id), { key: account.key })).status).toBe(404);
  });
});
