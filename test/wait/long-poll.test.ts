import { describe, expect, onTestFinished, test } from "vitest";
import { type RunningServer, type ServerConfig, startServer } from "../../src/node.ts";
import { freshStore } from "../fresh-db.ts";

// Long polls against the real Node server on a fresh database file, on the
// real clock. A test waits for `server.waiting` to reach a count (a condition,
// not a sleep) before it writes, so the write is known to wake a waiter.

const TOKEN = "long-poll-token";
const TTL = 60_000;
type Lease = { fence: number; until: number; job: { id: string; queue: string; owner: string; runAt: number } };
type Job = { id: string; status: string; result: unknown; owner: string | null };

async function serving(config: Partial<ServerConfig> = {}) {
  const fresh = await freshStore();
  const server = await startServer({ host: "127.0.0.1", port: 0, databaseUrl: fresh.url, auth: { tokens: [TOKEN] }, ...config });
  let stopped = false;
  onTestFinished(async () => {
    if (!stopped) await server.stop();
  });
  return {
    ...fresh,
    server,
    stop: async () => {
      stopped = true;
      await server.stop();
    },
    post: (path: string, body: unknown, signal?: AbortSignal) => call(server, "POST", path, body, signal),
    get: (path: string, signal?: AbortSignal) => call(server, "GET", path, undefined, signal),
    /** A claim-next of queue q that may wait; answers its leases and how long it took. */
    async claim(body: Record<string, unknown>, signal?: AbortSignal): Promise<{ status: number; leases: Lease[]; waitedMs?: number; ms: number }> {
      const started = performance.now();
      const response = await call(server, "POST", "/v1/queues/q/claim", { owner: "w", ttlMs: TTL, ...body }, signal);
      const answer = (await response.json()) as { leases: Lease[]; waitedMs?: number };
      return { status: response.status, leases: answer.leases, waitedMs: answer.waitedMs, ms: performance.now() - started };
    },
  };
}

function call(server: RunningServer, method: string, path: string, body?: unknown, signal?: AbortSignal): Promise<Response> {
  return fetch(`${server.url}${path}`, {
    method,
    headers: { Authorization: `Bearer ${TOKEN}`, "Content-Type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal,
  });
}

const wait = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Waits until `condition` holds, checking every 2 ms; fails after 10 s. */
async function until(condition: () => boolean | Promise<boolean>, what: string): Promise<void> {
  for (const started = Date.now(); !(await condition()); await wait(2)) {
    if (Date.now() - started > 10_000) throw new Error(`timed out waiting for ${what}`);
  }
}

describe("claim-next with waitMs on the Node server", () => {
  test("a waiting claim receives a job enqueued by another client within milliseconds", async () => {
    const s = await serving();
    const claimed = s.claim({ waitMs: 10_000 });
    await until(() => s.server.waiting === 1, "the claim to wait");
    const enqueuedAt = performance.now();
    expect((await s.post("/v1/jobs", { id: "job-1", queue: "q" })).status).toBe(201);
    const { leases, waitedMs, ms: total } = await claimed;
    const ms = performance.now() - enqueuedAt;
    expect(leases.map((lease) => [lease.job.id, lease.fence])).toEqual([["job-1", 1]]);
    // How long it waited before the claim that took the job: what a client adds to its send time for the lease's start.
    expect(waitedMs).toBeGreaterThan(0);
    expect(waitedMs).toBeLessThanOrEqual(total);
    expect(ms).toBeLessThan(100); // a few ms on a quiet machine: no poll interval in between
    expect(s.server.waiting).toBe(0);
  });

  test("100 waiters and 10 jobs: exactly 10 leases, each job once, and 90 empty answers at waitMs", async () => {
    const s = await serving();
    const claims = Array.from({ length: 100 }, (_, i) => s.claim({ owner: `w${i}`, waitMs: 4_000 }));
    await until(() => s.server.waiting === 100, "100 waiting claims");
    const jobs = Array.from({ length: 10 }, (_, i) => ({ id: `job-${i}` }));
    expect((await s.post("/v1/queues/q/jobs", { jobs })).status).toBe(200);
    const answers = await Promise.all(claims);
    const leases = answers.flatMap((answer) => answer.leases);
    expect(leases).toHaveLength(10);
    expect(new Set(leases.map((lease) => lease.job.id)).size).toBe(10);
    expect(leases.every((lease) => lease.fence === 1)).toBe(true);
    const empty = answers.filter((answer) => answer.leases.length === 0);
    expect(empty).toHaveLength(90);
    expect(Math.min(...empty.map((answer) => answer.ms))).toBeGreaterThanOrEqual(3_950); // they waited their waitMs out
    const rows = Object.values(await s.snapshot());
    expect(rows.every((row) => row.fence === 1 && row.attempts === 1)).toBe(true); // nothing taken twice, nothing released
  }, 20_000); // setting up 100 requests can take seconds on a loaded machine, so each waits 4 s: all are waiting before the jobs come

  test("waitMs absent or 0 answers at once, as before, when nothing is due", async () => {
    const s = await serving();
    for (const body of [{}, { waitMs: 0 }]) {
      const { status, leases, ms } = await s.claim(body);
      expect(status).toBe(200);
      expect(leases).toEqual([]);
      expect(ms).toBeLessThan(500);
      expect(await (await s.post("/v1/queues/q/claim", { owner: "w", ttlMs: TTL, ...body })).json()).toEqual({ leases: [] }); // the answer as before: no waitedMs
    }
    expect((await s.claim({ waitMs: 30_001 })).status).toBe(400);
    expect((await s.claim({ waitMs: -1 })).status).toBe(400);
  });

  test("a job scheduled for later wakes a waiting claim when it falls due, by timer, not by the re-check", async () => {
    const s = await serving({ recheckMs: 60_000 });
    expect((await s.post("/v1/jobs", { id: "later", queue: "q", delayMs: 300 })).status).toBe(201);
    const { leases } = await s.claim({ waitMs: 5_000 });
    expect(leases.map((lease) => lease.job.id)).toEqual(["later"]);
    // On the server's own clock, so a slow machine cannot make it look early or late.
    const claimedAt = leases[0]!.until - TTL;
    expect(claimedAt).toBeGreaterThanOrEqual(leases[0]!.job.runAt);
    expect(claimedAt - leases[0]!.job.runAt).toBeLessThan(2_000); // the re-check is 60 s away: only the timer can have woken it
  });

  test("a cancel that ends a lease in a queue at its maxLeased wakes a waiting claim, by the ring, not by the re-check", async () => {
    const s = await serving({ recheckMs: 60_000 });
    await s.post("/v1/jobs", { id: "cancelled", queue: "q" });
    await s.post("/v1/jobs", { id: "next", queue: "q" });
    expect((await call(s.server, "PUT", "/v1/queues/q", { maxLeased: 1 })).status).toBe(200);
    const [held] = (await s.claim({ owner: "A" })).leases;
    const claimed = s.claim({ owner: "B", waitMs: 10_000 });
    await until(() => s.server.waiting === 1, "B to wait");
    const cancelledAt = performance.now();
    expect((await s.post(`/v1/jobs/${held!.job.id}/cancel`, {})).status).toBe(200);
    const { leases } = await claimed;
    expect(leases.map((lease) => [lease.job.id, lease.job.owner])).toEqual([["next", "B"]]);
    expect(performance.now() - cancelledAt).toBeLessThan(500);
  });

  test("an expired lease is taken over by a waiting claim as soon as it runs out", async () => {
    const s = await serving({ recheckMs: 60_000 });
    await s.post("/v1/jobs", { id: "stalls", queue: "q" });
    const [held] = (await s.claim({ owner: "A", ttlMs: 300 })).leases;
    const { leases } = await s.claim({ owner: "B", waitMs: 5_000 });
    expect(leases.map((lease) => [lease.job.id, lease.job.owner, lease.fence])).toEqual([["stalls", "B", 2]]);
    expect(Date.now()).toBeGreaterThanOrEqual(held!.until);
    expect(Date.now() - held!.until).toBeLessThan(500);
  });

  test("a job released or failed for a retry now wakes the next waiting claim", async () => {
    const s = await serving({ recheckMs: 60_000 });
    await s.post("/v1/queues/q/jobs", { jobs: [{ id: "a" }, { id: "b" }] });
    const [a, b] = (await s.claim({ owner: "A", limit: 2 })).leases;
    const first = s.claim({ owner: "B", waitMs: 5_000 });
    await until(() => s.server.waiting === 1, "B to wait");
    await s.post("/v1/jobs/a/release", { owner: "A", fence: a!.fence });
    expect((await first).leases.map((lease) => [lease.job.id, lease.fence])).toEqual([["a", 2]]);
    const second = s.claim({ owner: "C", waitMs: 5_000 });
    await until(() => s.server.waiting === 1, "C to wait");
    await s.post("/v1/jobs/b/fail", { owner: "A", fence: b!.fence, error: "try again", retryInMs: 0 });
    expect((await second).leases.map((lease) => [lease.job.id, lease.fence])).toEqual([["b", 2]]);
  });

  test("a client that disconnects stops waiting, and a job enqueued after is left for others", async () => {
    const s = await serving();
    const gone = new AbortController();
    const abandoned = s.claim({ waitMs: 10_000 }, gone.signal).catch((error: unknown) => error);
    await until(() => s.server.waiting === 1, "the claim to wait");
    gone.abort();
    expect(await abandoned).toMatchObject({ name: "AbortError" });
    await until(() => s.server.waiting === 0, "the server to notice");
    await s.post("/v1/jobs", { id: "job-1", queue: "q" });
    expect((await s.snapshot())["job-1"]).toMatchObject({ owner: null, fence: 0, attempts: 0 });
    expect((await s.claim({ owner: "other" })).leases.map((lease) => lease.fence)).toEqual([1]);
  });

  test("at most maxWaiting requests wait; the next one answers at once", async () => {
    const s = await serving({ maxWaiting: 2 });
    const waiting = [s.claim({ waitMs: 10_000 }), s.claim({ waitMs: 10_000 })];
    await until(() => s.server.waiting === 2, "two waiting claims");
    const third = await s.claim({ waitMs: 10_000 });
    expect(third).toMatchObject({ status: 200, leases: [] });
    expect(third.ms).toBeLessThan(500);
    await s.post("/v1/queues/q/jobs", { jobs: [{ id: "a" }, { id: "b" }] });
    expect((await Promise.all(waiting)).map((answer) => answer.leases.length)).toEqual([1, 1]);
  });

  test("a stop answers every waiting request at once: claims with no lease, reads with the job as it is", async () => {
    const s = await serving();
    await s.post("/v1/jobs", { id: "pending", queue: "other" });
    const claims = [s.claim({ waitMs: 30_000 }), s.claim({ waitMs: 30_000 })];
    const read = s.get("/v1/jobs/pending?waitMs=30000");
    await until(() => s.server.waiting === 3, "three waiting requests");
    const stoppedAt = performance.now();
    await s.stop();
    expect(performance.now() - stoppedAt).toBeLessThan(1_000);
    expect((await Promise.all(claims)).map((answer) => [answer.status, answer.leases])).toEqual([[200, []], [200, []]]);
    const job = await read;
    expect(job.status).toBe(200);
    expect(job.headers.get("connection")).toBe("close");
    expect(await job.json()).toMatchObject({ id: "pending", status: "queued" });
  });

  test("two servers on one file see each other's jobs within the re-check", async () => {
    const s = await serving({ recheckMs: 200 });
    const other = await startServer({ host: "127.0.0.1", port: 0, databaseUrl: s.url, auth: { tokens: [TOKEN] } });
    onTestFinished(() => other.stop());
    const claimed = s.claim({ waitMs: 10_000 });
    await until(() => s.server.waiting === 1, "the claim to wait");
    const enqueuedAt = performance.now();
    await call(other, "POST", "/v1/jobs", { id: "elsewhere", queue: "q" });
    const { leases } = await claimed;
    expect(leases.map((lease) => lease.job.id)).toEqual(["elsewhere"]);
    expect(performance.now() - enqueuedAt).toBeLessThan(200 + 300);
  });
});

describe("claim-next with waitMs on a limited queue", () => {
  /** When the server took a lease: its until less its ttl, on the server's clock. */
  const takenAt = (lease: Lease) => lease.until - TTL;

  test("a waiting claim on a rate-limited queue takes its lease when the next token is due, not before", async () => {
    const s = await serving({ recheckMs: 60_000 });
    await s.post("/v1/queues/q/jobs", { jobs: [{ id: "a" }, { id: "b" }, { id: "c" }] });
    await call(s.server, "PUT", "/v1/queues/q", { ratePerSecond: 5, burst: 1 }); // a token every 200 ms
    const [first] = (await s.claim({})).leases;
    const [second, third] = await Promise.all([s.claim({ owner: "B", waitMs: 5_000 }), s.claim({ owner: "C", waitMs: 5_000 })]);
    const taken = [first!, second.leases[0]!, third.leases[0]!].map(takenAt).sort((x, y) => x - y);
    expect(taken[1]! - taken[0]!).toBeGreaterThanOrEqual(200); // each token at its time, on the server's clock
    expect(taken[2]! - taken[1]!).toBeGreaterThanOrEqual(200);
    expect(Math.max(second.ms, third.ms)).toBeLessThan(2_000); // woken by the token's timer, long before waitMs
  });

  test("a waiting claim on a full queue wakes when a lease of that queue is completed, failed for later, or completed in a batch", async () => {
    const s = await serving({ recheckMs: 60_000 });
    await s.post("/v1/queues/q/jobs", { jobs: [{ id: "a" }, { id: "b" }, { id: "c" }, { id: "d" }] });
    await call(s.server, "PUT", "/v1/queues/q", { maxLeased: 1 });
    let [held] = (await s.claim({ owner: "A" })).leases;
    const ends = [
      (lease: Lease) => s.post(`/v1/jobs/${lease.job.id}/complete`, { owner: lease.job.owner, fence: lease.fence, result: 1 }),
      (lease: Lease) => s.post(`/v1/jobs/${lease.job.id}/fail`, { owner: lease.job.owner, fence: lease.fence, error: "later", retryInMs: 60_000 }),
      (lease: Lease) => s.post("/v1/leases/complete", { owner: lease.job.owner, leases: [{ id: lease.job.id, fence: lease.fence, result: 1 }] }),
    ];
    for (const [i, end] of ends.entries()) {
      const waiting = s.claim({ owner: `W${i}`, waitMs: 5_000 });
      await until(() => s.server.waiting === 1, "a claim to wait for the slot");
      const endedAt = performance.now();
      expect((await end(held!)).status).toBe(200);
      const { leases } = await waiting;
      expect(leases).toHaveLength(1);
      expect(performance.now() - endedAt).toBeLessThan(2_000); // at the lease's end, not at waitMs (5 s) nor its ttl (60 s)
      held = leases[0];
    }
  });
});

describe("GET /v1/jobs/:id with waitMs on the Node server", () => {
  test("answers as soon as the job is completed by another client", async () => {
    const s = await serving();
    await s.post("/v1/jobs", { id: "job-1", queue: "q" });
    const [lease] = (await s.claim({})).leases;
    const read = s.get("/v1/jobs/job-1?waitMs=10000");
    await until(() => s.server.waiting === 1, "the read to wait");
    const completedAt = performance.now();
    await s.post("/v1/jobs/job-1/complete", { owner: "w", fence: lease!.fence, result: { ok: true } });
    const job = (await (await read).json()) as Job;
    expect(performance.now() - completedAt).toBeLessThan(100);
    expect(job).toMatchObject({ status: "done", result: { ok: true } });
  });

  test("answers as soon as the job is cancelled, by the ring, not by the re-check", async () => {
    const s = await serving({ recheckMs: 60_000 });
    await s.post("/v1/jobs", { id: "job-1", queue: "q", delayMs: 60_000 });
    const read = s.get("/v1/jobs/job-1?waitMs=10000");
    await until(() => s.server.waiting === 1, "the read to wait");
    const cancelledAt = performance.now();
    await s.post("/v1/jobs/job-1/cancel", { by: "ops" });
    expect(await (await read).json()).toMatchObject({ id: "job-1", status: "cancelled" });
    expect(performance.now() - cancelledAt).toBeLessThan(100);
    const started = performance.now();
    expect(await (await s.get("/v1/jobs/job-1?waitMs=10000")).json()).toMatchObject({ status: "cancelled" }); // already final: at once
    expect(performance.now() - started).toBeLessThan(500);
  });

  test("answers a job that dies, and one already finished at once", async () => {
    const s = await serving();
    await s.post("/v1/jobs", { id: "doomed", queue: "q", maxAttempts: 1 });
    const [lease] = (await s.claim({})).leases;
    const read = s.get("/v1/jobs/doomed?waitMs=10000");
    await until(() => s.server.waiting === 1, "the read to wait");
    await s.post("/v1/jobs/doomed/fail", { owner: "w", fence: lease!.fence, error: "no" });
    expect(await (await read).json()).toMatchObject({ status: "dead", lastError: "no" });
    const started = performance.now();
    expect(await (await s.get("/v1/jobs/doomed?waitMs=10000")).json()).toMatchObject({ status: "dead" });
    expect(performance.now() - started).toBeLessThan(500);
  });

  test("answers the job as it is when waitMs passes, 404 for an unknown id, 400 past 30,000 ms", async () => {
    const s = await serving();
    await s.post("/v1/jobs", { id: "slow", queue: "q" });
    const started = performance.now();
    expect(await (await s.get("/v1/jobs/slow?waitMs=300")).json()).toMatchObject({ id: "slow", status: "queued" });
    expect(performance.now() - started).toBeGreaterThanOrEqual(290);
    expect((await s.get("/v1/jobs/nobody?waitMs=300")).status).toBe(404);
    expect((await s.get("/v1/jobs/slow?waitMs=30001")).status).toBe(400);
    expect((await s.get("/v1/jobs/slow?waitMs=soon")).status).toBe(400);
  });
});
