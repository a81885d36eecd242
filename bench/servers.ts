// What bench/run.ts and bench/scale-out.ts share: the servers under test as child processes, and
// autocannon driving one scenario against one of them.
import { execFile, fork, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

export const log = (message: string) => process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${message}\n`);
export const here = (file: string) => fileURLToPath(new URL(file, import.meta.url));

/** The service runs with the Node flags `npm start` gives it (package.json `config.serverNodeFlags`), so its heap is measured as deployed. */
const serverNodeFlags = (JSON.parse(readFileSync(here('../../package.json'), 'utf8')) as { config: { serverNodeFlags: string } }).config.serverNodeFlags.split(' ').filter(Boolean);

export interface Stats {
  statements: number;
  rss: number;
  memory?: NodeJS.MemoryUsage;
  heap?: { malloced_memory: number };
  young?: number;
}

export interface Server {
  process: ChildProcess;
  base: string;
  request(kind: 'stats' | 'reset' | 'stop' | 'snapshot', label?: string): Promise<Stats>;
}

export async function startServer(script: string, databaseUrl: string, env: Record<string, string> = {}): Promise<Server> {
  // BENCH_PROFILE_DIR: the service writes a V8 CPU profile there when it stops (node --cpu-prof).
  const profile = script === 'app-server.js' && process.env.BENCH_PROFILE_DIR && !env.BENCH_COUNT_STATEMENTS ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_PROFILE_DIR}`] : [];
  // NODE_ENV=production as deployed (README, configuration): graphql-js, for one, skips its development-mode checks then.
  const mode = script === 'app-server.js' ? { NODE_ENV: 'production' } : {};
  const child = fork(here(script), [], { env: { ...process.env, ...mode, ...env, BENCH_DATABASE_URL: databaseUrl }, stdio: ['ignore', 'ignore', 'inherit', 'ipc'], execArgv: script === 'app-server.js' ? [...serverNodeFlags, ...profile] : profile });
  const [{ port }] = (await once(child, 'message')) as [{ port: number }];
  return {
    process: child,
    base: `http://127.0.0.1:${port}`,
    async request(kind, label) {
      const reply = kind === 'stats' || kind === 'snapshot' ? once(child, 'message') : undefined;
      child.send({ kind, label });
      if (kind === 'stop') await once(child, 'exit');
      return reply ? ((await reply)[0] as Stats) : { statements: 0, rss: 0 };
    },
  };
}

export interface LoadResult { rps: number; p50: number; p99: number; failures: number }

export interface Scenario {
  name: string;
  method: 'GET' | 'POST';
  path: string;
  body?: string;
  baseline: boolean;
  /** Instead of the account API key (the SCIM scenarios send a provisioning token). */
  authorization?: string;
}

const acceptFor = (path: string) => (path === '/graphql' ? 'application/json' : path.startsWith('/scim/') ? 'application/scim+json' : 'application/vnd.pagerduty+json;version=2');

export async function load(server: Server, scenario: Scenario, apiKey: string, { connections, seconds }: { connections: number; seconds: number }): Promise<LoadResult> {
  const args = [here('../../node_modules/autocannon/autocannon.js'), '--json', '-c', String(connections), '-d', String(seconds), '-m', scenario.method];
  const headers: Record<string, string> = { Authorization: scenario.authorization ?? `Token token=${apiKey}`, 'Content-Type': 'application/json' };
  headers.Accept = acceptFor(scenario.path);
  for (const [name, value] of Object.entries(headers)) args.push('-H', `${name}=${value}`);
  if (scenario.body) args.push('-b', scenario.body);
  args.push(`${server.base}${scenario.path}`);
  const { stdout } = await promisify(execFile)(process.execPath, args, { maxBuffer: 64 * 1024 * 1024 });
  const result = JSON.parse(stdout) as { requests: { average: number }; latency: { p50: number; p99: number }; non2xx: number; errors: number };
  return { rps: result.requests.average, p50: result.latency.p50, p99: result.latency.p99, failures: result.non2xx + result.errors };
}

/** `credential`: an API key (sent as `Token token=`) or a whole Authorization header value. */
export async function call(server: Server, credential: string, method: string, path: string, body?: string) {
  const response = await fetch(`${server.base}${path}`, {
    method,
    headers: {
      Authorization: /^(Bearer|Token) /.test(credential) ? credential : `Token token=${credential}`,
      'Content-Type': 'application/json',
      Accept: acceptFor(path),
    },
    body,
  });
  return { status: response.status, text: await response.text() };
}

export const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
