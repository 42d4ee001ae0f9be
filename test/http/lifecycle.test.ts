import { prometheusText } from "../../src/http/metrics.ts";
import { describe, expect, test } from "vitest";
import { freshApp, T } from "../fresh-app.ts";

const TTL = 30_000;
const HOUR = 3_600_000;

/** An app with job-1 (maxAttempts 2) leased by A with fence 1. */
async function leasedByA() {
  const fresh = await freshApp();
  await fresh.call("POST", "/v1/jobs", { id: "job-1", maxAttempts: 2 });
  expect((await fresh.call("POST", "/v1/jobs/job-1/claim", { owner: "A", ttlMs: TTL })).status).toBe(200);
  return { ...fresh, before: await fresh.snapshot() };
}

describe("POST /v1/jobs/:id/fail", () => {
  test("queues the job again after retryInMs, with the error; the last attempt makes it dead", async () => {
    const { call, clock } = await leasedByA();
    const failed = await call("POST", "/v1/jobs/job-1/fail", { owner: "A", fence: 1, error: "timeout", retryInMs: 1_000 });
    expect(failed).toMatchObject({ status: 200, body: { job: { status: "scheduled", runAt: T + 1_000, lastError: "timeout", owner: null, attempts: 1 } } });
    clock.now = T + 1_000;
    expect((await call("POST", "/v1/jobs/job-1/claim", { owner: "A", ttlMs: TTL })).body.fence).toBe(2);
    const dead = await call("POST", "/v1/jobs/job-1/fail", { owner: "A", fence: 2, error: "timeout again" });
    expect(dead.body.job).toMatchObject({ status: "dead", done: false, lastError: "timeout again", attempts: 2 });
    const claim = await call("POST", "/v1/jobs/job-1/claim", { owner: "B", ttlMs: TTL });
    expect(claim).toMatchObject({ status: 409, body: { error: { code: "not_claimable", details: { reason: "dead" } } } });
  });

  test("a stale fail is 409 stale_lease and changes nothing", async () => {
    const { call, snapshot, before } = await leasedByA();
    const answer = await call("POST", "/v1/jobs/job-1/fail", { owner: "A", fence: 2, error: "x" });
    expect(answer).toMatchObject({ status: 409, body: { error: { code: "stale_lease", details: { reason: "not_owner", currentFence: 1 } } } });
    expect(await snapshot()).toEqual(before);
  });
});

describe("POST /v1/jobs/:id/retry and DELETE /v1/jobs/:id", () => {
  test("retry puts a dead job back; a job that is not dead is 409 conflict", async () => {
    const { call } = await leasedByA();
    expect(await call("POST", "/v1/jobs/job-1/retry")).toMatchObject({ status: 409, body: { error: { code: "conflict", details: { status: "leased" } } } });
    await call("POST", "/v1/jobs/job-1/fail", { owner: "A", fence: 1, error: "x", retryInMs: 0 });
    await call("POST", "/v1/jobs/job-1/claim", { owner: "A", ttlMs: TTL });
    await call("POST", "/v1/jobs/job-1/fail", { owner: "A", fence: 2, error: "x" });
    expect(await call("POST", "/v1/jobs/job-1/retry")).toMatchObject({ status: 200, body: { job: { status: "queued", attempts: 0, fence: 2 } } });
    expect((await call("POST", "/v1/jobs/job-1/claim", { owner: "B", ttlMs: TTL })).body.fence).toBe(3);
    expect((await call("POST", "/v1/jobs/nope/retry")).status).toBe(404);
  });

  test("delete refuses a leased job with 409, deletes it after release, and the id starts over above its fence", async () => {
    const { call, snapshot, before } = await leasedByA();
    expect(await call("DELETE", "/v1/jobs/job-1")).toMatchObject({ status: 409, body: { error: { code: "conflict", details: { status: "leased" } } } });
    expect(await snapshot()).toEqual(before);
    await call("POST", "/v1/jobs/job-1/release", { owner: "A", fence: 1 });
    expect(await call("DELETE", "/v1/jobs/job-1")).toMatchObject({ status: 200, body: { deleted: true } });
    expect((await call("GET", "/v1/jobs/job-1")).status).toBe(404);
    expect((await call("DELETE", "/v1/jobs/job-1")).status).toBe(404);
    await call("POST", "/v1/jobs", { id: "job-1" });
    expect((await call("POST", "/v1/jobs/job-1/claim", { owner: "B", ttlMs: TTL })).body.fence).toBe(2);
  });
});

describe("GET /v1/jobs", () => {
  test("pages through jobs of a queue and status, with nextCursor until the end", async () => {
    const { call } = await freshApp();
    for (const id of ["a", "b", "c", "d", "e"]) await call("POST", "/v1/jobs", { id, queue: id === "e" ? "other" : "q" });
    const first = await call("GET", "/v1/jobs?queue=q&status=queued&limit=3");
    expect(first.body.jobs.map((job: { id: string }) => job.id)).toEqual(["a", "b", "c"]);
    const second = await call("GET", `/v1/jobs?queue=q&status=queued&limit=3&cursor=${encodeURIComponent(first.body.nextCursor)}`);
    expect(second.body).toMatchObject({ jobs: [{ id: "d", status: "queued" }], nextCursor: null });
  });

  test.each([
    ["status=bogus", /status must be one or more of queued, scheduled, leased, done, dead/],
    ["limit=0", /limit must be at least 1/],
    ["limit=101", /limit must be at most 100/],
    ["limit=ten", /limit must be a whole number/],
    ["queu=q", /unknown query parameter "queu"/],
  ])("refuses ?%s with 400 invalid_request", async (query, says) => {
    const { call } = await freshApp();
    const answer = await call("GET", `/v1/jobs?${query}`);
    expect(answer.status).toBe(400);
    expect(answer.body.error).toMatchObject({ code: "invalid_request", message: expect.stringMatching(says) });
  });
});

describe("GET /v1/jobs/:id/events", () => {
  test("follows a job from enqueue to done, and shows who was refused with which fences", async () => {
    const { call, clock } = await leasedByA();
    clock.now = T + TTL;
    await call("POST", "/v1/jobs/job-1/claim", { owner: "B", ttlMs: TTL });
    await call("POST", "/v1/jobs/job-1/complete", { owner: "B", fence: 2, result: "B" });
    await call("POST", "/v1/jobs/job-1/complete", { owner: "A", fence: 1, result: "A" });
    const { status, body } = await call("GET", "/v1/jobs/job-1/events");
    expect(status).toBe(200);
    expect(body.events.map((event: { kind: string }) => event.kind)).toEqual(["enqueued", "claimed", "expired", "claimed", "completed", "refused"]);
    expect(body.events.at(-1)).toMatchObject({ action: "complete", owner: "A", fence: 1, currentOwner: "B", currentFence: 2, at: T + TTL });
    const page = await call("GET", "/v1/jobs/job-1/events?limit=4");
    expect(page.body.nextCursor).toEqual(expect.any(String));
    const rest = await call("GET", `/v1/jobs/job-1/events?cursor=${page.body.nextCursor}`);
    expect(rest.body.events.map((event: { kind: string }) => event.kind)).toEqual(["completed", "refused"]);
  });
});

describe("GET /v1/jobs/:id/lease", () => {
  test("tells a downstream system whether a token is current", async () => {
    const { call, clock } = await leasedByA();
    expect(await call("GET", "/v1/jobs/job-1/lease?owner=A&fence=1")).toMatchObject({ status: 200, body: { current: true, fence: 1, until: T + TTL } });
    clock.now = T + TTL;
    expect((await call("GET", "/v1/jobs/job-1/lease?owner=A&fence=1")).body).toMatchObject({ current: false, fence: 1 });
    expect((await call("GET", "/v1/jobs/nope/lease?owner=A&fence=1")).status).toBe(404);
    expect(await call("GET", "/v1/jobs/job-1/lease?owner=A&fence=x")).toMatchObject({ status: 400, body: { error: { message: "fence must be a whole number" } } });
    expect(await call("GET", "/v1/jobs/job-1/lease?fence=1")).toMatchObject({ status: 400, body: { error: { message: "owner is required" } } });
  });
});

describe("GET /v1/stats and /metrics", () => {
  test("answer which stale workers were refused, per queue, in the last hour and ever", async () => {
    const { call, clock } = await leasedByA();
    clock.now = T + TTL;
    await call("POST", "/v1/jobs/job-1/claim", { owner: "B", ttlMs: TTL });
    await call("POST", "/v1/jobs/job-1/renew", { owner: "A", fence: 1, ttlMs: TTL });
    await call("POST", "/v1/jobs", { id: "job-2", queue: "mail", delayMs: HOUR });
    const stats = await call("GET", "/v1/stats");
    expect(stats).toMatchObject({
      status: 200,
      body: {
        queues: [
          { queue: "default", jobs: { queued: 0, scheduled: 0, leased: 1, done: 0, dead: 0, cancelled: 0 }, oldestDueAgeMs: null, refused: { lastHour: 1, total: 1 }, paused: false, topKeys: [] },
          { queue: "mail", jobs: { scheduled: 1 }, refused: { lastHour: 0, total: 0 } },
        ],
      },
    });
    const metrics = await call("GET", "/metrics");
    expect(metrics.status).toBe(200);
    expect(metrics.headers.get("Content-Type")).toContain("text/plain");
    expect(metrics.body).toContain('fencelease_jobs{queue="default",status="leased"} 1');
    expect(metrics.body).toContain('fencelease_refused_stale_writes_total{queue="default"} 1');
    expect(metrics.body).toContain('fencelease_jobs{queue="mail",status="scheduled"} 1');
  });

  test("a queue name with a quote and a backslash is escaped the way Prometheus reads it", async () => {
    const { call } = await freshApp();
    await call("POST", "/v1/jobs", { id: "job-1", queue: 'a"b\\c' });
    const metrics = await call("GET", "/metrics");
    expect(metrics.body).toContain('fencelease_jobs{queue="a\\"b\\\\c",status="queued"} 1');
  });

  test("a newline in a label value, which the API now refuses in a queue name, would still be escaped", () => {
    const stats = { queue: "a\nb", jobs: { queued: 1, scheduled: 0, leased: 0, done: 0, dead: 0, cancelled: 0 }, oldestDueAgeMs: null, refused: { lastHour: 0, total: 0 }, paused: false, topKeys: [] };
    expect(prometheusText([stats])).toContain('fencelease_jobs{queue="a\\nb",status="queued"} 1');
  });

  test("metrics need the token too", async () => {
    const { app } = await freshApp();
    expect((await app.request("/metrics")).status).toBe(401);
  });
});
