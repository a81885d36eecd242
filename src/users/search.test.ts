import { afterAll, beforeAll, expect, test } from '@jest/globals';
import { startHarness, type Harness, type TestAccount } from '../../test/support/harness.js';
import { readPath } from '../db/read-path.js';
import { SEARCH_INDEXED_CAP, SEARCH_WALK_BUDGET, firstMatchAt, skipsInitials, useIndexedSearch, walkSkips } from './search/search-planner.js';
import { PREFIX_VISITS, type WalkSkips } from './search/walk-start.js';
import { userListStatements } from './search/user-list-statements.js';

/**
 * Search keeps exact case-insensitive substring semantics and the (name, id) order on each of its
 * paths (the indexed search and the walk of the name order), for terms of every length, wherever
 * in the name order the matches are, and whichever path the planner's estimate picks.
 */
let h: Harness;
let account: TestAccount;
const statements: string[] = [];
type Person = { id: string; name: string; email: string };
const people: Person[] = [];

async function insert(list: Person[]) {
  await h.database.em().execute(
    `insert into users (id, account_id, name, email, time_zone, color, role)
     select id, ?, name, email, 'Etc/UTC', 'green', 'user' from unnest(array[?]::text[], array[?]::text[], array[?]::text[]) as t(id, name, email)`,
    [account.id, list.map((p) => p.id), list.map((p) => p.name), list.map((p) => p.email)],
  );
  people.push(...list);
}

/** Takes out the users a test added (ids starting with `idPrefix`), so the tests after it see the data they expect. */
async function remove(idPrefix: string) {
  await h.database.em().execute('delete from users where account_id = ? and id like ?', [account.id, `${idPrefix}%`]);
  for (let i = people.length - 1; i >= 0; i--) if (people[i]!.id.startsWith(idPrefix)) people.splice(i, 1);
  await h.database.em().execute('analyze users');
}

beforeAll(async () => {
  h = await startHarness({ onQuery: (sql) => statements.push(sql) });
  account = await h.createAccount('Search');
  // The statistics change only when this file runs ANALYZE (the estimate decides the path).
  await h.database.em().execute('alter table users set (autovacuum_enabled = false)');
  // Dense matches first in the name order, rare ones only at its end.
  const list: Person[] = [];
  for (let n = 0; n < 650; n++) {
    const late = n >= 600;
    const name = late ? `Zed Quasar_${n % 7} ${n}` : `Anna Berg ${String(n).padStart(4, '0')}`;
    const email = late ? `zq${n}@Example.org` : `anna.berg.${n}@example.com`;
    list.push({ id: `PS${String(n).padStart(5, '0')}`, name, email });
  }
  list.push({ id: 'PSX0001', name: 'Back\\slash 100% Sure', email: 'percent@example.com' });
  list.push({ id: 'PSX0002', name: 'Endsx', email: 'yes@example.com' });
  list.push({ id: 'PSX0003', name: 'Émile Ärger', email: 'EMILE@Example.com' });
  list.push({ id: 'PSX0004', name: 'under_score', email: 'u@example.com' });
  // Names shorter than a prefix are their own stretch, sorting before longer names they begin.
  list.push({ id: 'PSX0005', name: 'Anna', email: 'anna.short@example.net' });
  list.push({ id: 'PSX0006', name: 'Zed', email: 'zed.short@example.net' });
  await insert(list);
  // The account's owner is a user too.
  people.push(...(await h.database.em().execute<Person[]>('select id, name, email from users where id = ?', [account.ownerId])));
  await h.database.em().execute('analyze users');
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

/** Every match, page after page through GraphQL's cursors (at most 100 pages). */
async function everyPageByCursor(term: string, first: number): Promise<string[]> {
  const query = 'query($after: String, $term: String!, $first: Int!) { users(first: $first, after: $after, query: $term) { nodes { id } pageInfo { hasNextPage endCursor } } }';
  const ids: string[] = [];
  let after: string | null = null;
  for (let pages = 0; pages < 100; pages++) {
    const result: any = await h.graphql(query, { after, term, first }, account.key);
    ids.push(...result.data.users.nodes.map((node: { id: string }) => node.id));
    if (!result.data.users.pageInfo.hasNextPage) break;
    after = result.data.users.pageInfo.endCursor;
  }
  return ids;
}

function expected(term: string): string[] {
  const needle = term.trim().toLowerCase();
  return people
    .filter((p) => p.name.toLowerCase().includes(needle) || p.email.toLowerCase().includes(needle))
    // The C collation: by code point (UTF-8 bytes), where JavaScript's `<` compares UTF-16 units.
    .sort((a, b) => Buffer.compare(Buffer.from(a.name), Buffer.from(b.name)) || (a.id < b.id ? -1 : 1))
    .map((p) => p.id);
}

/** Each path on its own, as the service builds it, whatever the estimate would pick. */
async function eachPath(term: string, first: number, offset = 0) {
  const built = userListStatements(account.id, { query: term, first, offset }, ['id', 'name']);
  const reads = readPath(h.database.em());
  const ids = (rows: { id: string }[]) => rows.map((row) => row.id).slice(0, first);
  // An empty page of the bounded walk comes back as one row of nulls carrying the walked count.
  const bounded = async (skips: WalkSkips) => {
    const statement = built.bounded!(skips);
    return ids((await reads.rows<{ id: string }>(statement.sql, statement.params)).filter((row) => row.id !== null));
  };
  return {
    indexed: ids(await reads.rows<{ id: string }>(built.indexed!(SEARCH_INDEXED_CAP).sql, built.indexed!(SEARCH_INDEXED_CAP).params)),
    walk: ids(await reads.rows<{ id: string }>(built.page.sql, built.page.params)),
    // Every user of this account so far lies within the walk budget, so the bounded walk is exact too,
    // from the page's start and past the initials, the name prefixes or both that hold no match.
    bounded: await bounded({ initials: false, prefixes: false }),
    skippingInitials: await bounded({ initials: true, prefixes: false }),
    skippingPrefixes: await bounded({ initials: false, prefixes: true }),
    skippingBoth: await bounded({ initials: true, prefixes: true }),
  };
}

const terms = [
  ['a dense term, matches first in the name order', 'anna'],
  ['a term matching only late in the name order', 'quasar_3'],
  ['a term matching many, all late', 'zed'],
  ['one character, rare', 'Q'],
  ['one character, common', 'b'],
  ['two characters', 'zQ'],
  ['two characters, common', 'an'],
  ['two characters, none', 'qz'],
  ['LIKE wildcards taken literally', '0%'],
  ['a lone percent sign', '%'],
  ['a lone underscore', '_'],
  ['an underscore taken literally', 'r_1'],
  ['a backslash', 'k\\s'],
  ['a single backslash', '\\'],
  ['letters outside ASCII, other case', 'ärg'],
  ['letters outside ASCII, upper case', 'ÉMI'],
  ['a term in the email only', 'example.org'],
  ['padded with spaces', '  quasar_5 '],
] as const;

test.each(terms)('%s: exactly the substring matches, in name then id order', async (_label, term) => {
  const want = expected(term);
  expect(await search(term)).toEqual(want.slice(0, 100));
});

test.each(terms)('%s: the indexed search, the walk and the bounded walk (from the start, past initials, past name prefixes) give the same pages', async (_label, term) => {
  const want = expected(term);
  for (const [first, offset] of [[25, 0], [10, 30], [100, 0]] as const) {
    const page = want.slice(offset, offset + first);
    expect(await eachPath(term.trim(), first, offset)).toEqual({
      indexed: page, walk: page, bounded: page, skippingInitials: page, skippingPrefixes: page, skippingBoth: page,
    });
  }
});

test('no match spans the end of the name and the start of the email', async () => {
  expect(expected('xy')).toEqual([]);
  expect(await search('xy')).toEqual([]);
  expect(await search('sx y')).toEqual([]);
});

test('a term holding U+0001 matches nothing (no name or email holds it), though the stored search text does', async () => {
  expect(await search('endsx\u0001yes')).toEqual([]);
  expect(await search('\u0001')).toEqual([]);
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

test('a renamed user is found under the new name and not the old one', async () => {
  await h.database.em().execute(`update users set name = 'Renamed Person' where id = 'PSX0002'`);
  people.find((p) => p.id === 'PSX0002')!.name = 'Renamed Person';
  expect(await search('renamed pers')).toEqual(['PSX0002']);
  expect(await search('endsx')).toEqual([]);
});

test('a rare term goes straight to the trigram index; a common one is answered by the bounded walk, its last short page included', async () => {
  statements.length = 0;
  expect(await search('quasar_3', 100)).toEqual(expected('quasar_3'));
  expect(statements.some((sql) => sql.includes('first_entries'))).toBe(false);
  expect(statements.some((sql) => sql.includes('as materialized (select id, name'))).toBe(true);

  // Every user so far is within the budget of the name order: a short page means the walk reached the end.
  const [{ n }] = await h.database.em().execute<{ n: string }[]>('select count(*) as n from users where account_id = ? and deleted_at is null', [account.id]);
  expect(Number(n)).toBeLessThan(SEARCH_WALK_BUDGET);
  const want = expected('anna');
  expect(want.length).toBeGreaterThan(500);
  statements.length = 0;
  expect(await search('anna', 100)).toEqual(want.slice(0, 100));
  const last = await h.rest('get', `/users?query=anna&limit=100&offset=${want.length - 20}`, { key: account.key });
  expect(last.body.users.map((user: { id: string }) => user.id)).toEqual(want.slice(-20));
  expect(statements.some((sql) => sql.includes('first_entries'))).toBe(true);
  expect(statements.some((sql) => sql.includes('as materialized (select id, name'))).toBe(false);
});

const fallbackRan = () => statements.some((sql) => sql.includes('as materialized (select id, name') || sql.includes('where id in\n              (select id from users'));

test('many matches all after more than the walk budget of users with other initials: the walk skips those users, the exact page, and paging gives every match once', async () => {
  // Sorting between "Anna ..." and "Zed ...", none matching "zeta".
  const added: Person[] = [];
  for (let n = 0; n < SEARCH_WALK_BUDGET + 100; n++) added.push({ id: `PF${String(n).padStart(5, '0')}`, name: `Mid Filler ${n}`, email: `mid${n}@example.com` });
  // After everyone: more than the estimate sends straight to the trigram index.
  for (let n = 0; n < 300; n++) added.push({ id: `PL${String(n).padStart(5, '0')}`, name: `Zeta Late ${n % 9} ${n}`, email: `late${n}@example.com` });
  await insert(added);
  await h.database.em().execute('analyze users');
  const want = expected('zeta');
  expect(want.length).toBe(300);
  statements.length = 0;
  expect(await search('zeta', 25)).toEqual(want.slice(0, 25));
  // No user before the initial "Z" matches: the budgeted walk starts there and fills the page alone.
  expect(statements.some((sql) => sql.includes('first_entries') && sql.includes('user_search_probe'))).toBe(true);
  expect(fallbackRan()).toBe(false);

  const byOffset: string[] = [];
  for (let offset = 0; offset < want.length + 40; offset += 40) {
    const response = await h.rest('get', `/users?query=zeta&limit=40&offset=${offset}`, { key: account.key });
    byOffset.push(...response.body.users.map((user: { id: string }) => user.id));
  }
  expect(byOffset).toEqual(want);

  const byCursor = await everyPageByCursor('late 4', 30);
  expect(byCursor).toEqual(expected('late 4'));
  expect(byCursor.length).toBeGreaterThan(30);
});

test('many matches after more than the walk budget of users with the same initial: the walk skips their name prefixes and fills the page', async () => {
  // "Zeb ..." sorts before "Zed ..." and "Zeta ...": the stretch of "Z" holds 2,100 users before the
  // first "zeta", all under the name prefix "Zeb Fi".
  const added: Person[] = [];
  for (let n = 0; n < SEARCH_WALK_BUDGET + 100; n++) added.push({ id: `PB${String(n).padStart(5, '0')}`, name: `Zeb Filler ${n}`, email: `zeb${n}@example.com` });
  await insert(added);
  await h.database.em().execute('analyze users');
  const want = expected('zeta');
  statements.length = 0;
  expect(await search('zeta', 25)).toEqual(want.slice(0, 25));
  expect(statements.some((sql) => sql.includes('first_entries') && sql.includes('user_search_prefix_probe'))).toBe(true);
  expect(fallbackRan()).toBe(false);
});

test('many matches after more than the walk budget of users with the same name prefix: the bounded walk comes back short and the page is still exact', async () => {
  // "Zeta Laa ..." share the prefix "Zeta L" with "Zeta Late ..." and sort before them; none holds "late".
  const added: Person[] = [];
  for (let n = 0; n < SEARCH_WALK_BUDGET + 100; n++) added.push({ id: `PA${String(n).padStart(5, '0')}`, name: `Zeta Laa ${n}`, email: `laa${n}@example.com` });
  await insert(added);
  await h.database.em().execute('analyze users');
  const want = expected('late');
  expect(want.length).toBe(300);
  statements.length = 0;
  expect(await search('late', 25)).toEqual(want.slice(0, 25));
  expect(statements.some((sql) => sql.includes('first_entries'))).toBe(true);
  expect(fallbackRan()).toBe(true);
  await remove('PA');
});

test(`more name prefixes without a match than the walk visits (${PREFIX_VISITS}): the walk starts at the last one visited, and the page is exact`, async () => {
  // Under the initial "X": 80 prefixes of eight users each without "matchy", then 250 users with it.
  const added: Person[] = [];
  for (let n = 0; n < 640; n++) added.push({ id: `PX${String(n).padStart(5, '0')}`, name: `Xyl${String(Math.floor(n / 8)).padStart(3, '0')} filler ${n}`, email: `xyl${n}@example.com` });
  for (let n = 0; n < 250; n++) added.push({ id: `PXM${String(n).padStart(4, '0')}`, name: `Xz matchy ${n}`, email: `xz${n}@example.com` });
  await insert(added);
  await h.database.em().execute('analyze users');
  const want = expected('matchy');
  expect(want.length).toBe(250);
  statements.length = 0;
  expect(await search('matchy', 25)).toEqual(want.slice(0, 25));
  expect(statements.some((sql) => sql.includes('first_entries') && sql.includes('user_search_prefix_probe'))).toBe(true);
  expect(fallbackRan()).toBe(false);
  const paths = await eachPath('matchy', 25);
  expect({ initials: paths.skippingInitials, both: paths.skippingBoth }).toEqual({ initials: want.slice(0, 25), both: want.slice(0, 25) });
  await remove('PX');
});

test('a term whose matches thin out past the walk budget: pages by offset and by cursor, across the bounded walk and the paths after it, neither repeat nor skip', async () => {
  // Initial "Y" (after "Mid ...", before "Zeb ..."): one in ten matches, so the first pages fill
  // within the budget and the later ones (past 2,000 users of the stretch) do not.
  const added: Person[] = [];
  for (let n = 0; n < 3000; n++) {
    const kestrel = n % 10 === 3;
    added.push({ id: `PY${String(n).padStart(5, '0')}`, name: `Yew Tree ${String(n).padStart(4, '0')}`, email: kestrel ? `kestrel${n}@example.com` : `yew${n}@example.com` });
  }
  await insert(added);
  await h.database.em().execute('analyze users');
  const want = expected('kestrel');
  expect(want.length).toBe(300);

  statements.length = 0;
  const byOffset: string[] = [];
  for (let offset = 0; offset < want.length + 40; offset += 40) {
    const response = await h.rest('get', `/users?query=kestrel&limit=40&offset=${offset}`, { key: account.key });
    byOffset.push(...response.body.users.map((user: { id: string }) => user.id));
  }
  expect(byOffset).toEqual(want);
  // Both kinds of page were served: by the bounded walk alone, and after it came back short.
  expect(fallbackRan()).toBe(true);

  expect(await everyPageByCursor('KESTREL', 45)).toEqual(want);
});

test('initials and name prefixes at the edges of Unicode: the stretches after U+D7FF and U+10FFFF are found, and a term past every initial matches nothing', async () => {
  const added: Person[] = [];
  const starts = ['\u{D7FF}dge', '\u{E000}dge', '\u{10FFFF}dge', `Y${'\u{10FFFF}'.repeat(5)}`, '\u{10FFFF}'.repeat(6)];
  const stems = ['d7ff', 'e000', 'maximal', 'yfull', 'sixmax'];
  for (const [i, start] of starts.entries()) {
    for (let n = 0; n < 120; n++) added.push({ id: `PU${i}${String(n).padStart(4, '0')}`, name: `${start} ${n}`, email: `${stems[i]}.edge${n}@example.com` });
  }
  await insert(added);
  await h.database.em().execute('analyze users');
  for (const term of ['e000.edge', 'maximal', 'dge 11', 'yfull', 'sixmax', 'no such edge']) {
    const want = expected(term);
    expect(await search(term, 25)).toEqual(want.slice(0, 25));
    for (const [first, offset] of [[25, 0], [10, 30]] as const) {
      const page = want.slice(offset, offset + first);
      const paths = await eachPath(term, first, offset);
      // From the initial "Y" alone, the walk's budget is spent on the 3,000 "Yew Tree ..." users before
      // the first "Y\u{10FFFF}..."; past their name prefix it starts at the matches.
      const fromInitial = term === 'yfull' ? [] : page;
      expect({ term, initials: paths.skippingInitials, both: paths.skippingBoth }).toEqual({ term, initials: fromInitial, both: page });
    }
  }
  expect(expected('maximal')).toHaveLength(120);
  expect(expected('sixmax')).toHaveLength(120);
});

test('where the first match lies comes from the histogram of search_text, and sends a late cluster to the trigram index', async () => {
  const bounds = await readPath(h.database.em()).histogram('users', 'search_text');
  expect(bounds.length).toBeGreaterThan(100);
  expect([...bounds].sort()).toEqual(bounds);
  // "Anna Berg ..." fill the start of the name order, "Zed Quasar ..." its end.
  expect(firstMatchAt('anna', bounds)).toBe(0);
  expect(firstMatchAt('Quasar', bounds)).toBeGreaterThan(0.8);
  expect(firstMatchAt('no such term', bounds)).toBeNull();
  // The walk skips initials only when the statistics put the first match under a later initial than the page's start.
  expect(skipsInitials('anna', bounds)).toBe(false);
  expect(skipsInitials('Quasar', bounds)).toBe(true);
  expect(skipsInitials('quasar', bounds, 'Zed Quasar_1 601')).toBe(false);
  expect(skipsInitials('no such term', bounds)).toBe(true);
  expect(skipsInitials('an', bounds)).toBe(false);
  // Name prefixes are skipped when the first match lies more than PREFIX_SKIP_DISTANCE users after the walk's start.
  // (The statistics as they are now: the read path may still hold bounds read earlier in this file.)
  const [{ n: users }] = await h.database.em().execute<{ n: string }[]>('select count(*) as n from users where account_id = ? and deleted_at is null', [account.id]);
  const [{ bounds: fresh }] = await h.database.em().execute<{ bounds: string[] }[]>(
    `select histogram_bounds::text::text[] as bounds from pg_stats where schemaname = current_schema() and tablename = 'users' and attname = 'search_text'`,
  );
  expect(walkSkips('an', fresh, Number(users))).toEqual({ initials: false, prefixes: false });
  // "Zed Quasar ..." come after the 2,100 "Zeb Filler ..." of their initial.
  expect(walkSkips('Quasar', fresh, Number(users))).toEqual({ initials: true, prefixes: true });
  expect(walkSkips('Quasar', fresh, 100)).toEqual({ initials: true, prefixes: false });
  // From the start of the first match's initial when initials are skipped (the "Zeb Filler ..." lie
  // between it and the first "zeta"); from the cursor when it is already at the matches.
  expect(walkSkips('zeta', fresh, Number(users), 'Mid Filler 1')).toEqual({ initials: true, prefixes: true });
  expect(walkSkips('zeta', fresh, Number(users), 'Zeta')).toEqual({ initials: false, prefixes: false });
  expect(walkSkips(' q ', fresh, Number(users))).toEqual({ initials: false, prefixes: false });
  expect(walkSkips('no such term', fresh, Number(users))).toEqual({ initials: true, prefixes: true });

  const page = { first: 25 };
  const dense = { matches: 62_000, users: 1_000_000 };
  // Spread over the name order, 62,000 matches fill a page within a few hundred users: walk.
  expect(useIndexedSearch('shafi', { ...dense, firstMatchAt: null }, page)).toBe(false);
  expect(useIndexedSearch('lovelace', { ...dense, firstMatchAt: 0.036 }, page)).toBe(false);
  // All after 94% of the name order: ordering the matches costs less than walking to them.
  expect(useIndexedSearch('shafi', { ...dense, firstMatchAt: 0.94 }, page)).toBe(true);
  // A short term's index recheck is dearer: 180,000 matches of "an" stay on the walk even late.
  expect(useIndexedSearch('an', { matches: 180_000, users: 1_000_000, firstMatchAt: 0.94 }, page)).toBe(false);
});

test('more matches than the statistics knew: the indexed search gives way to the walk, still exact', async () => {
  // Added after ANALYZE, so the planner expects almost none of them.
  const late: Person[] = [];
  for (let n = 0; n <= SEARCH_INDEXED_CAP; n++) late.push({ id: `PW${String(n).padStart(5, '0')}`, name: `Zz Overflow ${n}`, email: `zz${n}@example.net` });
  await insert(late);
  statements.length = 0;
  const want = expected('overflow');
  expect(want.length).toBeGreaterThan(SEARCH_INDEXED_CAP);
  expect(await search('overflow', 25)).toEqual(want.slice(0, 25));
  expect(statements.some((sql) => sql.includes('as materialized'))).toBe(true);
  expect(statements.some((sql) => sql.includes('where id in'))).toBe(true);
});

test('autovacuum visits users after every 1,000 inserted rows, so new users leave no long GIN pending list or unmarked heap pages in front of a search', async () => {
  const [table] = await h.database.em().execute<{ reloptions: string[] | null }[]>(`select reloptions from pg_class where oid = 'users'::regclass`);
  expect(table!.reloptions).toEqual(expect.arrayContaining(['autovacuum_vacuum_insert_threshold=1000', 'autovacuum_vacuum_insert_scale_factor=0']));
});
