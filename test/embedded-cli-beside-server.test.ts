import 'reflect-metadata';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import supertest from 'supertest';
import { bootstrapAccount } from '../src/accounts/bootstrap.js';
import { createApp, type App } from '../src/app/create-app.js';
import { allCommitHooks, allEntities } from '../src/app/features.js';
import { createRateLimiter } from '../src/auth/rate-limit.js';
import { openDatabase, type Database } from '../src/db/database.js';
import { createLogger } from '../src/logging/logger.js';
import { TEST_SETTINGS } from './support/harness.js';

const repository = path.resolve(import.meta.dirname, '..');
const V2 = 'application/vnd.pagerduty+json;version=2';

/** Runs the real `accessctl` (from the sources) as a separate process on `dataDir`, with no DATABASE_URL (nor a pooler for it). */
function accessctl(dataDir: string, ...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const env: NodeJS.ProcessEnv = { ...process.env, DATA_DIR: dataDir, LOG_LEVEL: 'silent', NODE_OPTIONS: '' };
  delete env.DATABASE_URL;
  delete env.DATABASE_POOLER;
  delete env.DATABASE_LISTEN_URL;
  return new Promise((resolve) => {
    execFile(process.execPath, ['--import', './test/support/ts-loader.mjs', 'src/cli/accessctl.ts', ...args], { cwd: repository, env, timeout: 60_000 }, (error, stdout, stderr) => {
      resolve({ code: error ? Number((error as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
  });
}

describe('accessctl beside the running embedded server', () => {
  let dataDir: string;
  let database: Database | undefined;
  let server: App | undefined;
  let ownerKey: string;
  let accountId: string;

  beforeAll(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'aag-embedded-'));
    database = await openDatabase({ databaseUrl: undefined, dataDir, entities: allEntities(), commitHooks: allCommitHooks(), embeddedAccess: 'serve' });
    await database.migrate();
    const logger = createLogger({ logLevel: 'silent' });
    server = await createApp({ settings: TEST_SETTINGS, database, logger, serverSecret: randomBytes(32), rateLimiter: createRateLimiter({ perMinute: 1_000_000, logger }) });
    const demo = await database.transactions.run(database.em(), (tx) => bootstrapAccount(tx, { accountName: 'Beside', ownerEmail: 'owner@beside.example', ownerName: 'Owner' }));
    ownerKey = demo.apiKey;
    accountId = demo.account.id;
    // A fresh embedded database runs PGlite's initdb: seconds on a quiet machine, far more on a busy one.
  }, 180_000);
  afterAll(async () => {
    await server?.stop();
    await database?.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  test('the socket is the owner\'s only', () => {
    const directory = path.join(dataDir, 'socket');
    expect(fs.statSync(directory).mode & 0o777).toBe(0o700);
    const socket = fs.statSync(path.join(directory, '.s.PGSQL.5432'));
    expect(socket.isSocket()).toBe(true);
    expect(socket.mode & 0o777).toBe(0o600);
  });

  test('accessctl works on the data the server serves (both ways), and the server keeps answering meanwhile', async () => {
    const api = supertest(server!.app);
    // The CLI must see the account the server made, and the server must accept the key the CLI made.
    const running = accessctl(dataDir, 'api-keys', 'create', '--account', accountId, '--read-only', '--json');
    const statusesMeanwhile: number[] = [];
    let done = false;
    void running.then(() => (done = true));
    while (!done) statusesMeanwhile.push((await api.get('/users').set({ Accept: V2, Authorization: `Token token=${ownerKey}` })).status);
    const created = await running;
    expect(created.stderr).not.toMatch(/in use by another process/);
    expect(created.code).toBe(0);
    process.stdout.write(`cli beside server: api-keys create ran while the server answered ${statusesMeanwhile.length} requests\n`);
    expect(statusesMeanwhile.length).toBeGreaterThan(0);
    expect(new Set(statusesMeanwhile)).toEqual(new Set([200]));

    const { api_key: readOnlyKey } = JSON.parse(created.stdout) as { api_key: string };
    const withKey = await api.get('/users').set({ Accept: V2, Authorization: `Token token=${readOnlyKey}` });
    expect(withKey.status).toBe(200);
    expect(withKey.body.users.map((user: { email: string }) => user.email)).toEqual(['owner@beside.example']);
    expect((await api.post('/users').set({ Accept: V2, Authorization: `Token token=${readOnlyKey}` }).send({ user: { name: 'X', email: 'x@beside.example' } })).status).toBe(403);
  }, 120_000);

  test('with the lock held by a live process that serves no socket, the CLI fails with a clear message', async () => {
    const other = fs.mkdtempSync(path.join(os.tmpdir(), 'aag-embedded-held-'));
    try {
      fs.writeFileSync(path.join(other, 'embedded.lock'), String(process.pid));
      const refused = await accessctl(other, 'migrate');
      expect(refused.code).toBe(1);
      expect(refused.stderr).toContain(`in use by another process (pid ${process.pid})`);
      expect(refused.stderr).toContain('DATABASE_URL=postgres://');
    } finally {
      fs.rmSync(other, { recursive: true, force: true });
    }
  }, 60_000);
});
