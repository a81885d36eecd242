// `DATABASE_URL=postgres://... npm run bench` runs this after bench/run.ts (see docs/BENCHMARKS.md,
// "Audit trail"). Two questions: what the audit trail costs a write (the same service with and
// without its hook, timed one request at a time in alternation, AUDIT_BENCH_WRITE_ROUNDS rounds),
// and whether reading the newest page stays flat as the trail grows (AUDIT_BENCH_SIZES records in
// the account, default 100,000 and 10,000,000; '' for the writes only; the sizes are read
// interleaved, AUDIT_BENCH_READ_ROUNDS rounds). AUDIT_BENCH_REUSE=1 keeps a database an earlier
// run seeded (10,000,000 records take 10 minutes and 10 GB). Markdown on stdout.
import 'reflect-metadata';
import { fork, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import os from 'node:os';
import pg from 'pg';
import { allCommitHooks, allEntities } from '../src/app/features.js';
import { openDatabase } from '../src/db/database.js';
import { bootstrapAccount } from '../src/accounts/bootstrap.js';
import { AccountsService } from '../src/accounts/accounts.service.js';

const serverUrl = process.env.DATABASE_URL;
if (!serverUrl) {
  process.stderr.write('Set DATABASE_URL to a PostgreSQL server; the benchmark creates the database <prefix>_audit there.\n');
  process.exit(2);
}
// AUDIT_BENCH_SIZES='' measures the writes only.
const sizes = (process.env.AUDIT_BENCH_SIZES ?? '100000,10000000').split(',').filter(Boolean).map(Number).sort((a, b) => a - b);
// Rounds of the write comparison, each BENCH_WRITE_ITERATIONS requests a side: the spread of their ratios shows the noise of a shared machine.
const writeRounds = Number(process.env.AUDIT_BENCH_WRITE_ROUNDS ?? 1);
const writeIterations = Number(process.env.BENCH_WRITE_ITERATIONS ?? 30);
const readIterations = Number(process.env.AUDIT_BENCH_READS ?? 200);
const databasePrefix = process.env.BENCH_DB_PREFIX ?? 'aag_bench';
const log = (message: string) => process.stderr.write(`[bench audit ${new Date().toISOString().slice(11, 19)}] ${message}\n`);
const here = (file: string) => fileURLToPath(new URL(file, import.meta.url));
const label = (size: number) => (size >= 1_000_000 ? `${size / 1_000_000}M` : size >= 1000 ? `${size / 1000}k` : String(size));
const percentile = (values: number[], p: number) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(values.length * p))]!;
const fixed = (value: number, digits = 1) => value.toFixed(digits);

interface Server {
  process: ChildProcess;
  base: string;
  stop(): Promise<void>;
}

async function startServer(databaseUrl: string, env: Record<string, string>): Promise<Server> {
  const child = fork(here('app-server.js'), [], { env: { ...process.env, NODE_ENV: 'production', ...env, BENCH_DATABASE_URL: databaseUrl }, stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
  const [{ port }] = (await once(child, 'message')) as [{ port: number }];
  return {
    process: child,
    base: `http://127.0.0.1:${port}`,
    async stop() {
      child.send({ kind: 'stop' });
      await once(child, 'exit');
    },
  };
}

async function timed(server: Server, apiKey: string, method: string, path: string, body?: string): Promise<number> {
  const started = performance.now();
  const response = await fetch(`${server.base}${path}`, {
    method,
    headers: { Authorization: `Token token=${apiKey}`, 'Content-Type': 'application/json', Accept: 'application/vnd.pagerduty+json;version=2' },
    body,
  });
  const text = await response.text();
  const elapsed = performance.now() - started;
  if (response.status >= 300) throw new Error(`${method} ${path} answered ${response.status}: ${text.slice(0, 300)}`);
  return elapsed;
}

// A fresh database (or, with AUDIT_BENCH_REUSE=1, the one a previous run seeded: its accounts, users
// and records are kept, newer migrations applied, a new key issued per account); an account (its
// key, 100 users) for the writes and one per size for the reads.
const reuse = process.env.AUDIT_BENCH_REUSE === '1';
const name = `${databasePrefix}_audit`;
const url = new URL(serverUrl);
url.pathname = `/${name}`;
const admin = new pg.Client({ connectionString: serverUrl });
await admin.connect();
const exists = (await admin.query('select 1 from pg_database where datname = $1', [name])).rowCount === 1;
if (!reuse || !exists) {
  await admin.query(`drop database if exists ${name} with (force)`);
  await admin.query(`create database ${name}`);
}
await admin.end();
const database = await openDatabase({ databaseUrl: url.toString(), dataDir: undefined, entities: allEntities(), commitHooks: allCommitHooks(), poolMax: 2 });
await database.migrate();
// Distinct e-mail addresses for the users each run creates, a reused database holding the previous runs'.
const runStamp = Date.now().toString(36);

async function benchAccount(index: number): Promise<{ accountId: string; apiKey: string; userIds: string[] }> {
  const accountName = `Audit bench ${index}`;
  const prefix = `P${String.fromCharCode(65 + index)}`;
  const userIds = Array.from({ length: 100 }, (_, i) => `${prefix}${String(i + 1).padStart(5, '0')}`);
  const [seeded] = await database.em().execute<{ id: string }[]>('select id from accounts where name = ?', [accountName]);
  if (seeded) {
    const key = await database.transactions.run(database.em(), (tx) => new AccountsService(tx).createApiKey({ accountId: seeded.id, description: `audit bench ${runStamp}` }));
    return { accountId: seeded.id, apiKey: key.apiKey, userIds };
  }
  const booted = await database.transactions.run(database.em(), (tx) => bootstrapAccount(tx, { accountName, ownerEmail: `owner-${index}@audit-bench.example` }));
  await database.em().execute(
    `insert into users (id, account_id, name, email, time_zone, color, role, created_at, updated_at)
     select ? || lpad(i::text, 5, '0'), ?, 'Bench User ' || i, 'bench-' || ? || '-' || i || '@audit-bench.example', 'Etc/UTC', 'green', 'user', now(), now()
       from generate_series(1, 100) as i`,
    [prefix, booted.account.id, index],
  );
  return { accountId: booted.account.id, apiKey: booted.apiKey, userIds };
}
const writer = await benchAccount(0);
const { apiKey } = writer;
const bulkIds = writer.userIds;

const output: string[] = [`## Audit trail (${new Date().toISOString()}, ${os.cpus().length} cores, load average ${os.loadavg().map((v) => v.toFixed(2)).join(' ')})`, ''];

// Writes: with and without the trail's hook, one request at a time, alternating which goes first.
const withTrail = await startServer(url.toString(), {});
const withoutTrail = await startServer(url.toString(), { BENCH_AUDIT_TRAIL: 'off' });
let iteration = 0;
const writes = [
  { name: 'PUT /users (100 elements)', method: 'PUT', path: '/users', body: () => JSON.stringify({ users: bulkIds.map((id) => ({ id, type: 'user', job_title: `Bench ${iteration}` })) }) },
  { name: 'POST /users', method: 'POST', path: '/users', body: () => JSON.stringify({ user: { type: 'user', name: `Created ${iteration}`, email: `created-${runStamp}-${iteration}@audit-bench.example` } }) },
];
output.push('| write | round | load average before | p50 with the trail (ms) | p50 without (ms) | ratio | p99 with | p99 without |', '|---|---|---|---|---|---|---|---|');
const allWriteTimes = writes.map(() => ({ with: [] as number[], without: [] as number[] }));
for (let round = 1; round <= writeRounds; round++) {
  for (const [writeIndex, write] of writes.entries()) {
    const times = { with: [] as number[], without: [] as number[] };
    const load = os.loadavg()[0]!.toFixed(1);
    // Warm-up: prepared documents, pools, JIT.
    for (let i = 0; i < 5; i++) {
      for (const server of [withTrail, withoutTrail]) {
        iteration++;
        await timed(server, apiKey, write.method, write.path, write.body());
      }
    }
    log(`${write.name}, round ${round}: ${writeIterations} requests each`);
    for (let i = 0; i < writeIterations; i++) {
      for (const which of (i + round) % 2 === 0 ? (['with', 'without'] as const) : (['without', 'with'] as const)) {
        iteration++;
        times[which].push(await timed(which === 'with' ? withTrail : withoutTrail, apiKey, write.method, write.path, write.body()));
      }
    }
    const [p50With, p50Without] = [percentile(times.with, 0.5), percentile(times.without, 0.5)];
    output.push(`| ${write.name} | ${round} | ${load} | ${fixed(p50With)} | ${fixed(p50Without)} | ${fixed(p50With / p50Without, 2)}x | ${fixed(percentile(times.with, 0.99))} | ${fixed(percentile(times.without, 0.99))} |`);
    allWriteTimes[writeIndex]!.with.push(...times.with);
    allWriteTimes[writeIndex]!.without.push(...times.without);
  }
}
if (writeRounds > 1) {
  for (const [writeIndex, write] of writes.entries()) {
    const all = allWriteTimes[writeIndex]!;
    const [p50With, p50Without] = [percentile(all.with, 0.5), percentile(all.without, 0.5)];
    output.push(`| ${write.name} | all | | ${fixed(p50With)} | ${fixed(p50Without)} | ${fixed(p50With / p50Without, 2)}x | ${fixed(percentile(all.with, 0.99))} | ${fixed(percentile(all.without, 0.99))} |`);
  }
}
// Four writers at once to one account (AUDIT_BENCH_CONCURRENCY, default 4), each `PUT /users` x100
// on 100 users of its own (so rows never make them wait on each other; the chain's head of the
// account is what they share), for AUDIT_BENCH_CONCURRENT_MS per side, the sides alternating each
// round: requests per second and p50 of each side.
const concurrency = Number(process.env.AUDIT_BENCH_CONCURRENCY ?? 4);
const concurrentMs = Number(process.env.AUDIT_BENCH_CONCURRENT_MS ?? 10_000);
if (concurrency > 1) {
  const writerUsers: string[][] = [bulkIds];
  for (let w = 1; w < concurrency; w++) {
    const prefix = `PW${w}`;
    await database.em().execute(
      `insert into users (id, account_id, name, email, time_zone, color, role, created_at, updated_at)
       select ? || lpad(i::text, 4, '0'), ?, 'Bench Writer ' || i, 'bench-w' || ? || '-' || ? || '-' || i || '@audit-bench.example', 'Etc/UTC', 'green', 'user', now(), now()
         from generate_series(1, 100) as i
       on conflict do nothing`,
      [prefix, writer.accountId, w, runStamp],
    );
    writerUsers.push(Array.from({ length: 100 }, (_, i) => `${prefix}${String(i + 1).padStart(4, '0')}`));
  }
  output.push('', `${concurrency} writers at once to one account, \`PUT /users\` x100 each on its own users, ${concurrentMs / 1000} s a side per round:`, '');
  output.push('| round | side | requests/s | p50 (ms) | p99 (ms) |', '|---|---|---|---|---|');
  const sides = { with: withTrail, without: withoutTrail } as const;
  const pooled = { with: { count: 0, ms: 0, times: [] as number[] }, without: { count: 0, ms: 0, times: [] as number[] } };
  for (let round = 1; round <= writeRounds; round++) {
    for (const side of round % 2 === 1 ? (['with', 'without'] as const) : (['without', 'with'] as const)) {
      const times: number[] = [];
      const started = performance.now();
      await Promise.all(writerUsers.map(async (ids) => {
        while (performance.now() - started < concurrentMs) {
          iteration++;
          times.push(await timed(sides[side], apiKey, 'PUT', '/users', JSON.stringify({ users: ids.map((id) => ({ id, type: 'user', job_title: `Concurrent ${iteration}` })) })));
        }
      }));
      const elapsed = performance.now() - started;
      pooled[side].count += times.length;
      pooled[side].ms += elapsed;
      pooled[side].times.push(...times);
      log(`${concurrency} writers, round ${round}, ${side} the trail: ${times.length} requests`);
      output.push(`| ${round} | ${side} the trail | ${fixed((times.length * 1000) / elapsed, 0)} | ${fixed(percentile(times, 0.5))} | ${fixed(percentile(times, 0.99))} |`);
    }
  }
  const rate = (side: 'with' | 'without') => (pooled[side].count * 1000) / pooled[side].ms;
  output.push(`| all | with / without | ${fixed(rate('with'), 0)} / ${fixed(rate('without'), 0)} = ${fixed(rate('with') / rate('without'), 2)}x | ${fixed(percentile(pooled.with.times, 0.5))} / ${fixed(percentile(pooled.without.times, 0.5))} | |`);
}
await withoutTrail.stop();

// Reads: an account per size whose trail holds that many records (synthetic rows spread over the
// retention year, in position order, ending a minute ago; one user in a thousand concerned by
// each), with 30 real writes on top. Then the newest page of both routes for every size, one
// request at a time, the sizes interleaved request by request (their order reversed each round),
// so a change of the machine's load falls on every size alike.
interface Reader {
  size: number;
  apiKey: string;
  paths: [string, string];
}
const readers: Reader[] = [];
const plans: string[] = [];
for (const [index, size] of sizes.entries()) {
  const reader = await benchAccount(index + 1);
  const target = reader.userIds[0]!;
  const [head] = await database.em().execute<{ position: string | number }[]>('select position from audit_chain_heads where account_id = ?', [reader.accountId]);
  if (Number(head?.position ?? 0) >= size) {
    log(`an account with ${label(size)} records, seeded by an earlier run`);
  } else {
    log(`an account with ${label(size)} records`);
    for (let done = 0; done < size; done += 1_000_000) {
      const batch = Math.min(1_000_000, size - done);
      // Batches of one record each, as single writes leave them (the worst case for the index), hashes left empty: reads do not check them.
      await database.em().execute(
        `insert into audit_batches (account_id, first_position, last_position, execution_time, context, records, record_offsets, actions, record_root_types, record_root_ids, previous_hash, hash, chain_version)
         select ?, head.position + i, head.position + i, now() - interval '1 minute' - interval '365 days' * (1 - (? + i)::float8 / ?),
                '{"executionContext":{"requestId":null,"remoteAddress":null},"actors":[{"id":"PBENCH1","type":"api_key_reference"}],"method":{"type":"api_token","truncatedToken":"ab12","description":"PUT /users"}}',
                convert_to(element, 'UTF8'), array[1, octet_length(convert_to(element, 'UTF8'))], array['update'], array['user'], array[root_id], '', '', 3
           from audit_chain_heads head, generate_series(1, ?) as i,
                lateral (select left(?, 2) || lpad((1 + (i % 1000))::text, 5, '0') as root_id) root,
                lateral (select '[' || json_build_array(gen_random_uuid()::text, 'update', 'user', root.root_id,
                  json_build_object('rootResource', json_build_object('id', root.root_id, 'type', 'user_reference'),
                                    'details', json_build_object('resource', json_build_object('id', root.root_id, 'type', 'user_reference'),
                                                                 'fields', json_build_array(json_build_object('name', 'job_title', 'value', 'Seeded', 'beforeValue', null)),
                                                                 'references', json_build_array())))::text || ']' as element) content
          where head.account_id = ?`,
        [reader.accountId, done, size, batch, target, reader.accountId],
      );
      await database.em().execute(
        `insert into audit_record_roots (account_id, root_resource_type, root_resource_id, execution_time, position, first_position)
         select account_id, 'user', record_root_ids[1], execution_time, first_position, first_position from audit_batches
          where account_id = ? and first_position > (select position from audit_chain_heads where account_id = ?)`,
        [reader.accountId, reader.accountId],
      );
      await database.em().execute(
        `update audit_chain_heads set position = (select max(last_position) from audit_batches where account_id = ?), last_time = now() where account_id = ?`,
        [reader.accountId, reader.accountId],
      );
      await database.em().execute(
        `insert into audit_root_index_heads (account_id, through_position) select account_id, position from audit_chain_heads where account_id = ?
         on conflict (account_id) do update set through_position = excluded.through_position`,
        [reader.accountId],
      );
    }
    await database.em().execute('vacuum analyze audit_batches');
    await database.em().execute('vacuum analyze audit_record_roots');
  }
  for (let i = 0; i < 30; i++) await timed(withTrail, reader.apiKey, 'PUT', `/users/${target}`, JSON.stringify({ user: { job_title: `Latest ${runStamp} ${i}` } }));
  readers.push({ size, apiKey: reader.apiKey, paths: ['/audit/records?limit=25', `/users/${target}/audit/records?limit=25`] });
  const [since, until] = [new Date(Date.now() - 86_400_000).toISOString(), new Date().toISOString()];
  // The plans of the two reads' statements (src/audit/audit-batches.ts): the newest batches' headers, and the user's newest roots.
  for (const [what, sql, params] of [
    ['GET /audit/records', 'select b.first_position, b.last_position, b.execution_time from audit_batches b where b.account_id = ? and b.execution_time >= ? and b.execution_time <= ? order by b.execution_time desc, b.first_position desc limit 26', [reader.accountId, since, until]],
    ['GET /users/{id}/audit/records', `select r.position, r.execution_time, b.context from audit_record_roots r join audit_batches b on b.account_id = r.account_id and b.first_position = r.first_position
       where r.account_id = ? and r.root_resource_type = 'user' and r.root_resource_id = ? and r.execution_time >= ? and r.execution_time <= ? order by r.execution_time desc, r.position desc limit 26`, [reader.accountId, target, since, until]],
  ] as const) {
    const plan = await database.em().execute<{ 'QUERY PLAN': string }[]>(`explain (analyze, buffers) ${database.em().getPlatform().formatQuery(sql, [...params])}`);
    plans.push(`#### ${label(size)} records, ${what}\n\n\`\`\`\n${plan.map((line) => line['QUERY PLAN']).join('\n')}\n\`\`\``);
  }
}
const readRounds = Number(process.env.AUDIT_BENCH_READ_ROUNDS ?? 3);
const perRound = Math.ceil(readIterations / readRounds);
const readTimes = readers.map(() => [[] as number[], [] as number[]] as const);
const readRows: string[] = ['', '| records in the account | round | load average before | GET /audit/records?limit=25 p50 (ms) | GET /users/{id}/audit/records?limit=25 p50 (ms) |', '|---|---|---|---|---|'];
for (let round = 1; round <= readRounds; round++) {
  const load = os.loadavg()[0]!.toFixed(1);
  const order = readers.map((_, index) => index);
  if (round % 2 === 0) order.reverse();
  for (const index of order) for (const path of readers[index]!.paths) for (let i = 0; i < 10; i++) await timed(withTrail, readers[index]!.apiKey, 'GET', path);
  log(`reads, round ${round}: ${perRound} requests per size and route`);
  const roundTimes = readers.map(() => [[] as number[], [] as number[]] as const);
  for (let i = 0; i < perRound; i++) {
    for (const index of order) {
      for (const route of [0, 1] as const) {
        const elapsed = await timed(withTrail, readers[index]!.apiKey, 'GET', readers[index]!.paths[route]);
        roundTimes[index]![route].push(elapsed);
        readTimes[index]![route].push(elapsed);
      }
    }
  }
  for (const [index, reader] of readers.entries()) readRows.push(`| ${label(reader.size)} | ${round} | ${load} | ${fixed(percentile(roundTimes[index]![0], 0.5))} | ${fixed(percentile(roundTimes[index]![1], 0.5))} |`);
}
const p50s = readTimes.map(([account, user]) => [percentile(account, 0.5), percentile(user, 0.5)] as const);
for (const [index, reader] of readers.entries()) readRows.push(`| ${label(reader.size)} | all | | ${fixed(p50s[index]![0])} | ${fixed(p50s[index]![1])} |`);
if (p50s.length > 1) {
  const [first, last] = [p50s[0]!, p50s[p50s.length - 1]!];
  readRows.push(`| ratio ${label(sizes[sizes.length - 1]!)} / ${label(sizes[0]!)} | all | | ${fixed(last[0] / first[0], 2)}x | ${fixed(last[1] / first[1], 2)}x |`);
}
await withTrail.stop();
await database.close();
if (sizes.length > 0) output.push(...readRows, '', '### Plans of the two reads (EXPLAIN (ANALYZE, BUFFERS)), at each size', '', ...plans, '');
process.stdout.write(`${output.join('\n')}\n`);
