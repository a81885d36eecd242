import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import pg from 'pg';
import { startHarness, type Credential, type Harness, type TestAccount } from '../../test/support/harness.js';
import { recordChange } from '../db/change-journal.js';
import { issueDelegation } from '../oauth-delegations/oauth-delegation.service.js';
import { setPassword } from '../oauth-server/passwords.js';
import { exportAuditCommand, verifyAuditCommand } from '../cli/commands/audit.commands.js';
import { createApiKeyCommand } from '../cli/commands/accounts.commands.js';
import { SubscribablesService } from '../notification-subscriptions/subscribables.service.js';
import { exportAuditRecords, indexAuditRoots, purgeAuditRecords, verifyAuditChain } from './audit-maintenance.js';

let h: Harness;
/** Every secret the tests see: no audit record may contain any of them. */
const secrets = new Set<string>();

beforeAll(async () => {
  // The harness leaves the roots index to the tests (indexAuditRoots): per-user reads here go through the batches past it, unless a test indexes.
  h = await startHarness({ lockTimeoutMs: 300 });
});
afterAll(async () => {
  await h.close();
});

const tokenOf = (credential: Credential) => (credential && 'token' in credential ? credential.token : credential && 'bearer' in credential ? credential.bearer : '');
const keep = (credential: Credential) => {
  secrets.add(tokenOf(credential));
  return credential;
};

interface RestRecord {
  id: string;
  action: string;
  actors: Array<{ id: string; type: string }>;
  method: { type: string; truncated_token: string | null; description: string | null };
  root_resource: { id: string; type: string };
  execution_context: { request_id: string | null; remote_address: string | null };
  details: { resource: { id: string; type: string }; fields: Array<{ name: string; value: string | null; before_value: string | null }>; references: Array<{ name: string; added: unknown[] | null; removed: Array<{ id: string }> | null }> };
}

async function records(account: TestAccount, query = ''): Promise<RestRecord[]> {
  const response = await h.rest('get', `/audit/records?limit=100${query}`, { key: account.key });
  expect(response.status).toBe(200);
  return response.body.records;
}

/** The records about a user, less the fixture's own write (`h.createUser` creates the user's API key, through the write path). */
async function recordsAbout(account: TestAccount, userId: string): Promise<RestRecord[]> {
  const response = await h.rest('get', `/users/${userId}/audit/records?limit=100`, { key: account.key });
  expect(response.status).toBe(200);
  return (response.body.records as RestRecord[]).filter((record) => !(record.method.type === 'other' && record.details.resource.type === 'api_key_reference'));
}

async function count(accountId: string): Promise<number> {
  const [row] = await h.database.em().execute<{ n: string | number }[]>('select count(*) as n from audit_records where account_id = ?', [accountId]);
  return Number(row!.n);
}

const field = (record: RestRecord, name: string) => record.details.fields.find((item) => item.name === name);

describe('every change leaves exactly one record, with its actor, method and fields', () => {
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
    // An operator's reset also ends the user's sessions and grants (issue 22): both are recorded, in that transaction.
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

describe('reads', () => {
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
    expect(result.data.auditRecords.nodes).toEqual([{ action: 'UPDATE', rootResource: { id: user.id }, details: { fields: [{ name: 'job_title', value: 'Graph', beforeValue: null }] } }]);
    // Older: the creation of the user's key by the fixture.
    expect(result.data.user.auditRecords).toEqual({ nodes: [{ action: 'UPDATE', method: { type: 'API_TOKEN' } }], pageInfo: { hasNextPage: true } });
  });

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

describe('the roots index', () => {
  test('a user\'s trail reads the same, page by page, from the batches before the index reaches them, from the index after, and half and half', async () => {
    const account = await h.createAccount();
    const [first, second] = await Promise.all([h.createUser(account), h.createUser(account)]);
    const pages = async (userId: string) => {
      const seen: Array<[string, string]> = [];
      let cursor: string | null = null;
      do {
        const response = await h.rest('get', `/users/${userId}/audit/records?limit=2${cursor ? `&cursor=${cursor}` : ''}`, { key: account.key });
        expect(response.status).toBe(200);
        seen.push(...(response.body.records as RestRecord[]).map((record): [string, string] => [record.id, field(record, 'job_title')?.value ?? '']));
        cursor = response.body.next_cursor;
      } while (cursor);
      return seen;
    };
    const write = async (step: number) => {
      await h.rest('put', `/users/${first.id}`, { key: account.key, body: { user: { job_title: `Alone ${step}` } } });
      // One batch naming both users.
      await h.rest('put', '/users', { key: account.key, body: { users: [first, second].map((user) => ({ id: user.id, type: 'user', job_title: `Bulk ${step} ${user.id}` })) } });
    };
    await write(1);
    await new Promise((resolve) => setTimeout(resolve, 5));
    const between = new Date();
    await new Promise((resolve) => setTimeout(resolve, 5));
    await write(2);
    const unindexed = [await pages(first.id), await pages(second.id)];
    // A window ending before the newest batches: those are passed over, the older ones found.
    const windowed = await h.rest('get', `/users/${first.id}/audit/records?limit=2&since=${new Date(Date.now() - 3_600_000).toISOString()}&until=${between.toISOString()}`, { key: account.key });
    expect((windowed.body.records as RestRecord[]).map((record) => field(record, 'job_title')?.value)).toEqual([`Bulk 1 ${first.id}`, 'Alone 1']);
    expect(windowed.body.more).toBe(true);
    expect(unindexed[0]!.map(([, title]) => title).filter(Boolean)).toEqual([`Bulk 2 ${first.id}`, 'Alone 2', `Bulk 1 ${first.id}`, 'Alone 1']);
    expect(unindexed[1]!.map(([, title]) => title).filter(Boolean)).toEqual([`Bulk 2 ${second.id}`, `Bulk 1 ${second.id}`]);

    await indexAuditRoots(h.database.em(), account.id);
    const [{ indexed }] = await h.database.em().execute<{ indexed: boolean }[]>(
      'select i.through_position = h.position as indexed from audit_chain_heads h join audit_root_index_heads i using (account_id) where account_id = ?', [account.id]);
    expect(indexed).toBe(true);
    expect([await pages(first.id), await pages(second.id)]).toEqual(unindexed);

    // Newer records past the index head, older ones through it, in one trail.
    await write(3);
    const mixed = await pages(first.id);
    expect(mixed.slice(2)).toEqual(unindexed[0]);
    expect(mixed.slice(0, 2).map(([, title]) => title)).toEqual([`Bulk 3 ${first.id}`, 'Alone 3']);
    expect(await verifyAuditChain(h.database.em(), account.id)).toEqual({ ok: true, verified: await count(account.id) });
  });
});

describe('integrity', () => {
  test('the database refuses UPDATE and DELETE', async () => {
    const account = await h.createAccount();
    await indexAuditRoots(h.database.em(), account.id);
    // The trigger refuses the owner; a least-privilege app role is refused before it, by its grants.
    const refusal = h.database.appRole ? /permission denied/ : /append-only/;
    await expect(h.database.em().execute('update audit_batches set context = ? where account_id = ?', ['{}', account.id])).rejects.toThrow(refusal);
    await expect(h.database.em().execute('delete from audit_batches where account_id = ?', [account.id])).rejects.toThrow(refusal);
    await expect(h.database.em().execute('update audit_record_roots set root_resource_id = ? where account_id = ?', ['PNOBODY', account.id])).rejects.toThrow(refusal);
    await expect(h.database.em().execute('delete from audit_record_roots where account_id = ?', [account.id])).rejects.toThrow(refusal);
  });

  async function chainOf(writes: number): Promise<{ account: TestAccount; ids: string[] }> {
    const account = await h.createAccount();
    const user = await h.createUser(account);
    for (let i = 0; i < writes; i++) await h.rest('put', `/users/${user.id}`, { key: account.key, body: { user: { job_title: `Chain ${i}` } } });
    const rows = await h.database.em().execute<{ id: string }[]>('select id from audit_records where account_id = ? order by position', [account.id]);
    return { account, ids: rows.map((row) => row.id) };
  }

  async function tamper(sql: string, params: unknown[]): Promise<void> {
    // As a superuser could: with the append-only trigger disabled (on the owner's connection when the app has a role of its own).
    const owner = h.database.url ? new pg.Client({ connectionString: h.database.url }) : undefined;
    await owner?.connect();
    const run = async (statement: string, values: unknown[] = []) => {
      let bound = 0;
      if (owner) await owner.query(statement.replace(/\?/g, () => `$${++bound}`), values);
      else await h.database.em().execute(statement, values);
    };
    try {
      await run('alter table audit_batches disable trigger audit_batches_append_only');
      await run('alter table audit_record_roots disable trigger audit_record_roots_append_only');
      await run(sql, params);
    } finally {
      await run('alter table audit_batches enable trigger audit_batches_append_only');
      await run('alter table audit_record_roots enable trigger audit_record_roots_append_only');
      await owner?.end();
    }
  }

  test('the roots index catches up past entries already there (written by hand, restored), keeping one of each', async () => {
    const { account, ids } = await chainOf(3);
    // The newest batch's entries, put in before the index reaches them.
    await tamper(
      `insert into audit_record_roots (account_id, root_resource_type, root_resource_id, execution_time, position, first_position)
       select b.account_id, r.root_type, r.root_id, b.execution_time, b.first_position + r.n - 1, b.first_position
         from audit_batches b cross join lateral unnest(b.record_root_types, b.record_root_ids) with ordinality as r(root_type, root_id, n)
        where b.account_id = ? and b.first_position = (select max(first_position) from audit_batches where account_id = ?)`,
      [account.id, account.id],
    );
    await indexAuditRoots(h.database.em(), account.id);
    const [{ entries, indexed }] = await h.database.em().execute<{ entries: string | number; indexed: boolean }[]>(
      `select (select count(*) from audit_record_roots where account_id = ?) as entries,
              (select i.through_position = h.position from audit_chain_heads h join audit_root_index_heads i using (account_id) where account_id = ?) as indexed`,
      [account.id, account.id],
    );
    expect(indexed).toBe(true);
    expect(Number(entries)).toBe(ids.length);
    expect(await verifyAuditChain(h.database.em(), account.id)).toEqual({ ok: true, verified: ids.length });
  });

  test('verify counts an intact chain, and names an edited, a deleted and a reordered record', async () => {
    const intact = await chainOf(4);
    // The owner, the account key, the user's key, and the four updates.
    expect(await verifyAuditChain(h.database.em(), intact.account.id)).toEqual({ ok: true, verified: 7 });

    // Each PUT is a batch of one record, at the record's position.
    const edited = await chainOf(4);
    // The method is the batch's shared context: editing it breaks the batch.
    await tamper(`update audit_batches set context = jsonb_set(context::jsonb, '{method,description}', '"PUT /nothing"')::text where account_id = ? and first_position = 4`, [edited.account.id]);
    expect(await verifyAuditChain(h.database.em(), edited.account.id)).toMatchObject({ ok: false, recordId: edited.ids[3], position: 4, problem: expect.stringMatching(/edited/) });

    const rewritten = await chainOf(4);
    // A value rewritten in place, the record's length and offsets unchanged.
    await tamper(`update audit_batches set records = convert_to(replace(convert_from(records, 'UTF8'), 'Chain 2', 'Chain X'), 'UTF8') where account_id = ? and first_position = 6`, [rewritten.account.id]);
    expect(await verifyAuditChain(h.database.em(), rewritten.account.id)).toMatchObject({ ok: false, recordId: rewritten.ids[5], position: 6, problem: expect.stringMatching(/edited/) });

    const deleted = await chainOf(4);
    await tamper('delete from audit_batches where account_id = ? and first_position = 3', [deleted.account.id]);
    expect(await verifyAuditChain(h.database.em(), deleted.account.id)).toMatchObject({ ok: false, recordId: deleted.ids[3], problem: expect.stringMatching(/removed/) });

    const tail = await chainOf(2);
    await tamper('delete from audit_batches where account_id = ? and first_position = 5', [tail.account.id]);
    expect(await verifyAuditChain(h.database.em(), tail.account.id)).toMatchObject({ ok: false, problem: expect.stringMatching(/removed/) });

    const reordered = await chainOf(4);
    await tamper('update audit_batches set first_position = -first_position, last_position = -last_position where account_id = ? and first_position in (3, 4)', [reordered.account.id]);
    await tamper('update audit_batches set first_position = 7 + first_position, last_position = 7 + last_position where account_id = ? and first_position in (-3, -4)', [reordered.account.id]);
    expect(await verifyAuditChain(h.database.em(), reordered.account.id)).toMatchObject({ ok: false, recordId: reordered.ids[3], position: 3, problem: expect.stringMatching(/out of order/) });

    // The roots index is derived, outside the chain: removing or repointing an entry would hide a record from its user's trail.
    const unindexed = await chainOf(4);
    await indexAuditRoots(h.database.em(), unindexed.account.id);
    await tamper('delete from audit_record_roots where account_id = ? and position = 5', [unindexed.account.id]);
    expect(await verifyAuditChain(h.database.em(), unindexed.account.id)).toMatchObject({ ok: false, recordId: unindexed.ids[4], position: 5, problem: expect.stringMatching(/hidden from per-user reads/) });
    const repointed = await chainOf(4);
    await indexAuditRoots(h.database.em(), repointed.account.id);
    await tamper(`update audit_record_roots set root_resource_id = 'PNOBODY' where account_id = ? and position = 6`, [repointed.account.id]);
    expect(await verifyAuditChain(h.database.em(), repointed.account.id)).toMatchObject({ ok: false, recordId: repointed.ids[5], position: 6, problem: expect.stringMatching(/hidden from per-user reads/) });
  });

  test('accessctl audit verify: exit 0 with the count, exit 1 naming the first bad record; export streams NDJSON', async () => {
    const { account, ids } = await chainOf(2);
    const io = { info: () => {} };
    const good = await verifyAuditCommand.run(h.database, { account: account.id }, io);
    expect(verifyAuditCommand.exitCode!(good)).toBe(0);
    expect(verifyAuditCommand.human(good)).toContain(`${ids.length} record(s) verified`);
    await tamper(`update audit_batches set records = convert_to(replace(convert_from(records, 'UTF8'), '"update"', '"create"'), 'UTF8') where account_id = ? and first_position = 4`, [account.id]);
    const bad = await verifyAuditCommand.run(h.database, { account: account.id }, io);
    expect(verifyAuditCommand.exitCode!(bad)).toBe(1);
    expect(verifyAuditCommand.human(bad)).toContain(`record ${ids[3]}`);

    const written: string[] = [];
    const exported = await exportAuditCommand.run(h.database, { account: account.id, since: '2020-01-01', until: new Date(Date.now() + 60_000).toISOString() }, { ...io, write: async (text) => { written.push(text); } });
    expect(exported).toEqual({ account_id: account.id, exported: ids.length });
    expect(written.map((line) => JSON.parse(line).id)).toEqual(ids);
  });

  test('concurrent writers of one account never fork the chain', async () => {
    const account = await h.createAccount();
    const users = await Promise.all([1, 2, 3, 4].map(() => h.createUser(account)));
    await Promise.all(users.flatMap((user) => [1, 2, 3].map((i) => h.rest('put', `/users/${user.id}`, { key: account.key, body: { user: { job_title: `Parallel ${i}` } } }))));
    expect(await verifyAuditChain(h.database.em(), account.id)).toEqual({ ok: true, verified: (await count(account.id)) });
  });

  test('the database links the chain as the verifier hashes it, whatever the records hold, one record or a batch', async () => {
    const account = await h.createAccount();
    const users = await Promise.all([1, 2, 3].map(() => h.createUser(account)));
    // Quotes, a backslash, an apostrophe, accents, CJK, an astral-plane emoji, a tab: each escaped or kept as is by JSON.
    const title = 'Zoë "Q" O\'Brien \\ 日本 😀\tend';
    expect((await h.rest('put', `/users/${users[0]!.id}`, { key: account.key, body: { user: { job_title: title } } })).status).toBe(200);
    const bulk = await h.rest('put', '/users', { key: account.key, body: { users: users.map((user) => ({ id: user.id, type: 'user', job_title: `${title} ${user.id}` })) } });
    expect(bulk.status).toBe(200);
    const titles = (await records(account)).map((record) => field(record, 'job_title')?.value).filter((value) => value !== undefined);
    expect(titles).toEqual(expect.arrayContaining([title, ...users.map((user) => `${title} ${user.id}`)]));
    expect(await verifyAuditChain(h.database.em(), account.id)).toEqual({ ok: true, verified: await count(account.id) });
  });

  test('the purge removes what is past retention, records itself, and the chain still verifies', async () => {
    const { account } = await chainOf(3);
    const total = await count(account.id);
    await expect(h.database.em().execute('delete from audit_batches where account_id = ?', [account.id])).rejects.toThrow(h.database.appRole ? /permission denied/ : /append-only/);
    const purged = await purgeAuditRecords(h.database.em(), h.database.transactions, { retentionDays: 0, now: new Date(Date.now() + 1000) });
    expect(purged).toBeGreaterThanOrEqual(total);
    const rest = await records(account);
    expect(rest).toHaveLength(1);
    expect(rest[0]).toMatchObject({ action: 'purge', details: { fields: expect.arrayContaining([{ name: 'purged_count', value: String(total), before_value: null }]) } });
    expect(await verifyAuditChain(h.database.em(), account.id)).toEqual({ ok: true, verified: 1 });
  });

  test('export writes NDJSON of the window, oldest first', async () => {
    const { account, ids } = await chainOf(3);
    const lines: string[] = [];
    const exported = await exportAuditRecords(h.database.em(), account.id, { since: new Date(Date.now() - 3_600_000), until: new Date(Date.now() + 1000), urls: h.runtime.urls }, async (line) => {
      lines.push(line);
    });
    expect(exported).toBe(ids.length);
    expect(lines.map((line) => JSON.parse(line).id)).toEqual(ids);
    expect(lines.every((line) => line.endsWith('\n') && !line.slice(0, -1).includes('\n'))).toBe(true);
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
