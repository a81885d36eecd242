import { randomUUID } from 'node:crypto';
import { startHarness, type Harness } from './support/harness.js';
import { TcpProxy } from './support/tcp-proxy.js';

const serverUrl = process.env.DATABASE_URL;
// The outage is made by a TCP proxy in front of PostgreSQL; the in-memory PGlite fallback has no connection to cut.
const describeWithPostgres = serverUrl ? describe : describe.skip;

describeWithPostgres('database outage through a proxy the test controls', () => {
  let proxy: TcpProxy;
  let h: Harness;
  beforeAll(async () => {
    const target = new URL(serverUrl!);
    proxy = await TcpProxy.start({ host: target.hostname, port: Number(target.port || 5432) });
    h = await startHarness({ throughPort: proxy.port, poolTimeoutMs: 1_500, outageLogIntervalMs: 60_000 });
  });
  afterAll(async () => {
    proxy?.restore();
    await h?.close();
    await proxy?.close();
  });

  const elapsed = async <T>(call: () => Promise<T>): Promise<[T, number]> => {
    const started = performance.now();
    const result = await call();
    return [result, Math.round(performance.now() - started)];
  };

  test('cut database: 503 + Retry-After + 2000 on REST, SERVICE_UNAVAILABLE on GraphQL, warn logs throttled, recovery without restart', async () => {
    const account = await h.createAccount();
    expect((await h.rest('get', '/users', { key: account.key })).status).toBe(200);
    const logLinesBefore = h.logs.length;
    const figures: Record<string, number> = {};

    proxy.cut();
    const [restRead, restReadMs] = await elapsed(() => h.rest('get', '/users', { key: account.key }));
    expect(restRead.status).toBe(503);
    expect(restRead.headers['retry-after']).toBe('1');
    expect(restRead.body.error).toMatchObject({ code: 2000, message: 'Service Unavailable' });
    figures.restReadMs = restReadMs;

    const email = `outage-${randomUUID().slice(0, 8)}@example.com`;
    const [restWrite, restWriteMs] = await elapsed(() =>
      h.rest('post', '/users', { key: account.key, body: { user: { name: 'Outage', email } }, headers: { 'Idempotency-Key': `outage-${email}` } }),
    );
    expect([restWrite.status, restWrite.headers['retry-after'], restWrite.body.error.code]).toEqual([503, '1', 2000]);
    figures.restWriteMs = restWriteMs;

    const [graphql, graphqlMs] = await elapsed(() => h.graphql('{ users { totalCount } }', {}, account.key));
    expect(graphql.status).toBe(503);
    expect(graphql.errors?.[0].extensions).toMatchObject({ code: 'SERVICE_UNAVAILABLE', apiErrorCode: 2000 });
    figures.graphqlMs = graphqlMs;

    // A network that swallows packets: the pool's acquire timeout (1.5 s here) turns a hang into a 503.
    proxy.cut();
    proxy.blackhole();
    const [blackHole, blackHoleMs] = await elapsed(() => h.rest('get', '/users', { key: account.key }));
    expect([blackHole.status, blackHole.headers['retry-after']]).toEqual([503, '1']);
    figures.blackHoleMs = blackHoleMs;
    const [blackHoleGraphql] = await elapsed(() => h.graphql('mutation($input: CreateUserInput!) { createUser(input: $input) { user { id } } }', { input: { name: 'X', email: `x-${email}` } }, account.key));
    expect(blackHoleGraphql.errors?.[0].extensions?.code).toBe('SERVICE_UNAVAILABLE');

    // Many failing requests, few log lines: warn level, throttled, never error level.
    proxy.cut();
    for (let i = 0; i < 20; i++) expect((await h.rest('get', '/users', { key: account.key })).status).toBe(503);
    const outageLines = h.logs.slice(logLinesBefore).map((line) => JSON.parse(line) as { level: number; msg: string });
    const warnings = outageLines.filter((line) => line.msg.startsWith('database unavailable'));
    expect(warnings.length).toBeGreaterThanOrEqual(1);
    expect(warnings.length).toBeLessThanOrEqual(2);
    expect(warnings.every((line) => line.level === 40)).toBe(true);
    expect(outageLines.filter((line) => line.level >= 50)).toEqual([]);
    figures.failedRequests = 25;
    figures.warnLines = warnings.length;

    proxy.restore();
    const [recovered, recoveredMs] = await elapsed(() => h.rest('get', '/users', { key: account.key }));
    expect(recovered.status).toBe(200);
    figures.firstRequestAfterRecoveryMs = recoveredMs;
    // The write that met the outage was not remembered under its key: the retry runs, once.
    const retried = await h.rest('post', '/users', { key: account.key, body: { user: { name: 'Outage', email } }, headers: { 'Idempotency-Key': `outage-${email}` } });
    expect(retried.status).toBe(201);
    const listed = await h.rest('get', `/users?query=${encodeURIComponent(email)}`, { key: account.key });
    expect(listed.body.users.map((user: { email: string }) => user.email)).toEqual([email]);
    console.info(`database outage figures: ${JSON.stringify(figures)}`);
  });
});
