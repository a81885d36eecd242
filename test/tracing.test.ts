import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { SpanKind } from '@opentelemetry/api';
import supertest from 'supertest';
import { InMemorySpanExporter, type ReadableSpan } from '@opentelemetry/sdk-trace-node';
import { startTracing, type Tracing } from '../src/observability/tracing.js';
import { startHarness, type Harness } from './support/harness.js';

const exporter = new InMemorySpanExporter();
let tracing: Tracing | undefined;
let h: Harness;

beforeAll(async () => {
  tracing = startTracing({ exporter });
  h = await startHarness();
});
afterAll(async () => {
  await h?.close();
  await tracing?.shutdown();
});

const parentOf = (span: ReadableSpan) => span.parentSpanContext?.spanId;

/** The spans of one trace, once its server span has ended (it ends when the response is closed). */
async function traceOf(requestId: string): Promise<{ traceId: string; spans: ReadableSpan[] }> {
  const deadline = Date.now() + 5_000;
  for (;;) {
    const line = h.logs.map((entry) => JSON.parse(entry) as { msg: string; requestId?: string; traceId?: string }).find((entry) => entry.msg === 'request' && entry.requestId === requestId);
    const traceId = line?.traceId;
    const spans = traceId ? exporter.getFinishedSpans().filter((span) => span.spanContext().traceId === traceId) : [];
    if (spans.some((span) => span.kind === SpanKind.SERVER)) return { traceId: traceId!, spans };
    if (Date.now() > deadline) throw new Error(`no finished server span for request ${requestId}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('traces', () => {
  test('one REST request: HTTP span, the GraphQL operation under it, SQL statements under each; the access log carries the trace id', async () => {
    const account = await h.createAccount();
    const user = await h.createUser(account);
    exporter.reset();
    const response = await h.rest('get', `/users/${user.id}`, { key: account.key });
    expect(response.status).toBe(200);

    const { traceId, spans } = await traceOf(response.headers['x-request-id']!);
    expect(traceId).toMatch(/^[0-9a-f]{32}$/);
    const http = spans.filter((span) => span.kind === SpanKind.SERVER);
    expect(http.map((span) => span.name)).toEqual(['GET /users/{id}']);
    expect(http[0]!.attributes).toMatchObject({ 'http.route': '/users/{id}', 'http.response.status_code': 200 });
    expect(parentOf(http[0]!)).toBeUndefined();

    const operations = spans.filter((span) => span.name === 'query ShowUser');
    expect(operations).toHaveLength(1);
    expect(parentOf(operations[0]!)).toBe(http[0]!.spanContext().spanId);

    const sql = spans.filter((span) => span.kind === SpanKind.CLIENT);
    const underOperation = sql.filter((span) => parentOf(span) === operations[0]!.spanContext().spanId);
    const underHttp = sql.filter((span) => parentOf(span) === http[0]!.spanContext().spanId);
    // The credential look-up runs before the operation; loading the user runs inside it.
    expect(underHttp.length).toBeGreaterThanOrEqual(1);
    expect(underOperation.length).toBeGreaterThanOrEqual(1);
    expect(underHttp.length + underOperation.length).toBe(sql.length);
    for (const span of sql) {
      expect(span.attributes['db.query.text']).toEqual(expect.any(String));
      expect(String(span.attributes['db.query.text'])).not.toContain(user.id);
    }
    expect(JSON.stringify(spans.map((span) => [span.name, span.attributes]))).not.toContain((account.key as { token: string }).token);
    process.stdout.write(`trace of GET /users/{id}: 1 HTTP span, 1 GraphQL span, ${underOperation.length} SQL under the operation, ${underHttp.length} SQL under HTTP\n`);
  });

  test('a /graphql operation gets its own span, named after the operation; a caller\'s traceparent is continued', async () => {
    const account = await h.createAccount();
    exporter.reset();
    const callerTrace = '4bf92f3577b34da6a3ce929d0e0e4736';
    const response = await supertest(h.app)
      .post('/graphql')
      .set({ Authorization: `Token token=${(account.key as { token: string }).token}`, traceparent: `00-${callerTrace}-00f067aa0ba902b7-01` })
      .send({ query: 'query CountUsers { users { totalCount } }' });
    expect(response.status).toBe(200);
    const { traceId, spans } = await traceOf(response.headers['x-request-id']!);
    expect(traceId).toBe(callerTrace);
    const http = spans.find((span) => span.kind === SpanKind.SERVER)!;
    expect(http.name).toBe('POST /graphql');
    expect(parentOf(http)).toBe('00f067aa0ba902b7');
    const operation = spans.find((span) => span.name === 'query CountUsers')!;
    expect(parentOf(operation)).toBe(http.spanContext().spanId);
    expect(spans.filter((span) => span.kind === SpanKind.CLIENT && parentOf(span) === operation.spanContext().spanId).length).toBeGreaterThanOrEqual(1);
  });
});
