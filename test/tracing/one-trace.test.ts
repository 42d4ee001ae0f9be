import { SpanKind, SpanStatusCode, trace } from "@opentelemetry/api";
import type { ReadableSpan } from "@opentelemetry/sdk-trace-base";
import { describe, expect, onTestFinished, test } from "vitest";
import { LeaseClient, runWorker, traceJob, withLease } from "../../src/client/index.ts";
import { startServer } from "../../src/node.ts";
import { freshStore } from "../fresh-db.ts";
import { only, parentOf, recordSpans } from "./record-spans.ts";

// One trace across the queue (issue 21 part 2), as docs/traces.md draws it:
// a producer's span enqueues a job through the client, the real Node server
// stores its traceparent, a worker (runWorker or withLease) claims it, its
// handler works and completes it. The client, the server and the handler
// share this process's SDK, so every span lands in one in-memory exporter.

const spans = recordSpans();
const TOKEN = "trace-token";
const app = trace.getTracer("the-app");

async function serving() {
  const fresh = await freshStore();
  const server = await startServer({ host: "127.0.0.1", port: 0, databaseUrl: fresh.url, auth: { tokens: [TOKEN] }, maintainEveryMs: 0, scheduleRecheckMs: 0 });
  onTestFinished(() => server.stop());
  return { ...fresh, client: new LeaseClient({ baseUrl: server.url, token: TOKEN }) };
}

const id = (span: ReadableSpan) => span.spanContext().spanId;

/**
 * The story both transports tell: a "checkout" span of the app enqueues
 * mail-1, then runWorker sends it, its handler's work in a span "smtp".
 * Answers every span finished, the checkout's, its trace, and the producer span.
 */
async function mailedInCheckout(client: LeaseClient) {
  await app.startActiveSpan("checkout", async (checkout) => {
    await client.enqueue({ id: "mail-1", queue: "mail", payload: { to: "ada" } });
    checkout.end();
  });
  const worker = runWorker(client, { queue: "mail", owner: "worker-a", concurrency: 1, ttlMs: 30_000 }, async ({ job }) => {
    app.startActiveSpan("smtp", (work) => work.end());
    return { sent: (job.payload as { to: string }).to };
  });
  expect((await client.waitFor("mail-1", { timeoutMs: 10_000 })).status).toBe("done");
  await worker.stop();
  const all = spans.getFinishedSpans();
  const checkout = only(all, "checkout");
  return { all, checkout, traceId: checkout.spanContext().traceId, producer: only(all, "send mail") };
}

describe("one trace from enqueue to complete", () => {
  test("runWorker: the producer's span, its enqueue, the job's process span and the handler's work, its completion; the claim linked to it", async () => {
    const { client, rows } = await serving();
    const { all, checkout, traceId, producer } = await mailedInCheckout(client);
    const enqueue = only(all, "POST /v1/jobs");
    const process = only(all, "process mail");
    const work = only(all, "smtp");
    const complete = only(all, "POST /v1/leases/complete");
    const claim = all.filter((span) => span.name === "POST /v1/queues/:queue/claim").find((span) => span.links.length > 0)!;

    // The producer's side: checkout > send mail (the client's producer span) > POST /v1/jobs (the server) > its transaction.
    expect(producer.kind).toBe(SpanKind.PRODUCER);
    expect(producer.attributes).toMatchObject({ "messaging.system": "fencelease", "messaging.operation.type": "send", "messaging.destination.name": "mail", "messaging.message.id": "mail-1" });
    expect(parentOf(producer)).toBe(id(checkout));
    expect(parentOf(enqueue)).toBe(id(producer));
    expect(all.filter((span) => parentOf(span) === id(enqueue)).map((span) => span.name)).toContainEqual(expect.stringMatching(/^INSERT jobs/));
    // The job is stored with the producer span's traceparent.
    const [stored] = await rows("SELECT traceparent FROM jobs WHERE id = 'mail-1'");
    expect(stored).toEqual({ traceparent: `00-${traceId}-${id(producer)}-01` });

    // The worker's side, in the same trace: process mail (a child of the producer span) > the handler's work, and the completion.
    expect(process.kind).toBe(SpanKind.CONSUMER);
    expect(process.spanContext().traceId).toBe(traceId);
    expect(parentOf(process)).toBe(id(producer));
    expect(process.attributes).toMatchObject({ "messaging.operation.type": "process", "messaging.destination.name": "mail", "messaging.message.id": "mail-1", "fencelease.lease.owner": "worker-a", "fencelease.lease.fence": 1, "fencelease.job.attempt": 1 });
    expect(process.status.code).toBe(SpanStatusCode.UNSET);
    expect(parentOf(work)).toBe(id(process));
    expect(parentOf(complete)).toBe(id(process));
    // The process span lasts until the completion is stored.
    expect(process.endTime[0] * 1e9 + process.endTime[1]).toBeGreaterThanOrEqual(complete.endTime[0] * 1e9 + complete.endTime[1]);

    // The claim took the job in a trace of its own (the runner's), and links to the producer span.
    expect(claim.spanContext().traceId).not.toBe(traceId);
    expect(claim.links.map((link) => [link.context.traceId, link.context.spanId])).toEqual([[traceId, id(producer)]]);

    // Nothing else is in the trace: the runner's claims and renews are in traces of their own.
    const inTrace = all.filter((span) => span.spanContext().traceId === traceId);
    const transactions = inTrace.filter((span) => span.kind === SpanKind.CLIENT && span.attributes["db.system.name"] === "sqlite");
    expect(new Set(transactions.map((span) => parentOf(span)))).toEqual(new Set([id(enqueue), id(complete)]));
    expect(inTrace.filter((span) => !transactions.includes(span)).map((span) => span.name).sort()).toEqual(["POST /v1/jobs", "POST /v1/leases/complete", "checkout", "process mail", "send mail", "smtp"]);
  });

  test("a handler that throws: its process span is an error with the exception, and the fail is its child", async () => {
    const { client } = await serving();
    await app.startActiveSpan("producer", async (span) => {
      await client.enqueue({ id: "bad", queue: "q" });
      span.end();
    });
    const worker = runWorker(client, { queue: "q", owner: "w", concurrency: 1, ttlMs: 30_000, retryInMs: 60_000 }, async () => {
      throw new Error("no such mailbox");
    });
    await expect.poll(async () => (await client.get("bad")).attempts, { timeout: 10_000 }).toBe(1);
    await expect.poll(() => spans.getFinishedSpans().some((span) => span.name === "process q"), { timeout: 10_000 }).toBe(true);
    await worker.stop();
    const all = spans.getFinishedSpans();
    const process = only(all, "process q");
    expect(process.status).toMatchObject({ code: SpanStatusCode.ERROR, message: "no such mailbox" });
    expect(process.events.map((event) => event.name)).toEqual(["exception"]);
    expect(parentOf(only(all, "POST /v1/jobs/:id/fail"))).toBe(id(process));
  });

  test("withLease inside a span of another trace: the process span continues the job's trace and links to the caller's; renews and the complete are its children", async () => {
    const { client } = await serving();
    const producerTrace = await app.startActiveSpan("producer", async (span) => {
      await client.enqueue({ id: "report", queue: "reports" });
      span.end();
      return span.spanContext().traceId;
    });
    const caller = await app.startActiveSpan("nightly batch", async (span) => {
      await withLease(client, { queue: "reports" }, async () => {
        await new Promise((resolve) => setTimeout(resolve, 80));
        return "ok";
      }, { owner: "batch", ttlMs: 30_000, renewEveryMs: 20 });
      span.end();
      return span;
    });
    const all = spans.getFinishedSpans();
    const process = only(all, "process reports");
    expect(process.spanContext().traceId).toBe(producerTrace);
    expect(parentOf(process)).toBe(id(only(all, "send reports")));
    expect(process.links.map((link) => link.context.spanId)).toEqual([caller.spanContext().spanId]);
    const renews = all.filter((span) => span.name === "POST /v1/jobs/:id/renew");
    expect(renews.length).toBeGreaterThan(0);
    expect(renews.every((span) => parentOf(span) === id(process))).toBe(true);
    expect(parentOf(only(all, "POST /v1/jobs/:id/complete"))).toBe(id(process));
    // The claim was sent in the caller's span: its request is the caller's child, and links to the job's trace.
    const claim = all.find((span) => span.name === "POST /v1/queues/:queue/claim" && parentOf(span) === caller.spanContext().spanId)!;
    expect(claim.links.map((link) => link.context.traceId)).toEqual([producerTrace]);
  });

  test("traceJob (for a job that came another way, a push endpoint's say): its work in a process span, the child of the job's producer", async () => {
    const { client } = await serving();
    await app.startActiveSpan("producer", async (span) => {
      await client.enqueue({ id: "pushed", queue: "hooks" });
      span.end();
    });
    const lease = await client.claim("pushed", { owner: "endpoint", ttlMs: 30_000 });
    await traceJob({ ...lease.job, fence: lease.fence }, async () => {
      await client.complete("pushed", { owner: "endpoint", fence: lease.fence, result: "ok" });
    });
    const all = spans.getFinishedSpans();
    const process = only(all, "process hooks");
    expect(parentOf(process)).toBe(id(only(all, "send hooks")));
    expect(process.attributes).toMatchObject({ "fencelease.lease.owner": "endpoint", "fencelease.lease.fence": 1, "fencelease.job.attempt": 1 });
    expect(parentOf(only(all, "POST /v1/jobs/:id/complete"))).toBe(id(process));
  });

  test("enqueueMany is one producer span: each job without a traceparent of its own is stored with it, a job with one keeps its own", async () => {
    const { client, rows } = await serving();
    const own = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    await app.startActiveSpan("import", async (span) => {
      await client.enqueueMany("bulk", [{ id: "a" }, { id: "b" }, { id: "c", traceparent: own }]);
      span.end();
    });
    const producer = only(spans.getFinishedSpans(), "send bulk");
    expect(producer.attributes).toMatchObject({ "messaging.batch.message_count": 3, "messaging.destination.name": "bulk" });
    const parent = `00-${producer.spanContext().traceId}-${id(producer)}-01`;
    expect(await rows("SELECT id, traceparent FROM jobs ORDER BY id")).toEqual([{ id: "a", traceparent: parent }, { id: "b", traceparent: parent }, { id: "c", traceparent: own }]);
  });

  test("several results sent in one completeMany: a settle span linked to each job's process span", async () => {
    const { client } = await serving();
    await app.startActiveSpan("producer", async (span) => {
      await client.enqueueMany("many", Array.from({ length: 6 }, (_, i) => ({ id: `job-${i}` })));
      span.end();
    });
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let started = 0;
    const worker = runWorker(client, { queue: "many", owner: "w", concurrency: 6, ttlMs: 30_000 }, async () => {
      if (++started === 6) release();
      await gate; // all six return in one turn: their results go together
      return 1;
    });
    await expect.poll(async () => (await client.queues.stats()).find((stats) => stats.queue === "many")?.jobs.done, { timeout: 10_000 }).toBe(6);
    await worker.stop();
    const all = spans.getFinishedSpans();
    const processes = all.filter((span) => span.name === "process many");
    expect(processes).toHaveLength(6);
    const settles = all.filter((span) => span.name === "settle many");
    expect(settles.length).toBeGreaterThan(0);
    const linked = settles.flatMap((span) => span.links.map((link) => link.context.spanId));
    for (const settle of settles) {
      expect(settle.attributes).toMatchObject({ "messaging.operation.type": "settle", "messaging.batch.message_count": settle.links.length });
      expect(all.some((span) => span.name === "POST /v1/leases/complete" && parentOf(span) === id(settle))).toBe(true);
    }
    // Every job's results went in a settle of several, or alone in its own span.
    const alone = all.filter((span) => span.name === "POST /v1/leases/complete" && processes.some((process) => parentOf(span) === id(process)));
    expect(linked.length + alone.length).toBe(6);
  });
  test("in-process: the producer's span, its enqueue's transaction, the job stored with its traceparent, and the job's process span and completion in the same trace", async () => {
    const { store, rows } = await freshStore();
    const client = new LeaseClient({ store });
    const { all, checkout, traceId, producer } = await mailedInCheckout(client);
    const process = only(all, "process mail");
    expect(parentOf(producer)).toBe(id(checkout));
    // No request in between: the enqueue's transaction is the producer span's child, and the job has its traceparent.
    expect(all.filter((span) => parentOf(span) === id(producer)).map((span) => span.name)).toContainEqual(expect.stringMatching(/^INSERT jobs/));
    expect(await rows("SELECT traceparent FROM jobs WHERE id = 'mail-1'")).toEqual([{ traceparent: `00-${traceId}-${id(producer)}-01` }]);
    expect(process.spanContext().traceId).toBe(traceId);
    expect(parentOf(process)).toBe(id(producer));
    // The completion's transaction runs in the job's span.
    expect(all.filter((span) => parentOf(span) === id(process) && span.attributes["db.system.name"] === "sqlite")).not.toEqual([]);
  });
});
