import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import supertest from 'supertest';
import { createApp } from '../app/create-app.js';
import { allCommitHooks, allEntities } from '../app/features.js';
import { createRateLimiter } from '../auth/rate-limit.js';
import { recordChange, type Change } from '../db/change-journal.js';
import { openDatabase } from '../db/database.js';
import { createLogger } from '../logging/logger.js';
import { issueDelegation } from '../oauth-delegations/oauth-delegation.service.js';
import { startHarness, TEST_SETTINGS, type Harness } from '../../test/support/harness.js';
import { authorizationOf, LiveTestClient, sleep } from '../../test/support/live-client.js';
import { TcpProxy } from '../../test/support/tcp-proxy.js';
import { decodeLiveChanges, LIVE_CHANNEL, MAX_PAYLOAD_BYTES } from './live-change.codec.js';

let h: Harness;
const heard: string[] = [];
let stopListening: () => Promise<void>;
// Real accounts: every commit hook runs, and the audit trail's records belong to an account.
let A1: string;
let A2: string;

beforeAll(async () => {
  h = await startHarness();
  A1 = (await h.createAccount()).id;
  A2 = (await h.createAccount()).id;
  const listener = await h.database.listen(LIVE_CHANNEL, { notification: (payload) => heard.push(payload), reconnected: () => {} });
  stopListening = () => listener.close();
});
afterAll(async () => {
  await stopListening();
  await h.close();
});

const change = (accountId: string, id: string): Change => ({ accountId, action: 'update', resource: { type: 'user', id }, userId: id, fields: [{ name: 'name', value: 'secret value', beforeValue: 'old' }] });

async function settle(): Promise<void> {
  await sleep(150);
}

describe('announced at commit, through the transaction', () => {
  test('a write that rolls back announces nothing; one that commits announces its changes once, without values', async () => {
    heard.length = 0;
    await expect(
      h.database.transactions.run(h.database.em(), async (tx) => {
        recordChange(tx, change(A1, 'PROLLBACK'));
        throw new Error('refused after the change was recorded');
      }),
    ).rejects.toThrow('refused');
    await settle();
    expect(heard).toEqual([]);

    await h.database.transactions.run(h.database.em(), async (tx) => recordChange(tx, change(A1, 'PCOMMIT')));
    await settle();
    expect(heard.flatMap((payload) => decodeLiveChanges(payload).changes)).toEqual([
      { accountId: A1, action: 'update', resourceType: 'user', resourceId: 'PCOMMIT', userId: 'PCOMMIT', fields: ['name'], revokesAccess: false },
    ]);
    expect(heard.join('')).not.toContain('secret value');
  });

  test('a large transaction is announced in payloads PostgreSQL accepts (below 8000 bytes), none lost', async () => {
    heard.length = 0;
    await h.database.transactions.run(h.database.em(), async (tx) => {
      for (let index = 0; index < 600; index++) recordChange(tx, change(A2, `PUSER${String(index).padStart(5, '0')}`));
    });
    await settle();
    expect(heard.length).toBeGreaterThan(1);
    for (const payload of heard) expect(Buffer.byteLength(payload)).toBeLessThanOrEqual(MAX_PAYLOAD_BYTES);
    expect(heard.flatMap((payload) => decodeLiveChanges(payload).changes.map((decoded) => decoded.resourceId))).toHaveLength(600);
  });
});

const postgresOnly = process.env.DATABASE_URL ? describe : describe.skip;

postgresOnly('the listening connection lost and back (PostgreSQL)', () => {
  test('reconnects with backoff; subscribers are told RESYNC, and a revocation missed meanwhile still closes its connection', async () => {
    const url = new URL(h.database.url!);
    const proxy = await TcpProxy.start({ host: url.hostname, port: Number(url.port || 5432) });
    const listenUrl = new URL(url);
    listenUrl.port = String(proxy.port);
    const database = await openDatabase({ databaseUrl: h.database.url, listenUrl: listenUrl.toString(), dataDir: undefined, entities: allEntities(), commitHooks: allCommitHooks(), poolMax: 2 });
    const logger = createLogger({ logLevel: 'silent' });
    const app = await createApp({ settings: TEST_SETTINGS, database, logger, serverSecret: h.runtime.serverSecret, rateLimiter: createRateLimiter({ perMinute: 1_000_000, logger }) });
    await new Promise<void>((resolve) => app.httpServer.listen(0, '127.0.0.1', resolve));
    try {
      const account = await h.createAccount();
      const user = await h.createUser(account);
      const { accessToken } = await h.database.transactions.run(h.database.em(), (tx) => issueDelegation(tx, { userId: user.id, type: 'web', scopes: 'users.read' }));
      const watcher = await LiveTestClient.connect(app.httpServer, authorizationOf(account.key as { token: string }));
      watcher.subscribe('changes', 'subscription ($id: ID!) { userChanged(id: $id) { kind changedFields } }', { id: user.id });
      watcher.subscribe('audit', 'subscription { auditRecordAdded { kind record { id action } } }');
      const session = await LiveTestClient.connect(app.httpServer, `Bearer ${accessToken}`);
      session.subscribe('revoked', 'subscription { viewerAccessRevoked { reason } }');
      await sleep(100);

      const recordsNow = async () => (await h.graphql('{ auditRecords(first: 20) { edges { node { id action } } } }', undefined, account.key)).data.auditRecords.edges.map((edge: any) => edge.node).reverse();
      const before = (await recordsNow()).length;
      proxy.cut();
      await sleep(200);
      // While this instance cannot hear: a change and a sign-out, through the other instance's pool.
      const rest = supertest(h.app);
      const v2 = { Accept: 'application/vnd.pagerduty+json;version=2', Authorization: `Token token=${(account.key as { token: string }).token}` };
      expect((await rest.put(`/users/${user.id}`).set(v2).send({ user: { job_title: 'Missed' } })).status).toBe(200);
      expect((await rest.delete(`/oauth_delegations?user_id=${user.id}&type=web`).set(v2)).status).toBe(200);
      await sleep(300);
      expect(watcher.events('changes')).toEqual([]);
      expect(watcher.events('audit')).toEqual([]);
      expect(session.socket.readyState).toBe(session.socket.OPEN);

      proxy.restore();
      const resync = await watcher.waitFor((message) => message.id === 'changes' && message.type === 'next', 8_000);
      expect(resync.payload.data.userChanged).toEqual({ kind: 'RESYNC', changedFields: [] });
      // The audit stream says RESYNC too, then delivers the records appended while it could not hear, in order.
      const missed = (await recordsNow()).slice(before);
      expect(missed.map((record: { action: string }) => record.action)).toContain('UPDATE');
      await watcher.waitFor(() => watcher.events('audit').length >= missed.length + 1, 3_000);
      expect(watcher.events('audit').map((message) => message.payload.data.auditRecordAdded)).toEqual([
        { kind: 'RESYNC', record: null },
        ...missed.map((record: { id: string; action: string }) => ({ kind: 'ADDED', record })),
      ]);
      const revoked = await session.waitFor((message) => message.id === 'revoked' && message.type === 'next', 3_000);
      expect(revoked.payload.data.viewerAccessRevoked.reason).toBe('CREDENTIAL_REVOKED');
      expect((await session.closed).code).toBe(4403);

      // Listening again: the next change arrives as usual.
      expect((await rest.put(`/users/${user.id}`).set(v2).send({ user: { job_title: 'Heard' } })).status).toBe(200);
      const heardAgain = await watcher.waitFor((message) => message.id === 'changes' && message.type === 'next' && message.payload.data.userChanged.kind === 'UPDATED', 3_000);
      expect(heardAgain.payload.data.userChanged.changedFields).toEqual(['jobTitle']);
      watcher.close();
    } finally {
      await app.stop(1_000);
      await database.close();
      await proxy.close();
    }
  });
});
