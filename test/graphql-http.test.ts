import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { appSchema } from '../src/app/features.js';
import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { createRequire } from 'node:module';
import supertest from 'supertest';
import { expressMiddleware } from '@as-integrations/express5';
import { ApolloServer } from '@apollo/server';
import { apolloHttpHandler } from '../src/faces/graphql/http-handler.js';
import { inSequence } from '../src/http/in-sequence.js';
import { startHarness, type Harness } from './support/harness.js';

/** Express's own weak ETag generator (its `etag fn`), which `res.send` applies. */
const etag = createRequire(import.meta.url)('etag') as (body: string, options: { weak: boolean }) => string;

let h: Harness;
let account: Awaited<ReturnType<Harness['createAccount']>>;
beforeAll(async () => {
  h = await startHarness();
  account = await h.createAccount();
});
afterAll(async () => {
  await h?.close();
});

interface Answer { status: number; headers: string[]; body: string }

/** Status, raw headers (in order, as sent) and body of one request to a listening server. */
function ask(server: http.Server, method: string, path: string, headers: Record<string, string>, body?: string): Promise<Answer> {
  const { port } = server.address() as AddressInfo;
  return new Promise((resolve, reject) => {
    const request = http.request({ host: '127.0.0.1', port, method, path, headers }, (response) => {
      let text = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (text += chunk));
      response.on('end', () => {
        const raw = response.rawHeaders.flatMap((value, index) => (index % 2 === 0 ? [`${value}: ${/^date$/i.test(value) ? '*' : response.rawHeaders[index + 1]}`] : []));
        resolve({ status: response.statusCode!, headers: raw, body: text });
      });
    });
    request.on('error', reject);
    request.end(body);
  });
}

describe('POST and GET /graphql through apolloHttpHandler', () => {
  test('answer the same status, headers (in order) and bytes as @as-integrations/express5', async () => {
    const schema = await appSchema();
    const apollo = new ApolloServer<object>({ schema, csrfPrevention: true });
    await apollo.start();
    const context = async () => ({ authentication: { status: 'anonymous' } }) as object;
    const servers = [
      express().use(express.json(), expressMiddleware(apollo, { context })),
      express().use(express.json(), apolloHttpHandler(apollo, { context })),
    ].map((app) => http.createServer(app).listen(0, '127.0.0.1'));
    await Promise.all(servers.map((server) => once(server, 'listening')));
    try {
      const page = JSON.stringify({ query: '{ __typename }' });
      const large = JSON.stringify({ query: `{ ${Array.from({ length: 60 }, (_, i) => `a${i}: __typename`).join(' ')} }` });
      const requests: Array<[string, string, Record<string, string>, string?]> = [
        ['POST', '/', { 'Content-Type': 'application/json' }, page],
        ['POST', '/', { 'Content-Type': 'application/json' }, large],
        ['POST', '/', { 'Content-Type': 'application/json', Accept: 'application/graphql-response+json' }, large],
        ['POST', '/?x=1', { 'Content-Type': 'application/json' }, page],
        ['POST', '/', { 'Content-Type': 'application/json' }, JSON.stringify({ query: '{ nope }' })],
        ['POST', '/', { 'Content-Type': 'text/plain' }, page],
        ['GET', `/?query=${encodeURIComponent('{ __typename }')}`, { 'apollo-require-preflight': '1' }],
        ['GET', `/?query=${encodeURIComponent('{ __typename }')}`, { 'apollo-require-preflight': '1', 'If-None-Match': 'W/"1c-x"' }],
        ['GET', `/?query=${encodeURIComponent('{ __typename }')}&at=@`, { 'apollo-require-preflight': '1' }],
        ['GET', '/?', { 'apollo-require-preflight': '1' }],
        ['PUT', '/', { 'Content-Type': 'application/json' }, page],
      ];
      for (const [method, path, headers, body] of requests) {
        const [theirs, ours] = await Promise.all(servers.map((server) => ask(server, method, path, headers, body)));
        expect({ method, path, ...ours }).toEqual({ method, path, ...theirs });
      }
      // A fresh conditional GET is answered 304 by both, as Express's res.send does.
      const first = await ask(servers[1]!, 'GET', `/?query=${encodeURIComponent('{ __typename }')}`, { 'apollo-require-preflight': '1' });
      const etag = first.headers.find((header) => header.startsWith('ETag: '))!.slice('ETag: '.length);
      const [theirs, ours] = await Promise.all(servers.map((server) => ask(server, 'GET', `/?query=${encodeURIComponent('{ __typename }')}`, { 'apollo-require-preflight': '1', 'If-None-Match': etag })));
      expect(ours.status).toBe(304);
      expect(ours).toEqual(theirs);
    } finally {
      await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
      await apollo.stop();
    }
  });

  test('the app answers a page with Cache-Control: no-store and the weak ETag Express would give its bytes', async () => {
    const key = account.key as { token: string };
    const response = await supertest(h.app).post('/graphql').set({ 'Content-Type': 'application/json', Authorization: `Token token=${key.token}` })
      .send({ query: '{ users(first: 2) { totalCount nodes { id } } }' });
    expect(response.status).toBe(200);
    expect(response.body.data.users.nodes.length).toBeGreaterThan(0);
    expect(response.headers['cache-control']).toBe('no-store');
    expect(response.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(response.headers['content-length']).toBe(String(Buffer.byteLength(response.text)));
    expect(response.headers.etag).toBe(etag(response.text, { weak: true }));
  });
});

describe('inSequence', () => {
  const run = (handlers: Parameters<typeof inSequence>) =>
    new Promise<{ order: string[]; error: unknown }>((resolve) => {
      const order: string[] = [];
      const req = { order } as unknown as express.Request;
      inSequence(...handlers)(req, {} as express.Response, (error?: unknown) => resolve({ order, error }));
    });
  const mark = (name: string) => (req: express.Request, _res: express.Response, next: express.NextFunction) => {
    (req as unknown as { order: string[] }).order.push(name);
    next();
  };

  test('runs the handlers in order, then goes on', async () => {
    expect(await run([mark('a'), mark('b'), mark('c')])).toEqual({ order: ['a', 'b', 'c'], error: undefined });
  });

  test('leaves at the first error: passed to next, thrown, or a rejected promise', async () => {
    const failure = new Error('no');
    expect(await run([mark('a'), (_req, _res, next) => next(failure), mark('c')])).toEqual({ order: ['a'], error: failure });
    expect(await run([mark('a'), () => { throw failure; }, mark('c')])).toEqual({ order: ['a'], error: failure });
    expect(await run([mark('a'), async () => { throw failure; }, mark('c')])).toEqual({ order: ['a'], error: failure });
  });

  test('stops where a handler answers without calling next', async () => {
    const order: string[] = [];
    let nextCalled = false;
    inSequence(mark('a'), () => order.push('answered'), mark('c'))({ order } as unknown as express.Request, {} as express.Response, () => (nextCalled = true));
    await new Promise((resolve) => setImmediate(resolve));
    expect(order).toEqual(['a', 'answered']);
    expect(nextCalled).toBe(false);
  });
});
