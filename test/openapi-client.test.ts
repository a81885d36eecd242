import { execFile } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import supertest from 'supertest';
import { startHarness, type Harness } from './support/harness.js';

const run = promisify(execFile);
const projectRoot = process.cwd();
const bin = (relative: string) => path.join(projectRoot, 'node_modules', relative);

/**
 * A client generated from the served document the way an integrator would: openapi-typescript
 * types from /openapi.json, openapi-fetch calls typed by them, compiled by tsc in strict mode,
 * then run against the live server.
 */
const CLIENT = `import createClient from 'openapi-fetch';
import type { paths } from './api.js';

const client = createClient<paths>({
  baseUrl: process.env.BASE_URL!,
  headers: { Authorization: \`Token token=\${process.env.API_KEY}\`, Accept: 'application/vnd.pagerduty+json;version=2' },
});

const { data, error, response } = await client.GET('/users', { params: { query: { limit: 2, total: true, 'include[]': ['teams'] } } });
if (error || !data) throw new Error(\`listing users failed: \${response.status} \${JSON.stringify(error)}\`);
const users: { id: string; name: string; email: string; role: string }[] = data.users;
const total: number | null = data.total;
const more: boolean = data.more;

const me = await client.GET('/users/{id}', { params: { path: { id: users[0]!.id } } });
if (!me.data) throw new Error('showing a user failed');
const email: string = me.data.user.email;

process.stdout.write(JSON.stringify({ status: response.status, ids: users.map((user) => user.id), names: users.map((user) => user.name), total, more, email }));
`;

/** Calls the document does not allow: each must be a compile error, or the types prove nothing. */
const MISUSE = `import createClient from 'openapi-fetch';
import type { paths } from './api.js';

const client = createClient<paths>({ baseUrl: 'http://localhost' });
await client.GET('/no_such_route');
await client.GET('/users', { params: { query: { limit: 'ten' } } });
await client.POST('/users', { body: { user: { email: 'missing-name@example.com' } } });
const listed = await client.GET('/users');
listed.data?.users[0]?.no_such_field;
`;

let h: Harness;
let server: http.Server;
let directory: string;
let compilerOutput: string;
beforeAll(async () => {
  h = await startHarness();
  server = http.createServer(h.app as http.RequestListener);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  directory = fs.mkdtempSync(path.join(os.tmpdir(), 'openapi-client-'));
  fs.symlinkSync(path.join(projectRoot, 'node_modules'), path.join(directory, 'node_modules'), 'dir');
  fs.writeFileSync(path.join(directory, 'package.json'), JSON.stringify({ type: 'module' }));
  const compilerOptions = { strict: true, target: 'es2022', module: 'nodenext', moduleResolution: 'nodenext', skipLibCheck: true, types: ['node'], outDir: 'out' };
  fs.writeFileSync(path.join(directory, 'tsconfig.json'), JSON.stringify({ compilerOptions, files: ['client.ts', 'misuse.ts'] }));
  fs.writeFileSync(path.join(directory, 'openapi.json'), (await supertest(h.app).get('/openapi.json').expect(200)).text);
  await run(process.execPath, [bin('openapi-typescript/bin/cli.js'), 'openapi.json', '--output', 'api.d.ts'], { cwd: directory });
  fs.writeFileSync(path.join(directory, 'client.ts'), CLIENT);
  fs.writeFileSync(path.join(directory, 'misuse.ts'), MISUSE);
  // One compilation for both files (tsc is the slow part): it exits non-zero for misuse.ts and still emits client.js.
  compilerOutput = await run(process.execPath, [bin('typescript/bin/tsc'), '-p', 'tsconfig.json'], { cwd: directory }).then(
    () => '',
    (error: { stdout: string }) => error.stdout,
  );
}, 90_000);
afterAll(async () => {
  await new Promise<void>((resolve) => server?.close(() => resolve()));
  await h?.close();
  if (directory) fs.rmSync(directory, { recursive: true, force: true });
});

test('a client generated from /openapi.json (openapi-typescript + openapi-fetch) compiles in strict mode and lists users', async () => {
  const account = await h.createAccount();
  const alice = await h.createUser(account, { name: 'Alice Generated' });
  await h.createUser(account, { name: 'Bob Generated' });
  await h.createUser(account, { name: 'Carol Generated' });

  expect(compilerOutput.split('\n').filter((line) => line.startsWith('client.ts'))).toEqual([]);
  const { port } = server.address() as AddressInfo;
  const { stdout } = await run(process.execPath, [path.join(directory, 'out', 'client.js')], {
    cwd: directory,
    env: { ...process.env, BASE_URL: `http://127.0.0.1:${port}`, API_KEY: (account.key as { token: string }).token },
  });
  const listed = JSON.parse(stdout);
  // Four users (the owner and three), two per page, ordered by name.
  expect(listed).toMatchObject({ status: 200, names: ['Alice Generated', 'Bob Generated'], total: 4, more: true, email: alice.email });
  expect(listed.ids[0]).toBe(alice.id);
}, 60_000);

test('the generated types refuse calls the document does not allow', () => {
  const lines = compilerOutput.split('\n').filter((line) => line.startsWith('misuse.ts('));
  // One error per misuse line: the unknown route, the string limit, the missing name, the unknown field.
  expect([...new Set(lines.map((line) => /^misuse\.ts\((\d+),/.exec(line)![1]))]).toEqual(['5', '6', '7', '9']);
});
