import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { recordChange, type CommitHook } from '../db/change-journal.js';
import type { Database } from '../db/database.js';
import { issueDelegation } from '../oauth-delegations/oauth-delegation.service.js';
import type { Harness } from '../../test/support/harness.js';
import { authorizationOf, LiveTestClient, sleep } from '../../test/support/live-client.js';
import { startTwoInstances, type TwoInstances } from '../../test/support/two-instances.js';

const LIMITS = { maxConnectionsPerCredential: 3, maxSubscriptionsPerConnection: 20, maxBufferedBytes: 1_000_000, keepAliveMs: 60_000 };
const V2 = { Accept: 'application/vnd.pagerduty+json;version=2' };

const AUDIT_ADDED = `subscription ($filter: AuditRecordFilter) {
  auditRecordAdded(filter: $filter) {
    kind
    record { id action executionTime actors { id: resourceId type } method { type truncatedToken } rootResource { id: resourceId type self } details { resource { id: resourceId type } fields { name value beforeValue } } }
  }
}`;

let instances: TwoInstances;
let a: Harness;
let bDatabase: Database;
let bRest: TwoInstances['bRest'];

const tokenOf = (credential: unknown) => `Token token=${(credential as { token: string }).token}`;
const added = (client: LiveTestClient, id: string) => client.events(id).map((message) => message.payload);

beforeAll(async () => {
  instances = await startTwoInstances(LIMITS);
  ({ a, bDatabase, bRest } = instances);
});

afterAll(async () => instances.close());

describe('auditRecordAdded across instances', () => {
  test('an admin subscribed on A receives the record of a PUT made through B, as auditRecords presents it, once', async () => {
    const account = await a.createAccount();
    const admin = await a.createUser(account, { role: 'admin' });
    const user = await a.createUser(account);
    const client = await LiveTestClient.connect(a.httpServer, authorizationOf(admin.key as { token: string }));
    client.subscribe('audit', AUDIT_ADDED);
    await sleep(150);

    expect((await bRest.put(`/users/${user.id}`).set({ ...V2, Authorization: tokenOf(admin.key) }).send({ user: { job_title: 'SRE' } })).status).toBe(200);
    const event = await client.waitFor((message) => message.id === 'audit' && message.type === 'next');
    expect(event.payload.errors).toBeUndefined();
    const { kind, record } = event.payload.data.auditRecordAdded;
    expect(kind).toBe('ADDED');
    expect(record).toMatchObject({
      action: 'UPDATE',
      actors: [{ id: admin.id, type: 'user_reference' }, { type: 'api_key_reference' }],
      method: { type: 'API_TOKEN', truncatedToken: expect.any(String) },
      rootResource: { id: user.id, type: 'user_reference', self: expect.stringContaining(`/users/${user.id}`) },
      details: { resource: { id: user.id, type: 'user_reference' }, fields: [{ name: 'jobTitle', value: 'SRE', beforeValue: null }] },
    });
    // The same record, field for field, as the query presents it.
    const listed = await a.graphql(`{ auditRecords(first: 1) { edges { node { id action executionTime actors { id: resourceId type } method { type truncatedToken } rootResource { id: resourceId type self } details { resource { id: resourceId type } fields { name value beforeValue } } } } } }`, undefined, admin.key);
    expect(listed.data.auditRecords.edges[0].node).toEqual(record);
    await sleep(300);
    expect(client.events('audit')).toHaveLength(1);
    client.close();
  });

  test('filters apply before sending: actions, root resource types, actor', async () => {
    const account = await a.createAccount();
    const admin = await a.createUser(account, { role: 'admin' });
    const user = await a.createUser(account);
    const client = await LiveTestClient.connect(a.httpServer, authorizationOf(admin.key as { token: string }));
    client.subscribe('creates', AUDIT_ADDED, { filter: { actions: ['CREATE'] } });
    client.subscribe('byAdmin', AUDIT_ADDED, { filter: { actorType: 'USER_REFERENCE', actorId: admin.id } });
    client.subscribe('keys', AUDIT_ADDED, { filter: { rootResourceTypes: ['API_KEYS'] } });
    client.subscribe('byToken', AUDIT_ADDED, { filter: { methodType: 'API_TOKEN', actions: ['UPDATE'] } });
    client.subscribe('misspelt', AUDIT_ADDED, { filter: { actions: ['updat'] } });
    await sleep(150);

    // By the account key (not the admin): an update, matching none of the filters.
    expect((await bRest.put(`/users/${user.id}`).set({ ...V2, Authorization: tokenOf(account.key) }).send({ user: { job_title: 'By key' } })).status).toBe(200);
    // By the admin: an update (the actor filter), then a creation (both the actor and the action filters).
    expect((await bRest.put(`/users/${user.id}`).set({ ...V2, Authorization: tokenOf(admin.key) }).send({ user: { job_title: 'By admin' } })).status).toBe(200);
    const created = await bRest.post('/users').set({ ...V2, Authorization: tokenOf(admin.key) }).send({ user: { type: 'user', name: 'New One', email: `new-${Date.now()}@example.com` } });
    expect(created.status).toBe(201);

    await client.waitFor((message) => message.id === 'creates' && message.type === 'next');
    await sleep(400);
    const records = (id: string) => added(client, id).map((payload) => [payload.data.auditRecordAdded.record.action, payload.data.auditRecordAdded.record.details.resource.id]);
    expect(records('creates')).toEqual([['CREATE', created.body.user.id]]);
    expect(records('byAdmin')).toEqual([['UPDATE', user.id], ['CREATE', created.body.user.id]]);
    expect(records('keys')).toEqual([]);
    expect(records('byToken')).toEqual([['UPDATE', user.id], ['UPDATE', user.id]]);
    // A value outside the set is refused when subscribing, not a stream that never delivers.
    expect(client.messages.filter((message) => message.id === 'misspelt').map((message) => message.type)).toEqual(['error']);
    expect(JSON.stringify(client.messages.find((message) => message.id === 'misspelt'))).toMatch(/AuditAction/);
    client.close();
  });

  test('another account\'s writes deliver nothing', async () => {
    const account = await a.createAccount();
    const other = await a.createAccount();
    const stranger = await a.createUser(other);
    const client = await LiveTestClient.connect(a.httpServer, tokenOf(account.key));
    client.subscribe('audit', AUDIT_ADDED);
    await sleep(150);
    expect((await bRest.put(`/users/${stranger.id}`).set({ ...V2, Authorization: tokenOf(other.key) }).send({ user: { job_title: 'Elsewhere' } })).status).toBe(200);
    await sleep(400);
    expect(client.messages.filter((message) => message.id === 'audit')).toEqual([]);
    client.close();
  });

  test('a write that rolls back after the hooks ran, or is refused, delivers nothing; the next write is delivered alone', async () => {
    const account = await a.createAccount();
    const user = await a.createUser(account);
    const client = await LiveTestClient.connect(a.httpServer, tokenOf(account.key));
    client.subscribe('audit', AUDIT_ADDED);
    await sleep(150);

    // The features' hooks' calls (pg_notify, the audit append) run, then a later hook's call in the same statement fails: the transaction rolls back.
    await bDatabase.em().execute(`create or replace function test_refuse_at_commit() returns void language plpgsql as $$ begin raise exception 'refused at commit'; end $$`);
    const failing: CommitHook = { name: 'test.failing', callsBeforeCommit: () => [{ name: 'test_refuse_at_commit', args: [] }] };
    await expect(
      bDatabase.transactions.withCommitHooks([failing]).run(bDatabase.em(), async (tx) => {
        recordChange(tx, { accountId: account.id, action: 'update', resource: { type: 'user', id: user.id }, fields: [{ name: 'job_title', value: 'Rolled back', beforeValue: null }] });
      }),
    ).rejects.toThrow('refused at commit');
    expect((await bRest.put(`/users/${user.id}`).set({ ...V2, Authorization: tokenOf(account.key) }).send({ user: { name: 'X', email: 'not-an-email' } })).status).toBe(400);
    await sleep(300);
    expect(client.messages.filter((message) => message.id === 'audit')).toEqual([]);

    expect((await bRest.put(`/users/${user.id}`).set({ ...V2, Authorization: tokenOf(account.key) }).send({ user: { job_title: 'Committed' } })).status).toBe(200);
    await client.waitFor((message) => message.id === 'audit' && message.type === 'next');
    await sleep(300);
    expect(added(client, 'audit').map((payload) => payload.data.auditRecordAdded.record.details.fields)).toEqual([[{ name: 'jobTitle', value: 'Committed', beforeValue: null }]]);
    client.close();
  });
});

describe('auditRecordAdded authorization and input', () => {
  const errorsOf = async (client: LiveTestClient, id: string) => {
    const denied = await client.waitFor((message) => message.id === id && (message.type === 'next' || message.type === 'error'));
    return denied.type === 'next' ? denied.payload.errors : denied.payload;
  };

  test('a role without the right gets FORBIDDEN', async () => {
    const account = await a.createAccount();
    const user = await a.createUser(account, { role: 'user' });
    const client = await LiveTestClient.connect(a.httpServer, authorizationOf(user.key as { token: string }));
    client.subscribe('audit', AUDIT_ADDED);
    const errors = await errorsOf(client, 'audit');
    expect(errors[0].extensions).toMatchObject({ code: 'FORBIDDEN' });
    expect(errors[0].message).toContain('can_update_user');
    // And nothing follows: a write of the account is not delivered to the refused subscription.
    expect((await bRest.put(`/users/${user.id}`).set({ ...V2, Authorization: tokenOf(account.key) }).send({ user: { job_title: 'Unseen' } })).status).toBe(200);
    await sleep(300);
    expect(client.events('audit').filter((message) => message.payload.data)).toEqual([]);
    client.close();
  });

  test('a token without audit_records.read gets FORBIDDEN, naming the scope, even an owner\'s', async () => {
    const account = await a.createAccount();
    const owner = await a.createUser(account, { role: 'owner' });
    const { accessToken } = await a.database.transactions.run(a.database.em(), (tx) => issueDelegation(tx, { userId: owner.id, type: 'mobile', scopes: 'users.read', expiresInSeconds: undefined }));
    const client = await LiveTestClient.connect(a.httpServer, `Bearer ${accessToken}`);
    client.subscribe('audit', AUDIT_ADDED);
    const errors = await errorsOf(client, 'audit');
    expect(errors[0].extensions).toMatchObject({ code: 'FORBIDDEN', apiErrorCode: 2010 });
    expect(errors[0].message).toContain('audit_records.read');
    client.close();
  });

  test('a window, or an actor id without its type, is refused as bad input, never a 5xx', async () => {
    const account = await a.createAccount();
    const client = await LiveTestClient.connect(a.httpServer, tokenOf(account.key));
    client.subscribe('window', AUDIT_ADDED, { filter: { since: new Date().toISOString() } });
    client.subscribe('actor', AUDIT_ADDED, { filter: { actorId: 'PABCDEF' } });
    expect((await errorsOf(client, 'window'))[0].extensions.code).toBe('BAD_USER_INPUT');
    expect((await errorsOf(client, 'actor'))[0].extensions.code).toBe('BAD_USER_INPUT');
    client.close();
  });
});
