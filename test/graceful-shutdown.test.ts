import http from 'node:http';
import net from 'node:net';
import { randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import supertest from 'supertest';
import { createApp } from '../src/app/create-app.js';
import { allCommitHooks, allEntities } from '../src/app/features.js';
import { shutdownGracefully } from '../src/http/shutdown.js';
import { createRateLimiter } from '../src/auth/rate-limit.js';
import { openDatabase, type Database } from '../src/db/database.js';
import { createLogger } from '../src/logging/logger.js';
import { startHarness, TEST_SETTINGS, type Harness, type TestAccount } from './support/harness.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h?.close();
});

interface Outcome {
  kind: 'read' | 'write' | 'graphql';
  stoppingInstance?: boolean;
  status?: number;
  connectionClose?: boolean;
  /** Set when no response came: ECONNREFUSED (never accepted) or a reset of an accepted request. */
  error?: string;
  /** On a failure: whether the request went out on a reused keep-alive connection (for the diagnosis). */
  reusedSocket?: boolean;
  email?: string;
  idempotencyKey?: string;
  body?: string;
}

const send = (port: number, agent: http.Agent | undefined, method: string, path: string, headers: Record<string, string>, body?: string) => sendTo(port, agent, method, path, headers, body);

function sendTo(port: number, agent: http.Agent | undefined, method: string, path: string, headers: Record<string, string>, body?: string): Promise<Omit<Outcome, 'kind'>> {
  return new Promise((resolve) => {
    const request = http.request({ host: '127.0.0.1', port, method, path, agent, headers: { ...headers, ...(body ? { 'Content-Type': 'application/json', 'Content-Length': String(Buffer.byteLength(body)) } : {}) } }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => resolve({ status: response.statusCode, connectionClose: response.headers.connection === 'close', body: Buffer.concat(chunks).toString('utf8') }));
      response.on('error', (error: NodeJS.ErrnoException) => resolve({ error: error.code ?? error.message }));
    });
    request.on('error', (error: NodeJS.ErrnoException) => resolve({ error: error.code ?? error.message, reusedSocket: request.reusedSocket }));
    request.end(body);
  });
}

/** A raw connection, to send exactly when the test decides and read what comes back. */
function rawConnection(port: number) {
  const socket = net.connect(port, '127.0.0.1');
  let received = '';
  let sawError: string | undefined;
  socket.on('data', (chunk: Buffer) => (received += chunk.toString('latin1')));
  socket.on('error', (error: NodeJS.ErrnoException) => (sawError = error.code));
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  return { socket, closed, received: () => received, error: () => sawError, connected: new Promise<void>((resolve) => socket.once('connect', () => resolve())) };
}

/**
 * The instance that stops: its own connection pool on the harness's data (embedded, the harness's
 * database itself, whose close is only recorded), its own logs, listening on a port of its own.
 */
async function startStoppingInstance() {
  let serverDatabase: Database;
  let databaseClosed = false;
  if (h.database.url) serverDatabase = await openDatabase({ databaseUrl: h.database.url, dataDir: undefined, entities: allEntities(), commitHooks: allCommitHooks(), poolMax: 5 });
  else serverDatabase = { ...h.database, close: async () => void (databaseClosed = true) };
  const logs: Array<{ level: number; msg: string }> = [];
  const logger = createLogger({ logLevel: 'info' }, new Writable({ write: (chunk, _encoding, done) => (logs.push(JSON.parse(String(chunk))), done()) }));
  const rateLimiter = createRateLimiter({ perMinute: 1_000_000, logger });
  const app = await createApp({ settings: TEST_SETTINGS, database: serverDatabase, logger, serverSecret: h.runtime.serverSecret, rateLimiter });
  await new Promise<void>((resolve) => app.httpServer.listen(0, '127.0.0.1', resolve));
  const port = (app.httpServer.address() as net.AddressInfo).port;
  return { serverDatabase, databaseClosed: () => databaseClosed, logs, logger, rateLimiter, app, port };
}

/** What a load balancer in front of both instances believes of the stopping one. */
interface Balancer {
  stoppingInstanceReady: boolean;
  probing: boolean;
  prober: Promise<void>;
}

/** The balancer probes the stopping instance's readiness every 100 ms until told to stop. */
function startBalancer(port: number): Balancer {
  const balancer: Balancer = { stoppingInstanceReady: true, probing: true, prober: Promise.resolve() };
  balancer.prober = (async () => {
    while (balancer.probing) {
      const probe = await send(port, undefined, 'GET', '/readyz', {});
      if (probe.status !== 200) balancer.stoppingInstanceReady = false;
      await sleep(100);
    }
  })();
  return balancer;
}

/**
 * Eight clients sending reads, writes (each with its own idempotency key) and GraphQL queries
 * until `done`. Through the balancer: a client keeps using its open keep-alive connection, and opens
 * a new one only to an instance the balancer believes ready.
 */
function startClients(balancer: Balancer, port: number, otherPort: number, auth: Record<string, string>) {
  const load = { outcomes: [] as Outcome[], done: false, clients: [] as Promise<void>[] };
  load.clients = Array.from({ length: 8 }, async (_, client) => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const otherAgent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const route = () => (balancer.stoppingInstanceReady || Object.keys(agent.freeSockets).length ? { port, agent } : { port: otherPort, agent: otherAgent });
    const send = (method: string, path: string, headers: Record<string, string>, body?: string) => {
      const target = route();
      return sendTo(target.port, target.agent, method, path, headers, body).then((outcome) => ({ ...outcome, stoppingInstance: target.port === port }));
    };
    try {
      for (let i = 0; !load.done; i++) {
        const kind = (['read', 'write', 'graphql'] as const)[(i + client) % 3]!;
        let outcome: Outcome;
        if (kind === 'write') {
          const email = `drain-${randomUUID().slice(0, 12)}@example.com`;
          const idempotencyKey = `drain-${email}`;
          const body = JSON.stringify({ user: { name: 'Drain', email } });
          outcome = { kind, email, idempotencyKey, ...(await send('POST', '/users', { ...auth, 'Idempotency-Key': idempotencyKey }, body)) };
        } else if (kind === 'read') {
          outcome = { kind, ...(await send('GET', '/users?limit=5', auth)) };
        } else {
          outcome = { kind, ...(await send('POST', '/graphql', auth, JSON.stringify({ query: '{ users(first: 5) { totalCount } }' }))) };
        }
        load.outcomes.push(outcome);
      }
    } finally {
      agent.destroy();
      otherAgent.destroy();
    }
  });
  return load;
}

/** The order that loses nothing: HTTP stopped, then the database; no handler met a closed database. */
async function expectStoppedInOrder(instance: Awaited<ReturnType<typeof startStoppingInstance>>): Promise<void> {
  const messages = instance.logs.map((line) => line.msg);
  expect(messages.indexOf('http server stopped')).toBeLessThan(messages.indexOf('database closed; stopped'));
  expect(instance.logs.filter((line) => line.level >= 50)).toEqual([]);
  if (h.database.url) expect(await instance.serverDatabase.orm.isConnected()).toBe(false);
  else expect(instance.databaseClosed()).toBe(true);
}

/** Every acknowledged write is stored; every write that got no answer, retried with its key on the other instance, exists once. */
async function expectEveryWriteStoredOnce(outcomes: Outcome[], slowEmail: string, auth: Record<string, string>) {
  const writes = outcomes.filter((outcome) => outcome.kind === 'write');
  const unanswered = writes.filter((outcome) => outcome.status === undefined);
  for (const write of unanswered) {
    const retry = await supertest(h.app).post('/users').set({ ...auth, 'Idempotency-Key': write.idempotencyKey! }).send({ user: { name: 'Drain', email: write.email } });
    expect(retry.status).toBe(201);
  }
  const emails = [...writes.map((write) => write.email!), slowEmail];
  const rows = await h.database.em().execute<{ email: string; n: number }[]>(
    `select email, count(*)::int as n from users where email in (${emails.map(() => '?').join(', ')}) group by email`,
    emails,
  );
  const stored = new Map(rows.map((row) => [row.email, row.n]));
  expect(emails.filter((email) => stored.get(email) !== 1)).toEqual([]);
  return { writes, unanswered, emails };
}

test('SIGTERM-style stop under keep-alive load: readiness 503, Connection: close, nothing reset, every 2xx write stored, retries exactly once, clean stop', async () => {
  const account: TestAccount = await h.createAccount();
  const auth = { Authorization: `Token token=${(account.key as { token: string }).token}` };

  // The stopping instance has its own connection pool on the same data; the harness's app plays the instance that stays.
  const instance = await startStoppingInstance();
  const { app, rateLimiter, serverDatabase, logger, port } = instance;

  // The instance that stays, and a load balancer in front of both.
  await new Promise<void>((resolve) => h.server.httpServer.listen(0, '127.0.0.1', resolve));
  const otherPort = (h.server.httpServer.address() as net.AddressInfo).port;
  const balancer = startBalancer(port);
  const load = startClients(balancer, port, otherPort, auth);
  const { outcomes } = load;

  const idleKeepAlive = rawConnection(port);
  await idleKeepAlive.connected;
  idleKeepAlive.socket.write('GET /healthz HTTP/1.1\r\nHost: test\r\n\r\n');
  for (let waited = 0; !idleKeepAlive.received() && waited < 100; waited++) await sleep(50);
  expect(idleKeepAlive.received()).toMatch(/^HTTP\/1.1 200/);

  const outcomesBeforeSigterm = outcomes.filter((outcome) => outcome.stoppingInstance).length;
  const stopping = shutdownGracefully({ app, rateLimiter, database: serverDatabase, logger, drainMs: 1_200, graceMs: 5_000 });
  const readiness = await send(port, undefined, 'GET', '/readyz', {});
  // The balancer's probe sees it too (a busy machine may delay its own loop).
  if (readiness.status !== 200) balancer.stoppingInstanceReady = false;
  expect([readiness.status, readiness.connectionClose]).toEqual([503, true]);
  expect(JSON.parse(readiness.body!).status).toBe('draining');

  // Accepted during the drain: one connection that has not sent anything yet, one halfway through its body.
  const notYetRead = rawConnection(port);
  const slowBody = rawConnection(port);
  await Promise.all([notYetRead.connected, slowBody.connected]);
  const slowEmail = `slow-${randomUUID().slice(0, 8)}@example.com`;
  const slowPayload = JSON.stringify({ user: { name: 'Slow body', email: slowEmail } });
  slowBody.socket.write(`POST /users HTTP/1.1\r\nHost: test\r\n${auth.Authorization ? `Authorization: ${auth.Authorization}\r\n` : ''}Content-Type: application/json\r\nContent-Length: ${slowPayload.length}\r\n\r\n${slowPayload.slice(0, 10)}`);

  while (app.httpServer.listening) await sleep(10);
  // The listener is closed now; both connections were accepted before, so both are served.
  notYetRead.socket.write('GET /healthz HTTP/1.1\r\nHost: test\r\n\r\n');
  slowBody.socket.write(slowPayload.slice(10));

  const clean = await stopping;
  // Keep sending a moment after the stop, all to the instance that stays.
  await sleep(200);
  load.done = true;
  balancer.probing = false;
  await Promise.all([...load.clients, balancer.prober]);
  await Promise.all([notYetRead.closed, slowBody.closed, idleKeepAlive.closed]);

  expect(clean).toBe(true);
  expect(notYetRead.received()).toMatch(/^HTTP\/1.1 200 OK[\s\S]*Connection: close/i);
  expect(slowBody.received()).toMatch(/^HTTP\/1.1 201 Created[\s\S]*Connection: close/i);
  expect([notYetRead.error(), slowBody.error(), idleKeepAlive.error()]).toEqual([undefined, undefined, undefined]);

  // Nothing accepted was reset: the only failures are connections refused once the listener had closed.
  const outcomesAfterSigterm = outcomes.filter((outcome) => outcome.stoppingInstance).length - outcomesBeforeSigterm;
  const resets = outcomes.filter((outcome) => outcome.error && outcome.error !== 'ECONNREFUSED');
  expect(resets).toEqual([]);
  const answered = outcomes.filter((outcome) => outcome.status !== undefined);
  expect(answered.every((outcome) => outcome.status! < 500)).toBe(true);
  expect(answered.filter((outcome) => outcome.connectionClose).length).toBeGreaterThan(0);

  await expectStoppedInOrder(instance);
  const { writes, unanswered, emails } = await expectEveryWriteStoredOnce(outcomes, slowEmail, auth);

  console.info(
    `graceful shutdown figures: ${JSON.stringify({
      requests: outcomes.length,
      toStoppingInstance: outcomes.filter((outcome) => outcome.stoppingInstance).length,
      toStoppingInstanceAfterSigterm: outcomesAfterSigterm,
      answered: answered.length,
      answeredWithConnectionClose: answered.filter((outcome) => outcome.connectionClose).length,
      writes: writes.length,
      writes2xx: writes.filter((write) => write.status === 201).length,
      refusedAfterListenerClosed: outcomes.filter((outcome) => outcome.error === 'ECONNREFUSED').length,
      resetAfterAcceptance: resets.length,
      writesRetriedWithKey: unanswered.length,
      usersStoredExactlyOnce: emails.length,
    })}`,
  );
});
