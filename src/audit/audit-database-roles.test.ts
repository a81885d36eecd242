import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { legacyLink, type LegacyAuditRow } from '../../test/support/audit-legacy.js';
import { startHarness, type Harness, type TestAccount } from '../../test/support/harness.js';
import { allCommitHooks, allEntities } from '../app/features.js';
import { checkpointAuditCommand, verifyAuditCommand } from '../cli/commands/audit.commands.js';
import { grantAppRoleCommand } from '../cli/commands/db.commands.js';
import { recordChange } from '../db/change-journal.js';
import { openDatabase, type Database } from '../db/database.js';
import { checkpointLine, parseCheckpoint } from './audit-chain.js';
import { verifyAuditChain } from './audit-maintenance.js';

/** The trail holds against the database's own users. */
let h: Harness;
const role = `aag_app_${randomBytes(4).toString('hex')}`;
const io = { info: () => {} };
let owner: Database | undefined;
let dir: string;

beforeAll(async () => {
  h = await startHarness();
  dir = await mkdtemp(path.join(tmpdir(), 'audit-checkpoint-'));
  // PostgreSQL only: the embedded database has a single role.
  if (h.database.url) owner = await openDatabase({ databaseUrl: h.database.url, dataDir: undefined, entities: allEntities(), commitHooks: allCommitHooks(), poolMax: 2 });
});
afterAll(async () => {
  await owner?.close();
  await h.close();
  // The test database, where the role held its grants, is gone: the role goes from the server.
  if (h.database.url) await superuser((client) => client.query(`drop role if exists ${role}`), process.env.TEST_DATABASE_ADMIN_URL ?? process.env.DATABASE_URL);
});

async function superuser<T>(work: (client: pg.Client) => Promise<T>, url = h.database.url!): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

function roleUrl(): string {
  const url = new URL(h.database.url!);
  url.username = role;
  url.password = '';
  return url.toString();
}

async function accountWithWrites(writes: number): Promise<{ account: TestAccount; head: () => Promise<number> }> {
  const account = await h.createAccount();
  const user = await h.createUser(account, { role: 'admin', name: 'Hidden Admin' });
  for (let i = 0; i < writes; i++) await h.rest('put', `/users/${user.id}`, { key: account.key, body: { user: { job_title: `Title ${i}` } } });
  const head = async () => Number((await h.database.em().execute<{ position: string }[]>('select position from audit_chain_heads where account_id = ?', [account.id]))[0]!.position);
  return { account, head };
}

/** The attack: the purge's setting, the newest record deleted, the head moved back onto the record before it. */
const ATTACK = [
  'begin',
  `set local audit.purging = 'on'`,
  'delete from audit_batches where account_id = $1 and last_position = (select position from audit_chain_heads where account_id = $1)',
  'delete from audit_record_roots where account_id = $1 and position = (select position from audit_chain_heads where account_id = $1)',
  `update audit_chain_heads h set position = b.last_position, hash = b.hash, last_time = b.execution_time
     from audit_batches b where h.account_id = $1 and b.account_id = $1 and b.last_position = h.position - 1`,
  'commit',
];

async function attack(client: pg.Client, accountId: string): Promise<void> {
  try {
    for (const statement of ATTACK) await client.query(statement, statement.includes('$1') ? [accountId] : []);
  } catch (error) {
    await client.query('rollback');
    throw error;
  }
}

describe('a least-privilege app role (accessctl db grant-app-role)', () => {
  test('serves writes, and cannot delete, update or truncate records or move heads, whatever it sets', async () => {
    if (!owner) return;
    await superuser((client) => client.query(`create role ${role} login`));
    // Refused for a role that could do everything anyway.
    await expect(grantAppRoleCommand.run(owner, { role: 'postgres' }, io)).rejects.toMatchObject({ details: [expect.stringMatching(/superuser/)] });
    const granted = await grantAppRoleCommand.run(owner, { role, 'min-retention-days': '30' }, io);
    expect(granted).toMatchObject({ role, read_only_tables: expect.arrayContaining(['audit_records', 'audit_chain_heads']), min_retention_days: 30 });

    const { account, head } = await accountWithWrites(2);
    const before = await head();
    await superuser(async (app) => {
      await expect(attack(app, account.id)).rejects.toThrow(/permission denied/);
      await expect(app.query('update audit_chain_heads set position = position - 1 where account_id = $1', [account.id])).rejects.toThrow(/permission denied/);
      await expect(app.query('update audit_batches set context = $2 where account_id = $1', [account.id, '{}'])).rejects.toThrow(/permission denied/);
      await expect(app.query('delete from audit_record_roots where account_id = $1', [account.id])).rejects.toThrow(/permission denied/);
      await expect(app.query(`insert into audit_record_roots values ($1, 'user', 'PNOBODY', now(), 1, 1)`, [account.id])).rejects.toThrow(/permission denied/);
      await expect(app.query('truncate audit_batches')).rejects.toThrow(/permission denied/);
      await expect(app.query('truncate audit_record_roots')).rejects.toThrow(/permission denied/);
      await expect(app.query('alter table audit_batches disable trigger audit_batches_append_only')).rejects.toThrow(/must be owner/);
      await expect(app.query(`insert into audit_chain_heads (account_id, position, hash, last_time) values ('XXXXXXX', 0, '', now())`)).rejects.toThrow(/permission denied/);
      // The purge function is the owner's; it refuses to erase what is younger than the owner's minimum retention.
      await expect(app.query('select * from audit_purge_batch($1, now(), 1000000, 1000)', [account.id])).rejects.toThrow(/minimum retention/);
    }, roleUrl());
    expect(await head()).toBe(before);
    expect(await verifyAuditChain(h.database.em(), account.id)).toEqual({ ok: true, verified: before });

    // The service itself, connected as the role: its writes append through the owner's function.
    const app = await openDatabase({ databaseUrl: roleUrl(), dataDir: undefined, entities: allEntities(), commitHooks: allCommitHooks(), poolMax: 1 });
    try {
      await app.transactions.onBehalfOf({ face: 'cli', description: 'test' }).run(app.em(), async (tx) => {
        recordChange(tx, { accountId: account.id, action: 'update', resource: { type: 'account', id: account.id }, fields: [{ name: 'name', value: 'x' }] });
      });
    } finally {
      await app.close();
    }
    expect(await head()).toBe(before + 1);
    expect(await verifyAuditChain(h.database.em(), account.id)).toEqual({ ok: true, verified: before + 1 });
    await owner.em().execute('update audit_policy set min_retention_days = 0');
  });
});

describe('a signed checkpoint (accessctl audit checkpoint)', () => {
  test('shows the tail a superuser removed, head moved back, which the chain alone cannot', async () => {
    if (!h.database.url) return;
    const { account, head } = await accountWithWrites(2);
    const newest = await head();
    const [hidden] = await h.database.em().execute<{ id: string }[]>('select id from audit_records where account_id = ? and position = ?', [account.id, newest]);
    const printed = await checkpointAuditCommand.run(h.database, { account: account.id }, io);
    const plainFile = path.join(dir, 'plain.txt');
    const jsonFile = path.join(dir, 'checkpoint.json');
    await writeFile(plainFile, `${checkpointAuditCommand.human(printed)}\n`);
    await writeFile(jsonFile, `${JSON.stringify(printed)}\n`);
    // The server's hourly log line carries the same object under `checkpoint`.
    const logFile = path.join(dir, 'logged.json');
    await writeFile(logFile, `${JSON.stringify({ level: 30, msg: 'audit checkpoint', checkpoint: printed })}\n`);
    expect(printed).toMatchObject({ account_id: account.id, position: newest, signature: expect.stringMatching(/^[0-9a-f]{64}$/) });

    await superuser((client) => attack(client, account.id));
    expect(await head()).toBe(newest - 1);
    // Without the checkpoint the shortened chain is consistent.
    expect(await verifyAuditChain(h.database.em(), account.id)).toEqual({ ok: true, verified: newest - 1 });

    for (const file of [plainFile, jsonFile, logFile]) {
      const outcome = await verifyAuditCommand.run(h.database, { account: account.id, checkpoint: file }, io);
      expect(verifyAuditCommand.exitCode!(outcome)).toBe(1);
      expect(outcome).toMatchObject({ ok: false, position: newest, problem: expect.stringContaining(`positions ${newest} to ${newest} are missing`) });
      expect(verifyAuditCommand.human(outcome)).toContain('removed from the end after the checkpoint');
    }
    expect(hidden).toBeDefined();

    // A checkpoint edited to hide the removal (its position lowered) no longer carries a valid signature.
    const forged = parseCheckpoint(await (await import('node:fs/promises')).readFile(plainFile, 'utf8'))!;
    const forgedFile = path.join(dir, 'forged.txt');
    await writeFile(forgedFile, checkpointLine({ ...forged, position: newest - 1 }));
    const refused = await verifyAuditCommand.run(h.database, { account: account.id, checkpoint: forgedFile }, io);
    expect(refused).toMatchObject({ ok: false, problem: expect.stringMatching(/not signed/) });

    // An intact chain verifies against its own checkpoint.
    const other = await accountWithWrites(1);
    const fresh = path.join(dir, 'fresh.txt');
    await writeFile(fresh, checkpointAuditCommand.human(await checkpointAuditCommand.run(h.database, { account: other.account.id }, io)));
    await h.rest('put', `/users/${(await h.createUser(other.account)).id}`, { key: other.account.key, body: { user: { job_title: 'later' } } });
    const intact = await verifyAuditCommand.run(h.database, { account: other.account.id, checkpoint: fresh }, io);
    expect(intact).toMatchObject({ ok: true });
  });
});

/** A record rewritten as a release before batches stored it: a batch of one, its element carrying the actor and method columns that release hashed. */
function legacyBatch(row: LegacyRow, previousHash: string, hash: string, version: 1 | 2): unknown[] {
  const { executionContext, actors, method, ...own } = row.body;
  const element = JSON.stringify([row.id, row.action, row.root_resource_type, row.root_resource_id, own, row.actor_type, row.actor_id, row.method_type, row.method_truncated_token]);
  const records = Buffer.from(`[${element}]`);
  return [row.account_id, row.position, row.execution_time, JSON.stringify({ executionContext, actors, method }), records, `{1,${records.length}}`, `{${row.action}}`, `{${row.root_resource_type}}`, `{${row.root_resource_id}}`, previousHash, hash, version];
}

interface LegacyRow extends LegacyAuditRow {
  batch_previous_hash: string;
}

const INSERT_BATCH = `insert into audit_batches (account_id, first_position, last_position, execution_time, context, records, record_offsets, actions, record_root_types, record_root_ids, previous_hash, hash, chain_version)
  values ($1, $2, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`;

describe('the chain format is versioned', () => {
  test('records of versions 1 and 2 (one per batch) keep verifying before batches; an unkeyed link after a keyed one is an edit', async () => {
    if (!h.database.url) return;
    const { account, head } = await accountWithWrites(1);
    const rows = await h.database.em().execute<LegacyRow[]>('select * from audit_records where account_id = ? order by position', [account.id]);
    // Rewritten as the releases before batches linked them (what a database upgraded from them holds): version 1, then 2.
    let previous = '';
    await superuser(async (client) => {
      await client.query('alter table audit_batches disable trigger audit_batches_append_only');
      await client.query('delete from audit_batches where account_id = $1', [account.id]);
      for (const [index, row] of rows.entries()) {
        const version = index === 0 ? 1 : 2;
        const hash = legacyLink(previous, row, version);
        await client.query(INSERT_BATCH, legacyBatch(row, previous, hash, version));
        previous = hash;
      }
      await client.query('update audit_chain_heads set hash = $2 where account_id = $1', [account.id, previous]);
      await client.query('alter table audit_batches enable trigger audit_batches_append_only');
      await client.query('alter table audit_record_roots disable trigger audit_record_roots_append_only');
      await client.query('update audit_record_roots set first_position = position where account_id = $1', [account.id]);
      await client.query('alter table audit_record_roots enable trigger audit_record_roots_append_only');
    });
    await h.rest('put', `/users/${(await h.createUser(account)).id}`, { key: account.key, body: { user: { job_title: 'keyed' } } });
    const total = await head();
    expect(total).toBeGreaterThan(rows.length);
    expect(await verifyAuditChain(h.database.em(), account.id)).toEqual({ ok: true, verified: total });
    const versions = await h.database.em().execute<{ chain_version: number }[]>('select chain_version from audit_records where account_id = ? order by position', [account.id]);
    expect(versions.map((row) => row.chain_version)).toEqual([1, ...rows.slice(1).map(() => 2), ...Array(total - rows.length).fill(3)]);
    // The old records read as they did.
    const shown = await h.rest('get', '/audit/records?limit=100', { key: account.key });
    expect(shown.status).toBe(200);
    expect(shown.body.records.map((record: { id: string }) => record.id)).toEqual(expect.arrayContaining(rows.map((row) => row.id)));

    // Downgrading the newest batch (one record) to an unkeyed link (computable without the key) is caught.
    const [last] = await h.database.em().execute<LegacyRow[]>('select * from audit_records where account_id = ? and position = ?', [account.id, total]);
    const unkeyed = legacyLink(last!.batch_previous_hash, last!, 1);
    await superuser(async (client) => {
      await client.query('alter table audit_batches disable trigger audit_batches_append_only');
      await client.query('delete from audit_batches where account_id = $1 and first_position = $2', [account.id, total]);
      await client.query(INSERT_BATCH, legacyBatch(last!, last!.batch_previous_hash, unkeyed, 1));
      await client.query('update audit_chain_heads set hash = $2 where account_id = $1', [account.id, unkeyed]);
      await client.query('alter table audit_batches enable trigger audit_batches_append_only');
    });
    expect(await verifyAuditChain(h.database.em(), account.id)).toMatchObject({ ok: false, position: total, problem: expect.stringMatching(/unkeyed link/) });
  });
});
