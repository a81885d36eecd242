import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { randomBytes, randomUUID } from 'node:crypto';
import { MikroORM, type Options } from '@mikro-orm/core';
import pg from 'pg';
import { legacyLink, type LegacyAuditRow } from '../../test/support/audit-legacy.js';
import { allCommitHooks, allEntities } from '../app/features.js';
import { baseOrmOptions, openDatabase, postgresOrmOptions, type Database } from '../db/database.js';
import { recordChange } from '../db/change-journal.js';
import { chainKeyPads } from './audit-chain.js';
import { recordsOfRoot } from './audit-batches.js';
import { verifyAuditChain } from './audit-maintenance.js';
import { auditBodyOf } from './audit-record.js';

/**
 * A database upgraded to batches (migration 20261126030000) from the release before: its records,
 * unkeyed ones (chain version 1) and keyed ones (version 2, appended by that release's function),
 * keep their bodies and hashes, verify, read by user, and the chain goes on in batches after them.
 */
// Straight to the server (behind a transaction-pooling PgBouncer, its admin URL): creating and migrating a database are the owner's, not the app's.
const serverUrl = process.env.TEST_DATABASE_ADMIN_URL ?? process.env.DATABASE_URL;
const LAST_BEFORE_BATCHES = 'Migration20261126020000_sso_privileged_sign_in';
const name = `aag_upgrade_${randomBytes(4).toString('hex')}`;
let url: string;
let admin: pg.Client;

beforeAll(async () => {
  if (!serverUrl) return;
  admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  await admin.query(`create database ${name}`);
  const target = new URL(serverUrl);
  target.pathname = `/${name}`;
  url = target.toString();
});
afterAll(async () => {
  if (!serverUrl) return;
  await admin.query(`drop database if exists ${name} with (force)`);
  await admin.end();
});

interface OldRow extends LegacyAuditRow {
  previous_hash: string;
  hash: string;
  chain_version: number;
}

/** What the release before sent its append function: the shared members' text and each record's columns and own body. */
function oldAppend(client: pg.Client, accountId: string, records: Array<{ action: string; userId: string; title: string }>) {
  const shared = `"executionContext":{"requestId":"${randomUUID()}","remoteAddress":"203.0.113.9"},"actors":[{"id":"PKEY001","type":"api_key_reference","summary":"old key"}],"method":{"type":"api_token","truncatedToken":"ab12","description":"PUT /users"}`;
  const contents = records.map((record) => {
    const user = { id: record.userId, type: 'user_reference', summary: `Zoë "${record.userId}" 😀` };
    return [record.action, 'user', record.userId, 'api_key_reference', 'PKEY001', 'api_token', 'ab12',
      { rootResource: user, details: { resource: user, fields: [{ name: 'job_title', value: record.title, beforeValue: null }], references: [] } }];
  });
  const pads = chainKeyPads();
  return client.query('select audit_append_records($1, $2, $3, $4::json, $5, $6)',
    [accountId, records.map(() => randomUUID()), shared, JSON.stringify(contents), pads.inner, pads.outer]);
}

describe('upgrading a trail to batches', () => {
  test('records of chain versions 1 and 2 keep their bodies and hashes, verify, read by user, and new batches link after them', async () => {
    if (!serverUrl) return;
    const accountId = 'PUPGRD1';
    const orm = await MikroORM.init({ ...baseOrmOptions(allEntities()), ...postgresOrmOptions(url, { poolMax: 1 }) } as Options);
    let before: OldRow[];
    try {
      await orm.migrator.up({ to: LAST_BEFORE_BATCHES });
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      try {
        await client.query(`insert into accounts (id, name) values ($1, 'Upgraded')`, [accountId]);
        await oldAppend(client, accountId, [{ action: 'update', userId: 'PUSER01', title: 'one' }, { action: 'update', userId: 'PUSER02', title: 'two' }]);
        await oldAppend(client, accountId, [{ action: 'update', userId: 'PUSER01', title: 'three' }]);
        // Those as releases before the keyed chain linked them: unkeyed (version 1).
        const written = (await client.query<OldRow>('select * from audit_records_full where account_id = $1 order by position', [accountId])).rows;
        let previous = '';
        await client.query('alter table audit_records disable trigger audit_records_append_only');
        for (const row of written) {
          const hash = legacyLink(previous, row, 1);
          await client.query('update audit_records set chain_version = 1, previous_hash = $3, hash = $4 where account_id = $1 and position = $2', [accountId, row.position, previous, hash]);
          previous = hash;
        }
        await client.query('alter table audit_records enable trigger audit_records_append_only');
        await client.query('update audit_chain_heads set hash = $2 where account_id = $1', [accountId, previous]);
        // Then keyed records, by that release's function.
        await oldAppend(client, accountId, [{ action: 'update', userId: 'PUSER02', title: 'four' }, { action: 'delete', userId: 'PUSER01', title: 'five' }]);
        before = (await client.query<OldRow>('select * from audit_records_full where account_id = $1 order by position', [accountId])).rows;
        expect(before.map((row) => row.chain_version)).toEqual([1, 1, 1, 2, 2]);
      } finally {
        await client.end();
      }
      await orm.migrator.up();
    } finally {
      await orm.close(true);
    }

    const database: Database = await openDatabase({ databaseUrl: url, dataDir: undefined, entities: allEntities(), commitHooks: allCommitHooks(), poolMax: 2 });
    try {
      const em = database.em();
      const after = await em.execute<Array<OldRow & { batch_previous_hash: string; batch_hash: string }>>('select * from audit_records where account_id = ? order by position', [accountId]);
      expect(after.map((row) => [row.position, row.id, row.action, row.root_resource_id, row.actor_type, row.actor_id, row.method_type, row.method_truncated_token, row.batch_previous_hash, row.batch_hash, row.chain_version, row.body]))
        .toEqual(before.map((row) => [row.position, row.id, row.action, row.root_resource_id, row.actor_type, row.actor_id, row.method_type, row.method_truncated_token, row.previous_hash, row.hash, row.chain_version, row.body]));
      expect(await verifyAuditChain(em, accountId)).toEqual({ ok: true, verified: 5 });

      // The chain goes on in batches, linked to the last record of the release before.
      await database.transactions.onBehalfOf({ face: 'cli', description: 'after the upgrade' }).run(database.em(), async (tx) => {
        for (const userId of ['PUSER01', 'PUSER02']) recordChange(tx, { accountId, action: 'update', resource: { type: 'user', id: userId }, userId, fields: [{ name: 'job_title', value: 'six' }] });
      });
      expect(await verifyAuditChain(em, accountId)).toEqual({ ok: true, verified: 7 });
      const versions = await em.execute<{ chain_version: number }[]>('select chain_version from audit_records where account_id = ? order by position', [accountId]);
      expect(versions.map((row) => row.chain_version)).toEqual([1, 1, 1, 2, 2, 3, 3]);

      // The old records are in the roots index already; the new batch is read from itself until indexed.
      const window = { since: new Date(Date.now() - 3_600_000), until: new Date(Date.now() + 60_000) };
      const titles = async () => (await recordsOfRoot(em, accountId, 'user', 'PUSER01', { wanted: 10, window })).rows.map((row) => auditBodyOf(row.body).details.fields[0]!.value);
      expect(await titles()).toEqual(['six', 'five', 'three', 'one']);
      await em.execute('select audit_index_roots(?, 100)', [accountId]);
      expect(await titles()).toEqual(['six', 'five', 'three', 'one']);
      expect(await verifyAuditChain(em, accountId)).toEqual({ ok: true, verified: 7 });
    } finally {
      await database.close();
    }
  });
});
