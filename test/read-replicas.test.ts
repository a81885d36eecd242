import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { allEntities } from '../src/app/features.js';
import { openDatabase } from '../src/db/database.js';
import { startHarness } from './support/harness.js';

const serverUrl = process.env.DATABASE_URL;
// Replicas are a PostgreSQL feature: CI (DATABASE_URL set) runs this; on embedded PGlite it reports as skipped.
const describeOnPostgres = serverUrl ? describe : describe.skip;

describeOnPostgres('read replicas', () => {
  test('only listings are served by a replica; credentials and everything else use the primary', async () => {
    // The "replica" is a separate database with the same schema and none of the primary's rows:
    // whatever is read from it shows up as missing, which makes the routing visible.
    const name = `aag_replica_${randomBytes(4).toString('hex')}`;
    const admin = new pg.Client({ connectionString: serverUrl });
    await admin.connect();
    await admin.query(`create database ${name}`);
    const replicaUrl = new URL(serverUrl!);
    replicaUrl.pathname = `/${name}`;
    const replica = await openDatabase({ databaseUrl: replicaUrl.toString(), dataDir: undefined, entities: allEntities() });
    await replica.migrate();
    await replica.close();

    const h = await startHarness({ replicaUrls: [replicaUrl.toString()] });
    try {
      const account = await h.createAccount();
      const user = await h.createUser(account);
      // Authenticated on the primary (the replica has no keys), listed from the replica (no users there).
      const listed = await h.rest('get', '/users', { key: account.key });
      expect(listed.status).toBe(200);
      expect(listed.body.users).toEqual([]);
      // A delete commits on the primary; the user's key is refused at once even though the replica never saw it.
      // Everything but listings reads the primary: the user key works and shows its user.
      const before = await h.rest('get', '/users/me', { key: user.key });
      expect([before.status, before.body.user?.id]).toEqual([200, user.id]);
      expect((await h.rest('delete', `/users/${user.id}`, { key: account.key })).status).toBe(204);
      expect((await h.rest('get', '/users/me', { key: user.key })).status).toBe(401);
    } finally {
      await h.close();
      await admin.query(`drop database if exists ${name} with (force)`);
      await admin.end();
    }
  });
});
