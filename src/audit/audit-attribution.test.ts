import { describe, expect, test } from '@jest/globals';
import * as client from 'openid-client';
import { createApiKeyCommand } from '../cli/commands/accounts.commands.js';
import { startHarness } from '../../test/support/harness.js';
import { api, discover, graphqlCall, newMember, registerApp, useOAuthServers } from '../../test/support/oauth-server.js';

/** Who really acted (an app by its client id, with summaries), and who may read another user's trail. */
const fixture = useOAuthServers(1);

async function integration(accountId: string, scopes: string): Promise<{ bearer: string; clientId: string; name: string }> {
  const name = `Integration ${scopes}`;
  const { app, clientSecret } = await registerApp(fixture.database, fixture.serverSecret, { accountId, kind: 'integration', scopes, name });
  const config = await discover(fixture.instances[0]!.url, app.clientId, client.ClientSecretBasic(clientSecret!));
  return { bearer: `Bearer ${(await client.clientCredentialsGrant(config, { scope: scopes })).access_token}`, clientId: app.clientId, name };
}

describe('attribution', () => {
  test("an integration's change names the app by its client id (found by actor_id), with its name; an API key's actor carries its description", async () => {
    const m = await newMember(fixture.database);
    const owner = `Token token=${m.ownerKey}`;
    const app = await integration(m.accountId, 'users.read users.write');
    expect((await api(fixture.instances[0]!, 'PUT', `/users/${m.userId}`, app.bearer, { user: { job_title: 'Set by the integration' } })).status).toBe(200);

    const found = await api(fixture.instances[0]!, 'GET', `/audit/records?actor_type=app_reference&actor_id=${encodeURIComponent(app.clientId)}`, owner);
    expect(found.status).toBe(200);
    expect(found.body.records).toHaveLength(1);
    expect(found.body.records[0]).toMatchObject({ action: 'update', method: { type: 'oauth' }, root_resource: { id: m.userId } });
    expect(found.body.records[0].actors).toEqual(expect.arrayContaining([expect.objectContaining({ type: 'app_reference', id: app.clientId, summary: app.name })]));

    // The owner's key: the account key's record names the key, described as bootstrap describes it.
    expect((await api(fixture.instances[0]!, 'PUT', `/users/${m.userId}`, owner, { user: { job_title: 'Set by the owner key' } })).status).toBe(200);
    const [description] = await fixture.database.em().execute<{ description: string | null }[]>('select description from api_keys where account_id = ? and user_id is null', [m.accountId]);
    const byKey = await api(fixture.instances[0]!, 'GET', '/audit/records?actor_type=api_key_reference', owner);
    const keyActor = byKey.body.records[0].actors.find((actor: { type: string }) => actor.type === 'api_key_reference');
    expect(keyActor.summary).toBe(description?.description ?? null);
  });
});

describe('reading another user\'s trail', () => {
  test('needs can_update_user: an integration with users.read audit_records.read is refused on both faces; with users.write it reads', async () => {
    const m = await newMember(fixture.database);
    const reader = await integration(m.accountId, 'users.read audit_records.read');
    expect((await api(fixture.instances[0]!, 'GET', `/users/${m.userId}/audit/records`, reader.bearer)).status).toBe(403);
    const field = await graphqlCall(fixture.instances[0]!, reader.bearer, 'query($id: ID!) { user(id: $id) { id auditRecords { nodes { id } } } }', { id: m.userId });
    expect(field.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');

    const manager = await integration(m.accountId, 'users.read users.write audit_records.read');
    expect((await api(fixture.instances[0]!, 'GET', `/users/${m.userId}/audit/records`, manager.bearer)).status).toBe(200);
    const managed = await graphqlCall(fixture.instances[0]!, manager.bearer, 'query($id: ID!) { user(id: $id) { id auditRecords { nodes { id } } } }', { id: m.userId });
    expect(managed.errors).toBeUndefined();
  });

  test('the window: until defaults to now, since to a day before it; over 31 days is 400, also with since alone', async () => {
    const m = await newMember(fixture.database);
    const owner = `Token token=${m.ownerKey}`;
    const daysAgo = (days: number) => new Date(Date.now() - days * 86_400_000).toISOString();
    for (const path of ['/audit/records', `/users/${m.userId}/audit/records`]) {
      const forty = await api(fixture.instances[0]!, 'GET', `${path}?since=${daysAgo(40)}`, owner);
      expect(forty.status).toBe(400);
      expect(forty.body.error.code).toBe(2001);
      expect((await api(fixture.instances[0]!, 'GET', `${path}?since=${daysAgo(30)}`, owner)).status).toBe(200);
      expect((await api(fixture.instances[0]!, 'GET', `${path}?until=${daysAgo(10)}&since=${daysAgo(45)}`, owner)).status).toBe(400);
    }
    // since alone: through now, so today's records (the account's creation) are in it.
    const recent = await api(fixture.instances[0]!, 'GET', `/audit/records?since=${daysAgo(1)}`, owner);
    expect(recent.body.records.length).toBeGreaterThan(0);
  });
});

describe('calendar credentials', () => {
  test("a user's calendar key made at its first read is a create record (once); reading it again records nothing", async () => {
    const m = await newMember(fixture.database);
    const owner = `Token token=${m.ownerKey}`;
    const keyRecords = async () =>
      (await api(fixture.instances[0]!, 'GET', `/users/${m.userId}/audit/records`, owner)).body.records.filter((record: { details: { resource: { type: string } } }) => record.details.resource.type === 'calendar_feed_key_reference');
    expect(await keyRecords()).toEqual([]);
    const shown = await api(fixture.instances[0]!, 'GET', `/users/${m.userId}?include[]=calendar_urls`, owner);
    expect(shown.body.user.http_cal_url).toMatch(/\/private\/[^/]+\/feed$/);
    const created = await keyRecords();
    expect(created).toHaveLength(1);
    expect(created[0]).toMatchObject({ action: 'create', root_resource: { id: m.userId, type: 'user_reference' }, details: { resource: { id: m.userId } } });
    expect(JSON.stringify(created[0])).not.toContain(shown.body.user.http_cal_url.split('/private/')[1].split('/')[0]);
    await api(fixture.instances[0]!, 'GET', `/users/${m.userId}?include[]=calendar_urls`, owner);
    expect(await keyRecords()).toHaveLength(1);
  });
});

describe("other users' calendar URLs shown", () => {
  test('one view_calendar_urls record per request naming the users shown (REST include and GraphQL fields); none for one\'s own', async () => {
    const m = await newMember(fixture.database);
    const owner = `Token token=${m.ownerKey}`;
    const [ownerRow] = await fixture.database.em().execute<{ id: string }[]>(`select id from users where account_id = ? and role = 'owner'`, [m.accountId]);
    const views = async () => (await api(fixture.instances[0]!, 'GET', '/audit/records?actions[]=view_calendar_urls', owner)).body.records as Array<{ actors: Array<{ type: string }>; details: { references: Array<{ name: string; added: Array<{ id: string }> | null }> } }>;
    expect(await views()).toEqual([]);

    await api(fixture.instances[0]!, 'GET', `/users/${m.userId}?include[]=calendar_urls`, owner);
    const [rest] = await views();
    expect(rest!.details.references).toEqual([expect.objectContaining({ name: 'users', added: [expect.objectContaining({ id: m.userId })] })]);
    expect(rest!.actors).toEqual([expect.objectContaining({ type: 'api_key_reference' })]);

    // Several users in one GraphQL request: one record naming them all.
    const listed = await graphqlCall(fixture.instances[0]!, owner, '{ users(first: 10) { nodes { id httpCalUrl webCalUrl } } }');
    expect(listed.errors).toBeUndefined();
    const all = await views();
    expect(all).toHaveLength(2);
    expect(all[0]!.details.references[0]!.added!.map((user) => user.id).sort()).toEqual([m.userId, ownerRow!.id].sort());

    // The user reading their own URLs (a user's own key): nothing recorded.
    const userKey = await createApiKeyCommand.run(fixture.database, { account: m.accountId, user: m.userId }, { info: () => {} });
    const own = await graphqlCall(fixture.instances[0]!, `Token token=${String(userKey.api_key)}`, 'query($id: ID!) { user(id: $id) { httpCalUrl } }', { id: m.userId });
    expect(own.errors).toBeUndefined();
    expect(await views()).toHaveLength(2);
  });

  test('a document showing URLs in several places of its tree (a list, aliases, fields again) is still one record, naming each user shown once', async () => {
    const m = await newMember(fixture.database);
    const owner = `Token token=${m.ownerKey}`;
    const views = async () => (await api(fixture.instances[0]!, 'GET', '/audit/records?actions[]=view_calendar_urls', owner)).body.records as Array<{ details: { references: Array<{ name: string; added: Array<{ id: string }> | null }> } }>;
    const listed: string[] = [];
    for (const name of ['Calendar Listed One', 'Calendar Listed Two']) {
      const created = await api(fixture.instances[0]!, 'POST', '/users', owner, { user: { type: 'user', name, email: `${name.replaceAll(' ', '-').toLowerCase()}-${m.userId}@example.com` } });
      expect(created.status).toBe(201);
      listed.push(created.body.user.id as string);
    }
    // The list shows both listed users; the aliases show one of them again (overlapping) and the member (not in the list), each resolved in a batch of its own.
    const shown = await graphqlCall(fixture.instances[0]!, owner, `query($again: ID!, $member: ID!) {
      users(first: 10, query: "Calendar Listed") { nodes { id httpCalUrl } }
      again: user(id: $again) { webCalUrl }
      member: user(id: $member) { httpCalUrl webCalUrl }
      memberAgain: user(id: $member) { httpCalUrl }
    }`, { again: listed[1], member: m.userId });
    expect(shown.errors).toBeUndefined();
    expect(shown.data.users.nodes.map((node: { id: string }) => node.id).sort()).toEqual([...listed].sort());
    expect(shown.data.member.httpCalUrl).toMatch(/\/private\/[^/]+\/feed$/);

    const records = await views();
    expect(records).toHaveLength(1);
    expect(records[0]!.details.references).toHaveLength(1);
    expect(records[0]!.details.references[0]!.added!.map((user) => user.id).sort()).toEqual([...listed, m.userId].sort());
  });
});

describe('request ids', () => {
  test("a client's X-Request-Id is the record's (and the response's) only from a proxy TRUST_PROXY names; anyone else's is replaced by the server's own", async () => {
    const behindProxy = await startHarness({ settings: { trustProxy: ['loopback'] } });
    try {
      const account = await behindProxy.createAccount();
      const created = await behindProxy.rest('post', '/users', { key: account.key, body: { user: { type: 'user', name: 'Via Proxy', email: 'via-proxy@example.com' } }, headers: { 'X-Request-Id': 'edge-id-1' } });
      expect(created.status).toBe(201);
      expect(created.headers['x-request-id']).toBe('edge-id-1');
      const listed = await behindProxy.rest('get', '/audit/records?actions[]=create&root_resource_types[]=users', { key: account.key });
      const record = listed.body.records.find((item: { root_resource: { id: string } }) => item.root_resource.id === created.body.user.id);
      expect(record.execution_context.request_id).toBe(created.headers['x-request-id']);
    } finally {
      await behindProxy.close();
    }
    // Straight from a client (no proxy trusted): the forged id is neither echoed nor recorded.
    const m = await newMember(fixture.database);
    const forged = await fetch(`${fixture.instances[0]!.url}/users/${m.userId}`, {
      method: 'PUT',
      headers: { Accept: 'application/vnd.pagerduty+json;version=2', Authorization: `Token token=${m.ownerKey}`, 'Content-Type': 'application/json', 'X-Request-Id': 'forged-id-1' },
      body: JSON.stringify({ user: { job_title: 'forged' } }),
    });
    expect(forged.status).toBe(200);
    const serverId = forged.headers.get('x-request-id');
    expect(serverId).not.toBe('forged-id-1');
    const [update] = (await api(fixture.instances[0]!, 'GET', `/users/${m.userId}/audit/records`, `Token token=${m.ownerKey}`)).body.records;
    expect(update.execution_context.request_id).toBe(serverId);
  });
});
