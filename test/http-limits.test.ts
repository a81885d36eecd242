import net from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { Account } from '../src/accounts/account.entity.js';
import { User } from '../src/users/user.entity.js';
import { startHarness, type Harness, type TestAccount } from './support/harness.js';

const LIMITS = { headersTimeoutMs: 1_500, requestTimeoutMs: 3_000, keepAliveTimeoutMs: 65_000, maxUnreadResponseBytes: 65_536, stalledClientTimeoutMs: 1_500 };

let h: Harness;
let account: TestAccount;
let port: number;
beforeAll(async () => {
  h = await startHarness({ http: LIMITS });
  account = await h.createAccount();
  const em = h.database.em();
  for (let i = 0; i < 100; i++) {
    em.create(User, { account: em.getReference(Account, account.id), name: `Listed ${i} ${'x'.repeat(60)}`, email: `listed-${i}-${account.id.toLowerCase()}@example.com`, timeZone: 'Etc/UTC', color: 'green', role: 'user', description: 'd'.repeat(1_000) });
  }
  await em.flush();
  await new Promise<void>((resolve) => h.server.httpServer.listen(0, '127.0.0.1', resolve));
  port = (h.server.httpServer.address() as net.AddressInfo).port;
});
afterAll(async () => {
  await h?.close();
});

function connect() {
  const socket = net.connect(port, '127.0.0.1');
  let received = '';
  socket.on('data', (chunk: Buffer) => (received += chunk.toString('latin1')));
  socket.on('error', () => {});
  const closed = new Promise<number>((resolve) => {
    const opened = performance.now();
    socket.once('close', () => resolve(Math.round(performance.now() - opened)));
  });
  return { socket, closed, received: () => received, connected: new Promise<void>((resolve) => socket.once('connect', () => resolve())) };
}

test('the configured limits are the server\'s', () => {
  const server = h.server.httpServer;
  expect([server.headersTimeout, server.requestTimeout, server.keepAliveTimeout]).toEqual([1_500, 3_000, 65_000]);
});

test('a slow body, slow headers and a never-reading pipeliner are cut off while another client is served; memory stays bounded', async () => {
  const authorization = `Authorization: Token token=${(account.key as { token: string }).token}\r\n`;
  const rssBefore = process.memoryUsage().rss;
  let rssPeak = rssBefore;
  const sampler = setInterval(() => (rssPeak = Math.max(rssPeak, process.memoryUsage().rss)), 25);

  const slowBody = connect();
  const slowHeaders = connect();
  const pipeliner = connect();
  await Promise.all([slowBody.connected, slowHeaders.connected, pipeliner.connected]);
  slowBody.socket.write(`POST /users HTTP/1.1\r\nHost: t\r\n${authorization}Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"user": `);
  const trickle = setInterval(() => slowBody.socket.writable && slowBody.socket.write(' '), 200);
  slowHeaders.socket.write('GET /users HTTP/1.1\r\nHost: t\r\n');
  const headerTrickle = setInterval(() => slowHeaders.socket.writable && slowHeaders.socket.write('X-Slow: 1\r\n'), 200);

  // 300 pipelined listings of 100 users, and the client never reads a byte of the answers.
  pipeliner.socket.pause();
  const pipelinedRequest = `GET /users?limit=100 HTTP/1.1\r\nHost: t\r\n${authorization}\r\n`;
  pipeliner.socket.write(pipelinedRequest.repeat(300));

  // Meanwhile another client is served, request after request.
  const served: number[] = [];
  for (let i = 0; i < 10; i++) {
    const response = await fetch(`http://127.0.0.1:${port}/users?limit=5`, { headers: { Authorization: `Token token=${(account.key as { token: string }).token}` } });
    served.push(response.status);
    await response.arrayBuffer();
    await sleep(100);
  }

  const [slowBodyMs, slowHeadersMs] = await Promise.all([slowBody.closed, slowHeaders.closed]);
  clearInterval(trickle);
  clearInterval(headerTrickle);
  expect(slowBody.received()).toMatch(/^HTTP\/1.1 408/);
  expect(slowHeaders.received()).toMatch(/^HTTP\/1.1 408/);

  // The pipeliner is closed by the server once it stayed stalled; reading now shows how far it got.
  pipeliner.socket.resume();
  const pipelinerMs = await pipeliner.closed;
  clearInterval(sampler);
  const answered = (pipeliner.received().match(/HTTP\/1.1 200/g) ?? []).length;
  expect(answered).toBeLessThan(300);
  expect(served).toEqual(Array(10).fill(200));

  const listings = h.logs.filter((line) => line.includes('"path":"/users"') && line.includes('"status":200')).length;
  const rssGrowthMb = Math.round((rssPeak - rssBefore) / 1_048_576);
  // Without the bound all 300 listings ran at once (the issue measured +272 MB); with it, far less.
  expect(rssGrowthMb).toBeLessThan(150);
  console.info(`http limits figures: ${JSON.stringify({ slowBodyClosedAfterMs: slowBodyMs, slowHeadersClosedAfterMs: slowHeadersMs, pipelinerClosedAfterMs: pipelinerMs, pipelinedSent: 300, pipelinedAnsweredBeforeCut: answered, listingsRunOverall: listings, otherClientServed: served.length, rssGrowthMb })}`);
});

test('a pipeliner under the queue bound that never reads is held at the unread-bytes bound, then cut when stalled', async () => {
  const token = (account.key as { token: string }).token;
  // About 800 kB per answer: 60 of them outgrow what the kernel's socket buffers absorb (tens of MB).
  const aliases = Array.from({ length: 8 }, (_, i) => `a${i}: users(first: 100) { nodes { description } }`).join(' ');
  const body = JSON.stringify({ query: `{ ${aliases} }` });
  const request = `POST /graphql HTTP/1.1\r\nHost: t\r\nAuthorization: Token token=${token}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
  const operationsBefore = h.logs.filter((line) => line.includes('"path":"/graphql"')).length;
  const rssBefore = process.memoryUsage().rss;
  let rssPeak = rssBefore;
  const sampler = setInterval(() => (rssPeak = Math.max(rssPeak, process.memoryUsage().rss)), 25);
  const serverSide = new Promise<net.Socket>((resolve) => h.server.httpServer.once('connection', resolve));
  const pipeliner = connect();
  await pipeliner.connected;
  pipeliner.socket.pause();
  pipeliner.socket.write(request.repeat(60));
  const serverSocket = await serverSide;
  const started = performance.now();
  const serverClosed = new Promise<number>((resolve) => serverSocket.once('close', () => resolve(Math.round(performance.now() - started))));

  const served = await fetch(`http://127.0.0.1:${port}/users?limit=5`, { headers: { Authorization: `Token token=${token}` } });
  expect(served.status).toBe(200);
  await served.arrayBuffer();
  // Closed by the server (stalled past HTTP_STALLED_CLIENT_TIMEOUT_MS) although the client never read nor closed.
  let giveUp: NodeJS.Timeout | undefined;
  const closedAfterMs = await Promise.race([serverClosed, new Promise<number>((resolve) => (giveUp = setTimeout(() => resolve(-1), 20_000)))]);
  clearTimeout(giveUp);
  clearInterval(sampler);
  expect(closedAfterMs).toBeGreaterThan(0);
  pipeliner.socket.resume();
  await pipeliner.closed;
  // Operations whose answers were fully handed over; the last one may have been cut while being written.
  const operationsRun = h.logs.filter((line) => line.includes('"path":"/graphql"')).length - operationsBefore;
  expect(operationsRun).toBeLessThan(60);
  const rssGrowthMb = Math.round((rssPeak - rssBefore) / 1_048_576);
  expect(rssGrowthMb).toBeLessThan(150);
  console.info(`stalled pipeliner figures: ${JSON.stringify({ pipelinedSent: 60, operationsRun, closedAfterMs, rssGrowthMb })}`);
});
