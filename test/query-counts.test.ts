import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { startHarness, type Harness, type TestAccount } from './support/harness.js';

/**
 * SQL statements per request on the read paths and the bulk user update: every statement the app runs passes
 * through onQuery, so these counts are what PostgreSQL sees.
 */
let h: Harness;
let counting = false;
let statements: string[] = [];
let usageWrites: string[] = [];
let account: TestAccount;
const USERS = 30;
const RECORDS_CREDENTIAL_USE = /^update (api_keys|provisioning_tokens) set last_used_at = /;
const SUBSCRIPTIONS_EACH = 6;

beforeAll(async () => {
  h = await startHarness({
    onQuery: (sql) => {
      // A key's use is written at most once a minute per key, off the request's path (credential-usage.ts): not a statement of the request.
      if (counting && RECORDS_CREDENTIAL_USE.test(sql)) usageWrites.push(sql);
      else if (counting) statements.push(sql);
    },
  });
  account = await h.createAccount();
  const em = h.database.em();
  await em.execute(
    `insert into users (id, account_id, name, email, time_zone, color, role)
     select 'PQC' || lpad(n::text, 4, '0'), ?, 'Counted ' || lpad(n::text, 4, '0'), 'counted' || n || '@example.com', 'Etc/UTC', 'green', 'user'
       from generate_series(1, ?) as n`,
    [account.id, USERS],
  );
  await em.execute(
    `insert into subscribables (id, account_id, type, public_id, name)
     select gen_random_uuid(), ?, 'incident', 'PQCINC' || n, 'Counted incident ' || n from generate_series(1, ?) as n`,
    [account.id, SUBSCRIPTIONS_EACH],
  );
  await em.execute(
    `insert into notification_subscriptions (account_id, user_id, subscribable_id)
     select ?, u.id, s.id from users u cross join subscribables s where u.account_id = ? and u.id like 'PQC%' and s.account_id = ?
      order by u.id, s.public_id`,
    [account.id, account.id, account.id],
  );
});
afterAll(async () => {
  await h.close();
});

async function counted<T>(run: () => Promise<T>): Promise<{ result: T; statements: string[] }> {
  statements = [];
  counting = true;
  try {
    const result = await run();
    return { result, statements: [...statements] };
  } finally {
    counting = false;
  }
}

const readsSubscriptionRows = (sql: string) => /from notification_subscriptions/i.test(sql) && !/count\(\*\)/i.test(sql);
const readsUserRows = (sql: string) => /from users/i.test(sql) && !/count\(\*\)/i.test(sql) && !/api_keys/i.test(sql);

describe('statements per request', () => {
  test('the nested page: credential, page, total and one grouped count for every user\'s subscriptions', async () => {
    const { result, statements: seen } = await counted(() =>
      h.graphql('{ users(first: 25) { totalCount nodes { id name email role notificationSubscriptions(first: 5) { totalCount } } } }', {}, account.key),
    );
    expect(result.errors).toBeUndefined();
    expect(result.data.users.totalCount).toBe(USERS + 1);
    const counts = result.data.users.nodes.filter((node: { id: string }) => node.id.startsWith('PQC')).map((node: any) => node.notificationSubscriptions.totalCount);
    expect(counts).toHaveLength(25);
    expect(new Set(counts)).toEqual(new Set([SUBSCRIPTIONS_EACH]));
    expect(seen).toHaveLength(4);
    expect(seen.filter(readsSubscriptionRows)).toEqual([]);
  });

  test('a key\'s use is written once, off the requests, not once per request', async () => {
    const key = await h.accountKey(account);
    usageWrites = [];
    const counting = await counted(async () => {
      for (let i = 0; i < 5; i++) await h.graphql('{ users(first: 1) { nodes { id } } }', {}, key);
      // The write is not awaited by the request: give it a moment to be sent.
      await new Promise((resolve) => setTimeout(resolve, 100));
    });
    expect(counting.statements).toHaveLength(5 * 2);
    expect(usageWrites).toHaveLength(1);
  });

  test('a connection costs one statement per page, whatever the page sizes', async () => {
    const query = (users: number, each: number) => `{ users(first: ${users}) { nodes { id notificationSubscriptions(first: ${each}) { pageInfo { hasNextPage } nodes { subscribableName } } } } }`;
    const small = await counted(() => h.graphql(query(2, 1), {}, account.key));
    const large = await counted(() => h.graphql(query(25, 5), {}, account.key));
    expect(small.result.errors).toBeUndefined();
    expect(large.result.errors).toBeUndefined();
    const pages = large.result.data.users.nodes.filter((node: { id: string }) => node.id.startsWith('PQC'));
    expect(pages).toHaveLength(25);
    for (const node of pages) {
      expect(node.notificationSubscriptions.nodes.map((n: { subscribableName: string }) => n.subscribableName)).toEqual(
        ['Counted incident 1', 'Counted incident 2', 'Counted incident 3', 'Counted incident 4', 'Counted incident 5'],
      );
      expect(node.notificationSubscriptions.pageInfo.hasNextPage).toBe(true);
    }
    // credential, the users page, the subscriptions of every user on it
    expect(small.statements).toHaveLength(3);
    expect(large.statements).toHaveLength(3);
    expect(large.statements.filter(readsSubscriptionRows)).toHaveLength(1);
  });

  test('asking only for totalCount loads no rows', async () => {
    const { result, statements: seen } = await counted(() => h.graphql('{ users(first: 25) { totalCount } }', {}, account.key));
    expect(result.data).toEqual({ users: { totalCount: USERS + 1 } });
    expect(seen).toHaveLength(2);
    expect(seen.filter(readsUserRows)).toEqual([]);

    const user = await counted(() => h.graphql('query ($id: ID!) { user(id: $id) { id notificationSubscriptions(first: 100) { totalCount } } }', { id: 'PQC0001' }, account.key));
    expect(user.result.data.user.notificationSubscriptions.totalCount).toBe(SUBSCRIPTIONS_EACH);
    expect(user.statements).toHaveLength(3);
    expect(user.statements.filter(readsSubscriptionRows)).toEqual([]);
  });

  test('REST reads: two statements each (the credential and the read); the total only when asked', async () => {
    const show = await counted(() => h.rest('get', '/users/PQC0003', { key: account.key }));
    expect(show.result.status).toBe(200);
    expect(show.result.body.user.name).toBe('Counted 0003');
    expect(show.statements).toHaveLength(2);

    const list = await counted(() => h.rest('get', '/users?limit=25', { key: account.key }));
    expect(list.result.status).toBe(200);
    expect(list.result.body.users).toHaveLength(25);
    expect(list.result.body.more).toBe(true);
    expect(list.statements).toHaveLength(2);

    const withTotal = await counted(() => h.rest('get', '/users?limit=25&total=true', { key: account.key }));
    expect(withTotal.result.body.total).toBe(USERS + 1);
    expect(withTotal.statements).toHaveLength(3);
  });
});

describe('statements per write', () => {
  test('PUT /users: the same statements for 2 elements as for 30, none per element', async () => {
    const ids = Array.from({ length: USERS }, (_, index) => `PQC${String(index + 1).padStart(4, '0')}`);
    const put = (users: Record<string, string>[]) => counted(() => h.rest('put', '/users', { key: account.key, body: { users } }));
    const small = await put(ids.slice(0, 2).map((id) => ({ id, job_title: 'Two' })));
    const large = await put(ids.map((id) => ({ id, job_title: 'Thirty' })));
    const emails = await put(ids.map((id) => ({ id, email: `renamed-${id.toLowerCase()}@example.com` })));
    for (const { result } of [small, large, emails]) expect(result.status).toBe(200);
    // credential, begin, the users locked and read in one statement, one update, the commit hooks'
    // calls in one statement (the live-update notification, then the audit trail's records with its
    // chain head, whatever the number of users), commit; on PostgreSQL lock_timeout comes with the
    // connection, embedded PGlite needs its SET LOCAL in the transaction.
    const shape = (statements: string[]) => statements.map((sql) => sql.split(/\s+/).slice(0, 2).join(' '));
    // One statement setting the transaction's timeouts, unless its connection carries them (PostgreSQL reached directly).
    const lockTimeout = h.database.transactions.policy.lockTimeoutOnConnection ? [] : ["select set_config('lock_timeout',"];
    expect(shape(small.statements)).toEqual(['select k.id,', 'begin', ...lockTimeout, 'select id,', 'update users', 'select pg_notify($1,', 'commit']);
    expect(small.statements.find((sql) => sql.startsWith('select pg_notify('))).toMatch(/^select pg_notify\(\$1, \$2\), audit_append_batch\(\$3, .*\$11\)$/);
    expect(shape(large.statements)).toEqual(shape(small.statements));
    expect(large.statements.filter((sql) => /for no key update/.test(sql))).toHaveLength(1);
    // Changed emails: one more statement for all of them, to find who holds them.
    expect(emails.statements).toHaveLength(small.statements.length + 1);
    expect(emails.statements.filter((sql) => /lower\(email\) = any/.test(sql))).toHaveLength(1);
  });
});
