import { jest } from '@jest/globals';
import { startHarness, type Credential, type Harness, type TestUser } from '../../test/support/harness.js';
import { CalendarFeedService } from './calendar-feed.service.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h.close();
});

const URL_PATTERN = /^https:\/\/feeds\.test\.example\/private\/[A-Za-z0-9_-]{27}\/feed$/;
const USER_URLS = 'query($id: ID!) { user(id: $id) { id name httpCalUrl webCalUrl } }';

async function show(path: string, key: Credential) {
  const response = await h.rest('get', path, { key });
  return response;
}

/** The URLs as the user themself sees them. */
async function ownUrls(user: TestUser) {
  const response = await show('/users/me', user.key);
  expect(response.status).toBe(200);
  return { http_cal_url: response.body.user.http_cal_url as string, web_cal_url: response.body.user.web_cal_url as string };
}

function expectForbiddenFields(result: { data?: any; errors?: any[] }) {
  expect(result.errors?.length).toBeGreaterThanOrEqual(1);
  for (const error of result.errors!) {
    expect(error.extensions).toMatchObject({ code: 'FORBIDDEN', apiErrorCode: 2010 });
    expect(['httpCalUrl', 'webCalUrl']).toContain(error.path.at(-1));
  }
  // The rest of the user still resolves; the URL fields are null with an error, never silently.
  expect(result.data.user.httpCalUrl).toBeNull();
  expect(result.data.user.webCalUrl).toBeNull();
  expect(typeof result.data.user.name).toBe('string');
}

describe('who sees calendar URLs (REST and GraphQL)', () => {
  test('the user themself sees their URLs without include[], on show and on /users/me, on both faces', async () => {
    const account = await h.createAccount();
    const user = await h.createUser(account);
    const me = await ownUrls(user);
    expect(me.http_cal_url).toMatch(URL_PATTERN);
    expect(me.web_cal_url).toBe(me.http_cal_url.replace(/^https:/, 'webcal:'));

    const byId = await show(`/users/${user.id}`, user.key);
    expect(byId.status).toBe(200);
    expect(byId.body.user).toMatchObject(me);
    expect((await show(`/users/${user.id}?include[]=calendar_urls`, user.key)).body.user).toMatchObject(me);

    const viewer = await h.graphql('{ viewer { httpCalUrl webCalUrl } }', {}, user.key);
    expect(viewer.errors).toBeUndefined();
    expect(viewer.data.viewer).toEqual({ httpCalUrl: me.http_cal_url, webCalUrl: me.web_cal_url });
  });

  test('a read-only role still sees its own URLs (user-level credentials)', async () => {
    const account = await h.createAccount();
    const reader = await h.createUser(account, { role: 'read_only_user' });
    expect((await ownUrls(reader)).http_cal_url).toMatch(URL_PATTERN);
  });

  test('an admin sees another user\'s URLs only with include[]=calendar_urls; so does a full-access account key', async () => {
    const account = await h.createAccount();
    const admin = await h.createUser(account, { role: 'admin' });
    const target = await h.createUser(account);
    const theirs = await ownUrls(target);

    const plain = await show(`/users/${target.id}`, admin.key);
    expect(plain.status).toBe(200);
    expect(plain.body.user).not.toHaveProperty('http_cal_url');
    expect(plain.body.user).not.toHaveProperty('web_cal_url');

    const included = await show(`/users/${target.id}?include[]=calendar_urls&include[]=teams`, admin.key);
    expect(included.status).toBe(200);
    expect(included.body.user).toMatchObject(theirs);

    const accountKeyPlain = await show(`/users/${target.id}`, account.key);
    expect(accountKeyPlain.body.user).not.toHaveProperty('http_cal_url');
    expect((await show(`/users/${target.id}?include[]=calendar_urls`, account.key)).body.user).toMatchObject(theirs);

    const graphql = await h.graphql(USER_URLS, { id: target.id }, admin.key);
    expect(graphql.errors).toBeUndefined();
    expect(graphql.data.user).toMatchObject({ httpCalUrl: theirs.http_cal_url, webCalUrl: theirs.web_cal_url });
  });

  test('a user-role key asking for another user\'s URLs: 403 on REST, FORBIDDEN on GraphQL', async () => {
    const account = await h.createAccount();
    const asker = await h.createUser(account, { role: 'user' });
    const target = await h.createUser(account);
    await ownUrls(target);

    expect((await show(`/users/${target.id}`, asker.key)).body.user).not.toHaveProperty('http_cal_url');
    const denied = await show(`/users/${target.id}?include[]=calendar_urls`, asker.key);
    expect(denied.status).toBe(403);
    expect(denied.body.error.code).toBe(2010);
    expect(JSON.stringify(denied.body)).not.toContain('/private/');

    const graphql = await h.graphql(USER_URLS, { id: target.id }, asker.key);
    expectForbiddenFields(graphql);
    expect(JSON.stringify(graphql)).not.toContain('/private/');

    // Other non-manager roles are refused the same way.
    for (const role of ['limited_user', 'observer', 'read_only_user'] as const) {
      const other = await h.createUser(account, { role });
      expect((await show(`/users/${target.id}?include[]=calendar_urls`, other.key)).status).toBe(403);
    }
  });

  test('a read-only account key never sees calendar URLs', async () => {
    const account = await h.createAccount();
    const readOnly = await h.accountKey(account, { readOnly: true });
    const target = await h.createUser(account);
    await ownUrls(target);

    const plain = await show(`/users/${target.id}`, readOnly);
    expect(plain.status).toBe(200);
    expect(plain.body.user).not.toHaveProperty('http_cal_url');
    const denied = await show(`/users/${target.id}?include[]=calendar_urls`, readOnly);
    expect(denied.status).toBe(403);
    expect(denied.body.error.code).toBe(2010);
    const owner = await show(`/users/${account.ownerId}?include[]=calendar_urls`, readOnly);
    expect(owner.status).toBe(403);

    const list = await h.rest('get', '/users', { key: readOnly });
    expect(list.status).toBe(200);
    expect(JSON.stringify(list.body)).not.toContain('cal_url');

    expectForbiddenFields(await h.graphql(USER_URLS, { id: target.id }, readOnly));
    const listed = await h.graphql('{ users(first: 10) { nodes { id httpCalUrl } } }', {}, readOnly);
    expect(listed.errors?.every((error: any) => error.extensions.code === 'FORBIDDEN')).toBe(true);
    expect(JSON.stringify(listed.data)).not.toContain('/private/');
  });

  test('the index never carries calendar URLs and refuses include[]=calendar_urls', async () => {
    const account = await h.createAccount();
    const admin = await h.createUser(account, { role: 'admin' });
    const user = await h.createUser(account);
    await ownUrls(user);

    for (const key of [admin.key, user.key, account.key]) {
      const list = await h.rest('get', '/users?limit=100', { key });
      expect(list.status).toBe(200);
      expect(list.body.users.length).toBeGreaterThanOrEqual(3);
      for (const listed of list.body.users) {
        expect(listed).not.toHaveProperty('http_cal_url');
        expect(listed).not.toHaveProperty('web_cal_url');
      }
    }
    const refused = await h.rest('get', '/users?include[]=calendar_urls', { key: admin.key });
    expect(refused.status).toBe(400);
    expect(refused.body.error.code).toBe(2001);
    expect(refused.body.error.errors[0]).toContain('calendar_urls');
  });

  test('another account\'s user is 404 with or without include[]', async () => {
    const mine = await h.createAccount();
    const theirs = await h.createAccount();
    const admin = await h.createUser(mine, { role: 'admin' });
    const stranger = await h.createUser(theirs);
    expect((await show(`/users/${stranger.id}?include[]=calendar_urls`, admin.key)).status).toBe(404);
    expect((await h.rest('post', `/users/${stranger.id}/regenerate_private_url_key`, { key: mine.key })).status).toBe(404);
  });
});

describe('who may regenerate a calendar key', () => {
  test('the user themself (any role) and can_update_user holders may; others may not', async () => {
    const account = await h.createAccount();
    const target = await h.createUser(account);
    const admin = await h.createUser(account, { role: 'admin' });
    const peer = await h.createUser(account, { role: 'user' });
    const readOnlyKey = await h.accountKey(account, { readOnly: true });
    const readOnlyUser = await h.createUser(account, { role: 'read_only_user' });
    const path = `/users/${target.id}/regenerate_private_url_key`;

    const byPeer = await h.rest('post', path, { key: peer.key });
    expect(byPeer.status).toBe(403);
    expect(byPeer.body.error.code).toBe(2010);
    expect((await h.rest('post', path, { key: readOnlyKey })).status).toBe(403);
    expect((await h.rest('post', path, { key: readOnlyUser.key })).status).toBe(403);
    const graphqlByPeer = await h.graphql('mutation($input: RegenerateUserCalendarKeyInput!) { regenerateUserCalendarKey(input: $input) { privateUrlKey } }', { input: { userId: target.id } }, peer.key);
    expect(graphqlByPeer.errors?.[0].extensions.code).toBe('FORBIDDEN');
    expect(graphqlByPeer.data).toBeNull();

    const urlsBefore = await ownUrls(target);
    for (const key of [admin.key, account.key, target.key]) {
      const response = await h.rest('post', path, { key });
      expect(response.status).toBe(200);
      expect(response.body.user.http_cal_url).toBe(`https://feeds.test.example/private/${response.body.private_url_key}/feed`);
    }
    expect((await ownUrls(target)).http_cal_url).not.toBe(urlsBefore.http_cal_url);

    // A read-only role may still rotate its own key (the user themself may, whatever the role).
    const own = await h.rest('post', `/users/${readOnlyUser.id}/regenerate_private_url_key`, { key: readOnlyUser.key });
    expect(own.status).toBe(200);
    expect((await ownUrls(readOnlyUser)).http_cal_url).toBe(own.body.user.http_cal_url);
  });

  test('unknown, malformed and deleted user ids answer 404 to a manager', async () => {
    const account = await h.createAccount();
    const gone = await h.createUser(account);
    expect((await h.rest('delete', `/users/${gone.id}`, { key: account.key })).status).toBe(204);
    for (const id of ['PZZZZZZ', 'nonsense', gone.id]) {
      const response = await h.rest('post', `/users/${id}/regenerate_private_url_key`, { key: account.key });
      expect(response.status).toBe(404);
      expect(response.body.error.code).toBe(2100);
    }
  });

  test('unauthenticated calls are 401', async () => {
    const account = await h.createAccount();
    const user = await h.createUser(account);
    expect((await h.rest('post', `/users/${user.id}/regenerate_private_url_key`)).status).toBe(401);
    expect((await h.rest('post', `/users/${user.id}/regenerate_private_url_key`, { key: { token: 'not-a-real-key-1234' } })).status).toBe(401);
  });
});

describe('another user\'s URLs are answered only once their showing is recorded', () => {
  test('when the view_calendar_urls record cannot be written, neither face answers the URLs', async () => {
    const account = await h.createAccount();
    const admin = await h.createUser(account, { role: 'admin' });
    const target = await h.createUser(account);
    const theirs = await ownUrls(target);
    const refused = jest.spyOn(CalendarFeedService.prototype, 'recordUrlsShown').mockRejectedValue(new Error('the audit trail refused the record'));
    try {
      const rest = await show(`/users/${target.id}?include[]=calendar_urls`, admin.key);
      expect(rest.status).toBe(500);
      const graphql = await h.graphql(USER_URLS, { id: target.id }, admin.key);
      expect(graphql.status).toBe(500);
      expect(graphql.data).toBeUndefined();
      expect(graphql.errors).toEqual([expect.objectContaining({ extensions: expect.objectContaining({ code: 'INTERNAL_SERVER_ERROR' }) })]);
      for (const answer of [JSON.stringify(rest.body), JSON.stringify(graphql)]) expect(answer).not.toContain(theirs.http_cal_url.split('/private/')[1]!.split('/')[0]);
      expect(refused).toHaveBeenCalledTimes(2);
    } finally {
      refused.mockRestore();
    }
    // One's own URLs need no record: answered as before.
    expect((await ownUrls(target)).http_cal_url).toBe(theirs.http_cal_url);
  });
});
