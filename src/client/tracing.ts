import { context, propagation, SpanKind, trace } from "@opentelemetry/api";
import { type JobSpan, runInSpan, startJobSpan, type TracedJob } from "../tracing/job-span.ts";
import { traceContextOf } from "../tracing/trace-context.ts";
import { clientTracer, tracerRegistered } from "../tracing/tracer.ts";

// The client's side of a job's trace (docs/traces.md), through
// @opentelemetry/api: every call carries the active span's traceparent, an
// enqueue is a producer span whose traceparent the server stores with the
// job, and work on a job is a consumer span that continues that trace. With
// no SDK registered each is skipped after one check (tracerRegistered).

/**
 * Adds the active span's trace context to a call's headers: traceparent and
 * tracestate, which the server stores with an enqueued job and makes its
 * request's span the child of, and whatever else the registered propagator
 * writes (baggage, say). Nothing while no span is active.
 */
export function addTraceHeaders(headers: Record<string, string>): void {
  const active = context.active();
  const span = trace.getSpanContext(active);
  if (span === undefined) return;
  const own = traceContextOf(span);
  if (own !== null) {
    headers.traceparent = own.traceparent;
    if (own.tracestate) headers.tracestate = own.tracestate;
  }
  propagation.inject(active, headers);
}

/**
 * The trace context of the active span: what a job enqueued in this process
 * is stored with when it brings none of its own, as the server stores one
 * with the request's headers (see addTraceHeaders). Empty while no span is active.
 */
export function activeTraceContext(): { traceparent?: string; tracestate?: string } {
  const span = trace.getSpanContext(context.active());
  return (span && traceContextOf(span)) ?? {};
}

/**
 * Runs an enqueue of `jobs` to `queue` in a producer span, "send {queue}",
 * the child of the active span: its traceparent is the one the call carries,
 * so the jobs are stored with it and their workers' spans are its children.
 * Runs `send` as it is when there is nothing to trace.
 */
export async function inSendSpan<T>(queue: string, jobs: { id: string }[], send: () => Promise<T>): Promise<T> {
  if (!tracerRegistered()) return send();
  const span = clientTracer.startSpan(`send ${queue}`, {
    kind: SpanKind.PRODUCER,
    attributes: {
      "messaging.system": "fencelease",
      "messaging.operation.type": "send",
      "messaging.operation.name": "send",
      "messaging.destination.name": queue,
      ...(jobs.length === 1 ? { "messaging.message.id": jobs[0]!.id } : { "messaging.batch.message_count": jobs.length }),
    },
  });
  if (!span.isRecording() && !trace.isSpanContextValid(span.spanContext())) return send();
  return runInSpan(span, trace.setSpan(context.active(), span), send);
}

/** What the span of a job in hand says of its lease, as far as it is known. */
export type HeldBy = { owner?: string | null | undefined; fence?: number | undefined; attempts?: number | undefined };

/** Starts the consumer span "process {queue}" of a job in hand (see startJobSpan); null when there is nothing to trace. */
export function startProcessSpan(job: TracedJob, held: HeldBy): JobSpan | null {
  return startJobSpan(clientTracer, job, {
    operation: "process",
    attributes: {
      ...(held.owner && { "fencelease.lease.owner": held.owner }),
      ...(held.fence !== undefined && { "fencelease.lease.fence": held.fence }),
      ...(held.attempts !== undefined && { "fencelease.job.attempt": held.attempts }),
    },
  });
}

/**
 * traceJob runs `fn` in a span of the job's trace, "process {queue}", the
 * child of the span that enqueued it (its `traceparent`), or of the active
 * span when that is already in the job's trace (a push endpoint's request,
 * as its SDK read the delivery's traceparent header), and ends the span with
 * fn's outcome: for work on a job that came by other means than runWorker or
 * withLease, which do this themselves (a push endpoint's handler, say).
 * Without an SDK registered it just runs fn.
 *
 * @example
 * await traceJob(job, async () => sendMail(job.payload));
 */
export async function traceJob<T>(job: TracedJob & HeldBy, fn: () => Promise<T>): Promise<T> {
  const jobSpan = startProcessSpan(job, job);
  return jobSpan === null ? fn() : runInSpan(jobSpan.span, jobSpan.context, fn);
}

/**
 * Runs a call that settles the leases of jobs in hand (a completeMany): for
 * one job, in its span, whose child the server's request then is; for more,
 * in a span of its own, "settle {queue}", linked to each job's span, as a
 * call that ends many jobs' work cannot be the child of one. As it is when
 * none has a span.
 */
export async function inSettleSpan<T>(queue: string, spans: (JobSpan | null)[], settle: () => Promise<T>): Promise<T> {
  if (spans.length === 1) return inJobContext(spans[0], settle);
  const links = spans.flatMap((jobSpan) => (jobSpan ? [{ context: jobSpan.span.spanContext() }] : []));
  if (links.length === 0) return settle();
  const span = clientTracer.startSpan(`settle ${queue}`, {
    kind: SpanKind.CLIENT,
    links,
    attributes: {
      "messaging.system": "fencelease",
      "messaging.operation.type": "settle",
      "messaging.operation.name": "complete",
      "messaging.destination.name": queue,
      "messaging.batch.message_count": spans.length,
    },
  });
  return runInSpan(span, trace.setSpan(context.active(), span), settle);
}

/** Runs `fn` in the job span's context, or as it is without one. */
export function inJobContext<T>(jobSpan: JobSpan | null | undefined, fn: () => T): T {
  return jobSpan ? context.with(jobSpan.context, fn) : fn();
}
