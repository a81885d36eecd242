import ical from 'node-ical';
import supertest from 'supertest';
import { startHarness, type Harness, type TestUser } from '../../test/support/harness.js';
import { assertMatchesSchema, USER_SCHEMA } from '../../test/support/openapi.js';
import { seedCommand } from '../cli/commands/seed.command.js';
import { addShiftCommand } from '../cli/commands/calendar-feed.commands.js';
import { InvalidInputError } from '../errors/domain-errors.js';
import { OnCallShiftsService } from './oncall-shifts.service.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h.close();
});

const HOUR = 3600 * 1000;

/** The feed is fetched like a calendar app does: no Authorization, no v2 Accept header. */
function fetchFeed(url: string, headers: Record<string, string> = {}) {
  const parsed = new URL(url);
  expect(parsed.origin).toBe('https://feeds.test.example');
  return supertest(h.app).get(parsed.pathname).set(headers);
}

async function ownUrls(user: TestUser): Promise<{ http: string; webcal: string }> {
  const response = await h.rest('get', '/users/me', { key: user.key });
  expect(response.status).toBe(200);
  return { http: response.body.user.http_cal_url, webcal: response.body.user.web_cal_url };
}

async function addShift(userId: string, startsInHours: number, hours: number, summary: string) {
  // Whole seconds, as iCal date-times carry them.
  const start = new Date(Math.floor((Date.now() + startsInHours * HOUR) / 1000) * 1000);
  return new OnCallShiftsService(h.database.em()).add({ userId, startsAt: start, endsAt: new Date(start.getTime() + hours * HOUR), summary });
}

function events(text: string) {
  return Object.values(ical.sync.parseICS(text))
    .filter((component) => component.type === 'VEVENT')
    .map((event) => {
      const vevent = event as ical.VEvent;
      return { uid: vevent.uid, summary: String(vevent.summary), start: new Date(vevent.start).toISOString(), end: new Date(vevent.end!).toISOString() };
    })
    .sort((a, b) => a.start.localeCompare(b.start));
}

describe('calendar feed key rotation', () => {
  test('rotation: the feed works, regenerating kills the old URL in the very next request, the new one works', async () => {
    const account = await h.createAccount();
    const alice = await h.createUser(account, { name: 'Alice Rotation' });
    const first = await addShift(alice.id, 24, 12, 'Primary on-call');
    const second = await addShift(alice.id, 72, 8, 'Database escalation');

    const before = await ownUrls(alice);
    expect(before.http).toMatch(/^https:\/\/feeds\.test\.example\/private\/[A-Za-z0-9_-]{27}\/feed$/);
    expect(before.webcal).toBe(before.http.replace(/^https:/, 'webcal:'));

    const feed = await fetchFeed(before.http);
    expect(feed.status).toBe(200);
    expect(feed.headers['content-type']).toBe('text/calendar; charset=utf-8');
    const parsed = ical.sync.parseICS(feed.text);
    const calendar = Object.values(parsed).find((component) => component.type === 'VCALENDAR') as ical.VCalendar;
    expect(calendar['WR-CALNAME']).toBe('Alice Rotation (on-call shifts)');
    expect(feed.text).toMatch(/^BEGIN:VCALENDAR\r\nVERSION:2\.0\r\nPRODID:/);
    expect(events(feed.text)).toEqual([
      { uid: `${first.id}@feeds.test.example`, summary: 'On call: Primary on-call', start: first.startsAt.toISOString(), end: first.endsAt.toISOString() },
      { uid: `${second.id}@feeds.test.example`, summary: 'On call: Database escalation', start: second.startsAt.toISOString(), end: second.endsAt.toISOString() },
    ]);

    const regenerated = await h.rest('post', `/users/${alice.id}/regenerate_private_url_key`, { key: alice.key });
    expect(regenerated.status).toBe(200);
    const newKey: string = regenerated.body.private_url_key;
    expect(newKey).toMatch(/^[A-Za-z0-9_-]{27}$/);
    expect(before.http).not.toContain(newKey);
    assertMatchesSchema(USER_SCHEMA, regenerated.body.user, 'regenerate: user');
    expect(regenerated.body.user).toMatchObject({ id: alice.id, type: 'user', name: 'Alice Rotation' });
    expect(regenerated.body.user.http_cal_url).toBe(`https://feeds.test.example/private/${newKey}/feed`);
    expect(regenerated.body.user.web_cal_url).toBe(`webcal://feeds.test.example/private/${newKey}/feed`);

    // The very next request with the old URL is refused; the new one serves the same calendar.
    expect((await fetchFeed(before.http)).status).toBe(404);
    const renewed = await fetchFeed(regenerated.body.user.http_cal_url);
    expect(renewed.status).toBe(200);
    expect(events(renewed.text)).toEqual(events(feed.text));
    expect((await ownUrls(alice)).http).toBe(regenerated.body.user.http_cal_url);

    // Feed requests are logged with the key redacted: neither key reaches the logs.
    const oldKey = /\/private\/([^/]+)\/feed$/.exec(before.http)![1]!;
    const logs = h.logs.join('\n');
    expect(logs).toContain('/private/[redacted]/feed');
    for (const key of [oldKey, newKey]) expect(logs.includes(key)).toBe(false);
  });

  test('GraphQL regenerateUserCalendarKey returns the user and the key; the old key stops working', async () => {
    const account = await h.createAccount();
    const bob = await h.createUser(account);
    const before = await ownUrls(bob);
    const result = await h.graphql(
      'mutation($input: RegenerateUserCalendarKeyInput!) { regenerateUserCalendarKey(input: $input) { privateUrlKey user { id httpCalUrl webCalUrl } } }',
      { input: { userId: bob.id } },
      bob.key,
    );
    expect(result.errors).toBeUndefined();
    const payload = result.data.regenerateUserCalendarKey;
    expect(payload.user).toEqual({
      id: bob.id,
      httpCalUrl: `https://feeds.test.example/private/${payload.privateUrlKey}/feed`,
      webCalUrl: `webcal://feeds.test.example/private/${payload.privateUrlKey}/feed`,
    });
    expect((await fetchFeed(before.http)).status).toBe(404);
    expect((await fetchFeed(payload.user.httpCalUrl)).status).toBe(200);
  });
});

describe('calendar feed URLs that open nothing', () => {
  test('unknown, old, malformed and deleted-user keys all answer the same 404', async () => {
    const account = await h.createAccount();
    const carol = await h.createUser(account);
    const dave = await h.createUser(account);
    const carolOld = await ownUrls(carol);
    expect((await h.rest('post', `/users/${carol.id}/regenerate_private_url_key`, { key: carol.key })).status).toBe(200);
    const daveUrls = await ownUrls(dave);
    expect((await fetchFeed(daveUrls.http)).status).toBe(200);

    expect((await h.rest('delete', `/users/${dave.id}`, { key: account.key })).status).toBe(204);
    const [row] = await h.database.em().execute('select count(*)::int as n from calendar_feed_keys where user_id = ?', [dave.id]);
    expect(row.n).toBe(0);

    const misses = await Promise.all([
      fetchFeed('https://feeds.test.example/private/AAAAAAAAAAAAAAAAAAAAAAAAAAA/feed'),
      fetchFeed(carolOld.http),
      fetchFeed(daveUrls.http),
      fetchFeed('https://feeds.test.example/private/not-a-key/feed'),
    ]);
    // Same status, same headers (but the per-request ones), same bytes: nothing tells the cases apart.
    // What differs from one request to the next whatever the key: the date, the request id, the budget left.
    const comparable = (headers: Record<string, string>) => Object.fromEntries(Object.entries(headers).filter(([name]) => !['date', 'x-request-id', 'ratelimit-remaining'].includes(name)));
    for (const miss of misses) {
      expect(miss.status).toBe(404);
      expect(miss.headers['content-type']).toBe('application/json; charset=utf-8');
      expect(comparable(miss.headers)).toEqual(comparable(misses[0]!.headers));
      expect(miss.text).toBe(misses[0]!.text);
    }
    expect(JSON.parse(misses[0]!.text)).toEqual({ error: { message: 'Not Found', code: 2100, errors: ['No calendar feed at this URL.'] } });
  });

  test('a digest planted in the database without the server secret does not open a feed', async () => {
    const account = await h.createAccount();
    const erin = await h.createUser(account);
    await ownUrls(erin);
    const planted = 'PlantedKeyPlantedKeyPlanted';
    const { createHash } = await import('node:crypto');
    await h.database.em().execute('update calendar_feed_keys set key_digest = ? where user_id = ?', [createHash('sha256').update(planted).digest('hex'), erin.id]);
    expect((await fetchFeed(`https://feeds.test.example/private/${planted}/feed`)).status).toBe(404);
  });
});

describe('calendar feed caching and contents', () => {
  test('ETag and Last-Modified: If-None-Match and If-Modified-Since answer 304 until the shifts change', async () => {
    const account = await h.createAccount();
    const frank = await h.createUser(account);
    await addShift(frank.id, 5, 4, 'Primary on-call');
    const { http } = await ownUrls(frank);

    const first = await fetchFeed(http);
    expect(first.status).toBe(200);
    const etag = first.headers.etag as string;
    const lastModified = first.headers['last-modified'] as string;
    expect(etag).toMatch(/^"[A-Za-z0-9_-]+"$/);
    expect(Number.isNaN(Date.parse(lastModified))).toBe(false);
    expect(first.headers['cache-control']).toBe('private, no-cache');

    const again = await fetchFeed(http);
    expect(again.headers.etag).toBe(etag);

    const notModified = await fetchFeed(http, { 'If-None-Match': etag });
    expect(notModified.status).toBe(304);
    expect(notModified.text).toBe('');
    expect((await fetchFeed(http, { 'If-Modified-Since': lastModified })).status).toBe(304);
    expect((await fetchFeed(http, { 'If-None-Match': '"something-else"' })).status).toBe(200);

    await addShift(frank.id, 30, 4, 'Secondary on-call');
    const changed = await fetchFeed(http, { 'If-None-Match': etag });
    expect(changed.status).toBe(200);
    expect(changed.headers.etag).not.toBe(etag);
    expect(events(changed.text).map((event) => event.summary)).toEqual(['On call: Primary on-call', 'On call: Secondary on-call']);
  });

  test('the feed lists only the owner\'s shifts, from 90 days back on', async () => {
    const account = await h.createAccount();
    const gina = await h.createUser(account, { name: 'Gina' });
    const other = await h.createUser(account);
    await addShift(gina.id, -24 * 100, 8, 'Long ago');
    await addShift(gina.id, -24 * 10, 8, 'Last week');
    await addShift(other.id, 10, 8, 'Someone else');
    const feed = await fetchFeed((await ownUrls(gina)).http);
    expect(events(feed.text).map((event) => event.summary)).toEqual(['On call: Last week']);
  });
});

describe('calendar feed shifts added from the CLI', () => {
  test('CLI: seed creates shifts for the seeded users; shifts add adds one and validates it', async () => {
    const account = await h.createAccount();
    const io = { info: () => {} };
    const seeded = await seedCommand.run(h.database, { account: account.id, users: '3' }, io);
    expect(seeded).toMatchObject({ users_created: 3, shifts_created: 6 });
    const rows = await h.database.em().execute<{ user_id: string; n: number }[]>(
      'select s.user_id, count(*)::int as n from oncall_shifts s join users u on u.id = s.user_id where u.account_id = ? group by s.user_id',
      [account.id],
    );
    expect(rows.map((row) => row.n)).toEqual([2, 2, 2]);

    const user = await h.createUser(account);
    const added = await addShiftCommand.run(h.database, { user: user.id, start: '2030-01-01T09:00:00Z', end: '2030-01-01T17:00:00Z', summary: 'Weekend' }, io);
    expect(added).toMatchObject({ user_id: user.id, start: '2030-01-01T09:00:00.000Z', end: '2030-01-01T17:00:00.000Z', summary: 'Weekend' });
    const feed = await fetchFeed((await ownUrls(user)).http);
    expect(events(feed.text)).toEqual([{ uid: `${String(added.id)}@feeds.test.example`, summary: 'On call: Weekend', start: '2030-01-01T09:00:00.000Z', end: '2030-01-01T17:00:00.000Z' }]);

    await expect(addShiftCommand.run(h.database, { user: user.id, start: '2030-01-02T09:00:00Z', end: '2030-01-01T09:00:00Z', summary: 'Backwards' }, io)).rejects.toBeInstanceOf(InvalidInputError);
  });
});
