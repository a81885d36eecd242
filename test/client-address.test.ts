import supertest from 'supertest';
import { ConfigError, loadConfig, parseTrustProxy } from '../src/config/config.js';
import { createRateLimiter } from '../src/auth/rate-limit.js';
import { redactPath } from '../src/logging/redact-path.js';
import { startHarness, type Harness } from './support/harness.js';
import { TcpProxy } from './support/tcp-proxy.js';

/** Issue 22, findings 5 and 6: who the client is behind a proxy, limits per address on unauthenticated routes, redacted logs. */

describe('TRUST_PROXY', () => {
  test('a hop count, or addresses, subnets and names; "true" (believe any client) and nonsense are refused at start', () => {
    expect(parseTrustProxy(undefined)).toEqual({ value: false });
    expect(parseTrustProxy('0')).toEqual({ value: false });
    expect(parseTrustProxy('1')).toEqual({ value: 1 });
    expect(parseTrustProxy('10.0.0.0/8, loopback,2001:db8::1')).toEqual({ value: ['10.0.0.0/8', 'loopback', '2001:db8::1'] });
    for (const bad of ['true', '11', '10.0.0.0/33', 'proxy.example.com', '10.0.0.1/8/9']) expect(parseTrustProxy(bad).problem).toBeDefined();
    expect(() => loadConfig({ TRUST_PROXY: 'true' })).toThrow(ConfigError);
    expect(loadConfig({ TRUST_PROXY: '2' }).trustProxy).toBe(2);
    expect(loadConfig({}).trustProxy).toBe(false);
  });
});

const limitedTo = (perMinute: number) => (logger: Parameters<typeof createRateLimiter>[0]['logger']) => createRateLimiter({ perMinute, logger });

describe('behind one trusted proxy (TRUST_PROXY=1)', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ settings: { trustProxy: 1 }, rateLimiter: limitedTo(2) });
  });
  afterAll(async () => {
    await h?.close();
  });

  test('each client the proxy names has its own address budget', async () => {
    const from = (address: string) => supertest(h.app).get('/users').set({ Accept: 'application/vnd.pagerduty+json;version=2', 'X-Forwarded-For': address });
    expect((await from('198.51.100.1')).status).toBe(401);
    expect((await from('198.51.100.1')).status).toBe(401);
    expect((await from('198.51.100.1')).status).toBe(429);
    expect((await from('198.51.100.2')).status).toBe(401);
    // A client that prepends its own X-Forwarded-For entry is still known by what the proxy appended.
    expect((await from('203.0.113.9, 198.51.100.1')).status).toBe(429);
  });
});

describe('without a trusted proxy (the default)', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ rateLimiter: limitedTo(3) });
  });
  afterAll(async () => {
    await h?.close();
  });

  test('a forged X-Forwarded-For buys no fresh budget; /oauth/* and the calendar feed draw on the address budget too (429)', async () => {
    const statuses: number[] = [];
    for (const address of ['192.0.2.1', '192.0.2.2', '192.0.2.3']) {
      statuses.push((await supertest(h.app).get('/oauth/authorize?client_id=nobody').set('X-Forwarded-For', address)).status);
    }
    expect(statuses.every((status) => status !== 429)).toBe(true);
    const authorize = await supertest(h.app).get('/oauth/authorize?client_id=nobody').set('X-Forwarded-For', '192.0.2.4');
    expect(authorize.status).toBe(429);
    expect(Number(authorize.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(authorize.body.error.code).toBe(2020);
    expect((await supertest(h.app).get('/private/some-key/feed')).status).toBe(429);
    expect((await supertest(h.app).get('/oauth/interaction/some-uid')).status).toBe(429);
  });
});

describe('log lines that name a path', () => {
  test('redactPath removes feed keys, interaction ids and query strings', () => {
    expect(redactPath('/private/abcDEF123/feed')).toBe('/private/[redacted]/feed');
    expect(redactPath('/oauth/interaction/uid123/login')).toBe('/oauth/interaction/[redacted]/login');
    expect(redactPath('/oauth/authorize/uid123?x=1')).toBe('/oauth/authorize/[redacted]');
    expect(redactPath('/users/PABCDEF?include[]=calendar_urls')).toBe('/users/PABCDEF');
  });

  const describeWithPostgres = process.env.DATABASE_URL ? describe : describe.skip;
  describeWithPostgres('while the database is away', () => {
    let proxy: TcpProxy;
    let h: Harness;
    beforeAll(async () => {
      const target = new URL(process.env.DATABASE_URL!);
      proxy = await TcpProxy.start({ host: target.hostname, port: Number(target.port || 5432) });
      h = await startHarness({ throughPort: proxy.port, poolTimeoutMs: 1_500 });
    });
    afterAll(async () => {
      proxy?.restore();
      await h?.close();
      await proxy?.close();
    });

    test('the 503 warnings and error lines carry neither the feed key nor the interaction id', async () => {
      const account = await h.createAccount();
      const user = await h.createUser(account);
      const me = await h.rest('get', '/users/me', { key: user.key });
      const key = /\/private\/([^/]+)\/feed$/.exec(me.body.user.http_cal_url)![1]!;
      const interactionId = 'interaction-id-that-is-a-secret-0123456789';
      proxy.cut();
      expect((await supertest(h.app).get(`/private/${key}/feed`)).status).toBe(503);
      expect((await supertest(h.app).get(`/oauth/interaction/${interactionId}`)).status).toBeGreaterThanOrEqual(400);
      proxy.restore();
      const logs = h.logs.join('');
      expect(logs).toContain('/private/[redacted]/feed');
      expect(logs).not.toContain(key);
      expect(logs).not.toContain(interactionId);
    });
  });
});
