import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { createRateLimiter, type RateDecision, type RateLimiter } from '../src/auth/rate-limit.js';
import { createLogger } from '../src/logging/logger.js';
import { startHarness, type Harness } from './support/harness.js';
import { TcpProxy } from './support/tcp-proxy.js';

const redisUrl = process.env.TEST_REDIS_URL;
// CI always sets TEST_REDIS_URL (see .ci/run); on a laptop without Redis these report as skipped.
const describeWithRedis = redisUrl ? describe : describe.skip;

const LIMIT = 40;
const REQUESTS = 120;

function percentile(samples: number[], fraction: number): number {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(fraction * sorted.length) - 1)]!;
}

async function waitFor(condition: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

let proxy: TcpProxy;
let limiter: RateLimiter;
let h: Harness;
let baseUrl: string;
let server: import('node:http').Server;
const decisionTimes: number[] = [];

/**
 * A harness whose rate limiter reaches Redis through a TCP proxy the test controls and times each
 * decision, served on a port of its own so requests are timed as a client sees them.
 */
async function startBehindProxy(): Promise<void> {
  const target = new URL(redisUrl!);
  proxy = await TcpProxy.start({ host: target.hostname, port: Number(target.port || 6379) });
  h = await startHarness({
    rateLimiter: (logger) => {
      limiter = createRateLimiter({ perMinute: LIMIT, redisUrl: `redis://127.0.0.1:${proxy.port}`, keyPrefix: `aag-test-${randomUUID()}`, logger });
      // Times the step a Redis outage can slow down: the decision, as the app awaits it.
      const timed: RateLimiter = {
        ...limiter,
        async consume(key) {
          const started = performance.now();
          const decision = await limiter.consume(key);
          decisionTimes.push(performance.now() - started);
          return decision;
        },
      };
      return timed;
    },
  });
  server = (await import('node:http')).createServer(h.app as import('express').Express);
  await new Promise<void>((resolve) => server.listen(0, resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

async function stopBehindProxy(): Promise<void> {
  server?.closeAllConnections();
  await new Promise<void>((resolve) => server?.close(() => resolve()));
  await h?.close();
  await proxy?.close();
}

/**
 * Sends `count` sequential requests with a fresh account's key (a budget of their own) to a path
 * no route serves, so each costs the credential look-up, the rate-limit decision and a 404. Latency is the server's own measure (the access log's
 * `durationMs`, request received to response finished), so the test client's scheduling on a busy
 * machine does not count; the client's round trip is reported alongside.
 */
async function burst(count: number): Promise<{ statuses: number[]; serverMs: number[]; clientMs: number[]; decisionMs: number[] }> {
  const statuses: number[] = [];
  const clientMs: number[] = [];
  const requestIds = new Set<string>();
  const { token } = (await h.createAccount()).key as { token: string };
  decisionTimes.length = 0;
  for (let i = 0; i < count; i++) {
    const started = performance.now();
    const response = await fetch(`${baseUrl}/no-such-route`, { headers: { Accept: 'application/vnd.pagerduty+json;version=2', Authorization: `Token token=${token}` } });
    await response.arrayBuffer();
    // The server names each request (the id it sends back); the access log's lines carry it.
    requestIds.add(response.headers.get('x-request-id')!);
    clientMs.push(performance.now() - started);
    statuses.push(response.status);
  }
  const serverMs = h.logs
    .map((line) => JSON.parse(line) as { msg: string; requestId: string; durationMs: number })
    .filter((entry) => entry.msg === 'request' && requestIds.has(entry.requestId))
    .map((entry) => entry.durationMs);
  expect(serverMs).toHaveLength(count);
  expect(decisionTimes).toHaveLength(count);
  return { statuses, serverMs, clientMs, decisionMs: [...decisionTimes] };
}

const summary = (statuses: number[]) => ({ allowed: statuses.filter((status) => status === 404).length, limited: statuses.filter((status) => status === 429).length });

/** A probe decided by Redis; a few tries, since one reply slower than the command timeout on a busy machine is answered by the insurance limiter. */
async function sharedDecision(): Promise<boolean> {
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    if (limiter.storeState() === 'up' && (await limiter.consume(`probe-${randomUUID()}`)).store === 'redis') return true;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return false;
}

describeWithRedis('Redis outages (through a TCP proxy the test controls)', () => {
  beforeAll(startBehindProxy);
  afterAll(stopBehindProxy);

  test('with Redis up, decisions are shared (redis store) and /readyz says ok', async () => {
    await waitFor(() => limiter.storeState() === 'up', 5_000);
    const account = await h.createAccount();
    expect(await sharedDecision()).toBe(true);
    expect((await h.rest('get', '/users', { key: account.key })).status).toBe(200);
    const ready = await fetch(`${baseUrl}/readyz`);
    expect([ready.status, await ready.json()]).toEqual([200, { status: 'ok', database: h.database.kind, redis: 'up' }]);
  }, 30_000);

  for (const outage of ['blackhole', 'cut'] as const) {
    test(`${outage}: requests stay fast, the per-instance limit answers 429, /readyz is degraded but ready, and sharing resumes after`, async () => {
      await waitFor(() => limiter.storeState() === 'up', 10_000);
      proxy[outage]();
      try {
        const { statuses, serverMs, clientMs, decisionMs } = await burst(REQUESTS);
        const p99 = percentile(decisionMs, 0.99);
        const figures = (samples: number[]) => `p50 ${percentile(samples, 0.5).toFixed(1)} ms, p99 ${percentile(samples, 0.99).toFixed(1)} ms, max ${Math.max(...samples).toFixed(1)} ms`;
        process.stdout.write(`redis ${outage}: ${REQUESTS} requests ${JSON.stringify(summary(statuses))}; rate-limit step ${figures(decisionMs)}; whole request (server) ${figures(serverMs)}; client round trip ${figures(clientMs)}\n`);
        // The insurance limiter has the same budget: exactly LIMIT of the address's requests pass.
        expect(summary(statuses)).toEqual({ allowed: LIMIT, limited: REQUESTS - LIMIT });
        expect(p99).toBeLessThan(50);
        expect(limiter.storeState()).toBe('down');
        const decision: RateDecision = await limiter.consume(`probe-${randomUUID()}`);
        expect(decision.store).toBe('insurance');
        const ready = await fetch(`${baseUrl}/readyz`);
        expect([ready.status, await ready.json()]).toEqual([200, { status: 'degraded', database: h.database.kind, redis: 'down' }]);
      } finally {
        proxy.restore();
      }
      await waitFor(() => limiter.storeState() === 'up', 10_000);
      expect(await sharedDecision()).toBe(true);
    }, 90_000);
  }
});

describe('REDIS_URL pointing at nothing', () => {
  test('the limiter answers at once from memory and still enforces the limit', async () => {
    const unused = await TcpProxy.start({ host: '127.0.0.1', port: 9 });
    const port = unused.port;
    await unused.close();
    const limiter = createRateLimiter({ perMinute: LIMIT, redisUrl: `redis://127.0.0.1:${port}`, logger: createLogger({ logLevel: 'silent' }) });
    try {
      const started = performance.now();
      const decisions: RateDecision[] = [];
      for (let i = 0; i < 60; i++) decisions.push(await limiter.consume('address:203.0.113.9'));
      const elapsedMs = performance.now() - started;
      process.stdout.write(`redis absent: 60 decisions in ${elapsedMs.toFixed(1)} ms\n`);
      expect(decisions.filter((decision) => decision.allowed)).toHaveLength(LIMIT);
      expect(decisions.filter((decision) => !decision.allowed)).toHaveLength(60 - LIMIT);
      expect(new Set(decisions.map((decision) => decision.store))).toEqual(new Set(['insurance']));
      expect(limiter.storeState()).toBe('down');
      expect(elapsedMs).toBeLessThan(1_000);
    } finally {
      await limiter.close();
    }
  });
});
