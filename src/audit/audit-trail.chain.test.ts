import { describe, expect, test } from '@jest/globals';
import pg from 'pg';
import { auditReads, field, useAuditTrailHarness, type RestRecord } from '../../test/support/audit-trail.js';
import type { Harness, TestAccount } from '../../test/support/harness.js';
import { exportAuditCommand, verifyAuditCommand } from '../cli/commands/audit.commands.js';
import { exportAuditRecords, indexAuditRoots, purgeAuditRecords, verifyAuditChain } from './audit-maintenance.js';

// The stored trail: the hash chain and what guards it, the roots index beside it, verify, purge and export.

let h: Harness;
useAuditTrailHarness((started) => (h = started));
const { records, count } = auditReads(() => h);

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

describe('integrity: what the database refuses, and the roots index catching up', () => {
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
});

describe('integrity: verifying the chain', () => {
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

});

describe('integrity: purge and export', () => {
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
