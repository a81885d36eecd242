import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import type { AddressInfo } from 'node:net';
import { serverAudits } from 'graphql-http';
import { startHarness, type Harness } from './support/harness.js';

/**
 * `/graphql` conforms to the GraphQL over HTTP specification, checked by the
 * specification's own audit suite against the real app listening on a port.
 */
let h: Harness;
let url: string;
let authorization: string;
beforeAll(async () => {
  h = await startHarness();
  const account = await h.createAccount();
  authorization = `Token token=${(account.key as { token: string }).token}`;
  await new Promise<void>((resolve) => h.httpServer.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(h.httpServer.address() as AddressInfo).port}/graphql`;
});
afterAll(async () => {
  await h?.close();
});

/** The audits' requests, each carrying the account's credential (anonymous callers see no schema). */
function authenticatedFetch(input: RequestInfo | URL, init?: RequestInit): Promise<Response> {
  const headers = new Headers(init?.headers ?? (input instanceof Request ? input.headers : undefined));
  headers.set('Authorization', authorization);
  return fetch(input, { ...init, headers });
}

describe('GraphQL over HTTP audits (graphql-http serverAudits)', () => {
  test('every MUST and SHOULD audit passes', async () => {
    const audits = serverAudits({ url, fetchFn: authenticatedFetch }).filter((audit) => !audit.name.startsWith('MAY'));
    expect(audits.length).toBeGreaterThan(20);
    const failures: string[] = [];
    for (const audit of audits) {
      const result = await audit.fn();
      if (result.status !== 'ok') {
        const body = await result.response.clone().text().catch(() => '');
        failures.push(`${audit.id} ${audit.name}: ${result.reason} (${result.response.status} ${result.response.headers.get('content-type')} ${body.slice(0, 200)})`);
      }
    }
    expect(failures).toEqual([]);
  });

  test('a document error is 200 under application/json and 400 under application/graphql-response+json, whatever the URL; CSRF refusals stay 400', async () => {
    const ask = (query: string, headers: Record<string, string>) => authenticatedFetch(`${url}?query=${query}`, { headers: { 'apollo-require-preflight': '1', ...headers } });
    // Raw braces and spaces, as a browser's fetch sends them, as well as percent-encoded.
    for (const query of ['{ nope }', encodeURIComponent('{ nope }'), '{ nope', encodeURIComponent('{ nope')]) {
      const legacy = await ask(query, {});
      expect([query, legacy.status, legacy.headers.get('content-type')]).toEqual([query, 200, 'application/json; charset=utf-8']);
      expect((await legacy.json()).errors[0].extensions.code).toMatch(/^GRAPHQL_(PARSE|VALIDATION)_FAILED$/);
      const strict = await ask(query, { Accept: 'application/graphql-response+json' });
      expect([query, strict.status]).toEqual([query, 400]);
    }
    // A request a browser can send cross-origin without a preflight is refused before any document is read.
    const simple = await authenticatedFetch(url, { method: 'POST', headers: { 'Content-Type': 'text/plain' }, body: JSON.stringify({ query: '{ nope }' }) });
    expect(simple.status).toBe(400);
    expect(JSON.stringify(await simple.json())).toContain('Cross-Site Request Forgery');
  });
});
