// What bench/run.ts and bench/scale-out.ts share: the servers under test as child processes, and
// autocannon driving one scenario against one of them. The service under timing is started as
// deployed (startService: dist/src/main.js, configuration from the environment only); the
// bench-only processes (bench/app-server.ts for statement counting, the baseline) answer over IPC.
import { execFile, fork, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import net from 'node:net';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { BENCH_URLS } from './settings.js';

export const log = (message: string) => process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${message}\n`);
export const here = (file: string) => fileURLToPath(new URL(file, import.meta.url));

/** The service runs with the Node flags `npm start` gives it (package.json `config.serverNodeFlags`), so its heap is measured as deployed. */
const serverNodeFlags = (JSON.parse(readFileSync(here('../../package.json'), 'utf8')) as { config: { serverNodeFlags: string } }).config.serverNodeFlags.split(' ').filter(Boolean);
/**
 * BENCH_PROFILE_DIR: the service, and the baseline, each write a V8 CPU profile there when they stop
 * (node --cpu-prof; the baseline's file names start with `baseline`), so where the service spends
 * what the baseline does not can be read function by function.
 */
const profileFlags = (prefix = 'CPU') => {
  const dir = process.env.BENCH_PROFILE_DIR;
  if (!dir) return [];
  const cpu = ['--cpu-prof', `--cpu-prof-dir=${dir}`, `--cpu-prof-name=${prefix}.\${pid}.cpuprofile`];
  // BENCH_HEAP_PROFILE=1: an allocation profile beside it (bench/allocation-sampling.ts), for where the garbage comes from.
  return process.env.BENCH_HEAP_PROFILE === '1' ? [...cpu, '--import', `${pathToFileURL(here('allocation-sampling.js')).href}?${new URLSearchParams({ dir, prefix })}`] : cpu;
};

export interface Stats {
  statements: number;
  rss: number;
  memory?: Partial<NodeJS.MemoryUsage>;
  heap?: { malloced_memory: number };
  young?: number;
}

export interface Server {
  process: ChildProcess;
  base: string;
  /** `reset` and statement counts only from bench/app-server.ts and the baseline (IPC); `stats` and `stop` from every server. */
  request(kind: 'stats' | 'reset' | 'stop' | 'snapshot', label?: string): Promise<Stats>;
}

/** A bench-only process answering over IPC: bench/app-server.ts (a composition of createApp) or bench/baseline-server.ts. */
export async function startServer(script: string, databaseUrl: string, env: Record<string, string> = {}): Promise<Server> {
  const profile = script === 'baseline-server.js' ? profileFlags('baseline') : script === 'app-server.js' && !env.BENCH_COUNT_STATEMENTS ? profileFlags() : [];
  // NODE_ENV=production as deployed (docs/operating.md, "Configuration"): graphql-js, for one, skips its development-mode checks then.
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

const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const probe = net.createServer().once('error', reject).listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as net.AddressInfo;
      probe.close(() => resolve(port));
    });
  });

/** Resident set size of a process, from outside (`VmRSS` in /proc/<pid>/status), in bytes. */
export function residentBytes(pid: number): number {
  const kilobytes = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  return kilobytes ? Number(kilobytes) * 1024 : 0;
}

/** The figures of prom-client's default metrics that the memory tables show. */
function memoryFromMetrics(text: string): Pick<Stats, 'memory' | 'young'> {
  const value = (pattern: RegExp) => {
    const match = pattern.exec(text);
    return match ? Number(match[1]) : undefined;
  };
  return {
    memory: {
      heapTotal: value(/^nodejs_heap_size_total_bytes (\S+)$/m),
      heapUsed: value(/^nodejs_heap_size_used_bytes (\S+)$/m),
      external: value(/^nodejs_external_memory_bytes (\S+)$/m),
    },
    young: value(/^nodejs_heap_space_size_total_bytes\{space="new"\} (\S+)$/m),
  };
}

/**
 * The service as deployed: `node <config.serverNodeFlags> dist/src/main.js`, NODE_ENV=production,
 * configured through the environment only (nothing inherited from the bench's own environment but
 * PATH), the access log at info on stdout into /dev/null. Its memory is read from outside
 * (/proc and `GET /metrics`), and it stops on SIGTERM like under an orchestrator.
 * `env` adds settings (DATABASE_POOLER, DATABASE_REPLICA_URLS, ...); `main` is another build's
 * `dist/src/main.js` (bench/compare.ts times two builds side by side).
 */
export async function startService(databaseUrl: string, env: Record<string, string> = {}, main = here('../src/main.js')): Promise<Server> {
  const port = await freePort();
  const metricsToken = randomBytes(24).toString('hex');
  const settings: Record<string, string> = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    NODE_ENV: 'production',
    DATABASE_URL: databaseUrl,
    PORT: String(port),
    LOG_LEVEL: 'info',
    SECRET_KEY: randomBytes(32).toString('hex'),
    METRICS_TOKEN: metricsToken,
    // The highest budget the configuration takes (per credential and minute): the limiter still runs on every request, and never refuses one here.
    RATE_LIMIT_PER_MINUTE: '1000000',
    // `self` and `html_url` as the baseline writes them, so the bodies stay byte-identical.
    PUBLIC_API_URL: BENCH_URLS.api,
    PUBLIC_WEB_URL: BENCH_URLS.web,
    PUBLIC_FEED_URL: BENCH_URLS.feed,
    // bench/live.ts-like loads open many connections with one key.
    LIVE_MAX_CONNECTIONS_PER_CREDENTIAL: '10000',
    LIVE_MAX_SUBSCRIPTIONS_PER_CONNECTION: '1000',
    // No load balancer to drain: stop as soon as the accepted requests are answered.
    SHUTDOWN_DRAIN_MS: '0',
    SHUTDOWN_GRACE_MS: '5000',
    ...env,
  };
  const child = spawn(process.execPath, [...serverNodeFlags, ...profileFlags(), main], { env: settings, stdio: ['ignore', 'ignore', 'inherit'] });
  const exited = once(child, 'exit');
  const base = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`the service exited with ${child.exitCode} before answering (its stderr is above)`);
    if (Date.now() > deadline) throw new Error('the service did not answer /healthz within 60 s');
    const healthy = await fetch(`${base}/healthz`).then((response) => response.ok, () => false);
    if (healthy) break;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const pid = child.pid!;
  return {
    process: child,
    base,
    async request(kind) {
      if (kind === 'stop') {
        child.kill('SIGTERM');
        const [code] = (await exited) as [number | null];
        if (code !== 0) log(`the service stopped with exit code ${code}`);
        return { statements: 0, rss: 0 };
      }
      if (kind === 'stats') {
        const metrics = await fetch(`${base}/metrics`, { headers: { Authorization: `Bearer ${metricsToken}` } }).then((response) => response.text());
        return { statements: 0, rss: residentBytes(pid), ...memoryFromMetrics(metrics) };
      }
      throw new Error(`the deployed service has no "${kind}": statement counts and heap snapshots come from bench/app-server.ts`);
    },
  };
}

export interface LoadResult {
  rps: number;
  p50: number;
  p99: number;
  failures: number;
  /** The server process's CPU time (user + system, every thread) per completed request, in µs: steadier than throughput on a shared machine. */
  cpuMicros?: number;
  /**
   * Of `cpuMicros`, what threads other than the main one used: V8's workers (parallel scavenges,
   * concurrent marking, compilation) and libuv's pool. A CPU profile (BENCH_PROFILE_DIR) samples
   * only the main thread, so this part of the cost shows nowhere else.
   */
  helperCpuMicros?: number;
}

/**
 * CPU time a process has used so far (utime + stime from /proc/<pid>/stat), in µs; undefined where
 * /proc is not there. With `thread`, that thread's alone.
 */
function cpuMicrosOf(pid: number | undefined, thread?: string): number | undefined {
  try {
    const stat = readFileSync(thread ? `/proc/${pid}/task/${thread}/stat` : `/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may hold spaces); utime and stime are the 14th and 15th.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1_000_000) / CLOCK_TICKS_PER_SECOND;
  } catch {
    return undefined;
  }
}
/** CPU time of a process's threads other than its main thread (from /proc/<pid>/task/<tid>/stat), in µs. */
function helperCpuMicrosOf(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  try {
    let total = 0;
    for (const thread of readdirSync(`/proc/${pid}/task`)) {
      if (Number(thread) === pid) continue;
      // A thread may end between the listing and the read: it then counts nothing.
      total += cpuMicrosOf(pid, thread) ?? 0;
    }
    return total;
  } catch {
    return undefined;
  }
}
/**
 * Starts measuring a server's CPU: the function it returns gives what the server used since, per
 * request (`requests` of them), in all and on helper threads alone; undefined where /proc is not there.
 */
export function cpuMeter(pid: number | undefined): (requests: number) => { cpuMicros?: number; helperCpuMicros?: number } {
  const [cpuBefore, helpersBefore] = [cpuMicrosOf(pid), helperCpuMicrosOf(pid)];
  return (requests) => {
    const [cpuAfter, helpersAfter] = [cpuMicrosOf(pid), helperCpuMicrosOf(pid)];
    const perRequest = (before?: number, after?: number) => (before !== undefined && after !== undefined && requests > 0 ? (after - before) / requests : undefined);
    return { cpuMicros: perRequest(cpuBefore, cpuAfter), helperCpuMicros: perRequest(helpersBefore, helpersAfter) };
  };
}
/** USER_HZ: what Linux counts /proc's CPU times in (100 on every common build). */
const CLOCK_TICKS_PER_SECOND = 100;

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

function autocannonArguments(server: Server, scenario: Scenario, apiKey: string, connections: number): string[] {
  const args = [here('../../node_modules/autocannon/autocannon.js'), '--json', '-c', String(connections), '-m', scenario.method];
  const headers: Record<string, string> = { Authorization: scenario.authorization ?? `Token token=${apiKey}`, 'Content-Type': 'application/json' };
  headers.Accept = acceptFor(scenario.path);
  for (const [name, value] of Object.entries(headers)) args.push('-H', `${name}=${value}`);
  if (scenario.body) args.push('-b', scenario.body);
  args.push(`${server.base}${scenario.path}`);
  return args;
}

/** Drives a scenario for `seconds`, or (`amount`) for exactly that many requests. */
export async function load(server: Server, scenario: Scenario, apiKey: string, { connections, seconds, amount }: { connections: number; seconds?: number; amount?: number }): Promise<LoadResult> {
  const args = autocannonArguments(server, scenario, apiKey, connections);
  args.splice(1, 0, ...(amount ? ['-a', String(amount)] : ['-d', String(seconds ?? 5)]));
  const cpuSince = cpuMeter(server.process.pid);
  const { stdout } = await promisify(execFile)(process.execPath, args, { maxBuffer: 64 * 1024 * 1024 });
  const result = JSON.parse(stdout) as { requests: { average: number; total: number }; latency: { p50: number; p99: number }; non2xx: number; errors: number };
  return { rps: result.requests.average, p50: result.latency.p50, p99: result.latency.p99, failures: result.non2xx + result.errors, ...cpuSince(result.requests.total) };
}

export interface SyscallCount {
  /** System calls of the whole process (every thread) per request. */
  perRequest: number;
  /** The most frequent calls, per request, most frequent first. */
  top: Array<{ name: string; perRequest: number }>;
}

/**
 * System calls a server makes per request: `strace -c -f -p <pid>` (every thread, libuv's pool
 * and V8's included) attached around `send`, which makes `requests` requests. Not timed: strace
 * slows every call down, so only the counts mean anything.
 */
export async function syscallsPerRequest(server: Server, requests: number, send: () => Promise<unknown>): Promise<SyscallCount> {
  const summary = path.join(mkdtempSync(path.join(os.tmpdir(), 'aag-strace-')), 'summary.txt');
  const tracer = spawn(process.env.BENCH_STRACE ?? '/usr/bin/strace', ['-c', '-f', '-o', summary, '-p', String(server.process.pid)], { stdio: ['ignore', 'ignore', 'pipe'] });
  let messages = '';
  tracer.stderr!.on('data', (chunk: Buffer) => (messages += chunk.toString()));
  const ended = once(tracer, 'exit');
  // Attached once strace has reported its first thread and then gone quiet (it attaches the others at once).
  for (let waited = 0, seen = 0; ; waited += 100) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    if (tracer.exitCode !== null) throw new Error(`strace could not attach to ${server.process.pid}: ${messages}`);
    if (messages.includes('attached') && messages.length === seen) break;
    if (waited > 10_000) throw new Error(`strace did not attach to ${server.process.pid} within 10 s: ${messages}`);
    seen = messages.length;
  }
  await send();
  tracer.kill('SIGINT');
  await ended;
  const rows = readFileSync(summary, 'utf8').split('\n').map((line) => line.trim().split(/\s+/)).filter((cells) => cells.length >= 5 && /^\d+(\.\d+)?$/.test(cells[0]!));
  // Columns: % time, seconds, usecs/call, calls, [errors], syscall.
  const counts = rows.map((cells) => ({ name: cells[cells.length - 1]!, calls: Number(cells[3]) }));
  const total = counts.find((row) => row.name === 'total')?.calls ?? 0;
  const top = counts.filter((row) => row.name !== 'total').sort((a, b) => b.calls - a.calls).slice(0, 8);
  return { perRequest: total / requests, top: top.map((row) => ({ name: row.name, perRequest: row.calls / requests })) };
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
