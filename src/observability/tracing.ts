import { context, propagation, trace, SpanKind, SpanStatusCode, type Context as OtelContext, type Span, type Tracer } from '@opentelemetry/api';
import { BatchSpanProcessor, NodeTracerProvider, SimpleSpanProcessor, type SpanExporter } from '@opentelemetry/sdk-trace-node';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { defaultResource, detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources';

/**
 * OpenTelemetry traces, off unless configured. While off, `tracer` is undefined and every
 * hook below returns after one comparison: no spans, no context propagation, no cost.
 */
let tracer: Tracer | undefined;

export interface Tracing {
  shutdown(): Promise<void>;
}

export type Env = Record<string, string | undefined>;

/** Tracing is on when an OTLP endpoint is configured (standard OTEL_* variables) and the SDK is not disabled. */
export function tracingRequested(env: Env = process.env): boolean {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return false;
  return Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim() || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim());
}

/**
 * Starts the tracer provider. The OTLP/HTTP exporter reads its endpoint, headers and timeout from
 * the standard variables; the sampler follows OTEL_TRACES_SAMPLER; the service name defaults to
 * `account-access-gateway` (OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES override it).
 * Tests pass their own exporter, whose spans are exported one by one.
 */
export function startTracing(options: { env?: Env; exporter?: SpanExporter } = {}): Tracing | undefined {
  const env = options.env ?? process.env;
  if (!options.exporter && !tracingRequested(env)) return undefined;
  const resource = defaultResource()
    .merge(resourceFromAttributes({ 'service.name': 'account-access-gateway' }))
    .merge(detectResources({ detectors: [envDetector] }));
  const provider = new NodeTracerProvider({
    resource,
    spanProcessors: [options.exporter ? new SimpleSpanProcessor(options.exporter) : new BatchSpanProcessor(new OTLPTraceExporter())],
  });
  provider.register();
  tracer = provider.getTracer('account-access-gateway');
  return {
    async shutdown() {
      tracer = undefined;
      await provider.shutdown();
      trace.disable();
      context.disable();
      propagation.disable();
    },
  };
}

/** The server span of one HTTP request, child of the caller's `traceparent` if it sent one. */
export function startHttpSpan(method: string, headers: Record<string, unknown>): { span: Span; context: OtelContext } | undefined {
  if (!tracer) return undefined;
  const parent = propagation.extract(context.active(), headers);
  const span = tracer.startSpan(method, { kind: SpanKind.SERVER, attributes: { 'http.request.method': method } }, parent);
  return { span, context: trace.setSpan(parent, span) };
}

export function endHttpSpan(span: Span, method: string, route: string, status: number): void {
  span.updateName(`${method} ${route}`);
  span.setAttributes({ 'http.route': route, 'http.response.status_code': status });
  if (status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
  span.end();
}

/** A span for a GraphQL operation, made active so the statements its resolvers run become its children. */
export function startOperationSpan(name: string): { span: Span; context: OtelContext } | undefined {
  if (!tracer) return undefined;
  const span = tracer.startSpan(name, { kind: SpanKind.INTERNAL });
  return { span, context: trace.setSpan(context.active(), span) };
}

export function describeOperationSpan(span: Span, type: string, operation: string): void {
  span.updateName(`${type} ${operation}`);
  span.setAttributes({ 'graphql.operation.type': type, 'graphql.operation.name': operation });
}

export function endOperationSpan(span: Span, failed: boolean): void {
  if (failed) span.setStatus({ code: SpanStatusCode.ERROR });
  span.end();
}

export function runInContext<T>(otelContext: OtelContext, fn: () => T): T {
  return context.with(otelContext, fn);
}

/**
 * One span per SQL statement, reported by MikroORM's query logger right after the statement
 * finished (so its start is derived from the measured duration). The text is the statement with
 * placeholders; parameter values are never recorded.
 */
export function recordSqlSpan(sql: string, tookMs: number | undefined, failed: boolean): void {
  if (!tracer) return;
  const end = Date.now();
  const verb = /^\s*(\w+)/.exec(sql)?.[1]?.toUpperCase() ?? 'SQL';
  const span = tracer.startSpan(verb, {
    kind: SpanKind.CLIENT,
    startTime: end - (tookMs ?? 0),
    attributes: { 'db.system.name': 'postgresql', 'db.operation.name': verb, 'db.query.text': sql },
  });
  if (failed) span.setStatus({ code: SpanStatusCode.ERROR });
  span.end(end);
}

/** The active span while tracing is on (the GraphQL operation's, inside Apollo Server). */
export function activeSpan(): Span | undefined {
  return tracer ? trace.getActiveSpan() : undefined;
}
