// End-to-end check of the embedded default, as a newcomer runs it: the built server with no
// DATABASE_URL on a fresh data directory, then the CLI against the same directory.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import assert from 'node:assert/strict';

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'aag-smoke-'));
const env = { ...process.env, DATA_DIR: dataDir, NODE_ENV: 'development', LOG_LEVEL: 'info' };
delete env.DATABASE_URL;
delete env.REDIS_URL;

const freePort = () => new Promise((resolve) => {
  const server = net.createServer().listen(0, '127.0.0.1', () => {
    const { port } = server.address();
    server.close(() => resolve(port));
  });
});

// The server starts with the Node flags `npm start` gives it (package.json config.serverNodeFlags).
const serverNodeFlags = JSON.parse(fs.readFileSync('package.json', 'utf8')).config.serverNodeFlags.split(' ').filter(Boolean);

function startServer(port) {
  const child = spawn(process.execPath, [...serverNodeFlags, 'dist/src/main.js'], { env: { ...env, PORT: String(port), PUBLIC_API_URL: `http://127.0.0.1:${port}` }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (chunk) => (output += chunk));
  child.stderr.on('data', (chunk) => (output += chunk));
  const ready = new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start in 60 s:\n${output}`)), 60_000);
    const poll = setInterval(() => {
      if (output.includes('account access gateway listening')) {
        clearInterval(poll);
        clearTimeout(timer);
        resolve();
      }
    }, 100);
    child.once('exit', (code) => {
      clearInterval(poll);
      clearTimeout(timer);
      reject(new Error(`server exited early (${code}):\n${output}`));
    });
  });
  return { child, ready, output: () => output };
}

async function stopServer(server) {
  const exited = new Promise((resolve) => server.child.once('exit', (code) => resolve(code)));
  server.child.kill('SIGTERM');
  return exited;
}

const cli = (...args) => spawnSync(process.execPath, ['dist/src/cli/accessctl.js', ...args], { env, encoding: 'utf8', timeout: 60_000 });

const port = await freePort();
const base = `http://127.0.0.1:${port}`;
let server = startServer(port);
try {
  await server.ready;
  const key = /Full-access API key \(shown only now\): (\S+)/.exec(server.output())?.[1];
  assert.ok(key, `the first start prints the demo owner's key:\n${server.output()}`);
  const headers = { Authorization: `Token token=${key}`, Accept: 'application/vnd.pagerduty+json;version=2', 'Content-Type': 'application/json' };

  const created = await fetch(`${base}/users`, { method: 'POST', headers, body: JSON.stringify({ user: { name: 'Smoke Test', email: 'smoke@example.com' } }) });
  assert.equal(created.status, 201, await created.clone().text());
  const { user } = await created.json();
  const shown = await fetch(`${base}/users/${user.id}`, { headers });
  assert.equal(shown.status, 200);
  assert.equal((await shown.json()).user.email, 'smoke@example.com');
  const graphql = await fetch(`${base}/graphql`, { method: 'POST', headers: { ...headers, Accept: 'application/json' }, body: JSON.stringify({ query: '{ users(query: "smoke") { totalCount nodes { id } } }' }) });
  const graphqlBody = await graphql.json();
  assert.deepEqual(graphqlBody.data.users, { totalCount: 1, nodes: [{ id: user.id }] });
  assert.equal((await fetch(`${base}/readyz`)).status, 200);
  const logLines = server.output().split('\n').filter((line) => line.startsWith('{'));
  assert.ok(logLines.length > 0 && logLines.every((line) => !line.includes(key)), 'the key is shown in the one-time banner, never in a log line');

  const beside = cli('migrate');
  assert.equal(beside.status, 0, `the CLI works beside the running server, through the socket it serves: ${beside.stderr}`);

  assert.equal(await stopServer(server), 0, 'SIGTERM stops the server cleanly');

  server = startServer(port);
  await server.ready;
  assert.ok(!/Full-access API key/.test(server.output()), 'a restart does not bootstrap again');
  const again = await fetch(`${base}/users/${user.id}`, { headers });
  assert.equal(again.status, 200, 'data survives a restart');
  assert.equal(await stopServer(server), 0);

  const bootstrap = cli('bootstrap', '--account-name', 'Second', '--owner-email', 'second@example.com', '--json');
  assert.equal(bootstrap.status, 0, bootstrap.stderr);
  const result = JSON.parse(bootstrap.stdout);
  assert.match(result.account.id, /^P[A-Z0-9]{6}$/);
  assert.equal(result.owner.email, 'second@example.com');
  assert.equal(typeof result.api_key, 'string');
  console.log('embedded smoke: 1 passed, 0 failed');
} catch (error) {
  server.child.kill('SIGKILL');
  console.error(error);
  console.log('embedded smoke: 0 passed, 1 failed');
  process.exitCode = 1;
} finally {
  fs.rmSync(dataDir, { recursive: true, force: true });
}
