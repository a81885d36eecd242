import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import type pg from 'pg';
import { startHarness, type Harness, type TestAccount } from './support/harness.js';
import { testPooler } from './support/database.js';
import { allEntities } from '../src/app/features.js';
import { openDatabase } from '../src/db/database.js';
import { numberedPlaceholders } from '../src/db/bound-statements.js';
import { readPath } from '../src/db/read-path.js';

/**
 * The shape of what the read path sends (src/db/read-path.ts), which the benchmark's comparison with
 * a hand-written prepared-statement server relies on: values as bind parameters, never in the SQL
 * text; the hot statements (credential look-up, show, first page, counts) as named prepared
 * statements on PostgreSQL, prepared on every connection that runs them; none named behind a
 * transaction pooler. Seen at the `pg` client (every query it is given) and in the server's own
 * `pg_prepared_statements` of the session that ran them.
 */
interface Sent {
  client: pg.PoolClient;
  text: string;
  name?: string;
  values?: unknown[];
}

let h: Harness;
let account: TestAccount;
let sent: Sent[] = [];
const pooler = testPooler();
const QUOTED_NAME = `O'Brien "$1" ? \\ -- ); drop table users; --`;
let quotedId: string;

/** Records every query given to a client of `pool` (MikroORM's own and the read path's alike). */
function record(pool: pg.Pool): void {
  const patched = new WeakSet<object>();
  pool.on('acquire', (client) => {
    if (patched.has(client)) return;
    patched.add(client);
    const query = client.query.bind(client) as (...args: unknown[]) => unknown;
    (client as { query: unknown }).query = (config: unknown, values?: unknown, callback?: unknown) => {
      const given: { text: string; name?: string; values?: unknown } = typeof config === 'string' ? { text: config, values } : (config as { text: string; name?: string; values?: unknown[] });
      sent.push({ client, text: given.text, name: given.name, values: (given.values ?? (Array.isArray(values) ? values : undefined)) as unknown[] | undefined });
      return query(config, values, callback);
    };
  });
}

async function ok(path: string): Promise<void> {
  const response = await h.rest('get', path, { key: account.key });
  expect({ path, status: response.status }).toEqual({ path, status: 200 });
}

async function sentDuring(run: () => Promise<unknown>): Promise<Sent[]> {
  sent = [];
  await run();
  return sent;
}

const credentialLookUp = (statement: Sent) => /from api_keys k/.test(statement.text);
const show = (statement: Sent) => /from users where id = \$1 and account_id = \$2 and deleted_at is null/.test(statement.text);

beforeAll(async () => {
  h = await startHarness();
  account = await h.createAccount('Statements');
  const created = await h.rest('post', '/users', { key: account.key, body: { user: { type: 'user', name: QUOTED_NAME, email: 'obrien@example.com' } } });
  expect(created.status).toBe(201);
  quotedId = created.body.user.id;
  if (h.database.kind === 'postgresql') record((await h.database.orm.em.getConnection().getNativeClient()) as pg.Pool);
});
afterAll(async () => {
  await h.close();
});

describe('values are data, whatever they contain', () => {
  test('a name with quotes, $1, ? and a comment comes back intact', async () => {
    const response = await h.rest('get', `/users/${quotedId}`, { key: account.key });
    expect(response.status).toBe(200);
    expect(response.body.user.name).toBe(QUOTED_NAME);
  });

  test('search terms that look like SQL match as exact substrings', async () => {
    const search = async (term: string) => {
      const response = await h.rest('get', `/users?query=${encodeURIComponent(term)}&total=true`, { key: account.key });
      expect(response.status).toBe(200);
      return { ids: response.body.users.map((user: { id: string }) => user.id), total: response.body.total };
    };
    expect(await search(`"$1" ? \\ --`)).toEqual({ ids: [quotedId], total: 1 });
    expect(await search(`' or ''='`)).toEqual({ ids: [], total: 0 });
    expect(await search(`$1`)).toEqual({ ids: [quotedId], total: 1 });
    expect(await search(`x' or true --`)).toEqual({ ids: [], total: 0 });
  });

  test('`?` inside quoted literals and identifiers is text; `\\?` is a question mark; `??` is refused', () => {
    expect(numberedPlaceholders(`select '?' as "a?", ? as b where c = ? and d \\? 'k'`)).toEqual({ text: `select '?' as "a?", $1 as b where c = $2 and d ? 'k'`, parameters: 2 });
    expect(numberedPlaceholders(`select 'it''s ?', ?`)).toEqual({ text: `select 'it''s ?', $1`, parameters: 1 });
    expect(() => numberedPlaceholders('select ?? from users')).toThrow(/identifier placeholder/);
  });
});

(process.env.DATABASE_URL ? describe : describe.skip)('PostgreSQL: inside a write, values are bound too', () => {
  test('PUT /users: the email check and the one UPDATE carry the patches and ids as parameters, unnamed; the names come back intact', async () => {
    const ids: string[] = [];
    for (const email of ['first-bound@example.com', 'second-bound@example.com']) {
      const created = await h.rest('post', '/users', { key: account.key, body: { user: { type: 'user', name: 'Before', email } } });
      expect(created.status).toBe(201);
      ids.push(created.body.user.id);
    }
    const names = { [ids[0]!]: `${QUOTED_NAME} (bulk)`, [ids[1]!]: `it's ?, $2 and \\? -- (bulk)` };
    const users = Object.entries(names).map(([id, name]) => ({ id, type: 'user', name, email: `${id.toLowerCase()}-bound@example.com` }));
    let response: Awaited<ReturnType<Harness['rest']>> | undefined;
    const statements = await sentDuring(async () => {
      response = await h.rest('put', '/users', { key: account.key, body: { users } });
    });
    expect(response!.status).toBe(200);
    expect(Object.fromEntries(response!.body.users.map((user: { id: string; name: string }) => [user.id, user.name]))).toEqual(names);
    const update = statements.find((statement) => /^update users set /.test(statement.text));
    expect(update?.text).toMatch(/from jsonb_array_elements\(\$1::jsonb\)/);
    expect(update?.text).toMatch(/users\.id = any\(\$2\)/);
    expect(update?.name).toBeUndefined();
    expect(update?.values?.[0]).toContain('(bulk)');
    const holders = statements.find((statement) => /lower\(email\) = any\(\$2\)/.test(statement.text));
    expect(holders?.values?.[1]).toEqual(expect.arrayContaining(users.map((user) => user.email)));
    for (const statement of [update!, holders!]) {
      for (const value of [...Object.values(names), ...users.map((user) => user.email)]) expect(statement.text).not.toContain(value);
    }
  });
});

const direct = pooler === 'none' && Boolean(process.env.DATABASE_URL);
const pooled = pooler !== 'none';

(direct ? describe : describe.skip)('PostgreSQL, direct: hot statements are named prepared statements', () => {
  test('GET /users/:id: the credential look-up and the show, named, values bound; the session holds them', async () => {
    const statements = await sentDuring(() => ok(`/users/${quotedId}`));
    const lookUp = statements.find(credentialLookUp);
    const shown = statements.find(show);
    expect(lookUp?.name).toMatch(/^aag_[0-9a-f]{24}$/);
    expect(shown?.name).toMatch(/^aag_[0-9a-f]{24}$/);
    expect(lookUp!.text).toMatch(/k\.token_digest = \$1/);
    expect(lookUp!.values).toHaveLength(1);
    expect(shown!.values).toEqual([quotedId, account.id]);
    for (const statement of statements) expect(statement.text).not.toContain(quotedId);
    // The server's view of the session that ran the show.
    const held = await shown!.client.query<{ name: string; statement: string }>('select name, statement from pg_prepared_statements');
    expect(held.rows).toEqual(expect.arrayContaining([{ name: shown!.name, statement: shown!.text }, { name: lookUp!.name, statement: lookUp!.text }]));
  });

  test('the same text has the same name on every connection, and each connection prepares it for itself', async () => {
    const statements = await sentDuring(() => Promise.all(Array.from({ length: 12 }, () => ok(`/users/${account.ownerId}`))));
    const shows = statements.filter(show);
    expect(shows).toHaveLength(12);
    expect(new Set(shows.map((statement) => statement.name)).size).toBe(1);
    const connections = new Set(shows.map((statement) => statement.client));
    expect(connections.size).toBeGreaterThan(1);
    for (const client of connections) {
      const { rows } = await client.query<{ n: string }>('select count(*) as n from pg_prepared_statements where name = $1', [shows[0]!.name]);
      expect(Number(rows[0]!.n)).toBe(1);
    }
  });

  test('first page and count named; a search term\'s statements unnamed (their plan depends on the term), its value bound', async () => {
    const listing = await sentDuring(() => ok('/users?limit=25&total=true'));
    const page = listing.find((statement) => /order by name, id limit \$2 offset \$3/.test(statement.text));
    const count = listing.find((statement) => /^select count\(\*\) as n from users where account_id = \$1 and deleted_at is null$/.test(statement.text));
    expect(page?.name).toMatch(/^aag_/);
    expect(count?.name).toMatch(/^aag_/);
    const term = 'zz-not-in-any-name';
    const searching = await sentDuring(() => ok(`/users?query=${term}`));
    const reads = searching.filter((statement) => /from users/.test(statement.text) && !credentialLookUp(statement));
    expect(reads.length).toBeGreaterThan(0);
    for (const statement of reads) {
      expect(statement.name).toBeUndefined();
      expect(statement.text).not.toContain(term);
      expect(statement.values).toContain(term);
    }
  });

  test('DATABASE_PREPARED_STATEMENTS=off: the same read, unnamed, values still bound, even where another database of the process names it', async () => {
    const sql = 'select name from users where id = ?';
    const named = await sentDuring(() => readPath(h.database.em()).rows(sql, [quotedId], { prepared: true }));
    expect(named.find((statement) => statement.text === 'select name from users where id = $1')?.name).toMatch(/^aag_/);
    const database = await openDatabase({ databaseUrl: h.database.url, dataDir: undefined, entities: allEntities(), poolMax: 1, preparedStatements: 'off' });
    try {
      record((await database.orm.em.getConnection().getNativeClient()) as pg.Pool);
      const statements = await sentDuring(() => readPath(database.em()).rows(sql, [quotedId], { prepared: true }));
      expect(statements).toEqual([expect.objectContaining({ text: 'select name from users where id = $1', values: [quotedId] })]);
      expect(statements[0]!.name).toBeUndefined();
    } finally {
      await database.close();
    }
  });
});

(pooled ? describe : describe.skip)('behind a transaction pooler: no named statement is sent', () => {
  test('GET /users/:id and a listing: every statement unnamed, the credential look-up and the show with bound values', async () => {
    const statements = await sentDuring(async () => {
      await ok(`/users/${quotedId}`);
      await ok('/users?limit=25&total=true');
    });
    expect(statements.filter(credentialLookUp)).toHaveLength(2);
    expect(statements.find(show)?.values).toEqual([quotedId, account.id]);
    expect(statements.filter((statement) => statement.name !== undefined)).toEqual([]);
  });
});

test('DATABASE_PREPARED_STATEMENTS=on behind a transaction pooler is refused before anything opens', async () => {
  await expect(
    openDatabase({ databaseUrl: 'postgres://app@127.0.0.1:1/none', pooler: 'pgbouncer-transaction', preparedStatements: 'on', dataDir: undefined, entities: allEntities() }),
  ).rejects.toThrow(/DATABASE_PREPARED_STATEMENTS=on cannot work with DATABASE_POOLER=pgbouncer-transaction/);
});
