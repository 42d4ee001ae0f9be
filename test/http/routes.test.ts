import { describe, expect, test } from "vitest";
import { freshApp, T, TOKEN } from "../fresh-app.ts";
import type { ErrorBody } from "../../src/http/errors.ts";

const TTL = 30_000;

/** An app with job-1 enqueued and leased by A (fence 1, until T + TTL). */
async function leasedByA() {
  const fresh = await freshApp();
  await fresh.call("POST", "/v1/jobs", { id: "job-1", payload: { n: 1 } });
  expect((await fresh.call("POST", "/v1/jobs/job-1/claim", { owner: "A", ttlMs: TTL })).status).toBe(200);
  return { ...fresh, before: await fresh.snapshot() };
}

describe("POST /v1/jobs", () => {
  test("creates a job: 201 with the job as stored", async () => {
    const { call, snapshot } = await freshApp();
    const answer = await call("POST", "/v1/jobs", { id: "job-1", queue: "mail", payload: { to: "ada" }, priority: 2, maxAttempts: 3 });
    expect(answer.status).toBe(201);
    expect(answer.body).toEqual({
      created: true,
      job: {
        id: "job-1", queue: "mail", key: null, payload: { to: "ada" }, priority: 2, runAt: T, owner: null, until: 0, fence: 0,
        result: null, done: false, status: "queued", attempts: 0, maxAttempts: 3, lastError: null, progress: null, traceparent: null, tracestate: null, createdAt: T, updatedAt: T, dedupKey: null, dedupUntil: null, supersededBy: null,
        steps: {},
      },
    });
    expect((await snapshot())["job-1"]).toMatchObject({ queue: "mail", payload: '{"to":"ada"}', priority: 2, max_attempts: 3 });
  });

  test("an existing id: 200 with created false and the job unchanged", async () => {
    const { call, snapshot, before } = await leasedByA();
    const answer = await call("POST", "/v1/jobs", { id: "job-1", payload: "other", priority: 9 });
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ created: false, job: { id: "job-1", owner: "A", fence: 1, payload: { n: 1 }, priority: 0 } });
    expect(await snapshot()).toEqual(before);
  });

  test("delayMs schedules the job that far from the server's now; runAt sets it outright", async () => {
    const { call } = await freshApp();
    expect((await call("POST", "/v1/jobs", { id: "later", delayMs: 5_000 })).body.job.runAt).toBe(T + 5_000);
    expect((await call("POST", "/v1/jobs", { id: "at", runAt: 42 })).body.job.runAt).toBe(42);
  });
});

describe("GET /v1/jobs/:id", () => {
  test("answers the job", async () => {
    const { call } = await leasedByA();
    const answer = await call("GET", "/v1/jobs/job-1");
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ id: "job-1", owner: "A", fence: 1, until: T + TTL, payload: { n: 1 } });
  });

  test("an unknown id: 404 not_found", async () => {
    const { call } = await freshApp();
    const answer = await call("GET", "/v1/jobs/nope");
    expect(answer.status).toBe(404);
    expect(answer.body.error).toMatchObject({ code: "not_found", message: expect.stringContaining("nope") });
  });

  test("an id with a slash in it, sent encoded", async () => {
    const { call } = await freshApp();
    await call("POST", "/v1/jobs", { id: "tenant/42" });
    expect((await call("GET", `/v1/jobs/${encodeURIComponent("tenant/42")}`)).body).toMatchObject({ id: "tenant/42" });
  });
});

describe("POST /v1/jobs/:id/claim", () => {
  test("answers the new lease: fence, until and the job", async () => {
    const { call, clock, snapshot } = await freshApp();
    await call("POST", "/v1/jobs", { id: "job-1" });
    clock.now = T + 7;
    const answer = await call("POST", "/v1/jobs/job-1/claim", { owner: "A", ttlMs: TTL });
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ fence: 1, until: T + 7 + TTL, job: { id: "job-1", owner: "A", fence: 1, attempts: 1 } });
    expect((await snapshot())["job-1"]).toMatchObject({ owner: "A", fence: 1, until: T + 7 + TTL });
  });

  test("a job leased by another: 409 not_claimable, reason leased, nothing changed", async () => {
    const { call, clock, snapshot, before } = await leasedByA();
    clock.now = T + TTL - 1;
    const answer = await call("POST", "/v1/jobs/job-1/claim", { owner: "B", ttlMs: TTL });
    expect(answer.status).toBe(409);
    expect(answer.body.error).toMatchObject({ code: "not_claimable", details: { reason: "leased" } });
    expect(await snapshot()).toEqual(before);
  });

  test("a done job: 409 not_claimable, reason done", async () => {
    const { call, clock } = await leasedByA();
    await call("POST", "/v1/jobs/job-1/complete", { owner: "A", fence: 1, result: "ok" });
    clock.now = T + 10 * TTL;
    const answer = await call("POST", "/v1/jobs/job-1/claim", { owner: "B", ttlMs: TTL });
    expect(answer.status).toBe(409);
    expect(answer.body.error).toMatchObject({ code: "not_claimable", details: { reason: "done" } });
  });

  test("an unknown id: 404 not_found, and no job is created", async () => {
    const { call, snapshot } = await freshApp();
    expect((await call("POST", "/v1/jobs/nope/claim", { owner: "A", ttlMs: TTL })).status).toBe(404);
    expect(await snapshot()).toEqual({});
  });
});

describe("POST /v1/queues/:queue/claim", () => {
  test("answers the leases of the next due jobs, highest priority first", async () => {
    const { call } = await freshApp();
    await call("POST", "/v1/jobs", { id: "low", queue: "q" });
    await call("POST", "/v1/jobs", { id: "high", queue: "q", priority: 5 });
    await call("POST", "/v1/jobs", { id: "elsewhere", queue: "other", priority: 9 });
    const answer = await call("POST", "/v1/queues/q/claim", { owner: "A", ttlMs: TTL, limit: 5 });
    expect(answer.status).toBe(200);
    expect(answer.body.leases.map((lease: { job: { id: string } }) => lease.job.id)).toEqual(["high", "low"]);
    expect(answer.body.leases[0]).toMatchObject({ fence: 1, until: T + TTL, job: { owner: "A" } });
  });

  test("takes one job when no limit is given, and answers an empty list when nothing is due", async () => {
    const { call } = await freshApp();
    await call("POST", "/v1/jobs", { id: "a" });
    await call("POST", "/v1/jobs", { id: "b" });
    await call("POST", "/v1/jobs", { id: "later", delayMs: 1 });
    expect((await call("POST", "/v1/queues/default/claim", { owner: "A", ttlMs: TTL })).body.leases).toHaveLength(1);
    expect((await call("POST", "/v1/queues/default/claim", { owner: "A", ttlMs: TTL })).body.leases).toHaveLength(1);
    expect(await call("POST", "/v1/queues/default/claim", { owner: "A", ttlMs: TTL })).toMatchObject({ status: 200, body: { leases: [] } });
  });
});

describe("POST /v1/jobs/:id/renew", () => {
  test("extends the current lease: 200 with the new until", async () => {
    const { call, clock, snapshot } = await leasedByA();
    clock.now = T + TTL - 1;
    const answer = await call("POST", "/v1/jobs/job-1/renew", { owner: "A", fence: 1, ttlMs: 5_000 });
    expect(answer).toMatchObject({ status: 200, body: { until: T + TTL - 1 + 5_000 } });
    expect((await snapshot())["job-1"]).toMatchObject({ until: T + TTL - 1 + 5_000 });
  });

  test.each([
    ["expired", "A", 1, TTL, 1],
    ["not_owner", "B", 1, 1, 1],
    ["not_owner", "A", 2, 1, 1],
  ])("refuses with 409 stale_lease, reason %s, currentFence, and changes nothing (owner %s, fence %d)", async (reason, owner, fence, at, currentFence) => {
    const { call, clock, snapshot, before } = await leasedByA();
    clock.now = T + at;
    const answer = await call("POST", "/v1/jobs/job-1/renew", { owner, fence, ttlMs: TTL });
    expect(answer.status).toBe(409);
    expect(answer.body.error).toMatchObject({ code: "stale_lease", details: { reason, currentFence } });
    expect(await snapshot()).toEqual(before);
  });

  test("a superseded fence: reason superseded, and the newer fence is named", async () => {
    const { call, clock, snapshot } = await leasedByA();
    clock.now = T + TTL;
    await call("POST", "/v1/jobs/job-1/claim", { owner: "B", ttlMs: TTL });
    const before = await snapshot();
    const answer = await call("POST", "/v1/jobs/job-1/renew", { owner: "A", fence: 1, ttlMs: TTL });
    expect(answer.body.error).toMatchObject({ code: "stale_lease", details: { reason: "superseded", currentFence: 2 } });
    expect(await snapshot()).toEqual(before);
  });

  test("a done job: reason done", async () => {
    const { call } = await leasedByA();
    await call("POST", "/v1/jobs/job-1/complete", { owner: "A", fence: 1, result: 1 });
    const answer = await call("POST", "/v1/jobs/job-1/renew", { owner: "A", fence: 1, ttlMs: TTL });
    expect(answer.body.error).toMatchObject({ code: "stale_lease", details: { reason: "done", currentFence: 1 } });
  });

  test("an unknown id: 404 not_found", async () => {
    const { call } = await freshApp();
    expect((await call("POST", "/v1/jobs/nope/renew", { owner: "A", fence: 1, ttlMs: TTL })).body.error.code).toBe("not_found");
  });
});

describe("POST /v1/jobs/:id/complete", () => {
  test("stores any JSON result of the current lease: 200 with the done job", async () => {
    const { call, snapshot } = await leasedByA();
    const result = { paid: true, amounts: [1, 2.5], note: null };
    const answer = await call("POST", "/v1/jobs/job-1/complete", { owner: "A", fence: 1, result });
    expect(answer).toMatchObject({ status: 200, body: { job: { id: "job-1", done: true, result, fence: 1 } } });
    expect((await snapshot())["job-1"]).toMatchObject({ done: 1, result: JSON.stringify(result) });
  });

  test("the same completion sent again answers 200 again and changes nothing", async () => {
    const { call, clock, snapshot } = await leasedByA();
    await call("POST", "/v1/jobs/job-1/complete", { owner: "A", fence: 1, result: { n: 1 } });
    const done = await snapshot();
    clock.now = T + 10 * TTL; // long after the lease: a retry after a lost response
    const again = await call("POST", "/v1/jobs/job-1/complete", { owner: "A", fence: 1, result: { n: 1 } });
    expect(again).toMatchObject({ status: 200, body: { job: { done: true, result: { n: 1 } } } });
    expect(await snapshot()).toEqual(done);
  });

  test("a different result on the done job is refused: 409 stale_lease, reason done, first result kept", async () => {
    const { call, snapshot } = await leasedByA();
    await call("POST", "/v1/jobs/job-1/complete", { owner: "A", fence: 1, result: "first" });
    const done = await snapshot();
    const answer = await call("POST", "/v1/jobs/job-1/complete", { owner: "A", fence: 1, result: "second" });
    expect(answer.status).toBe(409);
    expect(answer.body.error).toMatchObject({ code: "stale_lease", details: { reason: "done", currentFence: 1 } });
    expect(await snapshot()).toEqual(done);
  });

  test("an expired lease: 409 stale_lease, reason expired, the job still open", async () => {
    const { call, clock, snapshot, before } = await leasedByA();
    clock.now = T + TTL;
    const answer = await call("POST", "/v1/jobs/job-1/complete", { owner: "A", fence: 1, result: "late" });
    expect(answer.body.error).toMatchObject({ code: "stale_lease", details: { reason: "expired", currentFence: 1 } });
    expect(await snapshot()).toEqual(before);
  });
});

describe("POST /v1/jobs/:id/release", () => {
  test("gives the lease back: 200 with the job, owner null, fence kept", async () => {
    const { call, snapshot } = await leasedByA();
    const answer = await call("POST", "/v1/jobs/job-1/release", { owner: "A", fence: 1 });
    expect(answer).toMatchObject({ status: 200, body: { job: { owner: null, until: 0, fence: 1 } } });
    expect((await snapshot())["job-1"]).toMatchObject({ owner: null, until: 0, fence: 1 });
  });

  test("another owner: 409 stale_lease, reason not_owner, nothing changed", async () => {
    const { call, snapshot, before } = await leasedByA();
    const answer = await call("POST", "/v1/jobs/job-1/release", { owner: "B", fence: 1 });
    expect(answer.body.error).toMatchObject({ code: "stale_lease", details: { reason: "not_owner", currentFence: 1 } });
    expect(await snapshot()).toEqual(before);
  });
});

describe("the note's story over HTTP", () => {
  test("A stalls past its lease, B takes over and completes, A's late writes are refused and B's result stays", async () => {
    const { call, clock, snapshot } = await freshApp();
    await call("POST", "/v1/jobs", { id: "invoice-42" });
    expect((await call("POST", "/v1/jobs/invoice-42/claim", { owner: "A", ttlMs: TTL })).body.fence).toBe(1);
    clock.now = T + TTL; // A stalls; its lease runs out
    expect((await call("POST", "/v1/jobs/invoice-42/claim", { owner: "B", ttlMs: TTL })).body.fence).toBe(2);
    expect((await call("POST", "/v1/jobs/invoice-42/complete", { owner: "B", fence: 2, result: "paid by B" })).status).toBe(200);
    const settled = await snapshot();

    clock.now = T + TTL + 5; // A wakes up
    for (const [verb, body] of [
      ["renew", { owner: "A", fence: 1, ttlMs: TTL }],
      ["complete", { owner: "A", fence: 1, result: "paid by A" }],
      ["release", { owner: "A", fence: 1 }],
    ] as const) {
      const answer = await call("POST", `/v1/jobs/invoice-42/${verb}`, body);
      expect(answer.status, verb).toBe(409);
      expect(answer.body.error, verb).toMatchObject({ code: "stale_lease", details: { reason: "superseded", currentFence: 2 } });
    }
    expect(await snapshot()).toEqual(settled);
    expect((await call("GET", "/v1/jobs/invoice-42")).body).toMatchObject({ owner: "B", fence: 2, result: "paid by B", done: true });
  });
});

describe("health and documents", () => {
  test("healthz answers 200 without a token while the database answers", async () => {
    const { app } = await freshApp();
    const response = await app.request("/healthz");
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ ok: true });
  });

  test("healthz answers 503 unavailable with Retry-After when the database is gone", async () => {
    const { app, store } = await freshApp();
    store.close();
    const response = await app.request("/healthz");
    expect(response.status).toBe(503);
    expect(response.headers.get("Retry-After")).toBe("1");
    expect(((await response.json()) as ErrorBody).error).toMatchObject({ code: "unavailable", details: { outcome: "not_applied" } });
  });

  test("the OpenAPI 3.1 document lists every route, with the limits in force", async () => {
    const { call } = await freshApp({ limits: { maxTtlMs: 60_000 } });
    const { status, body } = await call("GET", "/openapi.json");
    expect(status).toBe(200);
    expect(body.openapi).toBe("3.1.0");
    expect(Object.keys(body.paths).sort()).toEqual([
      "/healthz", "/metrics", "/v1/jobs", "/v1/jobs/bulk", "/v1/jobs/{id}", "/v1/jobs/{id}/cancel", "/v1/jobs/{id}/claim", "/v1/jobs/{id}/complete",
      "/v1/jobs/{id}/events", "/v1/jobs/{id}/fail", "/v1/jobs/{id}/lease", "/v1/jobs/{id}/release",
      "/v1/jobs/{id}/renew", "/v1/jobs/{id}/retry", "/v1/jobs/{id}/steps/{name}", "/v1/leases/complete", "/v1/leases/renew", "/v1/push",
      "/v1/queues", "/v1/queues/{queue}", "/v1/queues/{queue}/claim", "/v1/queues/{queue}/jobs", "/v1/queues/{queue}/keys",
      "/v1/queues/{queue}/pause", "/v1/queues/{queue}/push", "/v1/queues/{queue}/push/rotate", "/v1/queues/{queue}/resume", "/v1/queues/{queue}/series",
      "/v1/schedules", "/v1/schedules/{name}", "/v1/stats",
      "/v1/tokens", "/v1/tokens/self", "/v1/tokens/{id}",
    ]);
    const claim = body.paths["/v1/jobs/{id}/claim"].post.requestBody.content["application/json"].schema;
    expect(claim.properties.ttlMs.maximum).toBe(60_000);
  });
});

describe("an empty body", () => {
  /** Every operation of the document that writes and whose body is optional or absent, with its path's placeholders filled. */
  async function optionalBodyRoutes(): Promise<{ method: string; path: string }[]> {
    const { body } = await (await freshApp()).call("GET", "/openapi.json");
    return Object.entries(body.paths as Record<string, Record<string, { requestBody?: { required?: boolean } }>>).flatMap(([path, operations]) =>
      Object.entries(operations)
        .filter(([method, operation]) => method !== "get" && !operation.requestBody?.required)
        .map(([method]) => ({ method: method.toUpperCase(), path: path.replace("{id}", "job-1").replace("{queue}", "q").replace("{name}", "nightly") })));
  }

  /** An app with a queued job-1 in queue q and a schedule nightly, the same each time. */
  async function world() {
    const fresh = await freshApp();
    await fresh.call("POST", "/v1/jobs", { id: "job-1", queue: "q" });
    await fresh.call("PUT", "/v1/schedules/nightly", { queue: "q", everyMs: 60_000 });
    return fresh;
  }

  const empties: [string, () => string | ReadableStream][] = [
    ["of length 0", () => ""],
    ["sent in no chunks", () => new ReadableStream({ start: (controller) => controller.close() })],
  ];

  test.each(empties)("%s, with Content-Type: application/json, is no body on every route whose body is optional", async (_, empty) => {
    const routes = await optionalBodyRoutes();
    expect(routes.map(({ method, path }) => `${method} ${path}`)).toContain("POST /v1/jobs/job-1/cancel");
    for (const { method, path } of routes) {
      const without = await (await world()).call(method, path);
      const { app } = await world();
      const response = await app.request(path, { method, body: empty(), headers: { Authorization: `Bearer ${TOKEN}`, "Content-Type": "application/json" }, duplex: "half" } as RequestInit);
      const text = await response.text();
      expect({ status: response.status, body: text.startsWith("{") ? JSON.parse(text) : text }, `${method} ${path}`).toEqual({ status: without.status, body: without.body });
      expect(response.status, `${method} ${path}: ${text}`).not.toBe(400); // what it answers without a body, never "not valid JSON"
    }
  });

  test("cancel with Content-Type: application/json and no body cancels as api, with no reason", async () => {
    const { app, call } = await world();
    const response = await app.request("/v1/jobs/job-1/cancel", { method: "POST", headers: { Authorization: `Bearer ${TOKEN}`, "Content-Type": "application/json" } });
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ changed: true, job: { status: "cancelled" } });
    expect((await call("GET", "/v1/jobs/job-1/events")).body.events.at(-1)).toMatchObject({ kind: "cancelled", owner: "api", error: null });
  });

  test("is still refused where a body is required", async () => {
    const { call } = await world();
    const answer = await call("POST", "/v1/jobs/job-1/claim", "");
    expect(answer.status).toBe(400);
    expect(answer.body.error.message).toBe("the body is not valid JSON");
  });
});
