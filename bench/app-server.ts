// Not what is deployed: a composition of createApp for what the deployed entry point cannot do.
// Timed runs use dist/src/main.js (bench/servers.ts startService); this process serves only
// - statement counting per request (BENCH_COUNT_STATEMENTS=1, bench/run.ts's SQL-per-request column):
//   it needs a hook on every statement and a reset between requests, over IPC;
// - bench/audit.ts's with/without audit trail comparison (BENCH_AUDIT_TRAIL=off drops the hook,
//   which no setting of the service does);
// - heap snapshots on request (BENCH_HEAP_SNAPSHOT_DIR, diagnosis only) and bench/live.ts.
// Same stack otherwise (request id, CORS, access log at info into /dev/null, authentication, rate
// limit, envelope, GraphQL execution) on the benchmark database.
import 'reflect-metadata';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import v8 from 'node:v8';
import { destination } from 'pino';
import { allCommitHooks, allEntities } from '../src/app/features.js';
import { createApp } from '../src/app/create-app.js';
import { openDatabase } from '../src/db/database.js';
import { createLogger } from '../src/logging/logger.js';
import { createRateLimiter } from '../src/auth/rate-limit.js';
import { DEFAULT_LIVE_LIMITS } from '../src/faces/ws/socket-server.js';
import { BENCH_URLS } from './settings.js';
import { AUDIT_TRAIL_HOOK } from '../src/audit/audit-trail.hook.js';

let statements = 0;
const counting = process.env.BENCH_COUNT_STATEMENTS === '1';
const database = await openDatabase({
  databaseUrl: process.env.BENCH_DATABASE_URL,
  dataDir: undefined,
  entities: allEntities(),
  // BENCH_AUDIT_TRAIL=off (bench/audit.ts only): the same service without the audit trail's hook, to measure what the trail costs a write.
  commitHooks: allCommitHooks().filter((hook) => process.env.BENCH_AUDIT_TRAIL !== 'off' || hook.name !== AUDIT_TRAIL_HOOK),
  poolMax: 10,
  ...(counting ? { onQuery: () => void statements++ } : {}),
});
const logger = createLogger({ logLevel: 'info' }, destination({ dest: '/dev/null', sync: false }));
// Generous enough never to refuse: the limiter still runs on every request.
const rateLimiter = createRateLimiter({ perMinute: 1_000_000_000, logger });
const server = await createApp({
  settings: {
    publicApiUrl: BENCH_URLS.api,
    publicWebUrl: BENCH_URLS.web,
    publicFeedUrl: BENCH_URLS.feed,
    apiVendor: 'pagerduty',
    introspection: false,
    landingPage: false,
    corsOrigins: [],
    graphqlMaxDepth: 12,
    graphqlMaxCost: 20_000,
  },
  database,
  logger,
  serverSecret: randomBytes(32),
  rateLimiter,
  // bench/live.ts opens thousands of connections with one key.
  liveUpdates: { ...DEFAULT_LIVE_LIMITS, maxConnectionsPerCredential: 1_000_000, maxSubscriptionsPerConnection: 1_000 },
});
server.httpServer.listen(0, '127.0.0.1', () => {
  const address = server.httpServer.address();
  process.send?.({ port: typeof address === 'object' && address ? address.port : 0 });
});
/** Reserved by V8's young generation (where short-lived request objects are allocated), in bytes. */
const youngGeneration = () => v8.getHeapSpaceStatistics().filter((space) => space.space_name.startsWith('new_')).reduce((sum, space) => sum + space.space_size, 0);
const memoryStats = () => ({ statements, rss: process.memoryUsage().rss, memory: process.memoryUsage(), heap: v8.getHeapStatistics(), young: youngGeneration() });
process.on('message', (message: { kind: string; label?: string }) => {
  if (message.kind === 'stats') process.send?.(memoryStats());
  // BENCH_HEAP_SNAPSHOT_DIR (diagnosis only): a snapshot forces a full collection first, so the stats that follow show what is live.
  if (message.kind === 'snapshot' && process.env.BENCH_HEAP_SNAPSHOT_DIR) {
    v8.writeHeapSnapshot(path.join(process.env.BENCH_HEAP_SNAPSHOT_DIR, `${process.pid}-${message.label ?? 'snapshot'}.heapsnapshot`));
    process.send?.(memoryStats());
  }
  if (message.kind === 'reset') statements = 0;
  if (message.kind === 'stop') {
    void server.stop().then(() => rateLimiter.close()).then(() => database.close()).then(() => process.exit(0));
  }
});
