import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import type { Harness } from '../../test/support/harness.js';
import { authorizationOf, LiveTestClient, sleep } from '../../test/support/live-client.js';
import { startTwoInstances, type TwoInstances } from '../../test/support/two-instances.js';

// A member follows their own trail live; events carry the cursor of the list they belong to, which
// resumes the stream after a reconnect and pages on from it; changed fields carry GraphQL names.

let instances: TwoInstances;
let h: Harness;
beforeAll(async () => {
  instances = await startTwoInstances({ maxConnectionsPerCredential: 3, maxSubscriptionsPerConnection: 20, maxBufferedBytes: 1_000_000, keepAliveMs: 60_000 });
  h = instances.a;
});
afterAll(async () => instances.close());

const FOLLOW = `subscription ($filter: AuditRecordFilter, $after: String) {
  auditRecordAdded(filter: $filter, after: $after) { kind cursor record { action rootResource { resourceId } details { fields { name value } } } }
}`;

const V2 = { Accept: 'application/vnd.pagerduty+json;version=2' };
const keyOf = (credential: unknown) => credential as { token: string };

async function jobTitleChanged(userId: string, key: unknown, title: string): Promise<void> {
  const response = await h.rest('put', `/users/${userId}`, { key: key as never, body: { user: { job_title: title } }, headers: V2 });
  expect(response.status).toBe(200);
}

describe('auditRecordAdded for one user', () => {
  test('a member follows their own records, with GraphQL field names; another user\'s and the account\'s are FORBIDDEN', async () => {
    const account = await h.createAccount();
    const member = await h.createUser(account);
    const other = await h.createUser(account);
    const client = await LiveTestClient.connect(h.httpServer, authorizationOf(keyOf(member.key)));
    client.subscribe('own', FOLLOW, { filter: { userId: member.id } });
    client.subscribe('other', FOLLOW, { filter: { userId: other.id } });
    client.subscribe('account', FOLLOW, {});
    const refused = await Promise.all(['other', 'account'].map((id) => client.waitFor((message) => message.id === id)));
    for (const message of refused) expect(JSON.stringify(message.payload)).toContain('FORBIDDEN');
    await sleep(150);

    await jobTitleChanged(other.id, account.key, 'Not yours');
    await jobTitleChanged(member.id, account.key, 'Yours');
    const event = await client.waitFor((message) => message.id === 'own' && message.type === 'next');
    expect(event.payload.errors).toBeUndefined();
    expect(event.payload.data.auditRecordAdded).toMatchObject({
      kind: 'ADDED',
      cursor: expect.any(String),
      record: { action: 'UPDATE', rootResource: { resourceId: member.id }, details: { fields: [{ name: 'jobTitle', value: 'Yours' }] } },
    });
    await sleep(300);
    expect(client.events('own')).toHaveLength(1);
    client.close();

    // REST keeps the reference's names for the same record.
    const rest = await h.rest('get', `/users/${member.id}/audit/records?limit=5`, { key: account.key });
    expect(rest.body.records[0].details.fields).toEqual([{ name: 'job_title', value: 'Yours', before_value: null }]);
  });

  test('an event\'s cursor resumes the stream with nothing lost, and pages the user\'s list on from the record', async () => {
    const account = await h.createAccount();
    const member = await h.createUser(account);
    const first = await LiveTestClient.connect(h.httpServer, authorizationOf(keyOf(member.key)));
    first.subscribe('own', FOLLOW, { filter: { userId: member.id } });
    await sleep(150);
    await jobTitleChanged(member.id, account.key, 'One');
    const seen = await first.waitFor((message) => message.id === 'own' && message.type === 'next');
    const cursor = seen.payload.data.auditRecordAdded.cursor as string;
    first.close();

    // Disconnected: two more changes; the resumed stream delivers them, oldest first, before anything new.
    await jobTitleChanged(member.id, account.key, 'Two');
    await jobTitleChanged(member.id, account.key, 'Three');
    const second = await LiveTestClient.connect(h.httpServer, authorizationOf(keyOf(member.key)));
    second.subscribe('own', FOLLOW, { filter: { userId: member.id }, after: cursor });
    await second.waitFor(() => second.events('own').length >= 2);
    const values = second.events('own').map((message) => message.payload.data.auditRecordAdded.record.details.fields[0].value);
    expect(values).toEqual(['Two', 'Three']);
    // A cursor of another list does not resume this one.
    second.subscribe('wrong', FOLLOW, { filter: { userId: member.id, actions: ['UPDATE'] }, after: cursor });
    const wrong = await second.waitFor((message) => message.id === 'wrong');
    expect(JSON.stringify(wrong.payload)).toContain('after is a cursor of the same list with other arguments');
    second.close();

    // The same cursor pages the user's list on, older than the record: the fixture's own records only.
    const older = await h.graphql('query ($id: ID!, $after: String) { userAuditRecords(userId: $id, first: 10, after: $after) { edges { node { details { fields { name value } } } } } }', { id: member.id, after: cursor }, member.key);
    expect(older.errors).toBeUndefined();
    const olderValues = (older.data!.userAuditRecords as { edges: Array<{ node: { details: { fields: Array<{ value: string | null }> } } }> }).edges.flatMap((edge) => edge.node.details.fields.map((field) => field.value));
    expect(olderValues).not.toContain('One');
    expect(olderValues).not.toContain('Two');
  });
});
