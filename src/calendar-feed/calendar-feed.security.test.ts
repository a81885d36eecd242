import { createHash, randomBytes } from 'node:crypto';
import supertest from 'supertest';
import { startHarness, type Harness, type TestUser } from '../../test/support/harness.js';
import { scanTextColumns } from '../../test/support/plaintext-scan.js';
import type { Principal } from '../auth/principal.js';
import { ForbiddenError } from '../errors/domain-errors.js';
import { CalendarFeedService } from './calendar-feed.service.js';
import { CalendarKeyCodec } from './calendar-key.codec.js';
import { issueDelegation } from '../oauth-delegations/oauth-delegation.issuing.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h.close();
});

function feedStatus(key: string): Promise<number> {
  return supertest(h.app).get(`/private/${key}/feed`).then((response) => response.status);
}

async function shownKey(user: TestUser): Promise<string> {
  const response = await h.rest('get', '/users/me', { key: user.key });
  expect(response.status).toBe(200);
  return /\/private\/([^/]+)\/feed$/.exec(response.body.user.http_cal_url)![1]!;
}

describe('calendar key under concurrency', () => {
  test('10 parallel regenerations all succeed; exactly one returned key works afterwards, the one the user shows', async () => {
    const account = await h.createAccount();
    const user = await h.createUser(account);
    const original = await shownKey(user);

    const responses = await Promise.all(
      Array.from({ length: 10 }, (_, index) => h.rest('post', `/users/${user.id}/regenerate_private_url_key`, { key: index % 2 ? user.key : account.key })),
    );
    expect(responses.map((response) => response.status)).toEqual(Array(10).fill(200));
    const keys = responses.map((response) => response.body.private_url_key as string);
    expect(new Set(keys).size).toBe(10);
    // Each response's user shows the key that response created.
    responses.forEach((response) => expect(response.body.user.http_cal_url).toBe(`https://feeds.test.example/private/${response.body.private_url_key}/feed`));

    const statuses = await Promise.all(keys.map(feedStatus));
    expect(statuses.filter((status) => status === 200)).toHaveLength(1);
    expect(statuses.filter((status) => status === 404)).toHaveLength(9);
    const survivor = keys[statuses.indexOf(200)]!;
    expect(await shownKey(user)).toBe(survivor);
    expect(await feedStatus(original)).toBe(404);
    const [row] = await h.database.em().execute('select count(*)::int as n from calendar_feed_keys where user_id = ?', [user.id]);
    expect(row.n).toBe(1);
  });

  test('concurrent first uses agree on one key (created lazily, race-safe)', async () => {
    const account = await h.createAccount();
    const user = await h.createUser(account);
    const [before] = await h.database.em().execute('select count(*)::int as n from calendar_feed_keys where user_id = ?', [user.id]);
    expect(before.n).toBe(0);
    const shown = await Promise.all(Array.from({ length: 10 }, () => shownKey(user)));
    expect(new Set(shown).size).toBe(1);
    expect(await feedStatus(shown[0]!)).toBe(200);
    const [after] = await h.database.em().execute('select count(*)::int as n from calendar_feed_keys where user_id = ?', [user.id]);
    expect(after.n).toBe(1);
  });

  test('a regeneration racing the user\'s deletion leaves no working key', async () => {
    const account = await h.createAccount();
    const user = await h.createUser(account);
    const original = await shownKey(user);
    const [regenerated, deleted] = await Promise.all([
      h.rest('post', `/users/${user.id}/regenerate_private_url_key`, { key: account.key }),
      h.rest('delete', `/users/${user.id}`, { key: account.key }),
    ]);
    expect(deleted.status).toBe(204);
    expect([200, 404]).toContain(regenerated.status);
    expect(await feedStatus(original)).toBe(404);
    if (regenerated.status === 200) expect(await feedStatus(regenerated.body.private_url_key)).toBe(404);
    const [row] = await h.database.em().execute('select count(*)::int as n from calendar_feed_keys where user_id = ?', [user.id]);
    expect(row.n).toBe(0);
  });
});

describe('no plaintext key in the database', () => {
  test('after creating users and regenerating, no text column of any table holds a key or a feed URL', async () => {
    const account = await h.createAccount();
    const admin = await h.createUser(account, { role: 'admin' });
    const users = [admin, await h.createUser(account), await h.createUser(account, { role: 'read_only_user' })];

    const issued: string[] = [];
    for (const user of users) issued.push(await shownKey(user));
    for (const user of users) {
      const response = await h.rest('post', `/users/${user.id}/regenerate_private_url_key`, { key: user === admin ? admin.key : account.key });
      expect(response.status).toBe(200);
      issued.push(response.body.private_url_key);
    }
    const graphql = await h.graphql('mutation($input: RegenerateUserCalendarKeyInput!) { regenerateUserCalendarKey(input: $input) { privateUrlKey } }', { input: { userId: users[1]!.id } }, admin.key);
    issued.push(graphql.data.regenerateUserCalendarKey.privateUrlKey);
    for (const user of users) issued.push(await shownKey(user));
    expect(new Set(issued).size).toBe(users.length * 2 + 1);
    for (const key of issued) expect(key).toMatch(/^[A-Za-z0-9_-]{27}$/); // 160 bits

    const needles = issued.flatMap((key) => [key, `/private/${key}/feed`, `https://feeds.test.example/private/${key}/feed`, `webcal://feeds.test.example/private/${key}/feed`]);
    const em = h.database.em();
    const { scanned, hits } = await scanTextColumns(em, needles);
    expect(scanned).toEqual(expect.arrayContaining(['calendar_feed_keys.nonce', 'calendar_feed_keys.key_digest', 'users.name', 'api_keys.token_digest', 'oncall_shifts.summary']));
    expect(hits).toEqual([]);

    // What is stored: a random nonce and SHA-256 of the current key only.
    const rows = await em.execute<{ user_id: string; nonce: string; key_digest: string }[]>('select user_id, nonce, key_digest from calendar_feed_keys where user_id in (?)', [users.map((user) => user.id)]);
    expect(rows).toHaveLength(users.length);
    for (const row of rows) {
      const current = issued.at(-users.length + users.findIndex((user) => user.id === row.user_id))!;
      expect(row.key_digest).toBe(createHash('sha256').update(current).digest('hex'));
      expect(issued).not.toContain(row.nonce);
    }
    // Keys never reach the logs either.
    const logs = h.logs.join('\n');
    for (const key of issued) expect(logs).not.toContain(key);
  });

  test('the key depends on the server secret: the stored nonce alone does not give it', () => {
    const nonce = new CalendarKeyCodec(randomBytes(32)).newNonce();
    const one = new CalendarKeyCodec(randomBytes(32));
    const other = new CalendarKeyCodec(randomBytes(32));
    expect(one.keyFor('PABCDEF', nonce)).toMatch(/^[A-Za-z0-9_-]{27}$/);
    expect(one.keyFor('PABCDEF', nonce)).toBe(one.keyFor('PABCDEF', nonce));
    expect(other.keyFor('PABCDEF', nonce)).not.toBe(one.keyFor('PABCDEF', nonce));
    expect(one.keyFor('PABCDEG', nonce)).not.toBe(one.keyFor('PABCDEF', nonce));
    const key = one.keyFor('PABCDEF', nonce);
    expect(one.verify(key, { userId: 'PABCDEF', nonce })).toBe(true);
    expect(other.verify(key, { userId: 'PABCDEF', nonce })).toBe(false);
    expect(one.verify(key, undefined)).toBe(false);
    expect(one.verify(`${key}x`, { userId: 'PABCDEF', nonce })).toBe(false);
    expect(one.verify(key.slice(0, -1), { userId: 'PABCDEF', nonce })).toBe(false);
  });
});

describe('the calendar-URL rule for every kind of credential', () => {
  const base = { accountId: 'PACCOUN', credentialId: 'PCRED00', rateLimitKey: 'k' };
  const allowed = (principal: Principal, userId: string) => {
    try {
      CalendarFeedService.assertMayReadUrls(principal, userId);
      return true;
    } catch (error) {
      expect(error).toBeInstanceOf(ForbiddenError);
      return false;
    }
  };

  test('self or can_update_user; never a read-only account key; OAuth tokens need users.write (users.read does not show credentials)', () => {
    const oauth = (role: 'user' | 'admin', scopes: string[]): Principal => ({ ...base, kind: 'oauth', userId: 'PSELF00', role, scopes: new Set(scopes) });
    const app = (scopes: string[]): Principal => ({ ...base, kind: 'oauth_app', clientId: 'app-client', scopes: new Set(scopes) });
    expect(allowed({ ...base, kind: 'user_key', userId: 'PSELF00', role: 'user' }, 'PSELF00')).toBe(true);
    expect(allowed({ ...base, kind: 'user_key', userId: 'PSELF00', role: 'read_only_limited_user' }, 'PSELF00')).toBe(true);
    expect(allowed({ ...base, kind: 'user_key', userId: 'PSELF00', role: 'user' }, 'POTHER0')).toBe(false);
    expect(allowed({ ...base, kind: 'user_key', userId: 'PSELF00', role: 'admin' }, 'POTHER0')).toBe(true);
    expect(allowed({ ...base, kind: 'account_key', readOnly: false }, 'POTHER0')).toBe(true);
    expect(allowed({ ...base, kind: 'account_key', readOnly: true }, 'POTHER0')).toBe(false);
    expect(allowed(oauth('user', ['users.read']), 'PSELF00')).toBe(false);
    expect(allowed(oauth('user', ['users.write']), 'PSELF00')).toBe(true);
    expect(allowed(oauth('user', ['users.write']), 'POTHER0')).toBe(false);
    expect(allowed(oauth('admin', ['users.read']), 'POTHER0')).toBe(false);
    expect(allowed(oauth('admin', ['users.read', 'users.write']), 'POTHER0')).toBe(true);
    expect(allowed(oauth('user', ['oauth_delegations.read']), 'PSELF00')).toBe(false);
    // An integration app's rights derive from its scopes: users.read gives no can_update_user.
    expect(allowed(app(['users.read']), 'POTHER0')).toBe(false);
    expect(allowed(app(['users.read', 'subscribers.write']), 'POTHER0')).toBe(false);
    expect(allowed(app(['users.write']), 'POTHER0')).toBe(true);
    expect(() => CalendarFeedService.assertMayReadUrls(oauth('admin', ['users.read']), 'POTHER0')).toThrow(
      expect.objectContaining({ details: [expect.stringContaining('This OAuth token lacks the required scope: users.write')] }),
    );
  });
});

describe('read-scoped tokens do not collect calendar URLs', () => {
  test('a users.read token: /users/me without the URLs, the GraphQL field FORBIDDEN naming users.write; a users.write token sees them', async () => {
    const account = await h.createAccount();
    const user = await h.createUser(account);
    const reader = await h.database.transactions.run(h.database.em(), (tx) => issueDelegation(tx, { userId: user.id, type: 'mobile', scopes: 'users.read' }));
    const me = await h.rest('get', '/users/me', { key: { bearer: reader.accessToken } });
    expect(me.status).toBe(200);
    expect(me.body.user).not.toHaveProperty('http_cal_url');
    expect((await h.rest('get', `/users/${user.id}`, { key: { bearer: reader.accessToken } })).body.user).not.toHaveProperty('http_cal_url');
    const field = await h.graphql('{ viewer { httpCalUrl } }', {}, { bearer: reader.accessToken });
    expect(field.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    expect(field.errors?.[0]?.message).toContain('users.write');

    const writer = await h.database.transactions.run(h.database.em(), (tx) => issueDelegation(tx, { userId: user.id, type: 'mobile', scopes: 'users.read users.write' }));
    expect((await h.rest('get', '/users/me', { key: { bearer: writer.accessToken } })).body.user.http_cal_url).toMatch(/\/private\/[^/]+\/feed$/);
  });

  test('an admin\'s users.read token cannot read another user\'s URLs', async () => {
    const account = await h.createAccount();
    const admin = await h.createUser(account, { role: 'admin' });
    const other = await h.createUser(account);
    const token = await h.database.transactions.run(h.database.em(), (tx) => issueDelegation(tx, { userId: admin.id, type: 'web', scopes: 'users.read' }));
    const shown = await h.rest('get', `/users/${other.id}?include[]=calendar_urls`, { key: { bearer: token.accessToken } });
    expect(shown.status).toBe(403);
    const field = await h.graphql('query($id: ID!) { user(id: $id) { httpCalUrl } }', { id: other.id }, { bearer: token.accessToken });
    expect(field.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
  });
});
