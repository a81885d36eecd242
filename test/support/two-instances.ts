import supertest from 'supertest';
import { createApp, type App } from '../../src/app/create-app.js';
import { allCommitHooks, allEntities } from '../../src/app/features.js';
import { createRateLimiter } from '../../src/auth/rate-limit.js';
import { openDatabase, type Database } from '../../src/db/database.js';
import { createLogger } from '../../src/logging/logger.js';
import { startHarness, TEST_SETTINGS, type Harness } from './harness.js';

type LiveLimits = NonNullable<Parameters<typeof createApp>[0]['liveUpdates']>;

/** Two app instances on one database, both listening on ephemeral ports: what live updates fan out across. */
export interface TwoInstances {
  a: Harness;
  b: App;
  bDatabase: Database;
  bRest: ReturnType<typeof supertest>;
  /** Stops instance B (a test of its shutdown); `close` then leaves it be. */
  stopB(drainMs: number): ReturnType<App['stop']>;
  close(): Promise<void>;
}

async function listen(server: import('node:http').Server): Promise<void> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
}

export async function startTwoInstances(liveUpdates: LiveLimits): Promise<TwoInstances> {
  const a = await startHarness({ liveUpdates });
  await listen(a.httpServer);
  // Instance B: its own pool and listening connection on the same PostgreSQL database (or, embedded, the same PGlite).
  const bDatabase = a.database.url
    ? await openDatabase({ databaseUrl: a.database.url, dataDir: undefined, entities: allEntities(), commitHooks: allCommitHooks(), poolMax: 3 })
    : a.database;
  const logger = createLogger({ logLevel: 'silent' });
  const b = await createApp({ settings: TEST_SETTINGS, database: bDatabase, logger, serverSecret: a.runtime.serverSecret, rateLimiter: createRateLimiter({ perMinute: 1_000_000, logger }), liveUpdates });
  await listen(b.httpServer);
  let bStopped: ReturnType<App['stop']> | undefined;
  const stopB = (drainMs: number) => (bStopped ??= b.stop(drainMs));
  return {
    a,
    b,
    bDatabase,
    bRest: supertest(b.app),
    stopB,
    async close() {
      await stopB(1_000);
      if (bDatabase !== a.database) await bDatabase.close();
      await a.close();
    },
  };
}
