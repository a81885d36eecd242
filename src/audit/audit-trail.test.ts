import { describe, expect, test } from '@jest/globals';
import pg from 'pg';
import { auditReads, field, useAuditTrailHarness, type RestRecord } from '../../test/support/audit-trail.js';
import type { Credential, Harness } from '../../test/support/harness.js';
import { recordChange } from '../db/change-journal.js';
import { issueDelegation } from '../oauth-delegations/oauth-delegation.service.js';
import { setPassword } from '../oauth-server/passwords.js';
import { createApiKeyCommand } from '../cli/commands/accounts.commands.js';
import { SubscribablesService } from '../notification-subscriptions/subscribables.service.js';

// The trail as the faces write and read it, and the scan of this file's records for secrets. The chain, its roots index, verify, purge and export: audit-trail.chain.test.ts.

let h: Harness;
useAuditTrailHarness((started) => (h = started));
const { records, recordsAbout, count } = auditReads(() => h);
/** Every secret the tests see: no audit record may contain any of them. */
const secrets = new Set<string>();

const tokenOf = (credential: Credential) => (credential && 'token' in credential ? credential.token : credential && 'bearer' in credential ? credential.bearer : '');
const keep = (credential: Credential) => {
  secrets.add(tokenOf(credential));
  return credential;
};

describe('every change leaves exactly one record, with its actor, method and fields: users, on both faces', () => {
  test('REST: create, update (each field before and after, role), update multiple, delete', async () => {
    const account = await h.createAccount();
    keep(account.key);
    const keyId = (await h.database.em().execute<{ id: string }[]>('select id from api_keys where account_id = ? and user_id is null', [account.id]))[0]!.id;
    const before = await count(account.id);

    const created = await h.rest('post', '/users', { key: account.key, body: { user: { type: 'user', name: 'Ada Audit', email: 'ada-audit@example.com' } }, headers: { 'X-Request-Id': 'req-create-1' } });
    expect(created.status).toBe(201);
    const id = created.body.user.id as string;
    const [create, ...others] = await recordsAbout(account, id);
    expect(others).toHaveLength(0);
    expect(create).toMatchObject({
      action: 'create',
      root_resource: { id, type: 'user_reference' },
      actors: [{ id: keyId, type: 'api_key_reference' }],
      method: { type: 'api_token', truncated_token: tokenOf(account.key).slice(-4), description: 'POST /users' },
      // The server's own request id, the one it sent back: a client's X-Request-Id is believed only from a trusted proxy.
      execution_context: { request_id: created.headers['x-request-id'] },
    });
    expect(created.headers['x-request-id']).not.toBe('req-create-1');
    expect(field(create!, 'email')).toMatchObject({ value: 'ada-audit@example.com' });

    const updated = await h.rest('put', `/users/${id}`, { key: account.key, body: { user: { name: 'Ada Renamed', role: 'admin', email: 'ada-audit@example.com' } } });
    expect(updated.status).toBe(200);
    const [update] = await recordsAbout(account, id);
    expect(update!.action).toBe('update');
    // Only what changed: the email was sent unchanged.
    expect(update!.details.fields).toEqual([
      { name: 'name', value: 'Ada Renamed', before_value: 'Ada Audit' },
      { name: 'role', value: 'admin', before_value: 'user' },
    ]);

    const other = await h.createUser(account, { name: 'Bulk Two' });
    const bulk = await h.rest('put', '/users', { key: account.key, body: { users: [{ id, type: 'user', job_title: 'Auditor' }, { id: other.id, type: 'user', name: 'Bulk Two' }] } });
    expect(bulk.status).toBe(200);
    const [bulkRecord] = await recordsAbout(account, id);
    expect(bulkRecord!.details.fields).toEqual([{ name: 'job_title', value: 'Auditor', before_value: null }]);
    // The second element changed nothing: no record.
    expect(await recordsAbout(account, other.id)).toHaveLength(0);

    const deleted = await h.rest('delete', `/users/${id}`, { key: account.key });
    expect(deleted.status).toBe(204);
    const [deletion] = await recordsAbout(account, id);
    expect(deletion).toMatchObject({ action: 'delete', root_resource: { id } });
    expect(field(deletion!, 'name')).toMatchObject({ before_value: 'Ada Renamed' });
    // Create, update, update multiple, delete; and the fixture's key for the second user.
    expect(await count(account.id)).toBe(before + 5);
  });

  test('GraphQL: a user key of an admin, a role change; a calendar key regenerated', async () => {
    const account = await h.createAccount();
    const admin = await h.createUser(account, { role: 'admin' });
    keep(admin.key);
    const target = await h.createUser(account);
    const result = await h.graphql('mutation($input: UpdateUserInput!) { updateUser(input: $input) { user { id } } }', { input: { id: target.id, role: 'OBSERVER' } }, admin.key);
    expect(result.errors).toBeUndefined();
    const [update, ...rest] = await recordsAbout(account, target.id);
    expect(rest).toHaveLength(0);
    expect(update).toMatchObject({
      action: 'update',
      actors: [{ id: admin.id, type: 'user_reference' }, { type: 'api_key_reference' }],
      method: { type: 'api_token', truncated_token: tokenOf(admin.key).slice(-4), description: 'POST /graphql' },
    });
    expect(update!.details.fields).toEqual([{ name: 'role', value: 'observer', before_value: 'user' }]);

    const regenerated = await h.rest('post', `/users/${target.id}/regenerate_private_url_key`, { key: admin.key });
    expect(regenerated.status).toBe(200);
    for (const url of Object.values(regenerated.body.user ?? regenerated.body).flat()) if (typeof url === 'string' && url.includes('/private/')) secrets.add(url.split('/private/')[1]!.split('/')[0]!);
    const [regeneration] = await recordsAbout(account, target.id);
    expect(regeneration).toMatchObject({ action: 'regenerate', details: { resource: { type: 'calendar_feed_key_reference' } } });
    expect(await recordsAbout(account, target.id)).toHaveLength(2);
  });
});

describe('every change leaves exactly one record, with its actor, method and fields: delegations, passwords, subscriptions and keys', () => {
  test('delegations granted and a bulk sign-out: one record per user naming the delegations', async () => {
    const account = await h.createAccount();
    const user = await h.createUser(account);
    const first = await h.database.transactions.onBehalfOf({ face: 'cli', description: 'accessctl delegations create' })
      .run(h.database.em(), (tx) => issueDelegation(tx, { userId: user.id, type: 'web', scopes: 'users.read' }));
    const second = await h.database.transactions.run(h.database.em(), (tx) => issueDelegation(tx, { userId: user.id, type: 'mobile', scopes: 'users.read' }));
    secrets.add(first.accessToken).add(second.accessToken);
    const grants = await recordsAbout(account, user.id);
    expect(grants.map((record) => record.action)).toEqual(['create', 'create']);
    expect(grants[1]!.method).toMatchObject({ type: 'other', description: 'accessctl delegations create' });

    const signOut = await h.rest('delete', `/oauth_delegations?user_id=${user.id}&type=mobile,web`, { key: account.key });
    expect(signOut.status).toBe(200);
    const [revoke, ...older] = await recordsAbout(account, user.id);
    expect(older).toHaveLength(2);
    expect(revoke!.action).toBe('revoke');
    expect(revoke!.details.references).toHaveLength(1);
    expect(revoke!.details.references[0]!.removed!.map((item) => item.id).sort()).toEqual([first.delegation.id, second.delegation.id].sort());
    // Nothing left to revoke: nothing changed, nothing recorded.
    await h.rest('delete', `/oauth_delegations?user_id=${user.id}&type=mobile,web`, { key: account.key });
    expect(await recordsAbout(account, user.id)).toHaveLength(3);
  });

  test('a bearer token is method oauth; a password set names the field, never the value', async () => {
    const account = await h.createAccount();
    const user = await h.createUser(account);
    const issued = await h.database.transactions.run(h.database.em(), (tx) => issueDelegation(tx, { userId: user.id, type: 'web', scopes: 'users.read users.write' }));
    secrets.add(issued.accessToken);
    const renamed = await h.rest('put', `/users/${user.id}`, { key: { bearer: issued.accessToken }, body: { user: { name: 'Self Renamed' } } });
    expect(renamed.status).toBe(200);
    const [update] = await recordsAbout(account, user.id);
    expect(update!.method).toMatchObject({ type: 'oauth', truncated_token: issued.accessToken.slice(-4) });
    expect(update!.actors[0]).toMatchObject({ id: user.id, type: 'user_reference' });

    const password = 'a long enough secret password 123';
    secrets.add(password);
    await setPassword(h.database.em(), h.database.transactions, user.id, password);
    // An operator's password reset also revokes the user's sign-in sessions and grants, so a credential taken before it stops working: both are recorded, in that transaction.
    const afterReset = await recordsAbout(account, user.id);
    const set = afterReset.find((record) => record.action === 'set_password');
    expect(set).toMatchObject({ action: 'set_password', details: { fields: [{ name: 'password', value: null, before_value: null }] } });
    expect(afterReset.filter((record) => record.action === 'revoke')).toHaveLength(1);
  });
  test('GraphQL create and delete, subscriptions on both faces, a key made by accessctl', async () => {
    const account = await h.createAccount();
    const created = await h.graphql('mutation { createUser(input: { name: "Graph Made", email: "graph-made@example.com" }) { user { id } } }', {}, account.key);
    expect(created.errors).toBeUndefined();
    const id = created.data.createUser.user.id as string;
    expect((await recordsAbout(account, id)).map((record) => [record.action, record.method.description])).toEqual([['create', 'POST /graphql']]);

    await h.database.transactions.run(h.database.em(), (tx) => new SubscribablesService(tx).add({ accountId: account.id, type: 'incident', id: 'PAUDIT1', name: 'Audited incident' }));
    const subscribables = [{ subscribable_type: 'incident', subscribable_id: 'PAUDIT1' }];
    expect((await h.rest('post', `/users/${id}/notification_subscriptions`, { key: account.key, body: { subscribables } })).status).toBeLessThan(300);
    // Already subscribed: nothing changes, nothing is recorded.
    await h.rest('post', `/users/${id}/notification_subscriptions`, { key: account.key, body: { subscribables } });
    const removed = await h.graphql('mutation($id: ID!) { removeNotificationSubscriptions(input: { userId: $id, subscribables: [{ subscribableType: INCIDENT, subscribableId: "PAUDIT1" }] }) { deletedCount } }', { id }, account.key);
    expect(removed.data.removeNotificationSubscriptions.deletedCount).toBe(1);
    const [removal, subscription] = await recordsAbout(account, id);
    expect(subscription).toMatchObject({ action: 'create', details: { resource: { type: 'notification_subscription_reference' } } });
    expect(removal).toMatchObject({ action: 'delete', method: { description: 'POST /graphql' }, details: { resource: { id: subscription!.details.resource.id } } });

    const issued = await createApiKeyCommand.run({ ...h.database, transactions: h.database.transactions.onBehalfOf({ face: 'cli', description: 'accessctl api-keys create' }) }, { account: account.id, user: id, description: 'CI key' }, { info: () => {} });
    secrets.add(String(issued.api_key));
    const [keyRecord] = (await h.rest('get', `/users/${id}/audit/records?limit=1`, { key: account.key })).body.records as RestRecord[];
    expect(keyRecord).toMatchObject({ action: 'create', actors: [], method: { type: 'other', description: 'accessctl api-keys create', truncated_token: null }, details: { resource: { id: issued.id, type: 'api_key_reference' } } });

    const deleted = await h.graphql('mutation($id: ID!) { deleteUser(input: { id: $id }) { deletedUserId } }', { id }, account.key);
    expect(deleted.errors).toBeUndefined();
    const [keyRevoked, deletion] = (await h.rest('get', `/users/${id}/audit/records?limit=2`, { key: account.key })).body.records as RestRecord[];
    expect([deletion!.action, keyRevoked!.action, keyRevoked!.details.resource.id]).toEqual(['delete', 'revoke', issued.id]);
  });
});

describe('no record without its change', () => {
  test('bad input leaves none; a retried transaction leaves one; a lock timeout leaves none', async () => {
    const account = await h.createAccount();
    const user = await h.createUser(account);
    const before = await count(account.id);
    const refused = await h.rest('put', '/users', { key: account.key, body: { users: [{ id: user.id, type: 'user', name: 'Fine' }, { id: user.id, type: 'user', email: 'not an email' }] } });
    expect(refused.status).toBe(400);
    expect(await count(account.id)).toBe(before);

    let attempts = 0;
    await h.database.transactions.run(h.database.em(), async (tx) => {
      recordChange(tx, { accountId: account.id, action: 'update', resource: { type: 'user', id: user.id }, userId: user.id, fields: [{ name: 'name', value: `attempt ${attempts}` }] });
      await tx.execute('select 1');
      if (attempts++ === 0) throw Object.assign(new Error('deadlock detected'), { code: '40P01' });
    });
    expect(attempts).toBe(2);
    const [retried] = await recordsAbout(account, user.id);
    expect(await count(account.id)).toBe(before + 1);
    expect(retried!.details.fields[0]!.value).toBe('attempt 1');

    if (!h.database.url) return;
    const holder = new pg.Client({ connectionString: h.database.url });
    await holder.connect();
    try {
      await holder.query('begin');
      await holder.query('select id from users where id = $1 for update', [user.id]);
      const busy = await h.rest('put', `/users/${user.id}`, { key: account.key, body: { user: { name: 'Blocked' } } });
      expect(busy.status).toBe(503);
      await holder.query('rollback');
    } finally {
      await holder.end();
    }
    expect(await count(account.id)).toBe(before + 1);
  });
});

describe('reads: who may read, the window, the filters, tenancy, GraphQL', () => {
  test('who may read, the window, the filters, tenancy', async () => {
    const account = await h.createAccount();
    const plain = await h.createUser(account);
    const other = await h.createUser(account);
    await h.rest('put', `/users/${plain.id}`, { key: account.key, body: { user: { name: 'Read Me' } } });

    expect((await h.rest('get', '/audit/records', { key: plain.key })).status).toBe(403);
    expect((await h.rest('get', `/users/${plain.id}/audit/records`, { key: plain.key })).status).toBe(200);
    expect((await h.rest('get', `/users/${other.id}/audit/records`, { key: plain.key })).status).toBe(403);
    const readOnly = await h.accountKey(account, { readOnly: true });
    expect((await h.rest('get', '/audit/records', { key: readOnly })).status).toBe(403);

    const issued = await h.database.transactions.run(h.database.em(), (tx) => issueDelegation(tx, { userId: account.ownerId, type: 'web', scopes: 'users.read' }));
    secrets.add(issued.accessToken);
    const unscoped = await h.rest('get', '/audit/records', { key: { bearer: issued.accessToken } });
    expect(unscoped.status).toBe(403);
    expect(unscoped.body.error.errors).toEqual(['This OAuth token lacks the required scope: audit_records.read']);

    expect((await h.rest('get', '/audit/records?since=2020-01-01T00:00:00Z&until=2020-03-01T00:00:00Z', { key: account.key })).status).toBe(400);
    expect((await h.rest('get', '/audit/records?since=yesterday', { key: account.key })).status).toBe(400);
    expect((await h.rest('get', '/audit/records?actor_id=P000000', { key: account.key })).status).toBe(400);
    const old = await h.rest('get', '/audit/records?since=2020-01-01T00:00:00Z&until=2020-01-02T00:00:00Z', { key: account.key });
    expect(old.body).toMatchObject({ records: [], more: false, next_cursor: null });

    const all = await records(account);
    expect(all.length).toBeGreaterThanOrEqual(3);
    const updates = await records(account, '&actions[]=update&root_resource_types[]=users&method_type=api_token');
    expect(updates.map((record) => record.root_resource.id)).toEqual([plain.id]);
    expect(await records(account, '&actor_type=user_reference')).toEqual([]);
    // The fixture's writes have no actor; the one change made with the account key names it.
    expect((await records(account, `&actor_type=api_key_reference`)).map((record) => record.root_resource.id)).toEqual([plain.id]);

    // Another account sees its own trail (its bootstrap), never a record of this one.
    const stranger = await h.createAccount();
    const mine = new Set(all.map((record) => record.id));
    const theirs = await records(stranger);
    expect(theirs.length).toBeGreaterThan(0);
    expect(theirs.filter((record) => mine.has(record.id))).toEqual([]);
    expect((await h.rest('get', `/users/${plain.id}/audit/records`, { key: stranger.key })).status).toBe(404);
    const graphql = await h.graphql('{ auditRecords(first: 50) { nodes { id } } }', {}, stranger.key);
    expect(graphql.data.auditRecords.nodes.filter((node: { id: string }) => mine.has(node.id))).toEqual([]);
    expect(graphql.data.auditRecords.nodes).toHaveLength(theirs.length);
  });

  test('GraphQL auditRecords and User.auditRecords', async () => {
    const account = await h.createAccount();
    const user = await h.createUser(account);
    await h.rest('put', `/users/${user.id}`, { key: account.key, body: { user: { job_title: 'Graph' } } });
    const result = await h.graphql(
      `query($id: ID!) {
        auditRecords(filter: { actions: [UPDATE] }, first: 5) { nodes { action rootResource { id: resourceId } details { fields { name value beforeValue } } } }
        user(id: $id) { auditRecords(first: 1) { nodes { action method { type } } pageInfo { hasNextPage } } }
      }`,
      { id: user.id },
      account.key,
    );
    expect(result.errors).toBeUndefined();
    expect(result.data.auditRecords.nodes).toEqual([{ action: 'UPDATE', rootResource: { id: user.id }, details: { fields: [{ name: 'jobTitle', value: 'Graph', beforeValue: null }] } }]);
    // Older: the creation of the user's key by the fixture.
    expect(result.data.user.auditRecords).toEqual({ nodes: [{ action: 'UPDATE', method: { type: 'API_TOKEN' } }], pageInfo: { hasNextPage: true } });
  });
});

describe('reads: closed sets and paging', () => {
  test('closed sets are enums: every value round-trips through GraphQL, a value outside a set is refused on both faces', async () => {
    const account = await h.createAccount();
    const user = await h.createUser(account);
    await h.rest('put', `/users/${user.id}`, { key: account.key, body: { user: { job_title: 'Enum' } } });
    const list = `query($filter: AuditRecordFilter) { auditRecords(filter: $filter, first: 50) { nodes { id action method { type } rootResource { id: resourceId } } } }`;
    const all = await h.graphql(list, {}, account.key);
    expect(all.errors).toBeUndefined();

    // Every value of every set is taken, and a filter naming a whole set is no filter.
    const enumValues = async (name: string) => (await h.graphql(`{ __type(name: "${name}") { enumValues { name description } } }`, {}, account.key)).data.__type.enumValues as Array<{ name: string; description: string }>;
    const sets = { actions: 'AuditAction', rootResourceTypes: 'AuditRootResourceType' } as const;
    for (const [field, name] of Object.entries(sets)) {
      const values = await enumValues(name);
      expect(values.length).toBeGreaterThan(5);
      for (const value of values) expect(value).toEqual({ name: expect.stringMatching(/^[A-Z][A-Z_]*$/), description: expect.stringMatching(/\w/) });
      const everything = await h.graphql(list, { filter: { [field]: values.map((value) => value.name) } }, account.key);
      expect(everything.errors).toBeUndefined();
      expect(everything.data.auditRecords.nodes).toEqual(all.data.auditRecords.nodes);
    }
    for (const name of ['AuditMethodType', 'AuditActorType']) {
      for (const value of await enumValues(name)) {
        expect(value.description).toMatch(/\w/);
        const field = name === 'AuditMethodType' ? { methodType: value.name } : { actorType: value.name };
        expect((await h.graphql(list, { filter: field }, account.key)).errors).toBeUndefined();
      }
    }
    // The values read back are the ones a filter takes.
    const update = all.data.auditRecords.nodes.find((node: { action: string; rootResource: { id: string } }) => node.action === 'UPDATE' && node.rootResource.id === user.id);
    expect(update).toMatchObject({ method: { type: 'API_TOKEN' } });
    const filtered = await h.graphql(list, { filter: { actions: ['UPDATE'], methodType: 'API_TOKEN', actorType: 'API_KEY_REFERENCE', rootResourceTypes: ['USERS'] } }, account.key);
    expect(filtered.data.auditRecords.nodes.map((node: { id: string }) => node.id)).toEqual([update.id]);

    // Outside the set: refused, naming the set, never an empty page (as a variable and as a literal).
    for (const filter of [{ actions: ['updat'] }, { actions: ['update'] }, { methodType: 'token' }, { actorType: 'user' }, { rootResourceTypes: ['widgets'] }]) {
      const refused = await h.graphql(list, { filter }, account.key);
      expect(refused.data).toBeUndefined();
      expect(refused.errors![0].extensions.code).toBe('BAD_USER_INPUT');
      expect(refused.errors![0].message).toMatch(/Audit(Action|MethodType|ActorType|RootResourceType) takes [A-Z_]+(, [A-Z_]+)+\.$/);
    }
    const literal = await h.graphql('{ auditRecords(filter: { actions: [updat] }) { nodes { id } } }', {}, account.key);
    expect(literal.data).toBeUndefined();
    expect(literal.errors![0].message).toContain('AuditAction takes CREATE, UPDATE, DELETE, REVOKE,');

    // REST keeps the reference's strings and refuses others with its envelope.
    expect((await records(account, '&actions[]=update&method_type=api_token&actor_type=api_key_reference&root_resource_types[]=users')).map((record) => [record.id, record.action, record.method.type])).toEqual([[update.id, 'update', 'api_token']]);
    for (const query of ['actions[]=updat', 'actions[]=UPDATE', 'root_resource_types[]=widgets', 'method_type=API_TOKEN']) {
      const response = await h.rest('get', `/audit/records?${query}`, { key: account.key });
      expect(response.status).toBe(400);
      expect(response.body.error).toMatchObject({ code: 2001 });
    }
  });

  test('paging neither repeats nor skips while records are added', async () => {
    const account = await h.createAccount();
    const user = await h.createUser(account);
    for (let i = 0; i < 12; i++) await h.rest('put', `/users/${user.id}`, { key: account.key, body: { user: { job_title: `Step ${i}` } } });
    const expected = (await records(account)).map((record) => record.id);
    const seen: string[] = [];
    let cursor: string | null = null;
    let step = 100;
    do {
      const response = await h.rest('get', `/audit/records?limit=5${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`, { key: account.key });
      expect(response.status).toBe(200);
      seen.push(...response.body.records.map((record: RestRecord) => record.id));
      cursor = response.body.next_cursor;
      expect(response.body.more).toBe(cursor !== null);
      // Concurrent writers: newer than any cursor, so never on a later page.
      await Promise.all([1, 2].map(() => h.rest('put', `/users/${user.id}`, { key: account.key, body: { user: { job_title: `Step ${step++}` } } })));
    } while (cursor);
    expect(seen).toEqual(expected);
    expect((await h.rest('get', '/audit/records?cursor=forged.cursor', { key: account.key })).status).toBe(400);
  });
});

// Declared last: runs after every test above has written its records.
describe('after the suite', () => {
test('no record holds a key, token, password or feed key (scan of every record)', async () => {
  const rows = await h.database.em().execute<{ text: string }[]>('select body::text || action || coalesce(method_truncated_token, \'\') as text from audit_records');
  expect(rows.length).toBeGreaterThan(20);
  const needles = [...secrets].filter((secret) => secret.length >= 8);
  expect(needles.length).toBeGreaterThan(5);
  const leaks = rows.filter((row) => needles.some((needle) => row.text.includes(needle)));
  expect(leaks).toEqual([]);
});
});
