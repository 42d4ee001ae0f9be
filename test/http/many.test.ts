import { describe, expect, test } from "vitest";
import { freshApp, T } from "../fresh-app.ts";

// The routes that carry many jobs or leases, and complete and fail with `next`
// (issue 9), through the real app: status codes, answers, and what is stored.

const TTL = 30_000;

/** An app with job-1 and job-2 of queue q leased by A (fence 1), and due-1, due-2 queued in q. */
async function twoLeasedAndTwoDue() {
  const fresh = await freshApp();
  await fresh.call("POST", "/v1/queues/q/jobs", { jobs: [{ id: "job-1" }, { id: "job-2" }] });
  expect((await fresh.call("POST", "/v1/queues/q/claim", { owner: "A", ttlMs: TTL, limit: 2 })).body.leases).toHaveLength(2);
  await fresh.call("POST", "/v1/queues/q/jobs", { jobs: [{ id: "due-1", payload: { n: 1 } }, { id: "due-2" }] });
  return { ...fresh, before: await fresh.snapshot() };
}

describe("POST /v1/queues/:queue/jobs", () => {
  test("enqueues every job of the list in one call: 200 with created for each, in order", async () => {
    const { call, snapshot } = await freshApp();
    await call("POST", "/v1/jobs", { id: "old", queue: "elsewhere" });
    const answer = await call("POST", "/v1/queues/mail/jobs", { jobs: [{ id: "b", payload: { to: "ada" }, delayMs: 500 }, { id: "old" }, { id: "a", runAt: T + 7, priority: 2, maxAttempts: 3 }] });
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({ jobs: [{ id: "b", created: true }, { id: "old", created: false }, { id: "a", created: true }] });
    const rows = await snapshot();
    expect(rows.b).toMatchObject({ queue: "mail", payload: '{"to":"ada"}', run_at: T + 500, created_at: T });
    expect(rows.a).toMatchObject({ queue: "mail", run_at: T + 7, priority: 2, max_attempts: 3 });
    expect(rows.old).toMatchObject({ queue: "elsewhere" });
  });

  test.each([
    ["an empty list", { jobs: [] }, "jobs must hold at least one of the jobs"],
    ["more than 1,000 jobs", { jobs: Array.from({ length: 1_001 }, (_, i) => ({ id: `j${i}` })) }, "jobs must hold at most 1000 jobs; send the rest in another call"],
    ["an id twice", { jobs: [{ id: "a" }, { id: "b" }, { id: "a" }] }, 'jobs.2.id repeats the id "a"; each id may come once'],
    ["a job with a queue of its own", { jobs: [{ id: "a", queue: "other" }] }, 'jobs.0 unknown field "queue"'],
    ["runAt and delayMs together", { jobs: [{ id: "a", runAt: T, delayMs: 1 }] }, "jobs.0 give runAt or delayMs, not both"],
    ["no list", {}, "jobs is required"],
  ])("refuses %s with 400 and writes nothing", async (_, body, message) => {
    const { call, snapshot } = await freshApp();
    const answer = await call("POST", "/v1/queues/q/jobs", body);
    expect(answer.status).toBe(400);
    expect(answer.body.error.code).toBe("invalid_request");
    expect(answer.body.error.message).toContain(message);
    expect(await snapshot()).toEqual({});
  });
});

describe("complete and fail with next", () => {
  test("a complete with next answers the done job and the leases of the next due jobs, taken for the same owner", async () => {
    const { call, snapshot } = await twoLeasedAndTwoDue();
    const answer = await call("POST", "/v1/jobs/job-1/complete", { owner: "A", fence: 1, result: { ok: 1 }, next: { limit: 1, ttlMs: 5_000 } });
    expect(answer.status).toBe(200);
    expect(answer.body.job).toMatchObject({ id: "job-1", status: "done", result: { ok: 1 } });
    expect(answer.body.leases).toEqual([{ fence: 1, until: T + 5_000, job: expect.objectContaining({ id: "due-1", owner: "A", payload: { n: 1 }, status: "leased" }) }]);
    expect((await snapshot())["due-2"]).toMatchObject({ owner: null, fence: 0 });
  });

  test("without next the answer is as before: the job alone", async () => {
    const { call } = await twoLeasedAndTwoDue();
    const answer = await call("POST", "/v1/jobs/job-1/complete", { owner: "A", fence: 1, result: 1 });
    expect(Object.keys(answer.body)).toEqual(["job"]);
  });

  test("a refused complete with next is 409 and takes nothing", async () => {
    const { call, snapshot, before } = await twoLeasedAndTwoDue();
    const answer = await call("POST", "/v1/jobs/job-1/complete", { owner: "B", fence: 1, result: 1, next: { limit: 5, ttlMs: TTL } });
    expect(answer.status).toBe(409);
    expect(answer.body.error).toMatchObject({ code: "stale_lease", details: { reason: "not_owner", currentFence: 1 } });
    expect(await snapshot()).toEqual(before);
  });

  test("a fail with next answers the failed job and the leases taken", async () => {
    const { call } = await twoLeasedAndTwoDue();
    const answer = await call("POST", "/v1/jobs/job-1/fail", { owner: "A", fence: 1, error: "boom", retryInMs: 60_000, next: { limit: 5, ttlMs: TTL } });
    expect(answer.status).toBe(200);
    expect(answer.body.job).toMatchObject({ status: "scheduled", lastError: "boom", runAt: T + 60_000 });
    expect(answer.body.leases.map((lease: { job: { id: string } }) => lease.job.id)).toEqual(["due-1", "due-2"]);
  });

  test.each([
    [{ limit: 0, ttlMs: TTL }, "next.limit must be at least 1"],
    [{ limit: 101, ttlMs: TTL }, "next.limit must be at most 100"],
    [{ limit: 1 }, "next.ttlMs is required"],
    [{ limit: 1, ttlMs: TTL, queue: "q" }, 'next unknown field "queue"'],
  ])("refuses next %j with 400 and completes nothing", async (next, message) => {
    const { call, snapshot, before } = await twoLeasedAndTwoDue();
    const answer = await call("POST", "/v1/jobs/job-1/complete", { owner: "A", fence: 1, result: 1, next });
    expect(answer.status).toBe(400);
    expect(answer.body.error.message).toContain(message);
    expect(await snapshot()).toEqual(before);
  });
});

describe("POST /v1/leases/renew", () => {
  test("renews each current lease and answers each stale or unknown one with the error a single renew would give", async () => {
    const { call, snapshot } = await twoLeasedAndTwoDue();
    await call("POST", "/v1/jobs/job-2/complete", { owner: "A", fence: 1, result: 1 });
    const answer = await call("POST", "/v1/leases/renew", { owner: "A", ttlMs: 9_000, leases: [{ id: "job-1", fence: 1 }, { id: "job-2", fence: 1 }, { id: "nope", fence: 3 }] });
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({
      leases: [
        { id: "job-1", until: T + 9_000 },
        { id: "job-2", error: { code: "stale_lease", message: 'the lease on job "job-2" is no longer yours (done); the current fence is 1', details: { reason: "done", currentFence: 1 } } },
        { id: "nope", error: { code: "not_found", message: 'no job has the id "nope"' } },
      ],
    });
    expect((await snapshot())["job-1"]).toMatchObject({ until: T + 9_000 });
  });

  test("refuses a list over 1,000 leases, a repeated id, and a ttl over the maximum, with 400 and nothing renewed", async () => {
    const { call, snapshot, before } = await twoLeasedAndTwoDue();
    const many = Array.from({ length: 1_001 }, (_, i) => ({ id: `j${i}`, fence: 1 }));
    for (const [body, message] of [
      [{ owner: "A", ttlMs: TTL, leases: many }, "leases must hold at most 1000 leases"],
      [{ owner: "A", ttlMs: TTL, leases: [{ id: "job-1", fence: 1 }, { id: "job-1", fence: 1 }] }, 'leases.1.id repeats the id "job-1"'],
      [{ owner: "A", ttlMs: 3_600_001, leases: [{ id: "job-1", fence: 1 }] }, "ttlMs must be at most 3600000"],
    ] as const) {
      const answer = await call("POST", "/v1/leases/renew", body);
      expect(answer.status).toBe(400);
      expect(answer.body.error.message).toContain(message);
    }
    expect(await snapshot()).toEqual(before);
  });
});

describe("POST /v1/leases/complete", () => {
  test("completes each current lease, refuses each stale one alone, and with next leases the next due jobs of the queue", async () => {
    const { call, snapshot } = await twoLeasedAndTwoDue();
    const answer = await call("POST", "/v1/leases/complete", {
      owner: "A",
      leases: [{ id: "job-1", fence: 1, result: { n: 1 } }, { id: "job-2", fence: 2, result: null }],
      next: { queue: "q", limit: 1, ttlMs: TTL },
    });
    expect(answer.status).toBe(200);
    expect(answer.body.completed).toEqual([
      { id: "job-1", done: true },
      { id: "job-2", error: expect.objectContaining({ code: "stale_lease", details: { reason: "not_owner", currentFence: 1 } }) },
    ]);
    expect(answer.body.leases.map((lease: { job: { id: string }; fence: number }) => [lease.job.id, lease.fence])).toEqual([["due-1", 1]]);
    const rows = await snapshot();
    expect(rows["job-1"]).toMatchObject({ done: 1, result: '{"n":1}' });
    expect(rows["job-2"]).toMatchObject({ done: 0, owner: "A", fence: 1 });
  });

  test("a lease without its result is refused with 400 and nothing is completed", async () => {
    const { call, snapshot, before } = await twoLeasedAndTwoDue();
    const answer = await call("POST", "/v1/leases/complete", { owner: "A", leases: [{ id: "job-1", fence: 1, result: 1 }, { id: "job-2", fence: 1 }] });
    expect(answer.status).toBe(400);
    expect(answer.body.error.message).toBe("leases.1.result is required: any JSON value");
    expect(await snapshot()).toEqual(before);
  });
});
