import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { openEmbedded, type EmbeddedConnection } from './database.js';
import { embeddedSocketClientOptions, notificationScanner } from './embedded-socket.js';
import { listenOnPglite, type NotificationListener } from './notification-listener.js';

function notificationMessage(channel: string, payload: string): Buffer {
  const body = Buffer.concat([Buffer.alloc(4), Buffer.from(`${channel}\0${payload}\0`, 'utf8')]);
  const header = Buffer.alloc(5);
  header.write('A', 0, 'ascii');
  header.writeInt32BE(body.length + 4, 1);
  return Buffer.concat([header, body]);
}

function otherMessage(type: string, size: number): Buffer {
  const message = Buffer.alloc(5 + size, 0x41);
  message.write(type, 0, 'ascii');
  message.writeInt32BE(size + 4, 1);
  return message;
}

describe('notificationScanner', () => {
  test('finds every notification in a protocol stream however it is cut into chunks, and nothing else', () => {
    const stream = Buffer.concat([otherMessage('C', 13), notificationMessage('live_changes', '[{"a":"é"}]'), otherMessage('D', 300), notificationMessage('other', 'x'), otherMessage('Z', 1)]);
    for (let cut = 1; cut <= stream.length; cut += 7) {
      const found: string[] = [];
      const scan = notificationScanner((channel, payload) => found.push(`${channel}:${payload}`));
      for (let at = 0; at < stream.length; at += cut) scan(stream.subarray(at, at + cut));
      expect(found).toEqual(['live_changes:[{"a":"é"}]', 'other:x']);
    }
  });
});

describe('embedded: notifications of a socket client (accessctl beside the server)', () => {
  let dataDir: string;
  let embedded: EmbeddedConnection;
  let listener: NotificationListener;
  const heard: string[] = [];

  beforeAll(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'aag-listen-'));
    embedded = await openEmbedded(dataDir, 'serve');
    listener = await listenOnPglite(embedded.pglite!, 'live_changes', { notification: (payload) => heard.push(payload), reconnected: () => {} });
    // Starting PGlite (a WebAssembly PostgreSQL) takes seconds, longer on a busy machine.
  }, 120_000);
  afterAll(async () => {
    await listener.close();
    await embedded.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  test('reach the server\'s listener when committed, not when rolled back', async () => {
    const options = embeddedSocketClientOptions(dataDir);
    const client = new pg.Client({ host: options.host, port: options.port, user: options.user, database: options.dbName });
    await client.connect();
    try {
      await client.query('begin');
      await client.query("select pg_notify('live_changes', 'rolled back')");
      await client.query('rollback');
      await client.query('begin');
      await client.query("select pg_notify('live_changes', 'from the CLI')");
      await client.query('commit');
    } finally {
      await client.end();
    }
    await embedded.pglite!.query("select pg_notify('live_changes', 'from the server')");
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(heard).toEqual(['from the CLI', 'from the server']);
  });
});
