import { context } from "@opentelemetry/api";
import { wakeWith } from "../wait/wake.ts";
import { LeaseLost, NotFound } from "../store/errors.ts";
import { inexactNumberPath } from "../store/exact-numbers.ts";
import { MAX_JSON_DEPTH, textNestsDeeper } from "../json/depth.ts";
import type { Job, Lease } from "../store/job.ts";
import type { DeliveryOutcome, PushTarget } from "../store/push.ts";
import type { LeaseStore } from "../store/store.ts";
import type { Waits } from "../wait/long-poll.ts";
import { endPushSpan, pushTraceHeaders, startPushSpan } from "./push-span.ts";
import { signatureHeader } from "./signature.ts";

// One delivery: a lease that push claimed, POSTed to its queue's endpoint,
// and what the answer decides, written through the same fenced complete and
// fail as any worker's. The same function runs on Node (the dispatcher) and
// on the Worker (the enqueue's waitUntil, the cron): it does not care who
// calls it, and it is called once per lease, by whoever claimed it.

/** The headers of a delivery that carry its lease, beside the Standard Webhooks ones. */
export const LEASE_HEADERS = {
  id: "fencelease-job-id",
  queue: "fencelease-queue",
  owner: "fencelease-owner",
  fence: "fencelease-fence",
  until: "fencelease-until",
  attempt: "fencelease-attempt",
} as const;

/** The most bytes of an endpoint's 2xx answer kept as the job's result (the API's default body limit). */
export const MAX_ANSWER_BYTES = 1024 * 1024;
/** The most bytes of a failed answer quoted in the job's error. */
const MAX_ERROR_BYTES = 500;
/** The longest wait a Retry-After may ask for: a day. */
export const MAX_RETRY_AFTER_MS = 24 * 60 * 60 * 1000;

/** What a delivery did: how the endpoint answered, and what that wrote to the job. */
export type DeliveryReport = {
  id: string;
  fence: number;
  outcome: DeliveryOutcome;
  status: number | null;
  durationMs: number;
  error: string | null;
  /**
   * What the answer wrote: the job completed, failed (due again) or dead;
   * left to the endpoint (202); refused (the lease had been lost: a stale
   * write, recorded as one); released (the server stopped before an answer
   * came); or unwritten (the database failed; the lease runs out instead).
   */
  written: "completed" | "failed" | "dead" | "left" | "refused" | "released" | "unwritten";
};

/** What a delivery needs beside the lease and its target. */
export type DeliverOptions = {
  store: LeaseStore;
  /** The server's clock: the lease's times, the webhook timestamp, and the writes. */
  clock: () => number;
  /** Told what each written outcome did to the job (as the HTTP app tells them of a worker's writes). */
  waits?: Waits;
  /** Aborted when the server stops: a delivery without an answer yet gives its lease back. */
  signal?: AbortSignal;
  /** Where a write that failed is logged. */
  log?: (line: string) => void;
  /** How the request goes out; default `fetch`. The Node server's checks where it connects (src/runtime/node/push-network.ts). */
  post?: Post;
};

/**
 * Sends a delivery's POST to `url` and answers the response as soon as its
 * status and headers have come; never follows a redirect. Rejects when no
 * answer came (the connection, the signal).
 */
export type Post = (url: string, request: { headers: Record<string, string>; body: string; signal: AbortSignal }) => Promise<Response>;

/** A Post through the runtime's fetch. A redirect is a failure (Standard Webhooks): following one would send the signed job elsewhere. */
const postWithFetch: Post = (url, { headers, body, signal }) => fetch(url, { method: "POST", headers, body, signal, redirect: "manual" });

const utf8 = new TextEncoder();

/**
 * The webhook-id of a job's deliveries: the same for every delivery of the
 * job (an endpoint may use it to drop a repeat), and free of the `.` that the
 * signed content joins on, whatever the job's id.
 */
async function messageId(job: Job): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", utf8.encode(`${job.id}\n${job.createdAt}`)));
  let binary = "";
  for (const byte of digest.subarray(0, 18)) binary += String.fromCharCode(byte);
  return `msg_${btoa(binary).replaceAll("+", "-").replaceAll("/", "_")}`;
}

/**
 * The request of a delivery: the job as the API shows it, the lease in
 * headers, signed with each of the target's secrets, and `traceHeaders` (the
 * W3C traceparent and tracestate of the job's trace: push-span.ts).
 */
export async function pushRequest(lease: Lease, target: PushTarget, now: number, traceHeaders: Record<string, string> = {}): Promise<{ headers: Record<string, string>; body: string }> {
  const { job } = lease;
  const body = JSON.stringify(job);
  const id = await messageId(job);
  const timestamp = Math.floor(now / 1000);
  return {
    body,
    headers: {
      "content-type": "application/json",
      "user-agent": "fencelease-push",
      "webhook-id": id,
      "webhook-timestamp": String(timestamp),
      "webhook-signature": await signatureHeader(target.secrets, { id, timestamp, body }),
      // Ids, queues and owners are any printable text; a header carries ASCII only.
      [LEASE_HEADERS.id]: encodeURIComponent(job.id),
      [LEASE_HEADERS.queue]: encodeURIComponent(job.queue),
      [LEASE_HEADERS.owner]: encodeURIComponent(job.owner ?? ""),
      [LEASE_HEADERS.fence]: String(lease.fence),
      [LEASE_HEADERS.until]: String(lease.until),
      [LEASE_HEADERS.attempt]: String(job.attempts),
      ...traceHeaders,
    },
  };
}

/** Reads up to `max` bytes of a body as text; `over` when there was more (the rest is not read). */
async function readUpTo(response: Response, max: number): Promise<{ text: string; over: boolean }> {
  if (!response.body) return { text: "", over: false };
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    chunks.push(value);
    size += value.byteLength;
    if (size > max) {
      await reader.cancel().catch(() => {});
      return { text: new TextDecoder().decode(concat(chunks).subarray(0, max)), over: true };
    }
  }
  return { text: new TextDecoder().decode(concat(chunks)), over: false };
}

function concat(chunks: Uint8Array[]): Uint8Array {
  const all = new Uint8Array(chunks.reduce((sum, chunk) => sum + chunk.byteLength, 0));
  let at = 0;
  for (const chunk of chunks) {
    all.set(chunk, at);
    at += chunk.byteLength;
  }
  return all;
}

/**
 * A Retry-After header as ms from `now`: whole seconds, or an HTTP date;
 * undefined when absent or unreadable; at most MAX_RETRY_AFTER_MS.
 */
export function retryAfterMs(header: string | null, now: number): number | undefined {
  if (header === null) return undefined;
  const value = header.trim();
  // An HTTP date starts with the day's name; Date.parse alone would read "-5" as a year.
  const ms = /^\d+$/.test(value) ? Number(value) * 1000 : /^[A-Za-z]{3}/.test(value) ? Date.parse(value) - now : Number.NaN;
  if (!Number.isFinite(ms)) return undefined;
  return Math.min(MAX_RETRY_AFTER_MS, Math.max(0, Math.round(ms)));
}

/**
 * A 2xx answer's body as the job's result, stored as JSON text: JSON as it
 * is, an empty body as null, any other text as a JSON string. JSON that a
 * result sent through the API could not be is unfit, with why: nested
 * deeper than MAX_JSON_DEPTH, or with a number JSON.parse cannot read exactly.
 */
function resultOf(text: string): { result: string } | { unfit: string } {
  if (text.trim() === "") return { result: "null" };
  try {
    JSON.parse(text); // it does not recurse: any depth is safe here
  } catch {
    return { result: JSON.stringify(text) };
  }
  if (textNestsDeeper(text)) return { unfit: `nests more than ${MAX_JSON_DEPTH} levels of arrays and objects` };
  const inexact = inexactNumberPath(text);
  if (inexact) return { unfit: `holds a number that cannot be kept exactly${inexact.length > 0 ? ` (at ${inexact.join(".")})` : ""}` };
  return { result: text };
}

/** What went wrong on the connection, in a word if it has a code: fetch puts it in the error's cause. */
function detailOf(error: unknown): string {
  const cause = (error as { cause?: { code?: string; message?: string } }).cause;
  return cause?.code ?? cause?.message ?? (error as Error).message;
}

/** What the endpoint's answer (or its absence) is, before anything is written. */
type Answer = { outcome: DeliveryOutcome; status: number | null; error: string | null; result?: string; retryInMs?: number; stopped?: true };

/** Why a body could not be read to its end: the timeout, the server's stop, or the connection. */
function bodyBroke(error: unknown, timeout: AbortSignal, target: PushTarget, stop?: AbortSignal): string {
  if (timeout.aborted) return `did not end within ${target.timeoutMs} ms`;
  if (stop?.aborted) return "was cut by the server's stop";
  return `broke off (${detailOf(error)})`;
}

/**
 * What a status decides, once it has come: the status is the answer, and
 * stays recorded whatever its body does. A 2xx completes the lease even when
 * its body is too large for a result, breaks off, or does not end in time
 * (the endpoint did the work): the result is then null, and the delivery's
 * error says why. A 202's body is not read.
 */
async function answerOf(response: Response, target: PushTarget, timeout: AbortSignal, options: DeliverOptions): Promise<Answer> {
  const { status } = response;
  if (status === 202) {
    await response.body?.cancel().catch(() => {});
    return { outcome: "accepted", status, error: null };
  }
  const ok = status >= 200 && status < 300;
  const read = await readUpTo(response, ok ? MAX_ANSWER_BYTES : MAX_ERROR_BYTES).catch((error: unknown) => ({ broke: bodyBroke(error, timeout, target, options.signal) }));
  if (ok) {
    if ("broke" in read) return { outcome: "success", status, error: `the endpoint answered ${status}, but its body ${read.broke}: the job is done with the result null`, result: "null" };
    if (read.over) return { outcome: "success", status, error: `the endpoint answered ${status} with a body over ${MAX_ANSWER_BYTES} bytes, too large for a result: the job is done with the result null`, result: "null" };
    const result = resultOf(read.text);
    if ("unfit" in result) return { outcome: "success", status, error: `the endpoint answered ${status} with JSON that ${result.unfit}, which a result may not: the job is done with the result null`, result: "null" };
    return { outcome: "success", status, error: null, result: result.result };
  }
  const text = "broke" in read ? "" : read.text.trim();
  const quoted = text === "" ? "" : `: ${text}${"over" in read && read.over ? "…" : ""}`;
  return { outcome: "failure", status, error: `the endpoint answered ${status}${quoted}`, retryInMs: retryAfterMs(response.headers.get("retry-after"), options.clock()) };
}

/** POSTs the request and reads the answer, within the target's timeout; never throws. */
async function send(target: PushTarget, request: { headers: Record<string, string>; body: string }, options: DeliverOptions): Promise<Answer> {
  const timeout = new AbortController();
  const timer = setTimeout(() => timeout.abort(), target.timeoutMs);
  const signal = options.signal ? AbortSignal.any([timeout.signal, options.signal]) : timeout.signal;
  try {
    let response: Response;
    try {
      response = await (options.post ?? postWithFetch)(target.url, { headers: request.headers, body: request.body, signal });
    } catch (error) {
      if (options.signal?.aborted && !timeout.signal.aborted) return { outcome: "timeout", status: null, error: "the server stopped before the endpoint answered", stopped: true };
      if (timeout.signal.aborted) return { outcome: "timeout", status: null, error: `the endpoint did not answer within ${target.timeoutMs} ms` };
      return { outcome: "unreachable", status: null, error: `the endpoint could not be reached: ${detailOf(error)}` };
    }
    return await answerOf(response, target, timeout.signal, options);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * deliver POSTs a lease that push claimed to its queue's endpoint, records
 * the delivery among the job's events, then writes what the answer decides
 * with the lease's own owner and fence:
 * - a 2xx but 202: complete, the answer's body as the result (null, and
 *   the delivery's error saying why, when the body is over MAX_ANSWER_BYTES,
 *   breaks off or does not end in time, or is JSON that no result sent
 *   through the API may be: the status is the answer);
 * - a 202: nothing; the endpoint renews, completes or fails the lease
 *   itself, with the owner and fence of the headers, before its `until`;
 * - any other status, or no answer within the timeout: fail, due again
 *   after the answer's Retry-After if it has one, else the usual backoff
 *   (dead after the last attempt).
 * A write refused because the lease was lost meanwhile is a stale write like
 * any other: recorded as a refusal, and nothing of the job changes. Answers
 * what it did; never throws.
 *
 * The request carries the job's trace context (traceparent, tracestate).
 * With an OpenTelemetry SDK registered, the delivery is a span of the job's
 * trace, "push {queue}", in which the writes are made and whose traceparent
 * the endpoint is sent; with none, the job's own, after one check.
 */
export async function deliver(lease: Lease, target: PushTarget, options: DeliverOptions): Promise<DeliveryReport> {
  const pushSpan = startPushSpan(lease, target.url);
  const traceHeaders = pushTraceHeaders(lease.job, pushSpan);
  if (pushSpan === null) return deliverCarrying(lease, target, options, traceHeaders);
  let report: DeliveryReport | undefined;
  try {
    report = await context.with(pushSpan.context, () => deliverCarrying(lease, target, options, traceHeaders));
    return report;
  } finally {
    endPushSpan(pushSpan.span, report);
  }
}

/** A delivery (see deliver), its request carrying `traceHeaders`. */
async function deliverCarrying(lease: Lease, target: PushTarget, options: DeliverOptions, traceHeaders: Record<string, string>): Promise<DeliveryReport> {
  const { store, clock } = options;
  const { job, fence } = lease;
  const owner = job.owner!;
  const request = await pushRequest(lease, target, clock(), traceHeaders);
  const started = performance.now();
  const answer = await send(target, request, options);
  const durationMs = Math.round(performance.now() - started);
  const report = (written: DeliveryReport["written"]): DeliveryReport => ({ id: job.id, fence, outcome: answer.outcome, status: answer.status, durationMs, error: answer.error, written });
  const now = clock();
  const wake = options.waits && wakeWith(options.waits);
  try {
    if (answer.stopped) {
      // No answer is known: the lease is given back, its attempt with it, for whoever delivers next.
      const released = await store.release(job.id, { owner, fence, now });
      await wake?.settled(released, owner);
      return report("released");
    }
    await store.push.record({ lease, outcome: answer.outcome, status: answer.status, durationMs, error: answer.error, at: now });
    if (answer.outcome === "accepted") return report("left");
    if (answer.outcome === "success") {
      await store.complete(job.id, { owner, fence, result: answer.result!, now });
      wake?.finished([job.id]);
      await wake?.ended([job.queue], owner);
      return report("completed");
    }
    const settled = await store.fail(job.id, { owner, fence, error: answer.error!, retryInMs: answer.retryInMs, now });
    await wake?.settled(settled.job, owner);
    return report(settled.job.status === "dead" ? "dead" : "failed");
  } catch (error) {
    if (error instanceof LeaseLost || error instanceof NotFound) return report("refused");
    options.log?.(`fencelease: the outcome of pushing job ${JSON.stringify(job.id)} (fence ${fence}) could not be written, its lease will run out: ${(error as Error).message}`);
    return report("unwritten");
  }
}
