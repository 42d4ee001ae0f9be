import { context, propagation, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import { BasicTracerProvider, InMemorySpanExporter, type ReadableSpan, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { afterAll, afterEach, beforeAll } from "vitest";

/**
 * Registers an OpenTelemetry SDK for the test file, as an application does:
 * a tracer provider whose spans go to an in-memory exporter, the
 * AsyncLocalStorage context manager and the W3C propagator. Answers the
 * exporter (emptied after each test); all is unregistered after the file.
 */
export function recordSpans(): InMemorySpanExporter {
  const exporter = new InMemorySpanExporter();
  beforeAll(() => {
    trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }));
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  });
  afterEach(() => exporter.reset());
  afterAll(() => {
    trace.disable();
    context.disable();
    propagation.disable();
  });
  return exporter;
}

/** The one finished span of this name; fails if there are none or several. */
export function only(spans: ReadableSpan[], name: string): ReadableSpan {
  const named = spans.filter((span) => span.name === name);
  if (named.length !== 1) throw new Error(`expected one span named ${JSON.stringify(name)}, found ${named.length} among ${JSON.stringify(spans.map((span) => span.name))}`);
  return named[0]!;
}

/** The id of a span's parent, or undefined for a root span. */
export function parentOf(span: ReadableSpan): string | undefined {
  return span.parentSpanContext?.spanId;
}
