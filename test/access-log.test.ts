// The access log as deployed: the built entry point (dist/src/main.js, `npm run build` first),
// configured from the environment, its buffered stdout read by the test. No line may be lost on
// SIGTERM, and a quiet server's line still appears within the flush bound.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { LOG_FLUSH_INTERVAL_MS } from '../src/logging/logger.js';
import { openTestDatabase, type TestDatabase } from './support/database.js';

const entryPoint = path.resolve('dist/src/main.js');
const serverNodeFlags = (JSON.parse(readFileSync('package.json', 'utf8')) as { config: { serverNodeFlags: string } }).config.serverNodeFlags.split(' ').filter(Boolean);

let database: TestDatabase | undefined;
let dataDir: string | undefined;
beforeAll(async () => {
  if (!existsSync(entryPoint)) throw new Error(`${entryPoint} is missing: run npm run build first`);
  // With DATABASE_URL a database of this file's own on that server; without, the embedded database in a fresh directory.
  if (process.env.DATABASE_URL) database = await openTestDatabase();
  else dataDir = mkdtempSync(path.join(os.tmpdir(), 'aag-access-log-'));
});
afterAll(async () => {
  await database?.close();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

const freePort = () =>
  new Promise<number>((resolve) => {
    const probe = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as net.AddressInfo;
      probe.close(() => resolve(port));
    });
  });

interface Service {
  child: ChildProcess;
  port: number;
  /** Parsed lines written to stdout so far. */
  lines(): Array<Record<string, unknown>>;
  exited: Promise<number | null>;
}

async function startService(): Promise<Service> {
  const port = await freePort();
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    NODE_ENV: 'production',
    PORT: String(port),
    LOG_LEVEL: 'info',
    SECRET_KEY: randomBytes(32).toString('hex'),
    RATE_LIMIT_PER_MINUTE: '1000000',
    SHUTDOWN_DRAIN_MS: '0',
    // The test names each request by its X-Request-Id, as a proxy in front would: believed from loopback only.
    TRUST_PROXY: 'loopback',
    ...(database ? { DATABASE_URL: database.url! } : { DATA_DIR: dataDir! }),
  };
  const child = spawn(process.execPath, [...serverNodeFlags, entryPoint], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const lines = () => stdout.split('\n').filter((line) => line.startsWith('{')).map((line) => JSON.parse(line) as Record<string, unknown>);
  for (const started = Date.now(); !lines().some((line) => line.msg === 'account access gateway listening'); ) {
    if (child.exitCode !== null) throw new Error(`the service exited with ${child.exitCode}:\n${stdout}\n${stderr}`);
    if (Date.now() - started > 60_000) throw new Error(`the service did not start in 60 s:\n${stdout}\n${stderr}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return { child, port, lines, exited };
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 10 });
afterAll(() => agent.destroy());

function get(port: number, requestId: string): Promise<number> {
  return new Promise((resolve, reject) => {
    http
      .get({ host: '127.0.0.1', port, path: '/healthz', agent, headers: { 'X-Request-Id': requestId } }, (response) => {
        response.resume();
        response.on('end', () => resolve(response.statusCode ?? 0));
      })
      .on('error', reject);
  });
}

const accessLines = (service: Service) => service.lines().filter((line) => line.msg === 'request');

test('a single request on a quiet server is logged within the flush bound; every line of a burst is written by the time SIGTERM has stopped the server', async () => {
  const service = await startService();
  try {
    const alone = `alone-${randomUUID()}`;
    expect(await get(service.port, alone)).toBe(200);
    const bound = Date.now() + LOG_FLUSH_INTERVAL_MS + 2_000;
    while (!accessLines(service).some((line) => line.requestId === alone) && Date.now() < bound) await new Promise((resolve) => setTimeout(resolve, 25));
    expect(accessLines(service).filter((line) => line.requestId === alone)).toEqual([expect.objectContaining({ method: 'GET', path: '/healthz', status: 200 })]);

    // Far more than one buffer's worth, ten at a time, so the last lines are still buffered when SIGTERM comes.
    const burst = Array.from({ length: 500 }, (_, i) => `burst-${i}-${randomUUID()}`);
    for (let i = 0; i < burst.length; i += 10) {
      const statuses = await Promise.all(burst.slice(i, i + 10).map((id) => get(service.port, id)));
      expect(statuses.every((status) => status === 200)).toBe(true);
    }
    agent.destroy();
    service.child.kill('SIGTERM');
    expect(await service.exited).toBe(0);

    const logged = accessLines(service).map((line) => line.requestId);
    expect(burst.filter((id) => !logged.includes(id))).toEqual([]);
    expect(logged.filter((id) => id === burst[burst.length - 1])).toHaveLength(1);
    expect(service.lines().at(-1)).toEqual(expect.objectContaining({ msg: 'database closed; stopped' }));
  } finally {
    if (service.child.exitCode === null) service.child.kill('SIGKILL');
  }
}, 120_000);

test('a line logged just before an uncaught exception is still written', async () => {
  const script = `
    const { createLogger } = await import(${JSON.stringify(path.resolve('dist/src/logging/logger.js'))});
    const logger = createLogger({ logLevel: 'info' });
    logger.info('last words');
    setTimeout(() => { throw new Error('crash'); }, 10);
  `;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  expect(code).toBe(1);
  expect(stdout.split('\n').filter(Boolean).map((line) => (JSON.parse(line) as { msg: string }).msg)).toEqual(['last words']);
});
