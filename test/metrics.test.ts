import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import supertest from 'supertest';
import { createDelegationCommand } from '../src/cli/commands/oauth-delegations.commands.js';
import { operationLabel } from '../src/observability/metrics.js';
import { startHarness, type Harness } from './support/harness.js';

const METRICS_TOKEN = randomBytes(24).toString('base64url');

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ metricsToken: METRICS_TOKEN });
});
afterAll(async () => {
  await h?.close();
});

async function scrape(): Promise<string> {
  const response = await supertest(h.app).get('/metrics').set('Authorization', `Bearer ${METRICS_TOKEN}`);
  expect(response.status).toBe(200);
  expect(response.headers['content-type']).toMatch(/^text\/plain/);
  return response.text;
}

/** The value of one series (exact label set), 0 when absent. */
function valueOf(exposition: string, name: string, labels: Record<string, string> = {}): number {
  const wanted = Object.entries(labels).map(([key, value]) => `${key}="${value}"`).sort();
  for (const line of exposition.split('\n')) {
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const present = (match[2] ?? '').split(/,(?=[a-zA-Z_]+=")/).filter(Boolean).sort();
    if (JSON.stringify(present) === JSON.stringify(wanted)) return Number(match[3]);
  }
  return 0;
}

describe('GET /metrics', () => {
  test('needs the metrics token', async () => {
    const missing = await supertest(h.app).get('/metrics');
    const wrong = await supertest(h.app).get('/metrics').set('Authorization', `Bearer ${METRICS_TOKEN}x`);
    const apiKey = await supertest(h.app).get('/metrics').set('Authorization', `Token token=${METRICS_TOKEN}`);
    expect([missing.status, wrong.status, apiKey.status]).toEqual([401, 401, 401]);
    expect(missing.text).not.toContain('http_requests_total');
  });

  test('counters move with traffic, by route template and operation name, and no label carries an id, key or token', async () => {
    const account = await h.createAccount();
    const users = [await h.createUser(account), await h.createUser(account)];
    const before = await scrape();

    for (const user of users) expect((await h.rest('get', `/users/${user.id}`, { key: account.key })).status).toBe(200);
    expect((await h.rest('get', '/users/PNOSUCH', { key: account.key })).status).toBe(404);
    expect((await h.rest('get', '/users', { key: undefined })).status).toBe(401);
    expect((await h.graphql('query CountUsers { users { totalCount } }', {}, account.key)).status).toBe(200);
    expect((await h.graphql('{ users { totalCount } }', {}, account.key)).status).toBe(200);
    const badQuery = await h.graphql('query BrokenOne { users { noSuchField } }', {}, account.key);
    expect(badQuery.errors?.[0].extensions.code).toBe('GRAPHQL_VALIDATION_FAILED');

    const delegation = await createDelegationCommand.run(h.database, { user: users[0]!.id, type: 'mobile', scopes: 'users.read' }, { info: () => {} });
    expect((await h.rest('delete', `/oauth_delegations?user_id=${users[0]!.id}&type=mobile`, { key: account.key })).status).toBe(200);

    const after = await scrape();
    const delta = (name: string, labels: Record<string, string> = {}) => valueOf(after, name, labels) - valueOf(before, name, labels);

    expect(delta('http_requests_total', { method: 'GET', route: '/users/{id}', status: '200' })).toBe(2);
    expect(delta('http_requests_total', { method: 'GET', route: '/users/{id}', status: '404' })).toBe(1);
    expect(delta('http_requests_total', { method: 'GET', route: '/users', status: '401' })).toBe(1);
    // Two successes and BrokenOne: a document that fails validation answers 200 under application/json (GraphQL over HTTP).
    expect(delta('http_requests_total', { method: 'POST', route: '/graphql', status: '200' })).toBe(3);
    expect(delta('http_request_duration_seconds_count', { method: 'GET', route: '/users/{id}' })).toBe(3);
    expect(delta('graphql_operations_total', { face: 'rest', type: 'query', operation: 'ShowUser', outcome: 'success' })).toBe(2);
    expect(delta('graphql_operations_total', { face: 'rest', type: 'query', operation: 'ShowUser', outcome: 'error' })).toBe(1);
    expect(delta('graphql_operations_total', { face: 'graphql', type: 'query', operation: 'CountUsers', outcome: 'success' })).toBe(1);
    expect(delta('graphql_operations_total', { face: 'graphql', type: 'query', operation: '(anonymous)', outcome: 'success' })).toBe(1);
    expect(delta('graphql_operations_total', { face: 'graphql', type: 'query', operation: 'BrokenOne', outcome: 'error' })).toBe(1);
    expect(delta('graphql_operations_total', { face: 'rest', type: 'mutation', operation: 'DeleteOAuthDelegations', outcome: 'success' })).toBe(1);
    expect(delta('api_errors_total', { face: 'rest', code: '2100' })).toBe(1);
    expect(delta('api_errors_total', { face: 'graphql', code: 'GRAPHQL_VALIDATION_FAILED' })).toBe(1);
    expect(delta('oauth_delegations_revoked_total', { reason: 'sign_out' })).toBe(1);
    // Every request above passed the limiter (the unauthenticated one on its address's budget).
    expect(delta('rate_limit_decisions_total', { decision: 'allowed', store: 'memory' })).toBe(8);
    expect(valueOf(after, 'process_cpu_user_seconds_total')).toBeGreaterThan(0);
    expect(valueOf(after, 'nodejs_heap_size_used_bytes')).toBeGreaterThan(0);
    if (h.database.kind === 'postgresql') {
      expect(valueOf(after, 'db_pool_connections', { state: 'max' })).toBe(5);
      expect(valueOf(after, 'db_pool_connections', { state: 'total' })).toBeGreaterThan(0);
      expect(delta('db_pool_acquire_duration_seconds_count')).toBeGreaterThan(0);
    }
    expect(after).not.toContain('redis_up{');

    const secrets = [account.id, ...users.map((user) => user.id), String(delegation.id), String(delegation.access_token), (account.key as { token: string }).token, METRICS_TOKEN, 'PNOSUCH'];
    for (const secret of secrets) expect(after).not.toContain(secret);
  });

  test('client-chosen operation names cannot grow the series without bound', () => {
    const labels = Array.from({ length: 250 }, (_, i) => operationLabel(`Flood${randomBytes(4).toString('hex')}${i}`));
    const kept = new Set(labels.filter((label) => label !== '(other)'));
    expect(kept.size).toBeLessThanOrEqual(200);
    expect(labels.at(-1)).toBe('(other)');
    expect(operationLabel('Flood x; drop')).toBe('(other)');
    expect(operationLabel(undefined)).toBe('(anonymous)');
    // A name seen before keeps its label, and the REST facade's own operations always do.
    expect(operationLabel('CountUsers')).toBe('CountUsers');
    expect(operationLabel('ListUserOAuthDelegations')).toBe('ListUserOAuthDelegations');
  });
});
