// `DATABASE_URL=postgres://... npm run bench` (see docs/BENCHMARKS.md). For each size in BENCH_SIZES
// (default 10,000 and 1,000,000 users) it seeds the database `aag_bench_<size>` on that server,
// starts the service as deployed (dist/src/main.js, NODE_ENV=production, configured through the
// environment; bench/servers.ts startService) and the hand-written baseline (bench/baseline-server.ts)
// as child processes, checks that both answer the same bytes, counts SQL statements per request
// (on a separate bench/app-server.ts instance, which can count them),
// then drives each scenario with autocannon from its own process in alternating rounds. Writes are
// timed one request at a time (their state is reset between requests). Markdown on stdout.
import 'reflect-metadata';
import { performance } from 'node:perf_hooks';
import os from 'node:os';
import pg from 'pg';
import { allCommitHooks, allEntities } from '../src/app/features.js';
import { openDatabase } from '../src/db/database.js';
import { SEARCH_ALWAYS_INDEXED, SEARCH_WALK_BUDGET, firstMatchAt, searchIndexedCap, useIndexedSearch, walkSkips } from '../src/users/search/search-planner.js';
import { userListStatements } from '../src/users/search/user-list-statements.js';
import { readPath } from '../src/db/read-path.js';
import { call, load, log, median, startServer, startService, syscallsPerRequest, type LoadResult, type Scenario, type Server, type Stats, type SyscallCount } from './servers.js';
import { scaleOutReport, scaleOutSettings } from './scale-out.js';
import { baselineReads, label, lateTerm, prepare, searchReads } from './seed.js';

const serverUrl = process.env.DATABASE_URL;
if (!serverUrl) {
  process.stderr.write('Set DATABASE_URL to a PostgreSQL server; the benchmark creates the databases aag_bench_<size> there.\n');
  process.exit(2);
}
const sizes = (process.env.BENCH_SIZES ?? '10000,1000000').split(',').map(Number);
const seconds = Number(process.env.BENCH_SECONDS ?? 5);
const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 10);
/** Seconds of untimed load on each server before a read scenario's timed rounds. */
const warmUpSeconds = Number(process.env.BENCH_WARMUP_SECONDS ?? 3);
const writeIterations = Number(process.env.BENCH_WRITE_ITERATIONS ?? 30);
/** The SCIM first sync: this many users created one POST at a time over BENCH_SYNC_CONNECTIONS connections, through SCIM and through REST. */
const syncUsers = Number(process.env.BENCH_SYNC_USERS ?? 10_000);
const syncConnections = Number(process.env.BENCH_SYNC_CONNECTIONS ?? 4);
/**
 * BENCH_SYSCALLS=1: per scenario and side, `strace -c -f` on the server around BENCH_SYSCALL_REQUESTS
 * requests (default 2,000 over the load's connections; writes: 100 one at a time), not timed.
 */
const syscalls = process.env.BENCH_SYSCALLS === '1';
const syscallRequests = Number(process.env.BENCH_SYSCALL_REQUESTS ?? 2_000);
const syscallWriteRequests = Math.min(100, syscallRequests);
/** Only the scenarios whose name contains this (profiling one request kind). */
const only = process.env.BENCH_ONLY;
/** Keep an already seeded database of the right size (development); the default seeds afresh. */
const reuse = process.env.BENCH_REUSE === '1';
/** Database name prefix (default `aag_bench`), so two checkouts with different schemas keep their own seeded databases. */
const databasePrefix = process.env.BENCH_DB_PREFIX ?? 'aag_bench';
if (!/^[a-z_][a-z0-9_]*$/.test(databasePrefix)) {
  process.stderr.write('BENCH_DB_PREFIX must be a lower-case SQL identifier.\n');
  process.exit(2);
}
/** SQL statements per request: mean over sequential requests on a counting instance. */
async function statementsPerRequest(server: Server, apiKey: string, method: string, path: string, body?: string | (() => string | undefined), before?: () => Promise<void>): Promise<number> {
  const samples = 10;
  let total = 0;
  for (let i = 0; i < samples; i++) {
    await before?.();
    await server.request('reset');
    await call(server, apiKey, method, path, typeof body === 'function' ? body() : body);
    total += (await server.request('stats')).statements;
  }
  return total / samples;
}

const mb = (bytes: number | undefined) => (bytes === undefined ? '' : `${(bytes / 1048576).toFixed(0)}`);
/** The service's memory in MB: resident set, V8 heap (reserved / used), memory outside the heap. */
const memoryColumns = (stats: Stats) =>
  `${mb(stats.rss)} | ${mb(stats.memory?.heapTotal)} | ${mb(stats.young)} | ${mb(stats.memory?.heapUsed)} | ${mb(stats.memory?.external)} | ${mb(stats.memory?.arrayBuffers)} | ${mb(stats.heap?.malloced_memory)}`;
/** BENCH_HEAP_SNAPSHOT_DIR: the service writes heap snapshots there (after the first request and after the suite). */
const snapshots = Boolean(process.env.BENCH_HEAP_SNAPSHOT_DIR);

const percentile = (values: number[], p: number) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(values.length * p))]!;
const fixed = (value: number, digits = 0) => value.toFixed(digits);

interface Row { size: string; scenario: string; app: LoadResult; baseline?: LoadResult; appStatements: number; baselineStatements?: number }
/** Median of the rounds; with the baseline's, their ratio. Writes are timed one request at a time and carry none. */
const cpuColumn = (row: Row) => {
  const [app, baseline] = [row.app.cpuMicros, row.baseline?.cpuMicros];
  if (app === undefined) return '';
  // The part on helper threads (V8's garbage collection workers, libuv's pool), which a CPU profile does not sample.
  const helpers = (run?: LoadResult) => (run?.helperCpuMicros === undefined ? '' : ` [${fixed(run.helperCpuMicros)}]`);
  return baseline === undefined ? `${fixed(app)}${helpers(row.app)}` : `${fixed(app)}${helpers(row.app)} / ${fixed(baseline)}${helpers(row.baseline)} (${fixed(app / baseline, 2)}x)`;
};

/**
 * An identity provider's first sync: `syncUsers` creations, one POST at a time on each of
 * `syncConnections` concurrent connections (fetch keeps them alive); users created per second.
 */
async function firstSync(server: Server, credential: string, path: string, body: (i: number) => string, users = syncUsers): Promise<{ perSecond: number; failures: number }> {
  let next = 0;
  let failures = 0;
  const started = performance.now();
  await Promise.all(Array.from({ length: syncConnections }, async () => {
    for (let i = next++; i < users; i = next++) {
      const answer = await call(server, credential, 'POST', path, body(i));
      if (answer.status !== 201) failures++;
    }
  }));
  const seconds = (performance.now() - started) / 1000;
  log(`first sync ${path}: ${users} in ${seconds.toFixed(1)} s, ${failures} failures`);
  return { perSecond: (users - failures) / seconds, failures };
}

const syncRows: string[] = [];
const output: string[] = [];
const rows: Row[] = [];
const searchP50 = new Map<string, Map<string, number>>();
const plans: string[] = [];
const memory: string[] = [];
const memoryTrace: string[] = [];
const syscallRows: string[] = [];
const syscallRow = (size: string, scenario: string, side: string, count: SyscallCount) =>
  `| ${size} | ${scenario} | ${side} | ${fixed(count.perRequest, 1)} | ${count.top.map((call) => `${call.name} ${fixed(call.perRequest, 2)}`).join(', ')} |`;
const startedAt = new Date();
output.push(`Run started ${startedAt.toISOString()}; ${os.cpus().length} cores; load average ${os.loadavg().map((v) => v.toFixed(2)).join(' ')}; Node ${process.version}; `
  + `${connections} connections, ${warmUpSeconds} s untimed warm-up per server and read scenario, ${seconds} s per round, ${rounds} alternating rounds, ${writeIterations} timed requests per write scenario.`);

for (const size of sizes) {
  const prepared = await prepare(size, { serverUrl: serverUrl!, databasePrefix, reuse });
  const sizeLabel = label(size);
  log(`${sizeLabel}: ${prepared.seedSeconds === null ? 'reusing seeded database' : `seeded in ${prepared.seedSeconds.toFixed(0)} s`}`);
  if (prepared.seedSeconds !== null) output.push(`${sizeLabel}: seeded ${size.toLocaleString('en')} users in ${prepared.seedSeconds.toFixed(0)} s.`);
  // Heap snapshots need the bench composition (IPC); every other run times the service as deployed.
  const app = snapshots ? await startServer('app-server.js', prepared.databaseUrl) : await startService(prepared.databaseUrl);
  const baseline = await startServer('baseline-server.js', prepared.databaseUrl);
  const counter = await startServer('app-server.js', prepared.databaseUrl, { BENCH_COUNT_STATEMENTS: '1' });
  const { apiKey } = prepared;

  const scenarios: Scenario[] = [
    ...baselineReads(prepared),
    ...searchReads(prepared),
    {
      name: 'SCIM look-up: GET /scim/v2/Users?filter=userName eq "…"',
      method: 'GET',
      path: `/scim/v2/Users?filter=${encodeURIComponent(`userName eq "${prepared.lookupEmail}"`)}`,
      baseline: true,
      authorization: `Bearer ${prepared.provisioningToken}`,
    },
  ];

  const memoryAfter = async (what: string) => {
    const stats = await app.request('stats');
    memoryTrace.push(`| ${sizeLabel} | ${what} | ${memoryColumns(stats)} |`);
    log(`${sizeLabel} service memory after ${what}: rss ${mb(stats.rss)} MB, heap ${mb(stats.memory?.heapUsed)} of ${mb(stats.memory?.heapTotal)} MB (young ${mb(stats.young)} MB)`);
  };
  await call(app, apiKey, 'GET', `/users/${prepared.showId}`);
  if (snapshots) await app.request('snapshot', `${sizeLabel}-start`);
  await memoryAfter('start (one request)');

  for (const scenario of scenarios.filter((candidate) => !only || only.split('|').some((part) => candidate.name.includes(part)))) {
    const credential = scenario.authorization ?? apiKey;
    const appAnswer = await call(app, credential, scenario.method, scenario.path, scenario.body);
    if (appAnswer.status !== 200) throw new Error(`${scenario.name}: the service answered ${appAnswer.status}: ${appAnswer.text.slice(0, 300)}`);
    if (scenario.baseline) {
      const baselineAnswer = await call(baseline, credential, scenario.method, scenario.path, scenario.body);
      if (baselineAnswer.text !== appAnswer.text) {
        throw new Error(`${scenario.name}: the baseline's body differs from the service's\nservice:  ${appAnswer.text.slice(0, 600)}\nbaseline: ${baselineAnswer.text.slice(0, 600)}`);
      }
    }
    const appStatements = await statementsPerRequest(counter, credential, scenario.method, scenario.path, scenario.body);
    const baselineStatements = scenario.baseline ? await statementsPerRequest(baseline, credential, scenario.method, scenario.path, scenario.body) : undefined;
    if (syscalls) {
      for (const [side, server] of scenario.baseline ? ([['service', app], ['baseline', baseline]] as const) : ([['service', app]] as const)) {
        const count = await syscallsPerRequest(server, syscallRequests, () => load(server, scenario, apiKey, { connections, amount: syscallRequests }));
        syscallRows.push(syscallRow(sizeLabel, scenario.name, side, count));
        log(`${sizeLabel} ${scenario.name}: ${side} ${fixed(count.perRequest, 1)} system calls per request`);
      }
    }
    // Untimed: the service's first seconds under load are still compiling its hot paths (measured:
    // its first round took half again the CPU per request of the later ones), the baseline's hardly.
    for (const server of scenario.baseline ? [app, baseline] : [app]) if (warmUpSeconds > 0) await load(server, scenario, apiKey, { connections, seconds: warmUpSeconds });
    const appRuns: LoadResult[] = [];
    const baselineRuns: LoadResult[] = [];
    for (let round = 0; round < rounds; round++) {
      log(`${sizeLabel} ${scenario.name}: round ${round + 1}`);
      const order = scenario.baseline ? (round % 2 === 0 ? ['app', 'baseline'] : ['baseline', 'app']) : ['app'];
      for (const which of order) {
        const result = await load(which === 'app' ? app : baseline, scenario, apiKey, { connections, seconds });
        (which === 'app' ? appRuns : baselineRuns).push(result);
        const helpers = result.helperCpuMicros === undefined ? '' : ` (${fixed(result.helperCpuMicros)} on helper threads)`;
        log(`${sizeLabel} ${scenario.name}: ${which === 'app' ? 'service' : 'baseline'} ${fixed(result.rps)} req/s, ${result.cpuMicros === undefined ? '-' : fixed(result.cpuMicros)} µs CPU per request${helpers}`);
      }
    }
    const summarize = (runs: LoadResult[]): LoadResult => ({
      rps: median(runs.map((r) => r.rps)),
      p50: median(runs.map((r) => r.p50)),
      p99: median(runs.map((r) => r.p99)),
      failures: runs.reduce((sum, r) => sum + r.failures, 0),
      cpuMicros: runs.every((r) => r.cpuMicros !== undefined) ? median(runs.map((r) => r.cpuMicros!)) : undefined,
      helperCpuMicros: runs.every((r) => r.helperCpuMicros !== undefined) ? median(runs.map((r) => r.helperCpuMicros!)) : undefined,
    });
    const row: Row = { size: sizeLabel, scenario: scenario.name, app: summarize(appRuns), appStatements, ...(scenario.baseline ? { baseline: summarize(baselineRuns), baselineStatements } : {}) };
    rows.push(row);
    if (!scenario.baseline || scenario.path.startsWith('/users?limit') || scenario.path.startsWith('/scim/')) {
      const key = scenario.path.startsWith('/scim/') ? scenario.name : scenario.baseline ? 'unfiltered first page (GET /users?limit=25)' : scenario.name.replace(/ \(\d+, ~1 match\)/, ' (a serial number, ~1 match)');
      if (!searchP50.has(key)) searchP50.set(key, new Map());
      searchP50.get(key)!.set(sizeLabel, row.app.p50);
    }
    await memoryAfter(scenario.name);
  }

  // Plans of the search statements exactly as the service builds them.
  const database = await openDatabase({ databaseUrl: prepared.databaseUrl, dataDir: undefined, entities: allEntities(), commitHooks: allCommitHooks(), poolMax: 2 });
  const platform = database.em().getPlatform();
  for (const term of [prepared.rareTerm, 'lovelace', 'shafi', lateTerm, 'q', 'zq', 'an']) {
    const options = { query: term, first: 25 };
    const statements = userListStatements(prepared.accountId, options, ['id', 'name', 'email', 'timeZone', 'color', 'role', 'avatarUrl', 'description', 'invitationSent', 'jobTitle', 'createdViaSso']);
    const explain = async (label: string, statement: { sql: string; params: unknown[] }, analyze: boolean) => {
      const plan = await database.em().execute<{ 'QUERY PLAN': string }[]>(`explain ${analyze ? '(analyze, buffers)' : ''} ${platform.formatQuery(statement.sql, statement.params)}`);
      plans.push(`#### ${sizeLabel}, query=${term}, ${label}\n\n\`\`\`\n${plan.map((line) => line['QUERY PLAN']).join('\n')}\n\`\`\``);
    };
    // The same steps as UserReads.list: the estimate; with many expected matches the bounded walk, then (when it came back short) the path the decision picks.
    const reads = readPath(database.em());
    const [matches, users] = await reads.estimate(statements.estimate!);
    const [{ n: actual }] = await database.em().execute<{ n: string }[]>(platform.formatQuery(statements.count.sql, statements.count.params));
    const many = matches! > SEARCH_ALWAYS_INDEXED;
    const bounds = many ? await reads.histogram('users', 'search_text') : [];
    const first = many ? firstMatchAt(term, bounds) : null;
    await explain(`estimate (${matches} matches of ${users} users estimated, ${actual} actual matches, first matching histogram bound at ${first ?? '-'})`, statements.estimate![0], false);
    if (many) {
      const skips = walkSkips(term, bounds, users!);
      const boundedWalk = statements.bounded!(skips);
      const bounded = await reads.rows<{ id: string | null; searchWalked: string | null }>(boundedWalk.sql, boundedWalk.params);
      const found = bounded.filter((row) => row.id !== null).length;
      const walked = bounded[0]?.searchWalked ?? null;
      await explain(`bounded walk${skips.initials ? ', initials skipped' : ''}${skips.prefixes ? ', name prefixes skipped' : ''} (${found} rows, ${walked ?? 'page full, not counted'} entries walked)`, boundedWalk, true);
      if (found > options.first || (walked !== null && Number(walked) < SEARCH_WALK_BUDGET)) continue;
    }
    if (useIndexedSearch(term, { matches: matches!, users: users!, firstMatchAt: first }, options)) await explain('indexed', statements.indexed!(searchIndexedCap(matches!)), true);
    else await explain('walk', statements.page, true);
  }
  await database.close();

  // Writes: one request at a time, alternating servers; the state is reset (untimed) before each.
  const bulkBody = (i: number) => JSON.stringify({ users: prepared.bulkIds.map((id) => ({ id, type: 'user', job_title: `Bench ${i}` })) });
  const revokeAgain = async () => {
    const client = new pg.Client({ connectionString: prepared.databaseUrl });
    await client.connect();
    await client.query(`update oauth_delegations set status = 'issued', revoked_at = null, revoked_by_kind = null, revoked_by_credential_id = null, revocation_reason = null where user_id = $1`, [prepared.delegationsUserId]);
    await client.end();
  };
  const revokePath = `/oauth_delegations?user_id=${prepared.delegationsUserId}&type=mobile,web`;
  const writes = [
    { name: 'PUT /users (100 elements, all-or-nothing)', method: 'PUT', path: '/users', body: bulkBody, before: async () => {} },
    { name: 'DELETE /oauth_delegations (user with 1,000 delegations)', method: 'DELETE', path: revokePath, body: () => undefined, before: revokeAgain },
  ];
  for (const write of writes.filter((candidate) => !only || only.split('|').some((part) => candidate.name.includes(part)))) {
    await write.before();
    const appAnswer = await call(app, apiKey, write.method, write.path, write.body(0));
    await write.before();
    const baselineAnswer = await call(baseline, apiKey, write.method, write.path, write.body(0));
    if (appAnswer.status !== 200 || appAnswer.text !== baselineAnswer.text) {
      throw new Error(`${write.name}: bodies differ or failed\nservice ${appAnswer.status}: ${appAnswer.text.slice(0, 400)}\nbaseline ${baselineAnswer.status}: ${baselineAnswer.text.slice(0, 400)}`);
    }
    let iteration = 1;
    const appStatements = await statementsPerRequest(counter, apiKey, write.method, write.path, () => write.body(iteration++), write.before);
    const baselineStatements = await statementsPerRequest(baseline, apiKey, write.method, write.path, () => write.body(iteration++), write.before);
    if (syscalls) {
      for (const [side, server] of [['service', app], ['baseline', baseline]] as const) {
        const count = await syscallsPerRequest(server, syscallWriteRequests, async () => {
          for (let i = 0; i < syscallWriteRequests; i++) {
            await write.before();
            await call(server, apiKey, write.method, write.path, write.body(iteration++));
          }
        });
        syscallRows.push(syscallRow(sizeLabel, `${write.name} [1 connection]`, side, count));
      }
    }
    const times: Record<'app' | 'baseline', number[]> = { app: [], baseline: [] };
    log(`${sizeLabel} ${write.name}: ${writeIterations} requests each`);
    for (let i = 0; i < writeIterations; i++) {
      for (const which of i % 2 === 0 ? (['app', 'baseline'] as const) : (['baseline', 'app'] as const)) {
        await write.before();
        const body = write.body(iteration++);
        const started = performance.now();
        const answer = await call(which === 'app' ? app : baseline, apiKey, write.method, write.path, body);
        times[which].push(performance.now() - started);
        if (answer.status !== 200) throw new Error(`${write.name} (${which}) answered ${answer.status}`);
      }
    }
    const result = (values: number[]): LoadResult => ({ rps: 1000 / (values.reduce((a, b) => a + b, 0) / values.length), p50: percentile(values, 0.5), p99: percentile(values, 0.99), failures: 0 });
    rows.push({ size: sizeLabel, scenario: `${write.name} [1 connection]`, app: result(times.app), baseline: result(times.baseline), appStatements, baselineStatements });
    await memoryAfter(write.name);
  }

  if (!only || only.split('|').some((part) => 'first sync'.includes(part))) {
    const runId = Date.now().toString(36);
    const scimBody = (prefix: string) => (i: number) => JSON.stringify({
      schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'], userName: `${prefix}-scim-${runId}-${i}@bench.example`, name: { givenName: 'Sync', familyName: `Scim ${i}` }, externalId: `${prefix}-${runId}-${i}`, active: true,
    });
    const restBody = (prefix: string) => (i: number) => JSON.stringify({ user: { type: 'user', name: `Sync Rest ${i}`, email: `${prefix}-rest-${runId}-${i}@bench.example` } });
    // Both paths warmed up (untimed) before either is timed, so neither pays the process's first compilations.
    const warmUp = Math.min(200, Math.ceil(syncUsers / 10));
    await firstSync(app, `Bearer ${prepared.provisioningToken}`, '/scim/v2/Users', scimBody('warm'), warmUp);
    await firstSync(app, apiKey, '/users', restBody('warm'), warmUp);
    const scim = await firstSync(app, `Bearer ${prepared.provisioningToken}`, '/scim/v2/Users', scimBody('sync'));
    const rest = await firstSync(app, apiKey, '/users', restBody('sync'));
    syncRows.push(`| ${sizeLabel} | ${syncUsers.toLocaleString('en')} over ${syncConnections} | ${fixed(scim.perSecond)} | ${fixed(rest.perSecond)} | ${fixed(rest.perSecond / Math.max(scim.perSecond, 0.001), 2)}x | ${scim.failures} / ${rest.failures} |`);
    await memoryAfter('first sync');
    // The synced users go again (nothing refers to them), so a database kept with BENCH_REUSE=1 keeps the size its name says.
    const cleanup = new pg.Client({ connectionString: prepared.databaseUrl });
    await cleanup.connect();
    await cleanup.query('delete from users where email like $1', [`%-${runId}-%@bench.example`]);
    await cleanup.end();
  }

  const appStats = await app.request('stats');
  const baselineStats = await baseline.request('stats');
  memory.push(`| ${sizeLabel} | ${memoryColumns(appStats)} | ${mb(baselineStats.rss)} |`);
  if (snapshots) {
    const live = await app.request('snapshot', `${sizeLabel}-end`);
    memoryTrace.push(`| ${sizeLabel} | after the suite and a full collection (heap snapshot) | ${memoryColumns(live)} |`);
  }
  await Promise.all([app.request('stop'), baseline.request('stop'), counter.request('stop')]);
}

output.push('', '| users | scenario | service req/s | p50 ms | p99 ms | baseline req/s | p50 ms | p99 ms | throughput ratio | p99 ratio | SQL per request (service / baseline) | server CPU µs per request (service / baseline; [of which helper threads: GC workers, libuv]) | failures |', '|---|---|---|---|---|---|---|---|---|---|---|---|---|');
for (const row of rows) {
  const b = row.baseline;
  output.push(`| ${row.size} | ${row.scenario} | ${fixed(row.app.rps)} | ${fixed(row.app.p50, 1)} | ${fixed(row.app.p99, 1)} | ${b ? fixed(b.rps) : ''} | ${b ? fixed(b.p50, 1) : ''} | ${b ? fixed(b.p99, 1) : ''} | `
    + `${b ? `${fixed(row.app.rps / b.rps, 2)}x` : ''} | ${b ? `${fixed(row.app.p99 / Math.max(b.p99, 0.001), 2)}x` : ''} | ${fixed(row.appStatements, 1)}${row.baselineStatements !== undefined ? ` / ${fixed(row.baselineStatements, 1)}` : ''} | ${cpuColumn(row)} | ${row.app.failures + (b?.failures ?? 0)} |`);
}
if (sizes.length > 1) {
  const [small, large] = [label(sizes[0]!), label(sizes[sizes.length - 1]!)];
  const firstPage = searchP50.get('unfiltered first page (GET /users?limit=25)')?.get(small);
  output.push('', `| search (service, p50 ms) | ${small} | ${large} | ${large} / ${small} | ${small} / unfiltered first page at ${small} |`, '|---|---|---|---|---|');
  for (const [name, bySize] of searchP50) {
    const a = bySize.get(small)!;
    const b = bySize.get(large)!;
    output.push(`| ${name} | ${fixed(a, 1)} | ${fixed(b, 1)} | ${fixed(b / Math.max(a, 0.5), 2)}x | ${firstPage ? `${fixed(a / Math.max(firstPage, 0.5), 2)}x` : ''} |`);
  }
}
if (syscallRows.length) {
  output.push('', `System calls per request (strace -c -f on the server process, every thread; ${syscallRequests.toLocaleString('en')} requests over ${connections} connections per read scenario, ${syscallWriteRequests} one at a time per write; not timed):`, '',
    '| users | scenario | side | system calls per request | most frequent, per request |', '|---|---|---|---|---|', ...syscallRows);
}
if (syncRows.length) {
  output.push('', '| users | first sync (POSTs over connections) | SCIM users/s | REST POST /users users/s | REST / SCIM | failures (SCIM / REST) |', '|---|---|---|---|---|---|', ...syncRows);
}
output.push('', '| users | service RSS after the suite (MB) | V8 heap reserved | of which young generation | heap used | external | of which array buffers | malloc (V8) | baseline RSS |', '|---|---|---|---|---|---|---|---|---|', ...memory);
output.push('', '| users | service memory (MB) after | RSS | V8 heap reserved | of which young generation | heap used | external | of which array buffers | malloc (V8) |', '|---|---|---|---|---|---|---|---|---|', ...memoryTrace);
output.push('', `Run ended ${new Date().toISOString()}; load average ${os.loadavg().map((v) => v.toFixed(2)).join(' ')}.`, '', '### Plans (EXPLAIN (ANALYZE, BUFFERS), after the load)', '', ...plans, '');
// On the scripts/topology.sh topology (BENCH_PGBOUNCER_URL, BENCH_REPLICA_URL): PgBouncer vs direct, replica vs none.
const scaleOut = scaleOutSettings();
if (scaleOut) output.push('### Scaling out', '', ...(await scaleOutReport(scaleOut)), '');
process.stdout.write(`${output.join('\n')}\n`);
