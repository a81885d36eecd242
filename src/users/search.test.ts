import { afterAll, beforeAll, expect, test } from '@jest/globals';
import { startHarness, type Harness, type TestAccount } from '../../test/support/harness.js';
import { SEARCH_WALK_ROWS } from './user.reads.js';

/**
 * Search keeps exact case-insensitive substring semantics and the (name, id) order on both of its
 * paths (the bounded walk and the indexed search), for terms of every length.
 */
let h: Harness;
let account: TestAccount;
const people: { id: string; name: string; email: string }[] = [];

beforeAll(async () => {
  h = await startHarness();
  account = await h.createAccount('Search');
  // More users than the walk reads, with rare matches only late in the name order.
  for (let n = 0; n < SEARCH_WALK_ROWS + 150; n++) {
    const late = n >= SEARCH_WALK_ROWS + 100;
    const name = late ? `Zed Quasar_${n % 7} ${n}` : `Anna Berg ${String(n).padStart(4, '0')}`;
    const email = late ? `zq${n}@Example.org` : `anna.berg.${n}@example.com`;
    people.push({ id: `PS${String(n).padStart(5, '0')}`, name, email });
  }
  people.push({ id: 'PSX0001', name: 'Back\\slash 100% Sure', email: 'percent@example.com' });
  people.push({ id: 'PSX0002', name: 'Endsx', email: 'yes@example.com' });
  const em = h.database.em();
  await em.execute(
    `insert into users (id, account_id, name, email, time_zone, color, role)
     select id, ?, name, email, 'Etc/UTC', 'green', 'user' from unnest(array[?]::text[], array[?]::text[], array[?]::text[]) as t(id, name, email)`,
    [account.id, people.map((p) => p.id), people.map((p) => p.name), people.map((p) => p.email)],
  );
  // The account's owner is a user too.
  people.push(...(await em.execute<{ id: string; name: string; email: string }[]>('select id, name, email from users where id = ?', [account.ownerId])));
});
afterAll(async () => {
  await h.close();
});

async function search(term: string, limit = 100): Promise<string[]> {
  const response = await h.rest('get', `/users?query=${encodeURIComponent(term)}&limit=${limit}&total=true`, { key: account.key });
  expect({ status: response.status, body: response.status === 200 ? null : response.body }).toEqual({ status: 200, body: null });
  const ids = response.body.users.map((user: { id: string }) => user.id);
  expect(response.body.total).toBe(expected(term).length);
  return ids;
}

function expected(term: string): string[] {
  const needle = term.trim().toLowerCase();
  return people
    .filter((p) => p.name.toLowerCase().includes(needle) || p.email.toLowerCase().includes(needle))
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : a.id < b.id ? -1 : 1))
    .map((p) => p.id);
}

test.each([
  ['a dense term (the walk fills the page)', 'anna'],
  ['a term matching late in the name order', 'quasar_3'],
  ['one character, rare', 'Q'],
  ['one character, common', 'b'],
  ['two characters', 'zQ'],
  ['two characters, common', 'an'],
  ['LIKE wildcards taken literally', '0%'],
  ['an underscore taken literally', 'r_1'],
  ['a backslash', 'k\\s'],
  ['a single backslash', '\\'],
])('%s: exactly the substring matches, in name then id order', async (_label, term) => {
  const want = expected(term);
  expect(await search(term)).toEqual(want.slice(0, 100));
});

test('no match spans the end of the name and the start of the email', async () => {
  expect(expected('xy')).toEqual([]);
  expect(await search('xy')).toEqual([]);
  expect(await search('sx y')).toEqual([]);
});

test('pages of a sparse term neither repeat nor skip', async () => {
  const want = expected('zed');
  const seen: string[] = [];
  for (let offset = 0; offset < want.length; offset += 20) {
    const response = await h.rest('get', `/users?query=zed&limit=20&offset=${offset}`, { key: account.key });
    seen.push(...response.body.users.map((user: { id: string }) => user.id));
  }
  expect(seen).toEqual(want);
});
