import { describe, expect, test } from "vitest";
import { freshApp, T } from "../fresh-app.ts";

// Cancel and progress (issue 13) over HTTP, on the real app with the test's
// clock. Each test builds its own app on a fresh database.

const TTL = 30_000;

/** An app with job-1 leased by A (fence 1) in queue q, and a bystander queued in q. */
async function leasedByA() {
  const fresh = await freshApp();
  await fresh.call("POST", "/v1/jobs", { id: "job-1", queue: "q" });
  await fresh.call("POST", "/v1/jobs", { id: "bystander", queue: "q" });
  expect((await fresh.call("POST", "/v1/jobs/job-1/claim", { owner: "A", ttlMs: TTL })).body.fence).toBe(1);
  return fresh;
}

const staleCancelled = { status: 409, body: { error: { code: "stale_lease", details: { reason: "cancelled", currentFence: 1 } } } };

describe("POST /v1/jobs/:id/cancel", () => {
  test("without a body cancels as \"api\"; with one records by and reason; the answer is the job and changed", async () => {
    const { call } = await leasedByA();
    expect(await call("POST", "/v1/jobs/bystander/cancel")).toMatchObject({ status: 200, body: { job: { id: "bystander", status: "cancelled", done: false }, changed: true } });
    const answer = await call("POST", "/v1/jobs/job-1/cancel", { by: "ops-console", reason: "refunded" });
    expect(answer).toMatchObject({ status: 200, body: { job: { id: "job-1", status: "cancelled", owner: "A", fence: 1, done: false }, changed: true } });
    const [bystander] = (await call("GET", "/v1/jobs/bystander/events")).body.events.filter((event: { kind: string }) => event.kind === "cancelled");
    expect(bystander).toMatchObject({ owner: "api", error: null, at: T });
    const [cancelled] = (await call("GET", "/v1/jobs/job-1/events")).body.events.filter((event: { kind: string }) => event.kind === "cancelled");
    expect(cancelled).toMatchObject({ owner: "ops-console", fence: 1, error: "refunded", at: T });
  });

  test("a second cancel is 200 with changed: false, and changes nothing", async () => {
    const { call, clock, snapshot } = await leasedByA();
    const first = await call("POST", "/v1/jobs/job-1/cancel", {});
    const before = await snapshot();
    clock.now = T + 5;
    expect(await call("POST", "/v1/jobs/job-1/cancel", { by: "again" })).toMatchObject({ status: 200, body: { job: { ...first.body.job }, changed: false } });
    expect(await snapshot()).toEqual(before);
  });

  test("the holder's renew, complete, fail and release are 409 stale_lease with reason cancelled, and so are its many-lease outcomes", async () => {
    const { call, snapshot } = await leasedByA();
    await call("POST", "/v1/jobs/job-1/cancel", { by: "ops" });
    const before = await snapshot();
    expect(await call("POST", "/v1/jobs/job-1/renew", { owner: "A", fence: 1, ttlMs: TTL, progress: "late" })).toMatchObject(staleCancelled);
    expect(await call("POST", "/v1/jobs/job-1/complete", { owner: "A", fence: 1, result: "late" })).toMatchObject(staleCancelled);
    expect(await call("POST", "/v1/jobs/job-1/fail", { owner: "A", fence: 1, error: "late" })).toMatchObject(staleCancelled);
    expect(await call("POST", "/v1/jobs/job-1/release", { owner: "A", fence: 1 })).toMatchObject(staleCancelled);
    const renewed = await call("POST", "/v1/leases/renew", { owner: "A", ttlMs: TTL, leases: [{ id: "job-1", fence: 1 }] });
    expect(renewed.body.leases).toEqual([{ id: "job-1", error: expect.objectContaining({ code: "stale_lease", details: { reason: "cancelled", currentFence: 1 } }) }]);
    const completed = await call("POST", "/v1/leases/complete", { owner: "A", leases: [{ id: "job-1", fence: 1, result: 1 }] });
    expect(completed.body.completed).toEqual([{ id: "job-1", error: expect.objectContaining({ code: "stale_lease", details: { reason: "cancelled", currentFence: 1 } }) }]);
    expect(await snapshot()).toEqual(before);
    expect(await call("POST", "/v1/jobs/job-1/claim", { owner: "B", ttlMs: TTL })).toMatchObject({ status: 409, body: { error: { code: "not_claimable", details: { reason: "cancelled" } } } });
  });

  test("a done or dead job is 409 conflict, an unknown id 404, and nothing changes", async () => {
    const { call, snapshot } = await leasedByA();
    await call("POST", "/v1/jobs/job-1/complete", { owner: "A", fence: 1, result: "ok" });
    await call("POST", "/v1/jobs", { id: "doomed", queue: "q", maxAttempts: 1 });
    const { fence } = (await call("POST", "/v1/jobs/doomed/claim", { owner: "A", ttlMs: TTL })).body;
    await call("POST", "/v1/jobs/doomed/fail", { owner: "A", fence, error: "no" });
    const before = await snapshot();
    expect(await call("POST", "/v1/jobs/job-1/cancel", {})).toMatchObject({ status: 409, body: { error: { code: "conflict", details: { status: "done" } } } });
    expect(await call("POST", "/v1/jobs/doomed/cancel", {})).toMatchObject({ status: 409, body: { error: { code: "conflict", details: { status: "dead" } } } });
    expect(await call("POST", "/v1/jobs/nope/cancel", {})).toMatchObject({ status: 404, body: { error: { code: "not_found" } } });
    expect(await snapshot()).toEqual(before);
  });

  test.each([
    ["an empty by", { by: "" }, /^by must not be empty/],
    ["a by with a control character", { by: "a\u0007b" }, /^by must not contain control characters/],
    ["a reason over 1024 bytes", { reason: "é".repeat(513) }, /^reason must be at most 1024 bytes/],
    ["a reason that is not a string", { reason: 42 }, /^reason must be a string/],
    ["an unknown field", { by: "ops", force: true }, /unknown field "force"; the fields are by, reason/],
    ["a body that is not an object", [1], /the body must be a JSON object/],
  ])("%s is 400 invalid_request and changes nothing", async (_, body, message) => {
    const { call, snapshot } = await leasedByA();
    const before = await snapshot();
    const answer = await call("POST", "/v1/jobs/job-1/cancel", body);
    expect(answer).toMatchObject({ status: 400, body: { error: { code: "invalid_request" } } });
    expect(answer.body.error.message).toMatch(message);
    expect(await snapshot()).toEqual(before);
  });

  test("a body that is not JSON is 400, and changes nothing", async () => {
    const { call, snapshot } = await leasedByA();
    const before = await snapshot();
    expect((await call("POST", "/v1/jobs/job-1/cancel", "by=ops", { "Content-Type": "text/plain" })).status).toBe(400);
    expect((await call("POST", "/v1/jobs/job-1/cancel", "{", { "Content-Type": "application/json" })).status).toBe(400);
    expect(await snapshot()).toEqual(before);
  });

  test("the list filters by status cancelled; stats and metrics count cancelled jobs", async () => {
    const { call } = await leasedByA();
    await call("POST", "/v1/jobs/job-1/cancel", {});
    expect((await call("GET", "/v1/jobs?status=cancelled")).body.jobs.map((job: { id: string }) => job.id)).toEqual(["job-1"]);
    expect((await call("GET", "/v1/stats")).body.queues).toMatchObject([{ queue: "q", jobs: { queued: 1, leased: 0, cancelled: 1 } }]);
    const metrics = (await call("GET", "/metrics")).body;
    expect(metrics).toContain('fencelease_jobs{queue="q",status="cancelled"} 1');
    expect(metrics).toContain('fencelease_jobs{queue="q",status="leased"} 0');
  });

  test("the OpenAPI document has the route, its body, and the 409 conflict", async () => {
    const { call } = await freshApp();
    const { body } = await call("GET", "/openapi.json");
    const route = body.paths["/v1/jobs/{id}/cancel"].post;
    expect(Object.keys(route.requestBody.content["application/json"].schema.properties)).toEqual(["by", "reason"]);
    expect(route.requestBody.required).toBe(false);
    expect(route.responses["409"].description).toContain("conflict");
    expect(body.components.schemas.Job.properties.progress).toBeDefined();
    expect(body.components.schemas.Job.properties.status.enum).toContain("cancelled");
  });
});

describe("progress on renew", () => {
  test("an accepted renew stores it; the job, the list and the renewed event show it", async () => {
    const { call } = await leasedByA();
    expect(await call("POST", "/v1/jobs/job-1/renew", { owner: "A", fence: 1, ttlMs: TTL, progress: { pct: 40 } })).toMatchObject({ status: 200, body: { until: T + TTL } });
    expect((await call("GET", "/v1/jobs/job-1")).body.progress).toEqual({ pct: 40 });
    expect((await call("GET", "/v1/jobs")).body.jobs.map((job: { progress: unknown }) => job.progress)).toEqual([null, { pct: 40 }]);
    expect(await call("POST", "/v1/leases/renew", { owner: "A", ttlMs: TTL, leases: [{ id: "job-1", fence: 1, progress: { pct: 70 } }] })).toMatchObject({ status: 200, body: { leases: [{ id: "job-1", until: T + TTL }] } });
    const renewed = (await call("GET", "/v1/jobs/job-1/events")).body.events.filter((event: { kind: string }) => event.kind === "renewed");
    expect(renewed).toEqual([expect.objectContaining({ count: 2, progress: { pct: 70 } })]);
  });

  test("a refused renew stores none of its progress", async () => {
    const { call, clock } = await leasedByA();
    await call("POST", "/v1/jobs/job-1/renew", { owner: "A", fence: 1, ttlMs: TTL, progress: "A: 10%" });
    clock.now = T + TTL;
    expect((await call("POST", "/v1/jobs/job-1/claim", { owner: "B", ttlMs: TTL })).body.fence).toBe(2);
    expect((await call("POST", "/v1/jobs/job-1/renew", { owner: "A", fence: 1, ttlMs: TTL, progress: "zombie A: 90%" })).status).toBe(409);
    expect((await call("POST", "/v1/leases/renew", { owner: "A", ttlMs: TTL, leases: [{ id: "job-1", fence: 1, progress: "zombie A: 95%" }] })).body.leases[0].error.code).toBe("stale_lease");
    expect((await call("GET", "/v1/jobs/job-1")).body.progress).toBe("A: 10%");
  });

  test("more than 4096 bytes as JSON is 400 invalid_request naming progress, and nothing changes", async () => {
    const { call, snapshot } = await leasedByA();
    expect((await call("POST", "/v1/jobs/job-1/renew", { owner: "A", fence: 1, ttlMs: TTL, progress: "x".repeat(4094) })).status).toBe(200);
    const before = await snapshot();
    const single = await call("POST", "/v1/jobs/job-1/renew", { owner: "A", fence: 1, ttlMs: TTL, progress: "x".repeat(4095) });
    expect(single).toMatchObject({ status: 400, body: { error: { code: "invalid_request" } } });
    expect(single.body.error.message).toMatch(/^progress must be at most 4096 bytes as JSON, got 4097/);
    const many = await call("POST", "/v1/leases/renew", { owner: "A", ttlMs: TTL, leases: [{ id: "job-1", fence: 1, progress: { text: "é".repeat(3000) } }] });
    expect(many).toMatchObject({ status: 400, body: { error: { code: "invalid_request" } } });
    expect(many.body.error.message).toMatch(/^leases\.0\.progress must be at most 4096 bytes as JSON/);
    expect(await snapshot()).toEqual(before);
  });
});
