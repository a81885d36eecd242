import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import supertest from 'supertest';
import WebSocket from 'ws';
import { createRateLimiter } from '../auth/rate-limit.js';
import { startHarness, type Harness } from '../../test/support/harness.js';
import { authorizationOf, LiveTestClient, sleep } from '../../test/support/live-client.js';

// The rules POST /graphql applies to a client's document hold on the WebSocket too (docs/security.md).

async function listening(h: Harness): Promise<void> {
  await new Promise<void>((resolve) => h.httpServer.listen(0, '127.0.0.1', resolve));
}

describe('GRAPHQL_TRUSTED_DOCUMENTS on the WebSocket', () => {
  const listed = 'subscription Revoked { viewerAccessRevoked { reason } }';
  const id = createHash('sha256').update(listed).digest('hex');
  let h: Harness;
  beforeAll(async () => {
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'trusted-live-')), 'manifest.json');
    fs.writeFileSync(file, JSON.stringify({ format: 'apollo-persisted-query-manifest', version: 1, operations: [{ id, name: 'Revoked', type: 'subscription', body: listed }] }));
    h = await startHarness({ settings: { graphqlTrustedDocuments: file } });
    await listening(h);
  });
  afterAll(async () => {
    await h?.close();
  });

  test('a subscription not in the manifest is refused with PERSISTED_QUERY_NOT_FOUND; a listed one runs, by text or by hash', async () => {
    const account = await h.createAccount();
    const socket = await LiveTestClient.connect(h.httpServer, authorizationOf(account.key as { token: string }));
    try {
      socket.socket.send(JSON.stringify({ id: 'unlisted', type: 'subscribe', payload: { query: 'subscription { auditRecordAdded { kind } }' } }));
      const refused = await socket.waitFor((message) => message.id === 'unlisted' && message.type === 'error');
      expect(refused.payload[0].extensions.code).toBe('PERSISTED_QUERY_NOT_FOUND');

      socket.socket.send(JSON.stringify({ id: 'by-text', type: 'subscribe', payload: { query: listed, operationName: 'Revoked' } }));
      socket.socket.send(JSON.stringify({ id: 'by-hash', type: 'subscribe', payload: { query: '', extensions: { persistedQuery: { version: 1, sha256Hash: id } } } }));
      // Accepted subscriptions send nothing until an event; a refusal would be an `error` message.
      socket.socket.send(JSON.stringify({ id: 'after', type: 'subscribe', payload: { query: '{ viewer { id } }' } }));
      await socket.waitFor((message) => message.id === 'after' && message.type === 'error');
      await sleep(200);
      expect(socket.messages.filter((message) => message.id === 'by-text' || message.id === 'by-hash')).toEqual([]);
    } finally {
      socket.close();
    }
  });
});

describe('introspection off on the WebSocket', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ settings: { introspection: false } });
    await listening(h);
  });
  afterAll(async () => {
    await h?.close();
  });

  test('validation errors do not suggest field names ("Did you mean ...?"), as on POST /graphql', async () => {
    const account = await h.createAccount();
    const socket = await LiveTestClient.connect(h.httpServer, authorizationOf(account.key as { token: string }));
    try {
      socket.subscribe('typo', 'subscription { viewerAccessRevokd { reason } }');
      const refused = await socket.waitFor((message) => message.id === 'typo' && message.type === 'error');
      expect(refused.payload[0].message).toBe('Cannot query field "viewerAccessRevokd" on type "Subscription".');
    } finally {
      socket.close();
    }
  });
});

describe('the address budget on the WebSocket, behind one trusted proxy (TRUST_PROXY=1)', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ settings: { trustProxy: 1 }, rateLimiter: (logger) => createRateLimiter({ perMinute: 2, logger }) });
    await listening(h);
  });
  afterAll(async () => {
    await h?.close();
  });

  /** A connection_init with an unknown credential from the client the proxy names; answers the close code. */
  async function guessFrom(address: string): Promise<number> {
    const socket = new WebSocket(LiveTestClient.url(h.httpServer), 'graphql-transport-ws', { headers: { 'X-Forwarded-For': address } });
    const closed = new Promise<number>((resolve) => socket.once('close', (code) => resolve(code)));
    await new Promise<void>((resolve, reject) => socket.once('open', () => resolve()).once('error', reject));
    socket.send(JSON.stringify({ type: 'connection_init', payload: { authorization: 'Bearer not-a-token-at-all' } }));
    return closed;
  }

  test('failed connection_inits draw on the budget of the client the proxy names, the one its HTTP requests draw on; past it 4429', async () => {
    expect(await guessFrom('198.51.100.7')).toBe(4401);
    expect(await guessFrom('198.51.100.7')).toBe(4401);
    expect(await guessFrom('198.51.100.7')).toBe(4429);
    const http = (address: string) => supertest(h.app).get('/users').set({ Accept: 'application/vnd.pagerduty+json;version=2', 'X-Forwarded-For': address });
    expect((await http('198.51.100.7')).status).toBe(429);
    expect((await http('198.51.100.8')).status).toBe(401);
  });
});
