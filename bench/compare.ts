// `npm run bench:compare -- <base-rev> [scenario filter]`: this build against the build of <base-rev>
// and the hand-written baseline, in one run, on one seeded database (docs/BENCHMARKS.md, "Comparing
// two builds"). The base revision is built in a git worktree under the system's temporary directory
// (kept between runs, rebuilt when its revision changes). Each round drives every side once, the
// order rotating from round to round; a ratio is taken within a round, so the machine's drift
// between rounds cancels, and the table gives each ratio's median with its spread (min-max).
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, symlinkSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { baselineReads, label, prepare, searchReads } from './seed.js';
import { WRITERS_SCENARIO, driveWriters, writerUsers } from './writers.js';
import { call, here, load, log, median, startServer, startService, type LoadResult, type Scenario, type Server } from './servers.js';

const serverUrl = process.env.DATABASE_URL;
const [baseRevision, filter] = process.argv.slice(2);
if (!serverUrl || !baseRevision) {
  process.stderr.write('Usage: DATABASE_URL=postgres://... npm run bench:compare -- <base-rev> [scenario filter, e.g. "GET /users"]\n');
  process.exit(2);
}
const size = Number(process.env.BENCH_SIZES?.split(',')[0] ?? 10_000);
const seconds = Number(process.env.BENCH_SECONDS ?? 5);
const rounds = Number(process.env.BENCH_ROUNDS ?? 6);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 10);
const warmUpSeconds = Number(process.env.BENCH_WARMUP_SECONDS ?? 3);
const repository = here('../..');

const git = (...args: string[]) => execFileSync('git', ['-C', repository, ...args], { encoding: 'utf8' }).trim();

/** The base revision built in its own worktree: its node_modules are this checkout's when the lock files agree. */
function buildBase(revision: string): string {
  const commit = git('rev-parse', '--verify', `${revision}^{commit}`);
  const worktree = path.join(os.tmpdir(), `aag-compare-${commit.slice(0, 12)}`);
  if (!existsSync(worktree)) git('worktree', 'add', '--detach', worktree, commit);
  const lockOf = (dir: string) => readFileSync(path.join(dir, 'package-lock.json'), 'utf8');
  if (!existsSync(path.join(worktree, 'node_modules'))) {
    if (lockOf(worktree) === lockOf(repository)) symlinkSync(path.join(repository, 'node_modules'), path.join(worktree, 'node_modules'));
    else execFileSync('npm', ['install', '--no-audit', '--no-fund'], { cwd: worktree, stdio: ['ignore', 'ignore', 'inherit'] });
  }
  const main = path.join(worktree, 'dist/src/main.js');
  if (!existsSync(main)) {
    log(`building ${revision} (${commit.slice(0, 12)}) in ${worktree}`);
    execFileSync('npm', ['run', 'build', '--silent'], { cwd: worktree, stdio: ['ignore', 'ignore', 'inherit'] });
  }
  return main;
}

interface Side {
  name: string;
  server: Server;
  runs: LoadResult[];
}

const fixed = (value: number, digits = 2) => value.toFixed(digits);
/** A run's server CPU per request, and the part of it on threads other than the main one. */
const cpuText = (run: LoadResult) => `${fixed(run.cpuMicros ?? Number.NaN, 0)} µs CPU per request (${fixed(run.helperCpuMicros ?? Number.NaN, 0)} on helper threads)`;
const spread = (values: number[], digits = 2) => `${fixed(median(values), digits)} (${fixed(Math.min(...values), digits)}-${fixed(Math.max(...values), digits)})`;

/** Per round, the ratio of two sides' throughput (each side ran once in every round). */
const ratios = (over: Side, under: Side) => over.runs.map((run, round) => run.rps / under.runs[round]!.rps);
/**
 * Per round, head's server CPU per request over base's (below 1: head spends less). On a machine
 * whose neighbours take its cores at random, CPU per request moves less from round to round than
 * throughput does, so it is the figure to read for a change of a few percent.
 */
const cpuRatios = (head: Side, base: Side) => head.runs.map((run, round) => (run.cpuMicros ?? Number.NaN) / (base.runs[round]!.cpuMicros ?? Number.NaN));

async function compareScenario(scenario: Scenario, sides: Side[], apiKey: string): Promise<string> {
  const answers = await Promise.all(sides.map((side) => call(side.server, apiKey, scenario.method, scenario.path, scenario.body)));
  answers.forEach((answer, index) => {
    if (answer.status !== 200 || answer.text !== answers[0]!.text) throw new Error(`${scenario.name}: ${sides[index]!.name} answered ${answer.status} or other bytes: ${answer.text.slice(0, 300)}`);
  });
  for (const side of sides) if (warmUpSeconds > 0) await load(side.server, scenario, apiKey, { connections, seconds: warmUpSeconds });
  return compareRounds(scenario.name, sides, (server) => load(server, scenario, apiKey, { connections, seconds }));
}

/** The writers' scenario: the same rounds, each side's writers driven from this process. */
async function compareWriters(sides: Side[], apiKey: string): Promise<string> {
  const writers = await writerUsers(prepared);
  for (const side of sides) if (warmUpSeconds > 0) await driveWriters(side.server, apiKey, writers, warmUpSeconds);
  return compareRounds(WRITERS_SCENARIO, sides, async (server) => {
    const run = await driveWriters(server, apiKey, writers, seconds);
    return { rps: run.rps, p50: Number.NaN, p99: Number.NaN, failures: 0, cpuMicros: run.cpuMicros, helperCpuMicros: run.helperCpuMicros };
  });
}

/** `rounds` rounds, each driving every side once in an order that rotates; one table row of medians and spreads. */
async function compareRounds(name: string, sides: Side[], drive: (server: Server) => Promise<LoadResult>): Promise<string> {
  for (const side of sides) side.runs = [];
  for (let round = 0; round < rounds; round++) {
    const order = sides.map((_, index) => sides[(index + round) % sides.length]!);
    for (const side of order) {
      const result = await drive(side.server);
      if (result.failures) throw new Error(`${name}: ${side.name} had ${result.failures} failed requests`);
      side.runs.push(result);
    }
    log(`${name}: round ${round + 1}: ${sides.map((side) => `${side.name} ${fixed(side.runs.at(-1)!.rps, 0)} req/s, ${cpuText(side.runs.at(-1)!)}`).join('; ')}`);
  }
  // A scenario no hand-written baseline answers (search) has only head and base: its baseline cells are dashes.
  const [head, base, baseline] = sides as [Side, Side, Side | undefined];
  const cpu = (side: Side | undefined) => (side ? fixed(median(side.runs.map((run) => run.cpuMicros ?? Number.NaN)), 0) : '-');
  const helpers = (side: Side | undefined) => (side ? fixed(median(side.runs.map((run) => run.helperCpuMicros ?? Number.NaN)), 0) : '-');
  const overBaseline = (side: Side) => (baseline ? spread(ratios(side, baseline)) : '-');
  return `| ${name} | ${spread(head.runs.map((run) => run.rps), 0)} | ${spread(base.runs.map((run) => run.rps), 0)} | ${baseline ? spread(baseline.runs.map((run) => run.rps), 0) : '-'} `
    + `| ${overBaseline(head)} | ${overBaseline(base)} | ${spread(ratios(head, base))} | ${cpu(head)} / ${cpu(base)} / ${cpu(baseline)} `
    + `| ${helpers(head)} / ${helpers(base)} / ${helpers(baseline)} | ${spread(cpuRatios(head, base))} |`;
}

const baseMain = buildBase(baseRevision);
const headRevision = `${git('rev-parse', '--short=12', 'HEAD')}${git('status', '--porcelain').length ? ' + uncommitted changes' : ''}`;
const prepared = await prepare(size, { serverUrl, databasePrefix: process.env.BENCH_DB_PREFIX ?? 'aag_bench', reuse: process.env.BENCH_REUSE === '1' });
const sides: Side[] = [
  { name: 'head', server: await startService(prepared.databaseUrl), runs: [] },
  { name: 'base', server: await startService(prepared.databaseUrl, {}, baseMain), runs: [] },
  { name: 'baseline', server: await startServer('baseline-server.js', prepared.databaseUrl), runs: [] },
];
const output = [
  `Compared ${new Date().toISOString()}: head ${headRevision} against base ${baseRevision} (${git('rev-parse', '--short=12', baseRevision)}) and the hand-written baseline; `
    + `${label(size)} users; ${os.cpus().length} cores; load average at start ${os.loadavg().map((value) => value.toFixed(2)).join(' ')}; `
    + `${connections} connections, ${warmUpSeconds} s warm-up per side, ${rounds} rounds of ${seconds} s per side, the order rotating each round.`,
  '',
  '| scenario | head req/s | base req/s | baseline req/s | head / baseline | base / baseline | head / base | server CPU µs per request (head / base / baseline) | of which helper threads (GC, libuv) | CPU per request, head / base |',
  '|---|---|---|---|---|---|---|---|---|---|',
];
const chosen = (name: string) => !filter || filter.split('|').some((part) => name.includes(part));
try {
  for (const scenario of baselineReads(prepared).filter((candidate) => chosen(candidate.name))) {
    output.push(await compareScenario(scenario, sides, prepared.apiKey));
  }
  // Only when asked for by name ("search"): head and base alone.
  for (const scenario of searchReads(prepared).filter((candidate) => filter && chosen(candidate.name))) {
    output.push(await compareScenario(scenario, sides.slice(0, 2), prepared.apiKey));
  }
  if (chosen(WRITERS_SCENARIO)) output.push(await compareWriters(sides, prepared.apiKey));
} finally {
  for (const side of sides) await side.server.request('stop');
}
output.push('', 'Each cell: median (min-max) over the rounds; a ratio is taken within each round.');
process.stdout.write(`${output.join('\n')}\n`);
