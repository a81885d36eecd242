// R4 of the comparison: several writers at once to one account, each `PUT /users` with 100
// elements on 100 users of its own (rows never make them wait on each other; what they share is
// the account, its audit chain's head included), one request after another for the round's
// seconds. Every side (head, base, the hand-written baseline, which appends the same audit
// records) runs once a round in rotating order, like the reads; requests per second and the
// server's CPU per request are taken per round.
import pg from 'pg';
import { performance } from 'node:perf_hooks';
import { call, cpuMeter, log, type Server } from './servers.js';
import type { Prepared } from './seed.js';

export const WRITERS_SCENARIO = 'PUT /users x100, 4 writers to one account';
const WRITERS = 4;
const USERS_PER_WRITE = 100;

export interface WriterRun {
  rps: number;
  /** As LoadResult's: the server's CPU per request, and the part of it on helper threads. */
  cpuMicros?: number;
  helperCpuMicros?: number;
}

/** The writers' users (made once per database; a reused one keeps them): `PC<writer><n>`, ids of the form the API gives out (`P` and six more). */
export async function writerUsers(prepared: Prepared): Promise<string[][]> {
  const client = new pg.Client({ connectionString: prepared.databaseUrl });
  await client.connect();
  try {
    const writers: string[][] = [];
    for (let w = 1; w <= WRITERS; w++) {
      const prefix = `PC${w}`;
      await client.query(
        `insert into users (id, account_id, name, email, time_zone, color, role, created_at, updated_at)
         select $1 || lpad(i::text, 4, '0'), $2, 'Compare Writer ' || i, 'compare-w' || $3 || '-' || i || '@writers-bench.example', 'Etc/UTC', 'green', 'user', now(), now()
           from generate_series(1, $4::int) as i
         on conflict do nothing`,
        [prefix, prepared.accountId, w, USERS_PER_WRITE],
      );
      writers.push(Array.from({ length: USERS_PER_WRITE }, (_, i) => `${prefix}${String(i + 1).padStart(4, '0')}`));
    }
    return writers;
  } finally {
    await client.end();
  }
}

let iteration = 0;

/** Every writer's loop on `server` for `seconds`; a request that does not answer 200 stops the comparison. */
export async function driveWriters(server: Server, apiKey: string, writers: string[][], seconds: number): Promise<WriterRun> {
  const cpuSince = cpuMeter(server.process.pid);
  const started = performance.now();
  let requests = 0;
  await Promise.all(writers.map(async (ids) => {
    while (performance.now() - started < seconds * 1000) {
      const body = JSON.stringify({ users: ids.map((id) => ({ id, type: 'user', job_title: `Writer ${++iteration}` })) });
      const answer = await call(server, apiKey, 'PUT', '/users', body);
      if (answer.status !== 200) throw new Error(`${WRITERS_SCENARIO}: answered ${answer.status}: ${answer.text.slice(0, 300)}`);
      requests++;
    }
  }));
  const elapsed = performance.now() - started;
  const cpu = cpuSince(requests);
  log(`${WRITERS_SCENARIO}: ${requests} requests in ${Math.round(elapsed)} ms`);
  return { rps: (requests * 1000) / elapsed, ...cpu };
}
