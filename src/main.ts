import 'reflect-metadata';
import { ConfigError, loadConfig } from './config/config.js';
import { createLogger, flushLog } from './logging/logger.js';
import { openDatabase } from './db/database.js';
import { EmbeddedDatabaseBusyError } from './db/embedded-lock.js';
import { resolveServerSecret } from './auth/server-secret.js';
import { configureAuditChainKey } from './audit/audit-chain.js';
import { greetFirstStart } from './app/first-start.js';
import { allCommitHooks, allEntities } from './app/features.js';
import { createApp } from './app/create-app.js';
import { createRateLimiter } from './auth/rate-limit.js';
import { shutdownGracefully } from './http/shutdown.js';
import { startTracing } from './observability/tracing.js';
import { sharedRecentWrites } from './db/recent-writes.js';

async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger(config);
  const tracing = startTracing();
  if (tracing) logger.info('tracing: exporting spans over OTLP/HTTP');
  const serverSecret = resolveServerSecret(config);
  configureAuditChainKey(config.auditChainKey ? Buffer.from(config.auditChainKey, 'utf8') : serverSecret);
  const database = await openDatabase({
    databaseUrl: config.databaseUrl,
    ownerUrl: config.databaseOwnerUrl,
    replicaUrls: config.databaseReplicaUrls,
    replicaMaxLagMs: config.databaseReplicaMaxLagMs,
    pooler: config.databasePooler,
    preparedStatements: config.databasePreparedStatements,
    recentWrites: config.redisUrl ? (windowMs) => sharedRecentWrites(config.redisUrl!, windowMs, config.redisCommandTimeoutMs) : undefined,
    listenUrl: config.databaseListenUrl,
    dataDir: config.dataDir,
    entities: allEntities(),
    commitHooks: allCommitHooks(),
    lockTimeoutMs: config.databaseLockTimeoutMs,
    poolTimeoutMs: config.databasePoolTimeoutMs,
    statementTimeoutMs: config.databaseStatementTimeoutMs,
    embeddedAccess: 'serve',
  });
  const applied = await database.migrate();
  if (applied.length) logger.info({ migrations: applied }, 'applied migrations');
  if (config.databasePooler === 'pgbouncer-transaction') {
    // Behind a transaction pooler reads carry no timeout of their own: the role's or database's setting is theirs.
    const [row] = await database.em().execute<{ statement_timeout: string }[]>('show statement_timeout');
    if (row?.statement_timeout === '0') logger.warn('DATABASE_POOLER=pgbouncer-transaction and the server gives reads no statement_timeout: set one for the role (docs/operating.md, "Scaling out")');
  }

  if (database.kind === 'embedded') {
    // The greeting goes straight to stdout: the buffered lines before it are written first.
    await flushLog(logger);
    await greetFirstStart(database, { production: config.nodeEnv === 'production', publicApiUrl: config.publicApiUrl, write: (text) => process.stdout.write(text) });
  }

  const rateLimiter = createRateLimiter({ perMinute: config.rateLimitPerMinute, redisUrl: config.redisUrl, redisCommandTimeoutMs: config.redisCommandTimeoutMs, logger });
  const server = await createApp({ settings: config, database, logger, serverSecret, rateLimiter, http: config.http, metricsToken: config.metricsToken, liveUpdates: config.liveUpdates });
  await new Promise<void>((resolve) => server.httpServer.listen(config.port, resolve));
  logger.info({ port: config.port, database: database.kind, graphql: `${config.publicApiUrl}/graphql` }, 'account access gateway listening');
  // Whoever waits for this line (an operator, a supervisor, the smoke test) sees it now, not when the buffer fills.
  await flushLog(logger);

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'signal received');
    // Keeps the process alive until the database is closed, and bounds how long that may take.
    const deadlineMs = config.shutdownDrainMs + config.shutdownGraceMs + 5_000;
    const deadline = setTimeout(() => {
      logger.error({ deadlineMs }, 'shutdown took too long; exiting');
      process.exit(1);
    }, deadlineMs);
    try {
      const clean = await shutdownGracefully({ app: server, rateLimiter, database, logger, drainMs: config.shutdownDrainMs, graceMs: config.shutdownGraceMs });
      await tracing?.shutdown();
      clearTimeout(deadline);
      process.exit(clean ? 0 : 1);
    } catch (error) {
      logger.error({ err: error }, 'unclean shutdown');
      await flushLog(logger);
      process.exit(1);
    }
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
}

main().catch((error: unknown) => {
  if (error instanceof ConfigError || error instanceof EmbeddedDatabaseBusyError) {
    process.stderr.write(`${error.message}\n`);
  } else {
    process.stderr.write(`Failed to start: ${error instanceof Error ? error.stack ?? error.message : String(error)}\n`);
  }
  process.exit(1);
});
