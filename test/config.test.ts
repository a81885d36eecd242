import path from 'node:path';
import { ConfigError, loadConfig } from '../src/config/config.js';

test('defaults give a working embedded development server', () => {
  const config = loadConfig({});
  expect(config).toMatchObject({
    port: 4000,
    databaseUrl: undefined,
    dataDir: path.resolve('.data'),
    apiVendor: 'pagerduty',
    nodeEnv: 'development',
    rateLimitPerMinute: 960,
    introspection: true,
    landingPage: true,
    publicApiUrl: 'http://localhost:4000',
  });
});

test('production turns off introspection and Sandbox unless enabled, and needs SECRET_KEY', () => {
  expect(() => loadConfig({ NODE_ENV: 'production' })).toThrow(/SECRET_KEY is required/);
  const config = loadConfig({ NODE_ENV: 'production', SECRET_KEY: 'x'.repeat(32) });
  expect([config.introspection, config.landingPage]).toEqual([false, false]);
  expect(loadConfig({ NODE_ENV: 'production', SECRET_KEY: 'x'.repeat(32), GRAPHQL_INTROSPECTION: 'true' }).introspection).toBe(true);
});

test('every bad value is reported at once, by name', () => {
  let error: unknown;
  try {
    loadConfig({ PORT: 'abc', DATABASE_URL: 'mysql://x', PUBLIC_API_URL: 'not a url', RATE_LIMIT_PER_MINUTE: '0', CORS_ORIGINS: 'https://ok.example,nope', SECRET_KEY: 'short' });
  } catch (caught) {
    error = caught;
  }
  expect(error).toBeInstanceOf(ConfigError);
  const problems = (error as ConfigError).problems.join('\n');
  for (const name of ['PORT', 'DATABASE_URL', 'PUBLIC_API_URL', 'RATE_LIMIT_PER_MINUTE', 'CORS_ORIGINS', 'SECRET_KEY']) expect(problems).toContain(name);
});

test('public URLs lose a trailing slash, so self links have exactly one', () => {
  expect(loadConfig({ PUBLIC_API_URL: 'https://api.example.com/' }).publicApiUrl).toBe('https://api.example.com');
});

test('DATABASE_LOCK_TIMEOUT_MS bounds how long a write waits for a row lock: 5 s by default, 1 ms to 10 min', () => {
  expect(loadConfig({}).databaseLockTimeoutMs).toBe(5_000);
  expect(loadConfig({ DATABASE_LOCK_TIMEOUT_MS: '750' }).databaseLockTimeoutMs).toBe(750);
  for (const bad of ['0', '-5', '1.5', '5s', '600001']) {
    expect(() => loadConfig({ DATABASE_LOCK_TIMEOUT_MS: bad })).toThrow(/DATABASE_LOCK_TIMEOUT_MS must be an integer from 1 to 600000/);
  }
});

test('operations settings: safe defaults (keep-alive above load balancers\' 60 s), overridable, checked', () => {
  const defaults = loadConfig({});
  expect(defaults).toMatchObject({
    shutdownDrainMs: 5_000,
    shutdownGraceMs: 10_000,
    databasePoolTimeoutMs: 3_000,
    http: { headersTimeoutMs: 10_000, requestTimeoutMs: 30_000, keepAliveTimeoutMs: 65_000, maxUnreadResponseBytes: 1_048_576, stalledClientTimeoutMs: 30_000 },
  });
  const tuned = loadConfig({ SHUTDOWN_DRAIN_MS: '0', HTTP_KEEP_ALIVE_TIMEOUT_MS: '120000', DATABASE_POOL_TIMEOUT_MS: '500' });
  expect([tuned.shutdownDrainMs, tuned.http.keepAliveTimeoutMs, tuned.databasePoolTimeoutMs]).toEqual([0, 120_000, 500]);
  expect(() => loadConfig({ HTTP_HEADERS_TIMEOUT_MS: '20000', HTTP_REQUEST_TIMEOUT_MS: '10000' })).toThrow(/HTTP_REQUEST_TIMEOUT_MS must be at least HTTP_HEADERS_TIMEOUT_MS/);
  expect(() => loadConfig({ HTTP_MAX_UNREAD_RESPONSE_BYTES: '10' })).toThrow(/HTTP_MAX_UNREAD_RESPONSE_BYTES/);
});

test('DATABASE_STATEMENT_TIMEOUT_MS defaults to 5 s and must be 100 to 600000 ms', () => {
  expect(loadConfig({}).databaseStatementTimeoutMs).toBe(5_000);
  expect(loadConfig({ DATABASE_STATEMENT_TIMEOUT_MS: '250' }).databaseStatementTimeoutMs).toBe(250);
  for (const bad of ['0', '99', '600001', '5s', '-1']) {
    expect(() => loadConfig({ DATABASE_STATEMENT_TIMEOUT_MS: bad })).toThrow(/DATABASE_STATEMENT_TIMEOUT_MS must be an integer from 100 to 600000/);
  }
});

test('GraphQL limits: cost 100,000, 20 root fields and 2 database connections per request by default, each checked', () => {
  expect(loadConfig({})).toMatchObject({ graphqlMaxCost: 100_000, graphqlMaxRootFields: 20, graphqlMaxDbConnectionsPerRequest: 2 });
  const tuned = loadConfig({ GRAPHQL_MAX_COST: '5000', GRAPHQL_MAX_ROOT_FIELDS: '3', GRAPHQL_MAX_DB_CONNECTIONS_PER_REQUEST: '1' });
  expect([tuned.graphqlMaxCost, tuned.graphqlMaxRootFields, tuned.graphqlMaxDbConnectionsPerRequest]).toEqual([5_000, 3, 1]);
  for (const bad of ['0', '-1', '2.5', 'two', '1001']) {
    expect(() => loadConfig({ GRAPHQL_MAX_ROOT_FIELDS: bad })).toThrow(/GRAPHQL_MAX_ROOT_FIELDS must be an integer from 1 to 1000/);
    expect(() => loadConfig({ GRAPHQL_MAX_DB_CONNECTIONS_PER_REQUEST: bad })).toThrow(/GRAPHQL_MAX_DB_CONNECTIONS_PER_REQUEST must be an integer from 1 to 1000/);
  }
  // Both wrong at once: both named in one error.
  expect(() => loadConfig({ GRAPHQL_MAX_ROOT_FIELDS: '0', GRAPHQL_MAX_DB_CONNECTIONS_PER_REQUEST: '0' })).toThrow(/GRAPHQL_MAX_ROOT_FIELDS[\s\S]*GRAPHQL_MAX_DB_CONNECTIONS_PER_REQUEST/);
});

test('METRICS_TOKEN is optional, and a weak one is refused', () => {
  expect(loadConfig({}).metricsToken).toBeUndefined();
  expect(loadConfig({ METRICS_TOKEN: 'm'.repeat(24) }).metricsToken).toBe('m'.repeat(24));
  expect(() => loadConfig({ METRICS_TOKEN: 'short' })).toThrow(/METRICS_TOKEN must be at least 24/);
  expect(() => loadConfig({ METRICS_TOKEN: `${'m'.repeat(24)} x` })).toThrow(/METRICS_TOKEN/);
});

test('scale-out settings: DATABASE_POOLER none or pgbouncer-transaction (needs DATABASE_URL), DATABASE_REPLICA_MAX_LAG_MS 2 s by default', () => {
  const url = 'postgres://app@db.internal:6432/app';
  expect(loadConfig({})).toMatchObject({ databasePooler: 'none', databaseReplicaMaxLagMs: 2_000, databaseReplicaUrls: [] });
  expect(loadConfig({ DATABASE_URL: url, DATABASE_POOLER: 'pgbouncer-transaction', DATABASE_LISTEN_URL: 'postgres://app@db-primary.internal:5432/app', DATABASE_REPLICA_MAX_LAG_MS: '500', DATABASE_REPLICA_URLS: 'postgres://r1/app, postgres://r2/app' })).toMatchObject({
    databasePooler: 'pgbouncer-transaction',
    databaseReplicaMaxLagMs: 500,
    databaseReplicaUrls: ['postgres://r1/app', 'postgres://r2/app'],
  });
  expect(() => loadConfig({ DATABASE_URL: url, DATABASE_POOLER: 'pgbouncer-session' })).toThrow(/DATABASE_POOLER must be one of none, pgbouncer-transaction/);
  expect(() => loadConfig({ DATABASE_POOLER: 'pgbouncer-transaction' })).toThrow(/DATABASE_POOLER needs DATABASE_URL/);
  expect(() => loadConfig({ DATABASE_URL: url, DATABASE_POOLER: 'pgbouncer-transaction' })).toThrow(/needs DATABASE_LISTEN_URL/);
  for (const bad of ['0', '-1', '1.5', 'soon']) expect(() => loadConfig({ DATABASE_REPLICA_MAX_LAG_MS: bad })).toThrow(/DATABASE_REPLICA_MAX_LAG_MS must be an integer from 10/);
});

test('DATABASE_PREPARED_STATEMENTS: auto by default; on is refused behind a transaction pooler, which auto and off accept', () => {
  const pooled = { DATABASE_URL: 'postgres://app@pgbouncer:6432/app', DATABASE_POOLER: 'pgbouncer-transaction', DATABASE_LISTEN_URL: 'postgres://app@primary/app' };
  expect(loadConfig({}).databasePreparedStatements).toBe('auto');
  expect(loadConfig({ DATABASE_URL: 'postgres://app@primary/app', DATABASE_PREPARED_STATEMENTS: 'on' }).databasePreparedStatements).toBe('on');
  expect(loadConfig({ ...pooled, DATABASE_PREPARED_STATEMENTS: 'off' }).databasePreparedStatements).toBe('off');
  expect(loadConfig(pooled).databasePreparedStatements).toBe('auto');
  expect(() => loadConfig({ ...pooled, DATABASE_PREPARED_STATEMENTS: 'on' })).toThrow(/DATABASE_PREPARED_STATEMENTS=on cannot work with DATABASE_POOLER=pgbouncer-transaction/);
  expect(() => loadConfig({ DATABASE_PREPARED_STATEMENTS: 'yes' })).toThrow(/DATABASE_PREPARED_STATEMENTS must be one of auto, on, off/);
});

test('live updates: bounds have defaults and are checked; DATABASE_LISTEN_URL is a postgres URL beside DATABASE_URL', () => {
  expect(loadConfig({}).liveUpdates).toEqual({ maxConnectionsPerCredential: 10, maxSubscriptionsPerConnection: 20, maxBufferedBytes: 262_144, keepAliveMs: 12_000 });
  expect(loadConfig({ LIVE_MAX_SUBSCRIPTIONS_PER_CONNECTION: '5', LIVE_KEEP_ALIVE_MS: '30000' }).liveUpdates).toMatchObject({ maxSubscriptionsPerConnection: 5, keepAliveMs: 30_000 });
  expect(() => loadConfig({ LIVE_MAX_BUFFERED_BYTES: '10' })).toThrow(/LIVE_MAX_BUFFERED_BYTES must be an integer/);
  expect(loadConfig({ DATABASE_URL: 'postgres://pgbouncer/app', DATABASE_LISTEN_URL: 'postgres://primary/app' }).databaseListenUrl).toBe('postgres://primary/app');
  expect(() => loadConfig({ DATABASE_LISTEN_URL: 'postgres://primary/app' })).toThrow(/DATABASE_LISTEN_URL needs DATABASE_URL/);
  expect(() => loadConfig({ DATABASE_URL: 'postgres://pgbouncer/app', DATABASE_LISTEN_URL: 'http://primary' })).toThrow(/DATABASE_LISTEN_URL must be a postgres/);
});
