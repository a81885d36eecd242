import { afterAll, beforeAll, expect } from '@jest/globals';
import { startHarness, type Harness, type TestAccount } from './harness.js';

/** An audit record as `GET /audit/records` answers it. */
export interface RestRecord {
  id: string;
  action: string;
  actors: Array<{ id: string; type: string }>;
  method: { type: string; truncated_token: string | null; description: string | null };
  root_resource: { id: string; type: string };
  execution_context: { request_id: string | null; remote_address: string | null };
  details: { resource: { id: string; type: string }; fields: Array<{ name: string; value: string | null; before_value: string | null }>; references: Array<{ name: string; added: unknown[] | null; removed: Array<{ id: string }> | null }> };
}

/**
 * One harness for the file's audit-trail tests, started before them and closed after.
 * The harness leaves the roots index to the tests (indexAuditRoots): per-user reads go through the batches past it, unless a test indexes.
 * Its lock timeout is short, so a write blocked behind a held row lock gives up within the test.
 */
export function useAuditTrailHarness(started: (harness: Harness) => void): void {
  let harness: Harness;
  beforeAll(async () => {
    harness = await startHarness({ lockTimeoutMs: 300 });
    started(harness);
  });
  afterAll(async () => harness.close());
}

/** Reads of the trail through the harness `harness()` returns (the file's, once started). */
export function auditReads(harness: () => Harness) {
  async function records(account: TestAccount, query = ''): Promise<RestRecord[]> {
    const response = await harness().rest('get', `/audit/records?limit=100${query}`, { key: account.key });
    expect(response.status).toBe(200);
    return response.body.records;
  }

  /** The records about a user, less the fixture's own write (`h.createUser` creates the user's API key, through the write path). */
  async function recordsAbout(account: TestAccount, userId: string): Promise<RestRecord[]> {
    const response = await harness().rest('get', `/users/${userId}/audit/records?limit=100`, { key: account.key });
    expect(response.status).toBe(200);
    return (response.body.records as RestRecord[]).filter((record) => !(record.method.type === 'other' && record.details.resource.type === 'api_key_reference'));
  }

  async function count(accountId: string): Promise<number> {
    const [row] = await harness().database.em().execute<{ n: string | number }[]>('select count(*) as n from audit_records where account_id = ?', [accountId]);
    return Number(row!.n);
  }

  return { records, recordsAbout, count };
}

export const field = (record: RestRecord, name: string) => record.details.fields.find((item) => item.name === name);
