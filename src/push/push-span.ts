import { ROOT_CONTEXT, type Span, SpanKind, SpanStatusCode } from "@opentelemetry/api";
import type { Lease } from "../store/job.ts";
import { type JobSpan, startJobSpan, type TracedJob } from "../tracing/job-span.ts";
import { traceContextOf } from "../tracing/trace-context.ts";
import { serverTracer, tracerRegistered } from "../tracing/tracer.ts";

// A push delivery in its job's trace (docs/traces.md): the endpoint is sent
// the W3C headers of the trace the job was enqueued in, so that its own SDK,
// or traceJob, carries that trace on; with an SDK registered, the server also
// wraps the delivery in a span of that trace, whose children are the writes
// the answer decides and, through the headers, the endpoint's own spans.

/**
 * Starts the span of a delivery, "push {queue}", kind client: the child of
 * the job's producer span (a new trace for a job enqueued without one),
 * never of whatever the code that called deliver had active (a request's
 * waitUntil, the dispatcher's loop): a delivery is its job's work. Null with
 * no SDK registered, before any span is made.
 */
export function startPushSpan(lease: Lease, url: string): JobSpan | null {
  if (!tracerRegistered()) return null;
  const endpoint = new URL(url);
  return startJobSpan(serverTracer, lease.job, {
    operation: "push",
    kind: SpanKind.CLIENT,
    context: ROOT_CONTEXT,
    attributes: {
      // Semantic conventions' name for a message handed to a consumer that it did not ask for ("deliver" before 1.27).
      "messaging.operation.type": "process",
      "fencelease.lease.owner": lease.job.owner ?? "",
      "fencelease.lease.fence": lease.fence,
      "fencelease.job.attempt": lease.job.attempts,
      "http.request.method": "POST",
      // Not the URL: its path or query may hold the endpoint's own secret.
      "server.address": endpoint.hostname,
      "server.port": Number(endpoint.port) || (endpoint.protocol === "https:" ? 443 : 80),
    },
  });
}

/**
 * The trace headers of a delivery: its span's traceparent and tracestate
 * when it has one (the endpoint's spans are then the delivery's children),
 * else those the job was enqueued with, as stored; none for a job without.
 */
export function pushTraceHeaders(job: TracedJob, pushSpan: JobSpan | null): Record<string, string> {
  const own = pushSpan === null ? null : traceContextOf(pushSpan.span.spanContext());
  const traceparent = own?.traceparent ?? job.traceparent;
  const tracestate = own === null ? job.tracestate : own.tracestate;
  return { ...(traceparent && { traceparent }), ...(traceparent && tracestate && { tracestate }) };
}

/** What endPushSpan reads of a delivery's report (deliver.ts's DeliveryReport, which imports this file). */
type Delivered = { outcome: string; status: number | null; error: string | null; written: string };

/** Why a delivery is an error, by what it wrote: its `error.type` and message; null when the job was completed or left to the endpoint. */
function failureOf(report: Delivered): { type: string; message: string } | null {
  switch (report.written) {
    case "completed":
    case "left":
      return null;
    case "refused":
      return { type: "lease_lost", message: "the lease was lost before the answer could be written" };
    case "unwritten":
      return { type: "storage", message: "what the answer decides could not be written" };
    case "released":
      return { type: "stopped", message: report.error ?? "the server stopped" };
    default:
      return { type: report.status === null ? report.outcome : String(report.status), message: report.error ?? report.outcome };
  }
}

/**
 * Ends a delivery's span with what its report says: the endpoint's status
 * and the outcome as attributes, and an error status when the job was not
 * completed or left to the endpoint (a failed answer, no answer, a lease
 * lost meanwhile). No report means deliver threw, which it should not.
 */
export function endPushSpan(span: Span, report: Delivered | undefined): void {
  const failure = report === undefined ? { type: "_OTHER", message: "the delivery threw" } : failureOf(report);
  if (report !== undefined) {
    span.setAttributes({ "fencelease.push.outcome": report.outcome, "fencelease.push.written": report.written });
    if (report.status !== null) span.setAttribute("http.response.status_code", report.status);
  }
  if (failure !== null) {
    span.setAttribute("error.type", failure.type);
    span.setStatus({ code: SpanStatusCode.ERROR, message: failure.message });
  }
  span.end();
}
