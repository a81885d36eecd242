import { startHarness, type Harness, type TestAccount } from '../../test/support/harness.js';
import { User } from './user.entity.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h?.close();
});

async function readUser(id: string) {
  return h.database.em().findOne(User, { id });
}

describe('GET /users', () => {
  let account: TestAccount;
  beforeAll(async () => {
    account = await h.createAccount();
    for (const name of ['Carol Danvers', 'alice Liddell', 'Bob Ross', 'Dave Bowman', 'Eve Moneypenny']) {
      await h.createUser(account, { name, email: `${name.split(' ')[0]!.toLowerCase()}-${account.id}@example.com` });
    }
  });

  test('lists the account\'s users ordered by name then id, with classic pagination fields', async () => {
    const response = await h.rest('get', '/users', { key: account.key });
    expect(response.status).toBe(200);
    const names = response.body.users.map((user: { name: string }) => user.name);
    expect(names).toHaveLength(6);
    expect([...names].sort((a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0))).toEqual(names);
    expect(response.body).toMatchObject({ limit: 25, offset: 0, more: false, total: null });
    const user = response.body.users[0];
    expect(user).toMatchObject({ type: 'user', summary: user.name, self: `https://api.test.example/users/${user.id}`, html_url: `https://app.test.example/users/${user.id}`, teams: [], contact_methods: [], notification_rules: [] });
    expect(user.id).toMatch(/^P[A-Z0-9]{6}$/);
    expect(user).not.toHaveProperty('http_cal_url');
  });

  test('pages neither repeat nor skip rows, and total is given only on request', async () => {
    const seen: string[] = [];
    for (let offset = 0; offset < 6; offset += 2) {
      const page = await h.rest('get', `/users?limit=2&offset=${offset}&total=true`, { key: account.key });
      expect(page.body).toMatchObject({ limit: 2, offset, total: 6, more: offset + 2 < 6 });
      seen.push(...page.body.users.map((user: { id: string }) => user.id));
    }
    expect(new Set(seen).size).toBe(6);
  });

  test('query matches name or email, case-insensitively, as a substring', async () => {
    const byName = await h.rest('get', '/users?query=LIDDELL', { key: account.key });
    expect(byName.body.users.map((user: { name: string }) => user.name)).toEqual(['alice Liddell']);
    const byEmail = await h.rest('get', `/users?query=${encodeURIComponent(`bob-${account.id}`.toUpperCase())}`, { key: account.key });
    expect(byEmail.body.users.map((user: { name: string }) => user.name)).toEqual(['Bob Ross']);
    const wildcard = await h.rest('get', '/users?query=%25', { key: account.key });
    expect(wildcard.body.users).toEqual([]);
  });

  test('limit above 100 is served and echoed as 100; bad bounds are 400', async () => {
    expect((await h.rest('get', '/users?limit=500', { key: account.key })).body.limit).toBe(100);
    for (const query of ['limit=-1', 'limit=abc', 'limit=2.5', 'offset=-3', 'offset=9990&limit=20', 'total=maybe']) {
      const response = await h.rest('get', `/users?${query}`, { key: account.key });
      expect([query, response.status, response.body.error.code]).toEqual([query, 400, 2001]);
    }
  });

  test('include[] accepts the documented values and rejects others, listing the allowed ones', async () => {
    const ok = await h.rest('get', '/users?include[]=teams&include[]=contact_methods', { key: account.key });
    expect(ok.status).toBe(200);
    const bad = await h.rest('get', '/users?include[]=calendar_urls', { key: account.key });
    expect(bad.status).toBe(400);
    expect(bad.body.error.errors[0]).toContain('contact_methods, notification_rules, teams, subdomains');
  });
});

describe('GET /users/{id} and /users/me', () => {
  test('show returns the user; an unknown id or one from another account is 404', async () => {
    const account = await h.createAccount();
    const other = await h.createAccount();
    const user = await h.createUser(account, { name: 'Shown User', role: 'admin' });
    const shown = await h.rest('get', `/users/${user.id}`, { key: account.key });
    expect(shown.status).toBe(200);
    expect(shown.body.user).toMatchObject({ id: user.id, name: 'Shown User', role: 'admin', email: user.email });
    for (const id of ['PZZZZZZ', 'not-an-id']) {
      const missing = await h.rest('get', `/users/${id}`, { key: account.key });
      expect([missing.status, missing.body.error.code]).toEqual([404, 2100]);
    }
    const foreign = await h.rest('get', `/users/${user.id}`, { key: other.key });
    expect([foreign.status, foreign.body.error.code]).toEqual([404, 2100]);
  });

  test('/users/me is the caller with a user key, and 400 with an account key', async () => {
    const account = await h.createAccount();
    const user = await h.createUser(account, { role: 'limited_user' });
    const me = await h.rest('get', '/users/me', { key: user.key });
    expect(me.status).toBe(200);
    expect(me.body.user).toMatchObject({ id: user.id, role: 'limited_user' });
    const asAccount = await h.rest('get', '/users/me', { key: account.key });
    expect([asAccount.status, asAccount.body.error.code]).toEqual([400, 2001]);
  });

  test('tenancy: account B lists none of account A\'s users', async () => {
    const a = await h.createAccount();
    const b = await h.createAccount();
    const userOfA = await h.createUser(a);
    const listed = await h.rest('get', '/users?limit=100', { key: b.key });
    expect(listed.body.users.map((user: { id: string }) => user.id)).not.toContain(userOfA.id);
    expect(listed.body.users).toHaveLength(1);
    const searched = await h.rest('get', `/users?query=${encodeURIComponent(userOfA.email)}`, { key: b.key });
    expect(searched.body.users).toEqual([]);
  });
});

describe('POST /users', () => {
  test('creates a user (201), ignoring read-only and unknown fields', async () => {
    const account = await h.createAccount();
    const response = await h.rest('post', '/users', {
      key: account.key,
      body: {
        user: {
          type: 'user', name: 'Earline Greenholt', email: 'Earline.G@Example.com', time_zone: 'America/Lima', color: 'green', role: 'admin',
          job_title: 'Director of Engineering', description: "I'm the boss",
          id: 'PHACKED', avatar_url: 'https://evil.example/x.png', invitation_sent: true, created_via_sso: true, teams: [{ id: 'PX' }], favourite_food: 'pizza',
          license: { id: 'PTDVERC', type: 'license_reference' },
        },
      },
    });
    expect(response.status).toBe(201);
    const created = response.body.user;
    expect(created).toMatchObject({ name: 'Earline Greenholt', email: 'Earline.G@Example.com', time_zone: 'America/Lima', role: 'admin', job_title: 'Director of Engineering', description: "I'm the boss", invitation_sent: false, created_via_sso: false, teams: [] });
    expect(created.id).not.toBe('PHACKED');
    expect(created.avatar_url).not.toContain('evil');
    expect(created).not.toHaveProperty('favourite_food');
    const stored = await readUser(created.id);
    expect(stored?.role).toBe('admin');
  });

  test('invalid input is 400 naming the field; a missing body is 400/2003', async () => {
    const account = await h.createAccount();
    const cases: [unknown, string][] = [
      [{ user: { name: 'x'.repeat(101), email: 'long@example.com' } }, 'name must be at most 100'],
      [{ user: { name: 'Bad', email: 'not-an-email' } }, 'email'],
      [{ user: { name: 'Short', email: 'a@b.c' } }, 'email'],
      [{ user: { name: 'Zone', email: 'zone@example.com', time_zone: 'Mars/Olympus' } }, 'time_zone'],
      [{ user: { name: 'Role', email: 'role@example.com', role: 'emperor' } }, 'role'],
      [{ user: { name: 'Owner', email: 'owner2@example.com', role: 'owner' } }, 'owner cannot be assigned'],
      [{ user: { name: 'Team', email: 'team@example.com', type: 'team' } }, 'type must be "user"'],
      [{ user: { name: 'Title', email: 'title@example.com', job_title: 'y'.repeat(101) } }, 'job_title'],
    ];
    for (const [body, message] of cases) {
      const response = await h.rest('post', '/users', { key: account.key, body });
      expect([JSON.stringify(body), response.status, response.body.error.code]).toEqual([JSON.stringify(body), 400, 2001]);
      expect(response.body.error.errors.join(' ')).toContain(message);
    }
    for (const [body, message] of [[{ name: 'no wrapper' }, 'user is required'], [{ user: { email: 'a@example.com' } }, 'user.name is required'], [{ user: { name: 'No Email' } }, 'user.email is required']] as const) {
      const missing = await h.rest('post', '/users', { key: account.key, body });
      expect([missing.status, missing.body.error.code, missing.body.error.errors]).toEqual([400, 2003, [message]]);
    }
    const listed = await h.rest('get', '/users?total=true', { key: account.key });
    expect(listed.body.total).toBe(1);
  });

  test('email is unique in the account ignoring case, but free in another account', async () => {
    const account = await h.createAccount();
    const first = await h.rest('post', '/users', { key: account.key, body: { user: { name: 'One', email: 'dup@example.com' } } });
    expect(first.status).toBe(201);
    const second = await h.rest('post', '/users', { key: account.key, body: { user: { name: 'Two', email: 'DUP@example.com' } } });
    expect(second.status).toBe(400);
    expect(second.body.error.errors[0]).toContain('email has already been taken');
    const elsewhere = await h.rest('post', '/users', { key: (await h.createAccount()).key, body: { user: { name: 'Three', email: 'dup@example.com' } } });
    expect(elsewhere.status).toBe(201);
  });
});

describe('PUT /users/{id}', () => {
  test('changes only the given fields', async () => {
    const account = await h.createAccount();
    const user = await h.createUser(account, { name: 'Before' });
    const response = await h.rest('put', `/users/${user.id}`, { key: account.key, body: { user: { type: 'user', job_title: 'SRE', description: null } } });
    expect(response.status).toBe(200);
    expect(response.body.user).toMatchObject({ id: user.id, name: 'Before', job_title: 'SRE', description: null, email: user.email });
    expect((await readUser(user.id))?.jobTitle).toBe('SRE');
  });

  test('a user may edit their own profile but not their role; others need can_update_user', async () => {
    const account = await h.createAccount();
    const self = await h.createUser(account, { role: 'user' });
    const other = await h.createUser(account, { role: 'user' });
    expect((await h.rest('put', `/users/${self.id}`, { key: self.key, body: { user: { name: 'Renamed Me' } } })).status).toBe(200);
    const promote = await h.rest('put', `/users/${self.id}`, { key: self.key, body: { user: { role: 'admin' } } });
    expect([promote.status, promote.body.error.code]).toEqual([403, 2010]);
    const peer = await h.rest('put', `/users/${other.id}`, { key: self.key, body: { user: { name: 'Hijacked' } } });
    expect([peer.status, peer.body.error.code]).toEqual([403, 2010]);
    expect((await readUser(other.id))?.name).not.toBe('Hijacked');
    expect((await readUser(self.id))?.role).toBe('user');
  });

  test('404 for an unknown user, 400 for a bad value, and the owner keeps the owner role', async () => {
    const account = await h.createAccount();
    expect((await h.rest('put', '/users/PNOPE00', { key: account.key, body: { user: { name: 'x' } } })).status).toBe(404);
    const user = await h.createUser(account);
    expect((await h.rest('put', `/users/${user.id}`, { key: account.key, body: { user: { email: 'bad' } } })).status).toBe(400);
    // Only the owner changes the owner; the owner may not step down either.
    expect((await h.rest('put', `/users/${account.ownerId}`, { key: account.key, body: { user: { role: 'user' } } })).status).toBe(403);
    const demote = await h.rest('put', `/users/${account.ownerId}`, { key: await h.ownerKey(account), body: { user: { role: 'user' } } });
    expect(demote.status).toBe(400);
    expect(demote.body.error.errors[0]).toContain('owner');
  });
});

describe('PUT /users (update multiple)', () => {
  test('updates every element and answers with them all', async () => {
    const account = await h.createAccount();
    const a = await h.createUser(account);
    const b = await h.createUser(account);
    const response = await h.rest('put', '/users', { key: account.key, body: { users: [{ id: a.id, type: 'user', job_title: 'A' }, { id: b.id, type: 'user', color: 'red' }] } });
    expect(response.status).toBe(200);
    expect(response.body.users.map((user: { id: string }) => user.id)).toEqual([a.id, b.id]);
    expect((await readUser(a.id))?.jobTitle).toBe('A');
    expect((await readUser(b.id))?.color).toBe('red');
  });

  test('one invalid element in the last position fails the request, names it, and changes nothing', async () => {
    const account = await h.createAccount();
    const users = [await h.createUser(account), await h.createUser(account), await h.createUser(account)];
    const body = { users: [{ id: users[0]!.id, name: 'Changed 0' }, { id: users[1]!.id, name: 'Changed 1' }, { id: users[2]!.id, email: 'not-an-email' }] };
    const response = await h.rest('put', '/users', { key: account.key, body });
    expect([response.status, response.body.error.code]).toEqual([400, 2001]);
    expect(response.body.error.errors.join(' ')).toContain('users[2]');
    for (const user of users) expect((await readUser(user.id))?.name).toBe(user.name);

    const unknown = await h.rest('put', '/users', { key: account.key, body: { users: [{ id: users[0]!.id, name: 'Changed' }, { id: 'PNOPE00', name: 'x' }] } });
    expect(unknown.status).toBe(400);
    expect(unknown.body.error.errors.join(' ')).toContain('users[1]');
    expect((await readUser(users[0]!.id))?.name).toBe(users[0]!.name);
  });

  test('bounds: empty, more than 100, missing ids and a non-array are 400', async () => {
    const account = await h.createAccount();
    const user = await h.createUser(account);
    const tooMany = Array.from({ length: 101 }, () => ({ id: user.id, name: 'x' }));
    for (const body of [{ users: [] }, { users: tooMany }, { users: [{ name: 'no id' }] }, { users: 'nope' }, {}]) {
      expect((await h.rest('put', '/users', { key: account.key, body })).status).toBe(400);
    }
  });
});

describe('DELETE /users/{id}', () => {
  test('204, then show is 404, the index omits it, and its key stops working', async () => {
    const account = await h.createAccount();
    const user = await h.createUser(account);
    const deleted = await h.rest('delete', `/users/${user.id}`, { key: account.key });
    expect(deleted.status).toBe(204);
    expect(deleted.text).toBe('');
    expect((await h.rest('get', `/users/${user.id}`, { key: account.key })).status).toBe(404);
    const listed = await h.rest('get', '/users', { key: account.key });
    expect(listed.body.users.map((u: { id: string }) => u.id)).not.toContain(user.id);
    expect((await h.rest('get', '/users/me', { key: user.key })).status).toBe(401);
    expect((await readUser(user.id))?.deletedAt).toBeInstanceOf(Date);
    expect((await h.rest('delete', `/users/${user.id}`, { key: account.key })).status).toBe(404);
  });

  test('the owner cannot be deleted: 400 with the reason', async () => {
    const account = await h.createAccount();
    const response = await h.rest('delete', `/users/${account.ownerId}`, { key: account.key });
    expect(response.status).toBe(400);
    expect(response.body.error.errors[0]).toContain('owner cannot be deleted');
  });

  test('an email freed by a deleted user can be used again', async () => {
    const account = await h.createAccount();
    const user = await h.createUser(account);
    await h.rest('delete', `/users/${user.id}`, { key: account.key });
    const again = await h.rest('post', '/users', { key: account.key, body: { user: { name: 'Again', email: user.email } } });
    expect(again.status).toBe(201);
    expect(again.body.user.id).not.toBe(user.id);
  });
});

describe('credentials and negotiation', () => {
  test('missing, malformed and unknown credentials are 401/2006', async () => {
    for (const key of [undefined, { header: 'Basic abc' }, { header: 'Token token=' }, { token: 'unknown-key-123456' }, { bearer: 'unknown-token-123456' }]) {
      const response = await h.rest('get', '/users', { key });
      expect([JSON.stringify(key), response.status, response.body.error.code]).toEqual([JSON.stringify(key), 401, 2006]);
    }
  });

  test('a read-only account key reads but cannot write (403/2010)', async () => {
    const account = await h.createAccount();
    const readOnly = await h.accountKey(account, { readOnly: true });
    expect((await h.rest('get', '/users', { key: readOnly })).status).toBe(200);
    const created = await h.rest('post', '/users', { key: readOnly, body: { user: { name: 'x', email: 'ro@example.com' } } });
    expect([created.status, created.body.error.code]).toEqual([403, 2010]);
    const user = await h.createUser(account);
    expect((await h.rest('delete', `/users/${user.id}`, { key: readOnly })).status).toBe(403);
    expect((await readUser(user.id))?.deletedAt).toBeNull();
  });

  test('Accept versioning: v2, JSON and */* are served; another version is 406', async () => {
    const account = await h.createAccount();
    for (const accept of ['application/vnd.pagerduty+json;version=2', 'application/json', '*/*', 'application/json, text/plain, */*']) {
      expect((await h.rest('get', '/users', { key: account.key, headers: { Accept: accept } })).status).toBe(200);
    }
    const v3 = await h.rest('get', '/users', { key: account.key, headers: { Accept: 'application/vnd.pagerduty+json;version=3' } });
    expect([v3.status, v3.body.error.code]).toEqual([406, 2001]);
    expect((await h.rest('get', '/users', { key: account.key, headers: { Accept: 'text/html' } })).status).toBe(406);
  });

  test('bodies must be JSON (415) and well-formed (400/2001)', async () => {
    const account = await h.createAccount();
    const form = await h.rest('post', '/users', { key: account.key, body: 'user[name]=x', headers: { 'Content-Type': 'application/x-www-form-urlencoded' } });
    expect(form.status).toBe(415);
    const broken = await h.rest('post', '/users', { key: account.key, body: '{"user": {"name": ' });
    expect([broken.status, broken.body.error.code]).toEqual([400, 2001]);
  });

  test('an unknown route is a JSON 404', async () => {
    const account = await h.createAccount();
    const response = await h.rest('get', '/no/such/route', { key: account.key });
    expect([response.status, response.body.error.code]).toEqual([404, 2100]);
  });
});
