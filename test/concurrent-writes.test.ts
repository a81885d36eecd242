import { issueDelegation } from '../src/oauth-delegations/oauth-delegation.service.js';
import type { Harness } from './support/harness.js';
import { postgresOnly, TransactionFigures, useHarnessReportingTo, userFixtures } from './support/concurrent-writes.js';
import { subscriptionFixtures } from './support/subscriptions.js';

// Writes racing each other through the API, from many concurrent clients. Deadlocks, serialization
// failures and lock timeouts, and the transaction helper that retries them: concurrent-writes.retries.test.ts.

/** A small seeded generator (mulberry32), so every run shuffles the same way. */
function seeded(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function shuffled<T>(items: readonly T[], random: () => number): T[] {
  const copy = [...items];
  for (let i = copy.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [copy[i], copy[j]] = [copy[j]!, copy[i]!];
  }
  return copy;
}

/** Runs the tasks with at most `clients` in flight at once, like that many concurrent clients. */
async function withClients<T>(clients: number, tasks: (() => Promise<T>)[]): Promise<T[]> {
  const results: T[] = new Array(tasks.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (next < tasks.length) {
        const index = next++;
        results[index] = await tasks[index]!();
      }
    }),
  );
  return results;
}

function tally(values: readonly (number | string)[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const value of values) counts[value] = (counts[value] ?? 0) + 1;
  return counts;
}

let h: Harness;
const figures = new TransactionFigures();
useHarnessReportingTo(figures, (started) => (h = started));
const fixtures = subscriptionFixtures(() => h);
const { createUsers, jobTitles } = userFixtures(() => h);

test('overlapping bulk updates in shuffled orders from many concurrent clients: no 5xx, and every row carries one single request\'s value', async () => {
  const USERS = 40;
  const CLIENTS = 8;
  const REQUESTS = 64;
  const random = seeded(14);
  const account = await h.createAccount();
  const users = await createUsers(account, USERS);
  const ids = users.map((user) => user.id);

  const tags = Array.from({ length: REQUESTS }, (_, index) => `storm-${index}`);
  const responses = await withClients(
    CLIENTS,
    tags.map((tag) => {
      const order = shuffled(ids, random);
      return () => h.rest('put', '/users', { key: account.key, body: { users: order.map((id) => ({ id, type: 'user', job_title: tag })) } });
    }),
  );

  const statuses = responses.map((response) => response.status);
  console.log(
    `bulk-update storm: ${REQUESTS} requests x ${USERS} users from ${CLIENTS} concurrent clients; statuses ${JSON.stringify(tally(statuses))}; ` +
      `retries observed ${figures.retries.length} ${JSON.stringify(tally(figures.retries.map((event) => event.sqlState)))}; gave up ${figures.givenUp.length}`,
  );
  expect(statuses.filter((status) => status >= 500)).toEqual([]);
  expect(statuses.every((status) => status === 200)).toBe(true);
  // Each answer shows its own request applied to every user it named...
  responses.forEach((response, index) => {
    expect(new Set(response.body.users.map((user: { job_title: string }) => user.job_title))).toEqual(new Set([tags[index]]));
  });
  // ...and after the storm the whole set carries the value of one single request.
  const finalTitles = new Set((await jobTitles(ids)).values());
  expect(finalTitles.size).toBe(1);
  expect(tags).toContain([...finalTitles][0]);
  expect(figures.givenUp).toEqual([]);
}, 90_000);

test('deletes racing bulk updates, subscription changes, sign-outs and key regenerations: 2xx or documented 4xx, and nothing of a deleted user survives', async () => {
  const USERS = 24;
  const GROUP = 4;
  const random = seeded(1414);
  const account = await h.createAccount();
  const users = await createUsers(account, USERS);
  const ids = users.map((user) => user.id);
  await fixtures.register(account, 'incident', 'PRACE01');
  await fixtures.register(account, 'business_service', 'PRACE02');
  await fixtures.register(account, 'incident', 'PRACE03');
  for (const [index, user] of users.entries()) {
    await h.database.transactions.run(h.database.em(), (tx) => issueDelegation(tx, { userId: user.id, type: 'web', scopes: 'users.read' }));
    await h.database.transactions.run(h.database.em(), (tx) => issueDelegation(tx, { userId: user.id, type: 'mobile', scopes: 'users.read' }));
    const subscribed = await h.rest('post', `/users/${user.id}/notification_subscriptions`, {
      key: account.key,
      body: { subscribables: [{ subscribable_type: 'incident', subscribable_id: 'PRACE01' }, { subscribable_type: 'business_service', subscribable_id: 'PRACE02' }] },
    });
    expect(subscribed.status).toBe(200);
    // Half the users have a calendar key already; the others get one at first read, racing their deletion.
    if (index % 2 === 0) expect((await h.rest('post', `/users/${user.id}/regenerate_private_url_key`, { key: account.key })).status).toBe(200);
  }

  const doomed = new Set(shuffled(ids, random).slice(0, USERS / 2));
  const groups = Array.from({ length: USERS / GROUP }, (_, index) => ids.slice(index * GROUP, (index + 1) * GROUP));
  type Op = { kind: string; allowed: number[]; tag?: string; group?: number; run: () => Promise<{ status: number }> };
  const ops: Op[] = [];
  for (const id of ids) {
    if (doomed.has(id)) ops.push({ kind: 'delete', allowed: [204], run: () => h.rest('delete', `/users/${id}`, { key: account.key }) });
    const items = shuffled(
      [
        { subscribable_type: 'incident', subscribable_id: 'PRACE01' },
        { subscribable_type: 'business_service', subscribable_id: 'PRACE02' },
        { subscribable_type: 'incident', subscribable_id: 'PRACE03' },
      ],
      random,
    );
    ops.push({ kind: 'subscribe', allowed: [200, 404], run: () => h.rest('post', `/users/${id}/notification_subscriptions`, { key: account.key, body: { subscribables: items } }) });
    ops.push({ kind: 'unsubscribe', allowed: [200, 404], run: () => h.rest('post', `/users/${id}/notification_subscriptions/unsubscribe`, { key: account.key, body: { subscribables: items.slice(0, 2) } }) });
    ops.push({ kind: 'regenerate', allowed: [200, 404], run: () => h.rest('post', `/users/${id}/regenerate_private_url_key`, { key: account.key }) });
    ops.push({ kind: 'sign-out', allowed: [200, 400], run: () => h.rest('delete', `/oauth_delegations?user_id=${id}&type=mobile,web`, { key: account.key }) });
    ops.push({ kind: 'show with calendar', allowed: [200, 404], run: () => h.rest('get', `/users/${id}?include[]=calendar_urls`, { key: account.key }) });
  }
  groups.forEach((group, index) => {
    for (const round of [0, 1]) {
      const tag = `race-${index}-${round}`;
      const order = shuffled(group, random);
      ops.push({ kind: 'bulk update', allowed: [200, 400], tag, group: index, run: () => h.rest('put', '/users', { key: account.key, body: { users: order.map((id) => ({ id, type: 'user', job_title: tag })) } }) });
    }
  });

  const plan = shuffled(ops, random);
  const responses = await withClients(8, plan.map((op) => op.run));
  const statuses = responses.map((response) => response.status);
  const byKind: Record<string, Record<string, number>> = {};
  plan.forEach((op, index) => {
    byKind[op.kind] ??= {};
    byKind[op.kind]![statuses[index]!] = (byKind[op.kind]![statuses[index]!] ?? 0) + 1;
  });
  console.log(`delete race: ${plan.length} requests from 8 concurrent clients, ${doomed.size} users deleted; statuses by kind ${JSON.stringify(byKind)}; retries observed ${figures.retries.length}; gave up ${figures.givenUp.length}`);

  expect(statuses.filter((status) => status >= 500)).toEqual([]);
  const unexpected = plan.flatMap((op, index) => (op.allowed.includes(statuses[index]!) ? [] : [`${op.kind} -> ${statuses[index]}`]));
  expect(unexpected).toEqual([]);

  // Nothing of a deleted user remains usable.
  const em = h.database.em();
  const doomedIds = [...doomed];
  const leftovers = async (sql: string) => (await em.execute<{ user_id: string }[]>(sql, [doomedIds])).map((row) => row.user_id);
  expect(await leftovers('select id as user_id from users where id in (?) and deleted_at is null')).toEqual([]);
  expect(await leftovers('select user_id from api_keys where user_id in (?) and revoked_at is null')).toEqual([]);
  expect(await leftovers("select user_id from oauth_delegations where user_id in (?) and status = 'issued'")).toEqual([]);
  expect(await leftovers('select user_id from calendar_feed_keys where user_id in (?)')).toEqual([]);
  expect(await leftovers('select user_id from notification_subscriptions where user_id in (?)')).toEqual([]);
  // Survivors keep their keys and are still whole.
  const survivors = ids.filter((id) => !doomed.has(id));
  expect(await em.execute('select id from users where id in (?) and deleted_at is null', [survivors])).toHaveLength(survivors.length);

  // Bulk updates stayed all-or-nothing: each group carries one single value, that of a request that succeeded (or none).
  const titles = await jobTitles(ids);
  groups.forEach((group, index) => {
    const succeeded = plan.filter((op, at) => op.group === index && statuses[at] === 200).map((op) => op.tag!);
    const values = new Set(group.map((id) => titles.get(id) ?? null));
    expect(values.size).toBe(1);
    expect([...succeeded, ...(succeeded.length ? [] : [null])]).toContain([...values][0]);
  });
}, 90_000);

/** Waits (bounded) until some session of this test's database is blocked on a lock. */
async function untilSomeoneWaitsForALock(): Promise<void> {
  for (let poll = 0; poll < 100; poll++) {
    const [row] = await h.database.em().execute<{ waiting: number | string }[]>(
      "select count(*) as waiting from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'",
    );
    if (Number(row!.waiting) > 0) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error('no session ever waited for a lock');
}

postgresOnly('a calendar key created at first read never outlives a deletion in progress', async () => {
  const account = await h.createAccount();
  const user = await h.createUser(account);
  const deletion = h.database.em();
  await deletion.begin();
  let reading: Promise<{ status: number }> | undefined;
  try {
    // What the deleting transaction does to the user's row and key, held open.
    await deletion.execute('update users set deleted_at = now() where id = ?', [user.id]);
    await deletion.execute('delete from calendar_feed_keys where user_id = ?', [user.id]);
    reading = h.rest('get', `/users/${user.id}?include[]=calendar_urls`, { key: account.key });
    await untilSomeoneWaitsForALock();
    await deletion.commit();
  } catch (error) {
    await deletion.rollback();
    throw error;
  }
  expect((await reading).status).toBe(404);
  expect(await h.database.em().execute('select user_id from calendar_feed_keys where user_id = ?', [user.id])).toEqual([]);
});
