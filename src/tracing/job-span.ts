import { type Attributes, type Context, context, type Link, type Span, SpanKind, SpanStatusCode, trace, type Tracer } from "@opentelemetry/api";
import { spanContextOf } from "./trace-context.ts";
import { tracerRegistered } from "./tracer.ts";

// A job's trace: the one its producer enqueued it in, whose traceparent the job
// carries (migrations/0032). Whoever works on the job (a worker's handler, a
// push delivery) does so in a span that continues that trace, and a claim
// that hands out its lease links to it. docs/traces.md draws the whole trace.

/** What of a job its trace needs: the API's Job and the store's both have it. */
export type TracedJob = { id: string; queue: string; traceparent: string | null; tracestate: string | null };

/**
 * Links the active span (a claim's request) to the trace `job` was enqueued
 * in, as OpenTelemetry's messaging conventions link a receive to each message
 * it takes: a claim takes jobs of many traces, so it cannot be the child of
 * one. Nothing unless a span records and the job has a trace.
 */
export function linkJobTrace(job: TracedJob): void {
  const span = trace.getActiveSpan();
  if (!span?.isRecording()) return;
  const linked = spanContextOf(job.traceparent, job.tracestate);
  if (linked !== null) span.addLink({ context: linked, attributes: { "messaging.message.id": job.id } });
}

/** A span of work on one job, and the context to do that work in (the span active in it). */
export type JobSpan = { span: Span; context: Context };

/**
 * How a job's span is made: its operation (the first word of its name, and
 * its messaging operation), its kind (consumer unless told), more attributes
 * (which may replace the messaging ones), and the context it starts in (the
 * active one unless told).
 */
export type JobSpanOptions = { operation: string; kind?: SpanKind; attributes?: Attributes; context?: Context };

/**
 * Starts the span of work on a job, named `${operation} ${queue}` ("process
 * invoices"): the child of the job's trace when it has one, so that the work
 * continues its producer's trace, with a link to the caller's own span if
 * one of another trace is active; else the child of the caller's span. When
 * the caller's span is already in the job's trace (a push endpoint's request,
 * whose traceparent names the delivery's span), the work nests under it
 * instead. Null when there is nothing to trace: no span records and neither
 * the job nor the caller has a trace to carry on; with no SDK registered,
 * before any span is made.
 */
export function startJobSpan(tracer: Tracer, job: TracedJob, options: JobSpanOptions): JobSpan | null {
  if (!tracerRegistered()) return null;
  const { operation } = options;
  const active = options.context ?? context.active();
  const producer = spanContextOf(job.traceparent, job.tracestate);
  const caller = trace.getSpanContext(active);
  const inJobTrace = producer !== null && caller?.traceId === producer.traceId;
  const links: Link[] = producer !== null && caller !== undefined && !inJobTrace ? [{ context: caller }] : [];
  const parent = producer === null || inJobTrace ? active : trace.setSpanContext(active, producer);
  const span = tracer.startSpan(`${operation} ${job.queue}`, {
    kind: options.kind ?? SpanKind.CONSUMER,
    links,
    attributes: {
      "messaging.system": "fencelease",
      "messaging.operation.type": operation,
      "messaging.operation.name": operation,
      "messaging.destination.name": job.queue,
      "messaging.message.id": job.id,
      ...options.attributes,
    },
  }, parent);
  if (!span.isRecording() && !trace.isSpanContextValid(span.spanContext())) return null;
  return { span, context: trace.setSpan(parent, span) };
}

/**
 * Ends a span with how its work ended: `error` (the work threw, or a job's
 * lease was lost) sets its status to error and is recorded as an exception;
 * none leaves the status unset, as a success.
 */
export function endSpan(span: Span, error?: unknown): void {
  if (error !== undefined) {
    const failure = error instanceof Error ? error : new Error(String(error));
    span.recordException(failure);
    span.setAttribute("error.type", failure.name);
    span.setStatus({ code: SpanStatusCode.ERROR, message: failure.message });
  }
  span.end();
}

/** Runs `fn` in `active` (a context in which `span` is the active span), then ends the span with fn's outcome (see endSpan). */
export async function runInSpan<T>(span: Span, active: Context, fn: () => Promise<T>): Promise<T> {
  let failure: unknown;
  try {
    return await context.with(active, fn);
  } catch (error) {
    failure = error;
    throw error;
  } finally {
    endSpan(span, failure);
  }
}
