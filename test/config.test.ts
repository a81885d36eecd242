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

test('METRICS_TOKEN is optional, and a weak one is refused', () => {
  expect(loadConfig({}).metricsToken).toBeUndefined();
  expect(loadConfig({ METRICS_TOKEN: 'm'.repeat(24) }).metricsToken).toBe('m'.repeat(24));
  expect(() => loadConfig({ METRICS_TOKEN: 'short' })).toThrow(/METRICS_TOKEN must be at least 24/);
  expect(() => loadConfig({ METRICS_TOKEN: `${'m'.repeat(24)} x` })).toThrow(/METRICS_TOKEN/);
});
