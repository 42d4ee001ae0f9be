import { SpanKind, SpanStatusCode, trace } from "@opentelemetry/api";
import { describe, expect, test } from "vitest";
import type { Driver } from "../../src/drivers/driver.ts";
import { LeaseStore } from "../../src/store/store.ts";
import { freshApp, T } from "../fresh-app.ts";
import { freshStore } from "../fresh-db.ts";
import { only, parentOf, recordSpans } from "../tracing/record-spans.ts";

// The server's spans (issue 21 part 2), with the OpenTelemetry SDK registered
// and its in-memory exporter: a span per request, named by its route
// pattern, the child of the caller's traceparent; a span per store
// transaction, the child of its request's; a claim linked to each job's trace.

const spans = recordSpans();
const CALLER = { traceId: "4bf92f3577b34da6a3ce929d0e0e4736", spanId: "00f067aa0ba902b7" };
const CALLER_PARENT = `00-${CALLER.traceId}-${CALLER.spanId}-01`;
const OTHER = { traceId: "0af7651916cd43dd8448eb211c80319c", spanId: "b7ad6b7169203331" };

describe("a request", () => {
  test("is a server span named by its route pattern, the child of the caller's traceparent, and its store transaction is its child", async () => {
    const { call } = await freshApp();
    expect((await call("POST", "/v1/jobs", { id: "job-1", queue: "mail" }, { traceparent: CALLER_PARENT })).status).toBe(201);
    const finished = spans.getFinishedSpans();
    const request = only(finished, "POST /v1/jobs");
    expect(request.kind).toBe(SpanKind.SERVER);
    expect(request.spanContext().traceId).toBe(CALLER.traceId);
    expect(parentOf(request)).toBe(CALLER.spanId);
    expect(request.attributes).toMatchObject({ "http.request.method": "POST", "http.route": "/v1/jobs", "url.path": "/v1/jobs", "http.response.status_code": 201 });
    expect(request.status.code).toBe(SpanStatusCode.UNSET);
    expect(request.instrumentationScope.name).toBe("fencelease");

    // The enqueue's batch: its INSERT, then what it counts (beside it, the bearer token's first lookup).
    const [transaction, ...more] = finished.filter((span) => parentOf(span) === request.spanContext().spanId && span.name.startsWith("INSERT jobs"));
    expect(more).toEqual([]);
    expect(transaction!.kind).toBe(SpanKind.CLIENT);
    expect(transaction!.spanContext().traceId).toBe(CALLER.traceId);
    expect(transaction!.attributes).toMatchObject({
      "db.system.name": "sqlite",
      "db.operation.name": "BATCH",
      "db.operation.batch.size": transaction!.name.split("; ").length,
      "db.query.summary": transaction!.name,
      "db.response.returned_rows": expect.any(Number),
    });
    expect(finished.every((span) => span === request || parentOf(span) === request.spanContext().spanId)).toBe(true);
  });

  test("a path with ids is named by its pattern, never its path: two jobs, one span name", async () => {
    const { call } = await freshApp();
    await call("POST", "/v1/jobs", { id: "a" });
    await call("POST", "/v1/jobs", { id: "b" });
    await call("GET", "/v1/jobs/a");
    await call("GET", "/v1/jobs/b");
    const reads = spans.getFinishedSpans().filter((span) => span.kind === SpanKind.SERVER && span.attributes["http.request.method"] === "GET");
    expect(reads.map((span) => [span.name, span.attributes["url.path"]])).toEqual([["GET /v1/jobs/:id", "/v1/jobs/a"], ["GET /v1/jobs/:id", "/v1/jobs/b"]]);
  });

  test("without a traceparent the request's span is a root", async () => {
    const { call } = await freshApp();
    await call("GET", "/v1/jobs");
    expect(parentOf(only(spans.getFinishedSpans(), "GET /v1/jobs"))).toBeUndefined();
  });

  test("one refused by auth is a span of the route it was for, 401, status not an error (a 4xx is the caller's)", async () => {
    const { app } = await freshApp();
    const answer = await app.request("/v1/jobs/job-1/complete", { method: "POST", body: "{}", headers: { "Content-Type": "application/json" } });
    expect(answer.status).toBe(401);
    const refused = only(spans.getFinishedSpans(), "POST /v1/jobs/:id/complete");
    expect(refused.attributes["http.response.status_code"]).toBe(401);
    expect(refused.status.code).toBe(SpanStatusCode.UNSET);
  });

  test("a path of no route is one span name, whatever the path", async () => {
    const { call } = await freshApp();
    expect((await call("GET", "/v1/nothing/here")).status).toBe(404);
    expect((await call("GET", "/elsewhere")).status).toBe(404);
    expect(spans.getFinishedSpans().filter((span) => span.kind === SpanKind.SERVER).map((span) => span.name)).toEqual(["GET (unmatched)", "GET (unmatched)"]);
  });

  test("a storage that throws: the transaction span and the request's 500 are errors, with the exception", async () => {
    const failing: Driver = { run: () => Promise.reject(new Error("disk on fire")), batch: () => Promise.reject(new Error("disk on fire")), close: () => undefined };
    const { call } = await freshApp({ store: new LeaseStore(failing) });
    const answer = await call("POST", "/v1/jobs", { id: "job-1" });
    expect(answer.status).toBe(500);
    const finished = spans.getFinishedSpans();
    const request = only(finished, "POST /v1/jobs");
    expect(request.status.code).toBe(SpanStatusCode.ERROR);
    expect(request.attributes).toMatchObject({ "http.response.status_code": 500, "error.type": "500" });
    expect(request.events.map((event) => event.name)).toEqual(["exception"]);
    const [transaction] = finished.filter((span) => parentOf(span) === request.spanContext().spanId && span.name.startsWith("INSERT jobs"));
    expect(transaction!.status).toMatchObject({ code: SpanStatusCode.ERROR, message: "disk on fire" });
    expect(transaction!.attributes["error.type"]).toBe("Error");
  });
});

describe("a claim", () => {
  test("links its span to the trace each job it hands out was enqueued in: a claim of many jobs is the child of none", async () => {
    const { call, clock } = await freshApp();
    await call("POST", "/v1/queues/q/jobs", { jobs: [{ id: "a", priority: 1, traceparent: CALLER_PARENT }, { id: "b", traceparent: `00-${OTHER.traceId}-${OTHER.spanId}-01` }, { id: "untraced" }] });
    spans.reset();
    clock.now = T + 1;
    const claimed = await call("POST", "/v1/queues/q/claim", { owner: "W", ttlMs: 30_000, limit: 3 });
    expect(claimed.body.leases).toHaveLength(3);
    const claim = only(spans.getFinishedSpans(), "POST /v1/queues/:queue/claim");
    expect(claim.links.map((link) => [link.context.traceId, link.context.spanId, link.context.isRemote, link.attributes?.["messaging.message.id"]])).toEqual([
      [CALLER.traceId, CALLER.spanId, true, "a"],
      [OTHER.traceId, OTHER.spanId, true, "b"],
    ]);
  });

  test("so does a completion that takes the next jobs with it", async () => {
    const { call } = await freshApp();
    await call("POST", "/v1/queues/q/jobs", { jobs: [{ id: "first", priority: 1 }, { id: "next", traceparent: CALLER_PARENT }] });
    const { body } = await call("POST", "/v1/queues/q/claim", { owner: "W", ttlMs: 30_000 });
    spans.reset();
    await call("POST", "/v1/jobs/first/complete", { owner: "W", fence: body.leases[0].fence, result: 1, next: { limit: 1, ttlMs: 30_000 } });
    const complete = only(spans.getFinishedSpans(), "POST /v1/jobs/:id/complete");
    expect(complete.links.map((link) => link.context.spanId)).toEqual([CALLER.spanId]);
  });
});

describe("the store outside a request", () => {
  test("makes no span: its background calls (wait rooms, maintenance, the health probe) would each be a trace of their own", async () => {
    const { store } = await freshStore();
    await store.enqueue("job-1", { now: T });
    await store.get("job-1", { now: T });
    await store.health();
    expect(spans.getFinishedSpans()).toEqual([]);
  });

  test("inside a caller's own span, its transactions are that span's children", async () => {
    const { store } = await freshStore();
    await trace.getTracer("test").startActiveSpan("caller", async (caller) => {
      await store.enqueue("job-1", { now: T });
      caller.end();
    });
    const finished = spans.getFinishedSpans();
    const children = finished.filter((span) => parentOf(span) === only(finished, "caller").spanContext().spanId);
    expect(children.map((span) => span.name)).toEqual([expect.stringMatching(/^INSERT jobs/)]);
  });
});
