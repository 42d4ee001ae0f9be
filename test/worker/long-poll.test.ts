import { createExecutionContext, env, SELF } from "cloudflare:test";
import { describe, expect, test } from "vitest";
import worker from "../../src/worker.ts";
import { shardOf } from "../../src/runtime/cloudflare/directory.ts";
import { firstRow, MODE, rows, waitingIn } from "./storage-mode.ts";

// Long polls in the Workers runtime, on the real clock, in either storage mode:
// a waiting claim waits in its queue's Durable Object, rung by the Worker's
// writes after their commit in D1 mode (DOORBELL), or by the writes themselves
// in objects mode (QUEUES: the rows are the object's). Each test uses queues of
// its own, and waits for the object's count of waiters (a condition, not a
// sleep) before the write that should wake them.

const TOKEN = "worker-test-token"; // FENCELEASE_TOKENS in vitest.config.ts
type Lease = { fence: number; until: number; job: { id: string; owner: string; runAt: number } };

function call(method: string, path: string, body?: unknown, signal?: AbortSignal): Promise<Response> {
  return SELF.fetch(`https://fencelease.test${path}`, {
    method,
    headers: { Authorization: `Bearer ${TOKEN}`, "Content-Type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal,
  });
}

async function claim(queue: string, body: Record<string, unknown>, signal?: AbortSignal): Promise<{ leases: Lease[]; ms: number }> {
  const started = performance.now();
  const response = await call("POST", `/v1/queues/${queue}/claim`, { owner: "w", ttlMs: 60_000, ...body }, signal);
  expect(response.status).toBe(200);
  const { leases } = (await response.json()) as { leases: Lease[] };
  return { leases, ms: performance.now() - started };
}

/** `count` ids starting with `prefix` that one directory shard holds (in objects mode an enqueue binds its id there first). */
function oneShard(prefix: string, count: number): string[] {
  const ids: string[] = [];
  for (let i = 0; ids.length < count; i++) if (shardOf(`${prefix}-${i}`) === shardOf(`${prefix}-0`)) ids.push(`${prefix}-${i}`);
  return ids;
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function until(condition: () => Promise<boolean>, what: string): Promise<void> {
  for (const started = Date.now(); !(await condition()); await pause(2)) {
    if (Date.now() - started > 10_000) throw new Error(`timed out waiting for ${what}`);
  }
}

describe("claim-next with waitMs in the Worker, waiting in the queue's Durable Object", () => {
  test("a waiting claim receives a job enqueued by another request within milliseconds", async () => {
    // The first round warms the object, and the local D1 or the directory shard the ids are bound in (both ids in one); the second is measured.
    const ids = oneShard("wq-latency", 2);
    for (const round of [0, 1]) {
      const claimed = claim("wq-latency", { waitMs: 10_000 });
      await until(async () => (await waitingIn("wq-latency")) === 1, "the claim to wait in the object");
      const enqueuedAt = performance.now();
      expect((await call("POST", "/v1/jobs", { id: ids[round], queue: "wq-latency" })).status).toBe(201);
      const { leases } = await claimed;
      const ms = performance.now() - enqueuedAt;
      expect(leases.map((lease) => [lease.job.id, lease.fence])).toEqual([[ids[round], 1]]);
      if (round === 1) expect(ms).toBeLessThan(100); // 8 to 18 ms in the local runtime on D1, three D1 round trips included
      expect(await waitingIn("wq-latency")).toBe(0);
    }
  });

  test("100 waiters and 10 jobs: exactly 10 leases, each job once, and 90 empty answers at waitMs", async () => {
    const claims = Array.from({ length: 100 }, (_, i) => claim("wq-herd", { owner: `w${i}`, waitMs: 4_000 }));
    await until(async () => (await waitingIn("wq-herd")) === 100, "100 claims to wait");
    const jobs = Array.from({ length: 10 }, (_, i) => ({ id: `wq-herd-${i}` }));
    expect((await call("POST", "/v1/queues/wq-herd/jobs", { jobs })).status).toBe(200);
    const answers = await Promise.all(claims);
    const leases = answers.flatMap((answer) => answer.leases);
    expect(leases).toHaveLength(10);
    expect(new Set(leases.map((lease) => lease.job.id)).size).toBe(10);
    const empty = answers.filter((answer) => answer.leases.length === 0);
    expect(empty).toHaveLength(90);
    expect(Math.min(...empty.map((answer) => answer.ms))).toBeGreaterThanOrEqual(3_900);
    const results = await rows("wq-herd", "SELECT fence, attempts FROM jobs WHERE queue = 'wq-herd'");
    expect(results).toHaveLength(10);
    expect(results.every((row) => row.fence === 1 && row.attempts === 1)).toBe(true);
  }, 20_000); // 100 requests set up in one local runtime can take seconds on a loaded machine, so each waits 4 s: all are waiting before the jobs come

  test("a job released by another request, or scheduled for later, wakes a waiting claim", async () => {
    await call("POST", "/v1/jobs", { id: "wq-release-1", queue: "wq-release" });
    const [held] = (await claim("wq-release", { owner: "A" })).leases;
    const first = claim("wq-release", { owner: "B", waitMs: 10_000 });
    await until(async () => (await waitingIn("wq-release")) === 1, "B to wait");
    await call("POST", "/v1/jobs/wq-release-1/release", { owner: "A", fence: held!.fence });
    expect((await first).leases.map((lease) => [lease.job.owner, lease.fence])).toEqual([["B", 2]]);

    await call("POST", "/v1/jobs", { id: "wq-later-1", queue: "wq-later", delayMs: 300 });
    const { leases } = await claim("wq-later", { waitMs: 5_000 });
    expect(leases.map((lease) => lease.job.id)).toEqual(["wq-later-1"]);
    // On the Worker's own clock, so a slow machine cannot make it look early or late.
    const claimedAt = leases[0]!.until - 60_000;
    expect(claimedAt).toBeGreaterThanOrEqual(leases[0]!.job.runAt);
    expect(claimedAt - leases[0]!.job.runAt).toBeLessThan(2_000);
  });

  test("a cancel that ends a lease in a queue at its maxLeased rings the object: a waiting claim takes the next job", async () => {
    await call("POST", "/v1/jobs", { id: "wq-cancel-1", queue: "wq-cancel" });
    await call("POST", "/v1/jobs", { id: "wq-cancel-2", queue: "wq-cancel" });
    expect((await call("PUT", "/v1/queues/wq-cancel", { maxLeased: 1 })).status).toBe(200);
    const [held] = (await claim("wq-cancel", { owner: "A" })).leases;
    const waiting = claim("wq-cancel", { owner: "B", waitMs: 10_000 });
    await until(async () => (await waitingIn("wq-cancel")) === 1, "B to wait in the object");
    const cancelledAt = performance.now();
    expect((await call("POST", `/v1/jobs/${held!.job.id}/cancel`, {})).status).toBe(200);
    const { leases } = await waiting;
    expect(leases.map((lease) => [lease.job.id, lease.job.owner])).toEqual([["wq-cancel-2", "B"]]);
    expect(performance.now() - cancelledAt).toBeLessThan(1_000); // the object has no re-check: only the ring wakes it
  });

  test("a client that disconnects stops waiting in the object, and a job enqueued after is left for others", async () => {
    const gone = new AbortController();
    const abandoned = claim("wq-gone", { waitMs: 10_000 }, gone.signal).catch((error: unknown) => error);
    await until(async () => (await waitingIn("wq-gone")) === 1, "the claim to wait");
    gone.abort();
    await abandoned;
    await until(async () => (await waitingIn("wq-gone")) === 0, "the object to see its caller gone");
    await call("POST", "/v1/jobs", { id: "wq-gone-1", queue: "wq-gone" });
    expect(await firstRow("wq-gone", "SELECT owner, fence FROM jobs WHERE id = 'wq-gone-1'")).toEqual({ owner: null, fence: 0 });
  });
});

describe("claim-next with waitMs in the Worker on a limited queue", () => {
  test("a claim the rate limit holds back waits in the object for the next token; one whose token comes after its waitMs answers at once, saying when", async () => {
    await call("POST", "/v1/queues/wq-rate/jobs", { jobs: [{ id: "wq-rate-1" }, { id: "wq-rate-2" }] });
    await call("PUT", "/v1/queues/wq-rate", { ratePerSecond: 4, burst: 1 }); // a token every 250 ms
    const [first] = (await claim("wq-rate", { owner: "A" })).leases;
    const { leases, ms } = await claim("wq-rate", { owner: "B", waitMs: 5_000 });
    expect(leases.map((lease) => lease.job.id)).toEqual(["wq-rate-2"]);
    expect(leases[0]!.until - first!.until).toBeGreaterThanOrEqual(250); // taken at its token, on the Worker's clock
    expect(ms).toBeLessThan(2_000);

    await call("POST", "/v1/jobs", { id: "wq-slow-1", queue: "wq-slow" });
    await call("PUT", "/v1/queues/wq-slow", { ratePerSecond: 0.001, burst: 1 }); // a token every 1000 s
    await call("POST", "/v1/jobs", { id: "wq-slow-2", queue: "wq-slow" });
    await claim("wq-slow", { owner: "A" });
    const started = performance.now();
    const answer = (await (await call("POST", "/v1/queues/wq-slow/claim", { owner: "B", ttlMs: 60_000, waitMs: 5_000 })).json()) as { leases: Lease[]; retryAfterMs?: number };
    expect(answer.leases).toEqual([]);
    expect(answer.retryAfterMs).toBeGreaterThan(990_000);
    expect(performance.now() - started).toBeLessThan(1_000);
  });

  test("a claim held back by maxLeased takes the slot a completion freed by the end of its waitMs, never later", async () => {
    await call("POST", "/v1/queues/wq-full/jobs", { jobs: [{ id: "wq-full-1" }, { id: "wq-full-2" }] });
    await call("PUT", "/v1/queues/wq-full", { maxLeased: 1 });
    const [held] = (await claim("wq-full", { owner: "A" })).leases;
    const waiting = claim("wq-full", { owner: "B", waitMs: 1_000 });
    await until(async () => (await waitingIn("wq-full")) === 1, "B to wait");
    await call("POST", `/v1/jobs/${held!.job.id}/complete`, { owner: "A", fence: held!.fence, result: 1 });
    const { leases, ms } = await waiting;
    expect(leases.map((lease) => lease.job.id)).toEqual(["wq-full-2"]);
    expect(ms).toBeLessThan(1_000 + 500); // in D1 mode a completion rings no object: at the latest its last claim at waitMs takes the slot
  });
});

describe.skipIf(MODE === "objects")("the Worker in D1 mode without the DOORBELL binding", () => {
  test("a waiting claim re-checks inside the request: a job its isolate did not write is seen within a second", async () => {
    const bare = { ...env, DOORBELL: undefined };
    const ask = (path: string, body: unknown) =>
      worker.fetch(new Request(`https://fencelease.test${path}`, { method: "POST", headers: { Authorization: `Bearer ${TOKEN}`, "Content-Type": "application/json" }, body: JSON.stringify(body) }) as never, bare, createExecutionContext());
    const started = performance.now();
    const claimed = ask("/v1/queues/wq-bare/claim", { owner: "w", ttlMs: 60_000, waitMs: 5_000 });
    await pause(50); // the job arrives while the claim waits: written straight to D1, so no ring reaches the isolate
    await env.DB.prepare("INSERT INTO jobs (id, queue, run_at, fence, created_at, updated_at) VALUES ('wq-bare-1', 'wq-bare', 0, 0, 0, 0)").run();
    const { leases, waitedMs } = (await (await claimed).json()) as { leases: Lease[]; waitedMs: number };
    expect(leases.map((lease) => lease.job.id)).toEqual(["wq-bare-1"]);
    expect(waitedMs).toBeGreaterThanOrEqual(900); // found by the re-check a second in, not by its first claim
    expect(performance.now() - started).toBeLessThan(1_000 + 500);
  });
});

describe("GET /v1/jobs/:id with waitMs in the Worker", () => {
  test("answers within its re-check (a second) once another request completes the job", async () => {
    await call("POST", "/v1/jobs", { id: "wr-1", queue: "wr" });
    const [lease] = (await claim("wr", {})).leases;
    const read = call("GET", "/v1/jobs/wr-1?waitMs=10000");
    await pause(50);
    const completedAt = performance.now();
    await call("POST", "/v1/jobs/wr-1/complete", { owner: "w", fence: lease!.fence, result: "paid" });
    expect(await (await read).json()).toMatchObject({ id: "wr-1", status: "done", result: "paid" });
    expect(performance.now() - completedAt).toBeLessThan(1_000 + 300);
  });

  test("answers within its re-check once another request cancels the job: cancelled is final", async () => {
    await call("POST", "/v1/jobs", { id: "wr-cancel", queue: "wr", delayMs: 60_000 });
    const started = performance.now();
    const read = call("GET", "/v1/jobs/wr-cancel?waitMs=10000");
    await pause(50);
    await call("POST", "/v1/jobs/wr-cancel/cancel", { by: "ops" });
    expect(await (await read).json()).toMatchObject({ id: "wr-cancel", status: "cancelled" });
    expect(performance.now() - started).toBeLessThan(1_000 + 500);
  });
});
