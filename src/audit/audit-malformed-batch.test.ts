import { describe, expect, test } from '@jest/globals';
import { useAuditTrailHarness } from '../../test/support/audit-trail.js';
import type { Harness, TestAccount } from '../../test/support/harness.js';
import { chainKeyPads } from './audit-chain.js';
import { indexAuditRoots, verifyAuditChain } from './audit-maintenance.js';

// Records the server did not write, appended through the owner's function as anyone allowed to
// call it could: each read shows them flagged and serves the rest of the page; verify names them.

let h: Harness;
useAuditTrailHarness((started) => (h = started));

const pgArray = (values: Array<string | number>) => `{${values.map((value) => JSON.stringify(String(value))).join(',')}}`;

/** Appends one hand-made batch: `elements` are each record's bytes, joined into the JSON array the function checks the brackets of. */
async function appendByHand(accountId: string, context: string, elements: Buffer[], rootIds: string[]): Promise<void> {
  const records = Buffer.concat([Buffer.from('['), ...elements.flatMap((element, index) => (index ? [Buffer.from(','), element] : [element])), Buffer.from(']')]);
  const offsets: number[] = [];
  let offset = 1;
  for (const element of elements) {
    offsets.push(offset);
    offset += element.length + 1;
  }
  offsets.push(offset);
  const pads = chainKeyPads();
  await h.database.em().execute('select audit_append_batch(?, ?, ?, ?::integer[], ?::text[], ?::text[], ?::text[], ?, ?)', [
    accountId, context, records, pgArray(offsets), pgArray(['update']), pgArray(rootIds.map(() => 'user')), pgArray(rootIds), pads.inner, pads.outer,
  ]);
}

const goodContext = JSON.stringify({ executionContext: { requestId: null, remoteAddress: null }, actors: [], method: { type: 'other', truncatedToken: null, description: null } });
const text = (value: string) => Buffer.from(value);

/** A user created through the API, then four records about them the server never wrote. */
async function accountWithForgedRecords(): Promise<{ account: TestAccount; userId: string }> {
  const account = await h.createAccount();
  const created = await h.rest('post', '/users', { key: account.key, body: { user: { type: 'user', name: 'Real Record', email: `real-${account.id.toLowerCase()}@example.com` } } });
  expect(created.status).toBe(201);
  const userId = created.body.user.id as string;
  await appendByHand(account.id, goodContext, [
    text('{"not":"an array"}'),
    text(JSON.stringify(['4b7c0b6e-8f1f-4a57-9d2f-6c1f7f0b1a11', 'explode', 'user', userId, { rootResource: { id: userId, type: 'user_reference' }, details: { resource: { id: userId, type: 'user_reference' }, fields: [], references: [] } }])),
    text('nope'),
    // Not UTF-8: cut out in SQL, this failed the per-user read before it reached the page.
    Buffer.from([0x22, 0xff, 0xfe, 0x22]),
  ], [userId, userId, userId, userId]);
  await appendByHand(account.id, '{"actors": "everyone"}', [text(JSON.stringify(['9e0c6a0e-3b8a-4a43-8f7e-3c2e9f2d5b22', 'update', 'user', userId, { rootResource: { id: userId, type: 'user_reference' }, details: { resource: { id: userId, type: 'user_reference' }, fields: [], references: [] } }]))], [userId]);
  return { account, userId };
}

interface FlaggedRecord {
  id: string;
  action: string;
  malformed?: string | null;
  root_resource: { id: string };
}

function expectFlagged(records: FlaggedRecord[], userId: string): void {
  const flagged = records.filter((record) => record.malformed);
  expect(flagged.map((record) => record.malformed).sort()).toEqual([
    'its action is not one the server writes',
    'its execution context is not in the form the server writes',
    'it is not a record array',
    // The bytes that are not UTF-8 decode to a JSON string, which is no record either.
    'it is not a record array',
    'the record is not JSON',
  ].sort());
  for (const record of flagged) expect(record).toMatchObject({ action: 'malformed', root_resource: { id: userId } });
  // The record the server wrote is served beside them, as it was written.
  const real = records.filter((record) => !record.malformed);
  expect(real.map((record) => record.action)).toContain('create');
  expect(real.every((record) => !('malformed' in record))).toBe(true);
}

describe('stored records the server did not write are shown flagged, never a 500', () => {
  test('REST: the account trail and the user\'s trail, before and after the roots index reaches them', async () => {
    const { account, userId } = await accountWithForgedRecords();
    const trail = await h.rest('get', '/audit/records?limit=100', { key: account.key });
    expect(trail.status).toBe(200);
    expectFlagged(trail.body.records, userId);

    const unindexed = await h.rest('get', `/users/${userId}/audit/records?limit=100`, { key: account.key });
    expect(unindexed.status).toBe(200);
    expectFlagged(unindexed.body.records, userId);

    await indexAuditRoots(h.database.em(), account.id);
    const indexed = await h.rest('get', `/users/${userId}/audit/records?limit=100`, { key: account.key });
    expect(indexed.status).toBe(200);
    expectFlagged(indexed.body.records, userId);
  });

  test('GraphQL: the page is served with the flagged records, and filtering by MALFORMED finds them', async () => {
    const { account } = await accountWithForgedRecords();
    const page = await h.graphql('{ auditRecords(first: 50) { edges { node { id action malformed rootResource { resourceId } } } } }', {}, account.key);
    expect(page.errors).toBeUndefined();
    const nodes = (page.data!.auditRecords as { edges: Array<{ node: { action: string; malformed: string | null } }> }).edges.map((edge) => edge.node);
    expect(nodes.filter((node) => node.malformed)).toHaveLength(5);
    expect(nodes.filter((node) => node.malformed).every((node) => node.action === 'MALFORMED')).toBe(true);
    expect(nodes.some((node) => node.action === 'CREATE' && node.malformed === null)).toBe(true);

    const onlyMalformed = await h.graphql('{ auditRecords(first: 50, filter: { actions: [MALFORMED] }) { edges { node { malformed } } } }', {}, account.key);
    expect(onlyMalformed.errors).toBeUndefined();
    expect((onlyMalformed.data!.auditRecords as { edges: unknown[] }).edges).toHaveLength(5);
  });

  test('audit verify names the first malformed record and why', async () => {
    const { account } = await accountWithForgedRecords();
    const outcome = await verifyAuditChain(h.database.em(), account.id);
    expect(outcome).toMatchObject({ ok: false, problem: expect.stringMatching(/^edited: the record at position \d+ is malformed: it is not a record array$/) });
  });
});
