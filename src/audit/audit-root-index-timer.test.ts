import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { setTimeout as delay } from 'node:timers/promises';
import { startHarness, type Harness } from '../../test/support/harness.js';

/** The per-user index of the trail is filled after commit by every server, every half second; here every few milliseconds. */
const INTERVAL_MS = 40;
let h: Harness;

beforeAll(async () => {
  h = await startHarness({ auditRootIndexIntervalMs: INTERVAL_MS });
});
afterAll(async () => {
  await h.close();
});

async function headPosition(accountId: string): Promise<number> {
  const [head] = await h.database.em().execute<{ position: string | number }[]>('select position from audit_chain_heads where account_id = ?', [accountId]);
  return Number(head!.position);
}

describe('the server\'s roots index timer', () => {
  test('brings the per-user index up to each chain\'s head after writes commit, off the writes\' path', async () => {
    const account = await h.createAccount();
    const user = await h.createUser(account);
    expect((await h.rest('put', `/users/${user.id}`, { key: account.key, body: { user: { job_title: 'Indexed later' } } })).status).toBe(200);
    const head = await headPosition(account.id);
    const indexedThrough = async () => {
      const [row] = await h.database.em().execute<{ through_position: string | number }[]>('select through_position from audit_root_index_heads where account_id = ?', [account.id]);
      return row ? Number(row.through_position) : 0;
    };
    while ((await indexedThrough()) < head) await delay(5);
    const [{ entries }] = await h.database.em().execute<{ entries: string | number }[]>(
      `select count(*) as entries from audit_record_roots where account_id = ? and root_resource_type = 'user' and root_resource_id = ?`, [account.id, user.id]);
    // The user's key (the fixture's) and the update.
    expect(Number(entries)).toBe(2);
    expect(h.logs.join('')).not.toContain('audit roots index not brought up to date');
  });
});

