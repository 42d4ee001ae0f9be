import { propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace } from "@opentelemetry/api";
import type { ReadableSpan } from "@opentelemetry/sdk-trace-base";
import type { ServerResponse } from "node:http";
import { describe, expect, onTestFinished, test } from "vitest";
import { type Job, LeaseClient, traceJob } from "../../src/client/index.ts";
import { startServer } from "../../src/node.ts";
import { PUSH_OWNER } from "../../src/store/sql/claim-next.ts";
import { freshUrl } from "../fresh-db.ts";
import { answerWith, type Received, startEndpoint } from "../push/endpoint.ts";
import { only, parentOf, recordSpans } from "./record-spans.ts";

// One trace across a push delivery (issue 21 part 2): a producer's span
// enqueues a job into a pushed queue of the real Node server, whose
// dispatcher delivers it in a "push {queue}" span of the job's trace and
// sends that span's traceparent to a real HTTP endpoint; the endpoint reads
// it with its SDK's propagator, as an instrumented server does, and works on
// the job in traceJob. Server, endpoint and producer share this process's
// SDK, so every span lands in one in-memory exporter.

const spans = recordSpans();
const TOKEN = "push-trace-token";
const app = trace.getTracer("the-app");

async function serving() {
  const server = await startServer({ host: "127.0.0.1", port: 0, databaseUrl: freshUrl(), auth: { tokens: [TOKEN] }, recheckMs: 60_000, maintainEveryMs: 0, scheduleRecheckMs: 0, pushPrivate: "allow" });
  onTestFinished(() => server.stop());
  return { client: new LeaseClient({ baseUrl: server.url, token: TOKEN }), url: server.url };
}

/**
 * An endpoint as one with its own SDK serves a delivery: a server span, the
 * child of the request's traceparent as the W3C propagator reads it, in
 * which `handle` works on the job (the body) in traceJob.
 */
function tracedEndpoint(handle: (job: Job, request: Received, response: ServerResponse) => Promise<void>) {
  return startEndpoint((request, response) => {
    const parent = propagation.extract(ROOT_CONTEXT, request.headers);
    return app.startActiveSpan("POST /push", { kind: SpanKind.SERVER }, parent, async (span) => {
      const job = JSON.parse(request.body) as Job;
      await traceJob(job, () => handle(job, request, response));
      span.end();
    });
  });
}

/** Enqueues `id` to `queue` in a producer span of the app's; answers that span's trace id. */
async function enqueueIn(client: LeaseClient, queue: string, id: string): Promise<string> {
  return app.startActiveSpan("checkout", async (checkout) => {
    await client.enqueue({ id, queue, payload: { to: "ada" } });
    checkout.end();
    return checkout.spanContext().traceId;
  });
}

/** The spans once one named `name` has ended (the push span ends after the writes its answer decides). */
async function spansAfter(name: string): Promise<ReadableSpan[]> {
  await expect.poll(() => spans.getFinishedSpans().some((span) => span.name === name), { timeout: 10_000 }).toBe(true);
  return spans.getFinishedSpans();
}

const id = (span: ReadableSpan) => span.spanContext().spanId;
const isTransaction = (span: ReadableSpan) => span.kind === SpanKind.CLIENT && span.attributes["db.system.name"] === "sqlite";

describe("one trace from enqueue through a push delivery", () => {
  test("answered 200: the producer's send, the server's push span with the writes its answer decided, the endpoint's request, its traceJob span and work", async () => {
    const { client } = await serving();
    const endpoint = await tracedEndpoint(async (job, request, response) => {
      app.startActiveSpan("smtp", (work) => work.end());
      await answerWith(200, { sent: job.id })(request, response);
    });
    await client.push.set("mail", { url: endpoint.url });
    const traceId = await enqueueIn(client, "mail", "mail-1");
    expect(await client.waitFor("mail-1", { timeoutMs: 10_000 })).toMatchObject({ status: "done", result: { sent: "mail-1" }, owner: PUSH_OWNER });

    const all = await spansAfter("push mail");
    const producer = only(all, "send mail");
    const push = only(all, "push mail");
    const request = only(all, "POST /push");
    const process = only(all, "process mail");

    // The push span: a client span, the child of the producer's, in its trace.
    expect(push.kind).toBe(SpanKind.CLIENT);
    expect(push.spanContext().traceId).toBe(traceId);
    expect(parentOf(push)).toBe(id(producer));
    expect(push.attributes).toMatchObject({
      "messaging.system": "fencelease",
      "messaging.operation.type": "process",
      "messaging.operation.name": "push",
      "messaging.destination.name": "mail",
      "messaging.message.id": "mail-1",
      "fencelease.lease.owner": PUSH_OWNER,
      "fencelease.lease.fence": 1,
      "fencelease.job.attempt": 1,
      "http.request.method": "POST",
      "server.address": "127.0.0.1",
      "http.response.status_code": 200,
      "fencelease.push.outcome": "success",
      "fencelease.push.written": "completed",
    });
    expect(push.status.code).toBe(SpanStatusCode.UNSET);
    expect(push.links).toEqual([]);

    // The endpoint was sent the push span's traceparent: its request span is the push span's child, and traceJob's span nests in it.
    expect(endpoint.received[0]!.headers.traceparent).toBe(`00-${traceId}-${id(push)}-01`);
    expect(parentOf(request)).toBe(id(push));
    expect(parentOf(process)).toBe(id(request));
    expect(process.attributes).toMatchObject({ "messaging.operation.type": "process", "messaging.message.id": "mail-1", "fencelease.lease.owner": PUSH_OWNER, "fencelease.lease.fence": 1 });
    expect(parentOf(only(all, "smtp"))).toBe(id(process));

    // The delivery's record and the completion are the push span's transactions; the dispatcher's claim is in no trace.
    const written = all.filter((span) => isTransaction(span) && parentOf(span) === id(push));
    expect(written.map((span) => span.name)).toContainEqual(expect.stringMatching(/UPDATE jobs/));
    const inTrace = all.filter((span) => span.spanContext().traceId === traceId);
    expect(inTrace.filter((span) => !isTransaction(span)).map((span) => span.name).sort()).toEqual(["POST /push", "POST /v1/jobs", "checkout", "process mail", "push mail", "send mail", "smtp"]);
    expect(new Set(inTrace.filter(isTransaction).map(parentOf))).toEqual(new Set([id(only(all, "POST /v1/jobs")), id(push)]));
  });

  test("answered 202: the endpoint completes the lease itself, in traceJob, and that call is in the trace too", async () => {
    const { client } = await serving();
    const endpoint = await tracedEndpoint(async (job, request, response) => {
      await answerWith(202)(request, response);
      await spansAfter("push reports"); // the delivery's record of its 202 is written before the lease ends
      await client.complete(job.id, { owner: job.owner!, fence: job.fence!, result: "later" });
    });
    await client.push.set("reports", { url: endpoint.url });
    const traceId = await enqueueIn(client, "reports", "report-1");
    expect(await client.waitFor("report-1", { timeoutMs: 10_000 })).toMatchObject({ status: "done", result: "later" });

    const all = await spansAfter("process reports");
    const push = only(all, "push reports");
    expect(push.attributes).toMatchObject({ "http.response.status_code": 202, "fencelease.push.outcome": "accepted", "fencelease.push.written": "left" });
    expect(push.status.code).toBe(SpanStatusCode.UNSET);
    const process = only(all, "process reports");
    expect(process.spanContext().traceId).toBe(traceId);
    const complete = only(all, "POST /v1/jobs/:id/complete");
    expect(parentOf(complete)).toBe(id(process));
    expect(all.some((span) => isTransaction(span) && parentOf(span) === id(complete))).toBe(true);
  });

  test("answered 500: the push span is an error with the status, and the failure it wrote is its child", async () => {
    const { client } = await serving();
    const endpoint = await startEndpoint(answerWith(500, "mailbox full", { "retry-after": "3600" }));
    await client.push.set("mail", { url: endpoint.url });
    await enqueueIn(client, "mail", "mail-2");
    const all = await spansAfter("push mail");
    const push = only(all, "push mail");
    expect(push.status).toEqual({ code: SpanStatusCode.ERROR, message: "the endpoint answered 500: mailbox full" });
    expect(push.attributes).toMatchObject({ "http.response.status_code": 500, "error.type": "500", "fencelease.push.outcome": "failure", "fencelease.push.written": "failed" });
    expect(all.filter((span) => isTransaction(span) && parentOf(span) === id(push)).length).toBeGreaterThan(0);
    expect(await client.get("mail-2")).toMatchObject({ status: "scheduled", attempts: 1, lastError: "the endpoint answered 500: mailbox full" }) // due again in an hour (Retry-After);
  });

  test("a job enqueued without a trace context: its push span starts a trace, whose traceparent the endpoint is sent", async () => {
    const { client, url } = await serving();
    const endpoint = await startEndpoint(answerWith(200));
    await client.push.set("mail", { url: endpoint.url });
    // Not through the client, whose enqueue is a producer span with an SDK registered.
    const enqueued = await fetch(`${url}/v1/jobs`, { method: "POST", headers: { Authorization: `Bearer ${TOKEN}`, "Content-Type": "application/json" }, body: JSON.stringify({ id: "plain", queue: "mail" }) });
    expect(enqueued.status).toBe(201);
    expect((await client.get("plain")).traceparent).toBeNull();
    const push = only(await spansAfter("push mail"), "push mail");
    expect(parentOf(push)).toBeUndefined();
    expect(endpoint.received[0]!.headers.traceparent).toBe(`00-${push.spanContext().traceId}-${id(push)}-01`);
  });
});
