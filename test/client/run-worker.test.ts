import { createClient } from "@libsql/client";
import { createServer } from "node:net";
import { describe, expect, onTestFinished, test, vi } from "vitest";
import { type JobHandler, LeaseClient, LeaseLostError, runWorker, UnauthorizedError, UnavailableError, type WorkerHandle, type WorkerOptions } from "../../src/client/index.ts";
import { InProcessApi } from "../../src/client/in-process/api.ts";
import { openStore, startServer } from "../../src/node.ts";
import { StorageUnavailable } from "../../src/store/errors.ts";
import { freshStore } from "../fresh-db.ts";
import { TRANSPORTS, type TransportName } from "./transports.ts";

const TOKEN = "run-worker-token";
const W = "worker-w";

// Against the real Node server on a fresh database, or in-process on a store of
// this process, on the real clock: leases are a few hundred ms where expiry is
// the point, 60 s where it is not. The tests that divert the runner's requests
// (a lost answer, a late one) run over HTTP, where that happens.

/** What a request of the runner is, by its route. */
type Kind = "claimNext" | "completeMany" | "renewMany" | "fail" | "release" | "renew" | "complete" | "other";

function kindOf(input: Parameters<typeof fetch>[0]): Kind {
  const path = new URL(String(input)).pathname;
  if (/^\/v1\/queues\/[^/]+\/claim$/.test(path)) return "claimNext";
  if (path === "/v1/leases/complete") return "completeMany";
  if (path === "/v1/leases/renew") return "renewMany";
  const verb = /^\/v1\/jobs\/[^/]+\/(fail|release|renew|complete)$/.exec(path)?.[1];
  return (verb as Kind | undefined) ?? "other";
}

/** One request the runner sent: its kind, its body, when. */
type Sent = { kind: Kind; body: any; at: number };

/** What the runner calls, by kind: over HTTP its route, in-process the same method of the in-process api. */
const RUNNER_KINDS = ["claimNext", "completeMany", "renewMany", "fail", "release", "renew", "complete"] as const;

/**
 * A fresh database, and on it the Node server (over HTTP) or a store of this
 * process (in-process); a client for the runner whose calls the test sees
 * (`sent`: over HTTP its fetch, in-process its calls of the in-process api,
 * with the same kinds and bodies) and, over HTTP, may divert (`through`); a
 * plain client for everything else (and, over HTTP, the server's `baseUrl`,
 * for a client of another token); and the events as stored. Runners started
 * with `run` are stopped before the server (or the store).
 */
async function serving(transport: TransportName = "http") {
  const fresh = await freshStore();
  const sent: Sent[] = [];
  const traffic: {
    /** Over HTTP: each request of the runner goes through it. */
    through?: (kind: Kind, send: () => Promise<Response>, body: any) => Promise<Response>;
    /** In-process: each call of the runner goes through it. */
    local?: (kind: Kind, call: () => Promise<unknown>, body: any) => Promise<unknown>;
  } = {};
  const retry = { retries: 2, baseDelayMs: 1, maxDelayMs: 5 };
  let client: LeaseClient;
  let other: LeaseClient;
  let baseUrl: string | undefined;
  let waiting: () => number;
  let stop: () => Promise<void>;
  if (transport === "http") {
    const server = await startServer({ host: "127.0.0.1", port: 0, databaseUrl: fresh.url, auth: { tokens: [TOKEN] } });
    const fetchThrough: typeof fetch = async (input, init) => {
      const kind = kindOf(input);
      const body = typeof init?.body === "string" ? JSON.parse(init.body) : undefined;
      sent.push({ kind, body, at: Date.now() });
      const send = () => fetch(input, init);
      return traffic.through ? traffic.through(kind, send, body) : send();
    };
    client = new LeaseClient({ baseUrl: server.url, token: TOKEN, fetch: fetchThrough, retry });
    other = new LeaseClient({ baseUrl: server.url, token: TOKEN });
    baseUrl = server.url;
    waiting = () => server.waiting;
    stop = () => server.stop();
  } else {
    const store = await openStore({ url: fresh.url, migrations: false });
    const api = InProcessApi.of(store);
    // The runner's calls, as they reach the in-process twins of the routes: the bodies are the routes' bodies.
    const watched = api as unknown as Record<(typeof RUNNER_KINDS)[number], (...args: unknown[]) => unknown>;
    for (const kind of RUNNER_KINDS) {
      const method = watched[kind].bind(api);
      watched[kind] = (...args) => {
        const body = structuredClone(kind === "renewMany" || kind === "completeMany" ? args[0] : args[1]);
        sent.push({ kind, body, at: Date.now() });
        const call = () => method(...args) as Promise<unknown>;
        return traffic.local ? traffic.local(kind, call, body) : call();
      };
    }
    client = new LeaseClient({ store, retry });
    other = new LeaseClient({ store }); // the same api: its calls of these kinds would be seen too, and the tests make none
    waiting = () => api.waiting;
    stop = async () => store.close();
  }
  const reader = createClient({ url: fresh.url });
  onTestFinished(() => reader.close());
  const workers: WorkerHandle[] = [];
  const errors: unknown[] = [];
  return {
    ...fresh,
    transport,
    client,
    other,
    baseUrl,
    sent,
    traffic,
    errors,
    waiting,
    count: (kind: Kind) => sent.filter((request) => request.kind === kind).length,
    /** The claimNext calls that asked for jobs due now, and those that waited on the server for one (once the queue was empty). */
    claims: () => ({
      now: sent.filter((request) => request.kind === "claimNext" && request.body.waitMs === undefined),
      waiting: sent.filter((request) => request.kind === "claimNext" && request.body.waitMs !== undefined),
    }),
    /** Starts a runner of owner W on queue "q"; its errors are kept in `errors`. */
    run(options: Partial<WorkerOptions>, handler: JobHandler): WorkerHandle {
      const worker = runWorker(client, { queue: "q", owner: W, concurrency: 4, ttlMs: 60_000, onError: (error) => errors.push(error), ...options }, handler);
      workers.push(worker);
      return worker;
    },
    async enqueue(count: number, job: (i: number) => { id?: string; payload?: unknown; maxAttempts?: number } = () => ({})) {
      for (let start = 0; start < count; start += 1_000) {
        const jobs = Array.from({ length: Math.min(1_000, count - start) }, (_, k) => ({ id: `job-${String(start + k).padStart(4, "0")}`, payload: { n: start + k }, ...job(start + k) }));
        await other.enqueueMany("q", jobs);
      }
    },
    async events(): Promise<Record<string, string[]>> {
      const rows = (await reader.execute("SELECT job_id, kind, action, owner FROM events ORDER BY seq")).rows;
      const byJob: Record<string, string[]> = {};
      for (const row of rows) (byJob[row.job_id as string] ??= []).push(row.kind === "refused" ? `refused ${row.action} by ${row.owner}` : (row.kind as string));
      return byJob;
    },
    async [Symbol.asyncDispose]() {
      await Promise.all(workers.map((worker) => worker.stop()));
      await stop();
    },
  };
}

/**
 * Runs 4 jobs at concurrency 2 through a first completeMany whose outcome the
 * runner cannot know (the test made it so), and checks that its results were
 * sent again without next and stored once, and that the jobs its lost next
 * took were claimed again once their leases ran out.
 */
async function expectRepeatedWithoutNext(s: Awaited<ReturnType<typeof serving>>): Promise<void> {
  const worker = s.run({ concurrency: 2, ttlMs: 300, idleMs: 20 }, async ({ job, fence }) => `${job.id}@${fence}`);
  await until(async () => Object.values(await s.snapshot()).every((row) => row.done === 1), "every job done");
  await worker.stop();

  const completions = s.sent.filter((request) => request.kind === "completeMany").map((request) => request.body);
  expect(completions[0]).toEqual({ owner: W, leases: [{ id: "job-0000", fence: 1, result: "job-0000@1" }, { id: "job-0001", fence: 1, result: "job-0001@1" }], next: { queue: "q", limit: 2, ttlMs: 300 } });
  expect(completions[1]).toEqual({ owner: W, leases: completions[0].leases }); // the same results, without next
  expect(s.errors[0]).toBeInstanceOf(UnavailableError);
  const rows = await s.snapshot();
  expect(rows["job-0000"]).toMatchObject({ done: 1, fence: 1, result: '"job-0000@1"' });
  expect(rows["job-0001"]).toMatchObject({ done: 1, fence: 1, result: '"job-0001@1"' });
  // The jobs the lost next took ran out their leases unseen, then were claimed again.
  expect(rows["job-0002"]).toMatchObject({ done: 1, fence: 2, attempts: 2, result: '"job-0002@2"' });
  expect(rows["job-0003"]).toMatchObject({ done: 1, fence: 2, attempts: 2, result: '"job-0003@2"' });
  expect((await s.events())["job-0000"]).toEqual(["enqueued", "claimed", "completed"]); // the repeat was answered as done, not refused
}

const wait = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Waits until `condition` holds, checking every 10 ms; fails after 15 s. */
async function until(condition: () => boolean | Promise<boolean>, what = "the condition"): Promise<void> {
  for (const started = Date.now(); !(await condition()); await wait(10)) {
    if (Date.now() - started > 15_000) throw new Error(`timed out waiting for ${what}`);
  }
}

/** A promise and the function that resolves it. */
function gate() {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { opened, open };
}

describe.each(TRANSPORTS)("runWorker, %s", (transport) => {
  test("drains a queue of 300 jobs with concurrency 8, each completed exactly once with the handler's result", async () => {
    await using s = await serving(transport);
    await s.enqueue(300);
    const calls = new Map<string, number>();
    const worker = s.run({ concurrency: 8, idleMs: 20 }, async ({ job, fence }) => {
      calls.set(job.id, (calls.get(job.id) ?? 0) + 1);
      await wait(Math.random() * 3);
      return { doubled: (job.payload as { n: number }).n * 2, fence };
    });
    await until(async () => Object.values(await s.snapshot()).every((row) => row.done === 1), "every job done");
    await worker.stop();

    const rows = await s.snapshot();
    expect(Object.keys(rows)).toHaveLength(300);
    for (const [id, row] of Object.entries(rows)) {
      const n = Number(id.slice(4));
      expect(row).toMatchObject({ owner: W, fence: 1, attempts: 1, done: 1, dead: 0, result: JSON.stringify({ doubled: 2 * n, fence: 1 }) });
      expect(calls.get(id)).toBe(1);
    }
    const events = await s.events();
    for (const id of Object.keys(rows)) expect(events[id]).toEqual(["enqueued", "claimed", "completed"]);
    expect(s.errors).toEqual([]);
  });

  test("never runs more than `concurrency` handlers at once, and keeps that many busy while there is work", async () => {
    await using s = await serving(transport);
    await s.enqueue(60);
    let running = 0;
    let most = 0;
    let finished = 0;
    const worker = s.run({ concurrency: 5 }, async () => {
      most = Math.max(most, ++running);
      await wait(5 + Math.random() * 10);
      running--;
      finished++;
    });
    await until(() => finished === 60, "60 handlers");
    await worker.stop();
    expect(most).toBe(5);
    expect(Object.values(await s.snapshot()).every((row) => row.done === 1 && row.result === "null")).toBe(true);
  });

  test("under load it sends far fewer requests than jobs: completions that finish together go in one completeMany, which takes the next jobs", async () => {
    await using s = await serving(transport);
    await s.enqueue(2_000);
    let finished = 0;
    const worker = s.run({ concurrency: 32, idleMs: 20 }, async () => ({ charged: true, n: ++finished }));
    await until(async () => (await s.other.queues.stats())[0]!.jobs.done === 2_000, "2,000 jobs done");
    await worker.stop();

    expect(finished).toBe(2_000);
    const completions = s.sent.filter((request) => request.kind === "completeMany");
    const requests = s.count("completeMany") + s.count("claimNext") + s.count("complete");
    expect(requests).toBeLessThan(2_000 / 8); // on a quiet machine about 2,000 / 32
    expect(s.count("complete")).toBe(0);
    expect(completions.reduce((sum, request) => sum + request.body.leases.length, 0)).toBe(2_000);
    expect(Math.max(...completions.map((request) => request.body.leases.length))).toBeGreaterThan(1);
    // Each asks for the slots free once it is stored: at least those it frees, so the slots stay full from one call to the next.
    for (const { body } of completions) {
      if (body.next === undefined) continue;
      expect(body.next).toMatchObject({ queue: "q", ttlMs: 60_000 });
      expect(body.next.limit).toBeGreaterThanOrEqual(body.leases.length);
      expect(body.next.limit).toBeLessThanOrEqual(32);
    }
    const rows = Object.values(await s.snapshot());
    expect(rows.every((row) => row.done === 1 && row.fence === 1 && row.owner === W)).toBe(true);
    expect(new Set(rows.map((row) => row.result)).size).toBe(2_000);
  });

  test("renews all the leases in hand with one renewMany per tick, never one renew per job", async () => {
    await using s = await serving(transport);
    await s.enqueue(10);
    const worker = s.run({ concurrency: 10, ttlMs: 600, idleMs: 60_000 }, async () => {
      await wait(900); // a ttl and a half
      return "ok";
    });
    await until(async () => Object.values(await s.snapshot()).every((row) => row.done === 1), "every job done");
    await worker.stop();
    const renews = s.sent.filter((request) => request.kind === "renewMany");
    expect(renews.length).toBeGreaterThanOrEqual(2); // every 200 ms: 4 on a quiet machine
    expect(renews.length).toBeLessThanOrEqual(5);
    for (const { body } of renews) expect(body).toMatchObject({ owner: W, ttlMs: 600 });
    expect(Math.max(...renews.map(({ body }) => body.leases.length))).toBe(10); // all the leases in hand, in one call
    expect(s.count("renew")).toBe(0);
    expect(Object.values(await s.snapshot()).every((row) => row.done === 1 && row.fence === 1 && row.result === '"ok"')).toBe(true);
    // A completion waits for the renew in flight that carries its lease: no renew reaches the server after it.
    for (const kinds of Object.values(await s.events())) expect(kinds.filter((kind) => kind !== "renewed")).toEqual(["enqueued", "claimed", "completed"]);
    expect(s.errors).toEqual([]);
  });

  test("a renew refused aborts that handler's signal at once, and the job is never completed by this worker", async () => {
    await using s = await serving(transport);
    await s.enqueue(2);
    const aborted: unknown[] = [];
    const worker = s.run({ concurrency: 2, renewEveryMs: 20, idleMs: 60_000 }, async ({ job, signal }) => {
      if (job.id === "job-0000") {
        const sql = createClient({ url: s.url });
        await sql.execute("UPDATE jobs SET owner = 'intruder', fence = fence + 1 WHERE id = 'job-0000'"); // someone else's lease now
        sql.close();
        await new Promise((resolve) => signal.addEventListener("abort", resolve, { once: true }));
        aborted.push(signal.reason);
        throw signal.reason; // as a handler that honours its signal does: not failed either
      }
      await wait(100); // renewed a few times meanwhile
      return "stored";
    });
    await until(() => aborted.length === 1, "the abort");
    await until(async () => (await s.snapshot())["job-0001"]!.done === 1, "job-0001 done");
    await worker.stop();
    expect(aborted[0]).toBeInstanceOf(LeaseLostError);
    expect(aborted[0]).toMatchObject({ reason: "superseded", currentFence: 2 });
    expect(s.errors).toEqual([aborted[0]]);
    const rows = await s.snapshot();
    expect(rows["job-0000"]).toMatchObject({ owner: "intruder", fence: 2, done: 0, result: null });
    expect(rows["job-0001"]).toMatchObject({ owner: W, fence: 1, done: 1, result: '"stored"' });
    const completed = s.sent.filter((request) => request.kind === "completeMany").flatMap((request) => request.body.leases.map((lease: { id: string }) => lease.id));
    expect(completed).toEqual(["job-0001"]);
    expect(s.count("fail")).toBe(0);
    expect((await s.events())["job-0000"]).not.toContain(`refused complete by ${W}`);
  });

  test("a job cancelled while its handler runs: the next renewMany aborts its signal with reason cancelled, it is neither completed nor failed, and the slot moves on", async () => {
    await using s = await serving(transport);
    await s.enqueue(3);
    const aborted: unknown[] = [];
    const worker = s.run({ concurrency: 1, renewEveryMs: 20, idleMs: 60_000 }, async ({ job, signal }) => {
      if (job.id !== "job-0000") return "stored";
      await s.other.cancel("job-0000", { by: "ops" });
      await new Promise((resolve) => signal.addEventListener("abort", resolve, { once: true }));
      aborted.push(signal.reason);
      throw signal.reason; // as a handler that honours its signal does
    });
    await until(async () => Object.values(await s.snapshot()).filter((row) => row.done === 1).length === 3, "every job finished");
    await worker.stop();
    expect(aborted).toEqual([expect.objectContaining({ name: "LeaseLostError", reason: "cancelled", currentFence: 1 })]);
    expect(s.errors).toEqual(aborted);
    const rows = await s.snapshot();
    expect(rows["job-0000"]).toMatchObject({ owner: W, fence: 1, attempts: 1, cancelled: 1, result: null, last_error: null });
    expect([rows["job-0001"], rows["job-0002"]]).toMatchObject([{ cancelled: 0, result: '"stored"' }, { cancelled: 0, result: '"stored"' }]);
    expect((await s.events())["job-0000"]).toEqual(["enqueued", "claimed", "cancelled", `refused renew by ${W}`]);
    expect(s.count("fail")).toBe(0);
  });

  test("a handler that throws once its job was cancelled, before any renew told it, is refused as cancelled: not failed, not retried", async () => {
    await using s = await serving(transport);
    await s.enqueue(2);
    const worker = s.run({ concurrency: 1, idleMs: 60_000 }, async ({ job }) => {
      if (job.id !== "job-0000") return "stored";
      await s.other.cancel("job-0000");
      throw new Error("the invoice is gone");
    });
    await until(async () => (await s.snapshot())["job-0001"]!.done === 1, "the next job done");
    await worker.stop();
    expect(s.errors).toEqual([expect.objectContaining({ name: "LeaseLostError", reason: "cancelled" })]);
    expect((await s.snapshot())["job-0000"]).toMatchObject({ owner: W, fence: 1, cancelled: 1, attempts: 1, last_error: null });
    expect((await s.events())["job-0000"]).toEqual(["enqueued", "claimed", "cancelled", `refused fail by ${W}`]);
    expect(await s.other.get("job-0000")).toMatchObject({ status: "cancelled" });
  });

  test("a handler's progress goes with the next renewMany, the latest report per lease, and shows on the job", async () => {
    await using s = await serving(transport);
    await s.enqueue(2);
    const reported = gate();
    const finish = gate();
    const worker = s.run({ concurrency: 2, renewEveryMs: 30, idleMs: 60_000 }, async ({ job, progress }) => {
      if (job.id === "job-0000") {
        progress({ page: 1 });
        progress({ page: 2 });
        expect(() => progress({ big: "x".repeat(5_000) })).toThrow(RangeError); // would refuse the whole renewMany
        reported.open();
      }
      await finish.opened;
      return "ok";
    });
    await reported.opened;
    await until(async () => (await s.other.get("job-0000")).progress !== null, "the progress stored");
    expect(await s.other.get("job-0000")).toMatchObject({ status: "leased", progress: { page: 2 } });
    expect((await s.other.get("job-0001")).progress).toBeNull();
    const carrying = s.sent.filter((request) => request.kind === "renewMany" && request.body.leases.some((lease: { progress?: unknown }) => "progress" in lease));
    expect(carrying.map((request) => request.body.leases)).toEqual([
      expect.arrayContaining([{ id: "job-0000", fence: 1, progress: { page: 2 } }, { id: "job-0001", fence: 1 }]),
    ]);
    finish.open();
    await until(async () => Object.values(await s.snapshot()).every((row) => row.done === 1), "both done");
    await worker.stop();
    expect(s.errors).toEqual([]);
  });

  test("a handler that throws fails its job with the message: scheduled after retryInMs, or dead on its last attempt; the freed slot takes the next job", async () => {
    await using s = await serving(transport);
    await s.enqueue(3, (i) => ({ maxAttempts: i === 1 ? 1 : 5 }));
    const startedAt = Date.now();
    const worker = s.run({ concurrency: 1, retryInMs: 60_000, idleMs: 60_000 }, async ({ job }) => {
      if (job.id === "job-0002") return "fine";
      throw new Error(`cannot do ${job.id}`);
    });
    await until(async () => (await s.snapshot())["job-0002"]!.done === 1, "the third job");
    await worker.stop();
    expect(await s.other.get("job-0000")).toMatchObject({ status: "scheduled", lastError: "cannot do job-0000", attempts: 1, owner: null, done: false });
    expect((await s.other.get("job-0000")).runAt).toBeGreaterThanOrEqual(startedAt + 60_000);
    expect(await s.other.get("job-0001")).toMatchObject({ status: "dead", lastError: "cannot do job-0001", attempts: 1 });
    expect(await s.other.get("job-0002")).toMatchObject({ status: "done", result: "fine" });
    const fails = s.sent.filter((request) => request.kind === "fail").map((request) => request.body);
    expect(fails).toEqual([
      { owner: W, fence: 1, error: "cannot do job-0000", retryInMs: 60_000, next: { limit: 1, ttlMs: 60_000 } },
      { owner: W, fence: 1, error: "cannot do job-0001", retryInMs: 60_000, next: { limit: 1, ttlMs: 60_000 } },
    ]);
    expect(s.claims().now).toHaveLength(1); // the second and third jobs came with the fails
    expect(s.claims().waiting.length).toBeLessThanOrEqual(1);
    expect(s.errors).toEqual([]);
  });

  test("stop() loses nothing: the jobs in hand finish and are completed, the rest stay queued, and no lease is left held", async () => {
    await using s = await serving(transport);
    await s.enqueue(20);
    const release = gate();
    const started: string[] = [];
    const worker = s.run({ concurrency: 4 }, async ({ job }) => {
      started.push(job.id);
      await release.opened;
      return `done ${job.id}`;
    });
    await until(() => started.length === 4, "four handlers");
    const stopped = worker.stop();
    expect(worker.stop()).toBe(stopped); // idempotent: the same promise
    let resolved = false;
    void stopped.then(() => (resolved = true));
    await wait(50);
    expect(resolved).toBe(false); // it waits for the handlers in hand
    release.open();
    await stopped;
    await worker.done;

    expect(started).toHaveLength(4);
    const rows = await s.snapshot();
    for (const [id, row] of Object.entries(rows)) {
      if (started.includes(id)) expect(row).toMatchObject({ owner: W, fence: 1, done: 1, result: JSON.stringify(`done ${id}`) });
      else expect(row).toMatchObject({ owner: null, fence: 0, attempts: 0, done: 0 });
    }
    const last = s.sent.filter((request) => request.kind === "completeMany").at(-1)!;
    expect(last.body.next).toBeUndefined(); // no next asked after the stop
    const before = s.sent.length;
    await wait(100);
    expect(s.sent.length).toBe(before); // nothing more is sent: no renew, no claim
  });

  test("an aborted signal stops the runner as stop() does; one aborted from the start sends nothing", async () => {
    await using s = await serving(transport);
    await s.enqueue(3);
    const before = new AbortController();
    before.abort();
    await s.run({ signal: before.signal }, async () => "never").done;
    expect(s.sent).toEqual([]);

    const later = new AbortController();
    const release = gate();
    const worker = s.run({ concurrency: 1, signal: later.signal }, async () => {
      later.abort();
      await release.opened;
      return "finished after the abort";
    });
    await until(() => later.signal.aborted, "the abort");
    release.open();
    await worker.done;
    const rows = Object.values(await s.snapshot());
    expect(rows.filter((row) => row.done === 1).map((row) => row.result)).toEqual(['"finished after the abort"']);
    expect(rows.filter((row) => row.owner !== null && row.done === 0)).toEqual([]);
  });

  test("while the queue is empty one claim at a time waits on the server, waitMs long, and a job enqueued meanwhile is taken at once", async () => {
    await using s = await serving(transport);
    const done: string[] = [];
    const worker = s.run({ concurrency: 4, waitMs: 200 }, async ({ job }) => void done.push(job.id));
    await until(() => s.claims().waiting.length >= 3, "three waiting claims");
    const { now, waiting } = s.claims();
    expect(now).toHaveLength(1); // the first: the queue might have had jobs
    expect(waiting.every((request) => request.body.limit === 4 && request.body.waitMs === 200)).toBe(true);
    // One request per waitMs: each is sent when the one before came back empty, having waited on the server.
    const gaps = waiting.slice(1).map((request, i) => request.at - waiting[i]!.at);
    expect(gaps.filter((ms) => ms < 190)).toEqual([]);
    const claimsBefore = s.count("claimNext");
    await s.enqueue(1);
    await until(() => done.length === 1, "the job");
    // Taken by the claim waiting on the server, or by the one sent the moment it came back empty: no pause between.
    expect(s.count("claimNext") - claimsBefore).toBeLessThanOrEqual(1);
    await worker.stop();
    expect(done).toEqual(["job-0000"]);
    await until(() => s.waiting() === 0, "the server to see the waiting claim given up by stop()");
  });

  test("with waitMs 0 it waits idleMs between claims while the queue is empty, and takes a job enqueued meanwhile", async () => {
    await using s = await serving(transport);
    const done: string[] = [];
    const worker = s.run({ concurrency: 4, waitMs: 0, idleMs: 100 }, async ({ job }) => void done.push(job.id));
    await until(() => s.count("claimNext") >= 3, "three claims");
    const claims = s.sent.filter((request) => request.kind === "claimNext");
    expect(claims.every((request) => request.body.limit === 4 && request.body.waitMs === undefined)).toBe(true);
    // idleMs between claims: each is sent at least 100 ms after the one before.
    expect(claims.slice(1).map((request, i) => request.at - claims[i]!.at).filter((ms) => ms < 95)).toEqual([]);
    await s.enqueue(1);
    await until(() => done.length === 1, "the job");
    await worker.stop();
    expect(done).toEqual(["job-0000"]);
  });

  test("on a rate-limited queue it asks again when the next token is due (retryAfterMs), not every idleMs", async () => {
    await using s = await serving(transport);
    await s.enqueue(4);
    await s.other.queues.set("q", { ratePerSecond: 5, burst: 1 }); // a token every 200 ms
    const done: string[] = [];
    const worker = s.run({ concurrency: 4, waitMs: 0, idleMs: 5 }, async ({ job }) => void done.push(job.id));
    await until(() => done.length === 4, "the four jobs");
    await worker.stop();
    const claimed = (await s.rows("SELECT at FROM events WHERE kind = 'claimed' ORDER BY at")).map((row) => row.at as number);
    for (let i = 1; i < 4; i++) expect(claimed[i]! - claimed[i - 1]!).toBeGreaterThanOrEqual(200); // one token at a time
    expect(s.count("claimNext")).toBeLessThanOrEqual(8); // about one a token; every 5 ms would be over a hundred
    expect(s.errors).toEqual([]);
  });

  test("refuses bad options with an error that says which and why, before sending anything", async () => {
    await using s = await serving(transport);
    const handler = async () => null;
    const bad: [Partial<WorkerOptions>, RegExp][] = [
      [{ concurrency: 0 }, /concurrency must be a whole number from 1 to 1000, got 0/],
      [{ concurrency: 1_001 }, /concurrency must be a whole number from 1 to 1000/],
      [{ concurrency: 2.5 }, /concurrency must be a whole number/],
      [{ ttlMs: 0 }, /ttlMs must be a whole number from 1/],
      [{ ttlMs: 300, renewEveryMs: 300 }, /renewEveryMs must be a whole number from 1 to 299, got 300/],
      [{ idleMs: 0 }, /idleMs must be a whole number from 1/],
      [{ waitMs: 30_001 }, /waitMs must be a whole number from 0 to 30000, got 30001/],
      [{ retryInMs: -1 }, /retryInMs must be a whole number from 0/],
      [{ queue: "" }, /queue must be a non-empty string/],
      [{ owner: "" }, /owner must be a non-empty string/],
    ];
    for (const [options, message] of bad) expect(() => s.run(options, handler)).toThrow(RangeError);
    for (const [options, message] of bad) expect(() => s.run(options, handler)).toThrow(message);
    expect(() => runWorker(s.client, { queue: "q", owner: W, concurrency: 1, ttlMs: 1_000 }, undefined as unknown as JobHandler)).toThrow(TypeError);
    expect(s.sent).toEqual([]);
  });
});

describe("runWorker over HTTP, its requests held back, diverted or lost on the way", () => {
  test("at most two completeMany calls are in flight: a result goes at once while one is on its way, and those that finish while two are wait and go together", async () => {
    await using s = await serving();
    await s.enqueue(8);
    let inFlight = 0;
    let most = 0;
    const firstSent = gate();
    const secondSent = gate();
    const held = gate();
    s.traffic.through = async (kind, send) => {
      if (kind !== "completeMany") return send();
      most = Math.max(most, ++inFlight);
      const nth = s.count("completeMany");
      if (nth === 1) firstSent.open();
      if (nth === 2) secondSent.open();
      if (nth <= 2) await held.opened; // the first two stay on their way until the test lets them go
      try {
        return await send();
      } finally {
        inFlight--;
      }
    };
    const worker = s.run({ concurrency: 8, idleMs: 60_000 }, async ({ job }) => {
      if (job.id === "job-0001") await firstSent.opened;
      else if (job.id !== "job-0000") await secondSent.opened;
      return job.id;
    });
    await secondSent.opened;
    await wait(50); // the six results that came after the second call are queued, not sent
    expect(s.count("completeMany")).toBe(2);
    held.open();
    await until(async () => Object.values(await s.snapshot()).every((row) => row.done === 1), "every job done");
    await worker.stop();
    expect(most).toBe(2);
    const batches = s.sent.filter((request) => request.kind === "completeMany").map((request) => request.body.leases.map((lease: { id: string }) => lease.id));
    expect(batches[0]).toEqual(["job-0000"]);
    expect(batches[1]).toEqual(["job-0001"]);
    expect(batches[2]).toHaveLength(6); // together
    expect(batches.flat()).toHaveLength(8);
    expect(s.claims().now).toHaveLength(1); // every later job came with a completion
    expect(s.claims().waiting.length).toBeLessThanOrEqual(1); // and once the queue was empty, one claim waits on the server
  });

  test("a result that cannot be sent is retried without next until its lease's deadline, then dropped", async () => {
    await using s = await serving();
    await s.enqueue(1);
    let claimSentAt = 0;
    s.traffic.through = async (kind, send) => {
      if (kind === "claimNext" && claimSentAt > 0) return Response.json({ leases: [] }); // nothing more to take
      if (kind === "claimNext") claimSentAt = Date.now();
      if (kind === "completeMany") throw new TypeError("fetch failed"); // the server cannot be reached, for completions
      return send();
    };
    const worker = s.run({ concurrency: 1, ttlMs: 400, idleMs: 60_000 }, async () => "never stored");
    await until(() => s.errors.some((error) => error instanceof LeaseLostError), "the lease to run out");
    await worker.stop();
    const completions = s.sent.filter((request) => request.kind === "completeMany");
    expect(completions[0]!.body.next).toEqual({ queue: "q", limit: 1, ttlMs: 400 });
    expect(completions.slice(1).every((request) => request.body.next === undefined)).toBe(true);
    expect(completions.length).toBeGreaterThan(2);
    // None after the deadline, but for the client's own quick retries of a call (2, a few ms apart).
    expect(completions.map((request) => request.at - claimSentAt).filter((ms) => ms >= 450)).toEqual([]);
    expect(s.count("renewMany")).toBe(0); // a completion that may have landed is not renewed after
    expect(s.errors.filter((error) => error instanceof LeaseLostError)).toEqual([expect.objectContaining({ reason: "expired" })]);
    expect(s.errors.filter((error) => !(error instanceof LeaseLostError)).every((error) => error instanceof UnavailableError)).toBe(true);
    expect((await s.snapshot())["job-0000"]).toMatchObject({ owner: W, fence: 1, done: 0, result: null }); // its lease ran out: due again
  });

  test("a lease no renew gets through for is lost at its deadline, counted from when the claim was sent: another owner takes over, and the late result is dropped", async () => {
    await using s = await serving();
    await s.enqueue(1);
    let claimSentAt = 0;
    s.traffic.through = async (kind, send) => {
      if (kind === "claimNext" && claimSentAt === 0) {
        claimSentAt = Date.now();
        const answer = await send();
        await wait(250); // the answer arrives late: 150 ms of the lease are left
        return answer;
      }
      if (kind === "renewMany") await wait(1_000); // and no renew gets through in time
      return send();
    };
    let timing: { startedAt: number; abortedAt: number } | undefined;
    const worker = s.run({ concurrency: 1, ttlMs: 400, renewEveryMs: 100, idleMs: 60_000 }, async ({ signal }) => {
      const startedAt = Date.now();
      await new Promise((resolve) => signal.addEventListener("abort", resolve, { once: true }));
      timing = { startedAt, abortedAt: Date.now() };
      // B takes the job over once the lease has run out on the server, and finishes it.
      await until(async () => {
        const [lease] = await s.other.claimNext("q", { owner: "B", ttlMs: 60_000 });
        if (lease) await s.other.complete(lease.job.id, { owner: "B", fence: lease.fence, result: "B's result" });
        return lease !== undefined;
      }, "B's claim");
      return "W's late result";
    });
    await until(async () => (await s.snapshot())["job-0000"]!.done === 1, "B's completion");
    await worker.stop();
    // The runner notes the claim as sent a moment before this test's fetch sees it: a few ms of slack, no more.
    expect(timing!.abortedAt - claimSentAt).toBeGreaterThanOrEqual(390);
    expect(timing!.abortedAt - timing!.startedAt).toBeLessThan(300); // about 150 ms: not a full ttl from the answer's arrival
    expect(s.errors).toEqual([expect.objectContaining({ name: "LeaseLostError", reason: "expired" })]);
    expect((await s.snapshot())["job-0000"]).toMatchObject({ owner: "B", fence: 2, done: 1, result: '"B\'s result"' });
    expect(s.count("completeMany")).toBe(0);
  });

  test("leases a `next` brings after stop began are released at once, their handlers never started", async () => {
    await using s = await serving();
    await s.enqueue(6);
    let worker: WorkerHandle | undefined;
    let stopping: Promise<void> | undefined;
    s.traffic.through = async (kind, send) => {
      const answer = await send(); // applied: the next jobs are leased to W
      if (kind === "completeMany" && stopping === undefined) stopping = worker!.stop(); // the stop begins before the answer arrives
      return answer;
    };
    const started: string[] = [];
    worker = s.run({ concurrency: 2 }, async ({ job }) => {
      started.push(job.id);
      return "ok";
    });
    await until(() => stopping !== undefined, "the stop");
    await stopping;
    expect(started).toEqual(["job-0000", "job-0001"]);
    const first = s.sent.find((request) => request.kind === "completeMany")!;
    expect(first.body.next).toEqual({ queue: "q", limit: 2, ttlMs: 60_000 });
    expect(s.sent.filter((request) => request.kind === "release").map((request) => request.body)).toEqual([
      { owner: W, fence: 1 },
      { owner: W, fence: 1 },
    ]);
    const rows = await s.snapshot();
    expect(rows["job-0000"]).toMatchObject({ done: 1, result: '"ok"' });
    expect(rows["job-0001"]).toMatchObject({ done: 1, result: '"ok"' });
    for (const id of ["job-0002", "job-0003"]) expect(rows[id]).toMatchObject({ owner: null, until: 0, fence: 1, attempts: 0, done: 0, last_event: "released" });
    for (const id of ["job-0004", "job-0005"]) expect(rows[id]).toMatchObject({ owner: null, fence: 0, attempts: 0 });
  });

  test("a completeMany with next whose answer is lost is sent again without next, and no result is lost", async () => {
    await using s = await serving();
    await s.enqueue(4);
    let lost = false;
    s.traffic.through = async (kind, send) => {
      const answer = await send();
      if (kind === "completeMany" && !lost) {
        lost = true;
        throw new TypeError("socket hang up"); // applied, but the answer never arrives
      }
      return answer;
    };
    await expectRepeatedWithoutNext(s);
  });

  test("a claimNext that fails is reported and tried again after a backoff", async () => {
    await using s = await serving();
    await s.enqueue(1);
    let failures = 3;
    s.traffic.through = async (kind, send) => {
      if (kind === "claimNext" && failures-- > 0) return new Response(JSON.stringify({ error: { code: "unavailable", message: "busy", details: { outcome: "unknown" } } }), { status: 503 });
      return send();
    };
    const worker = s.run({ concurrency: 1, idleMs: 60_000 }, async () => "ok");
    await until(async () => (await s.snapshot())["job-0000"]!.done === 1, "the job");
    await worker.stop();
    const claims = s.claims().now; // then, the queue empty, one that waits on the server
    expect(claims).toHaveLength(4);
    const gaps = claims.slice(1).map((claim, i) => claim.at - claims[i]!.at);
    expect(gaps[0]).toBeGreaterThanOrEqual(50); // 100 ms, then 200, then 400, each times [0.5, 1)
    expect(gaps[2]).toBeGreaterThanOrEqual(200);
    expect(s.errors).toHaveLength(3);
    expect(s.errors.every((error) => error instanceof UnavailableError)).toBe(true);
  });

  test("a result the server refuses fails only its own job; the other results of the same call are stored", async () => {
    await using s = await serving();
    await s.enqueue(3, () => ({ maxAttempts: 1 }));
    const worker = s.run({ concurrency: 3, idleMs: 60_000 }, async ({ job }) => (job.id === "job-0001" ? "x".repeat(1_100_000) : "small"));
    await until(async () => Object.values(await s.snapshot()).every((row) => row.done === 1), "every job ended");
    await worker.stop();
    const batches = s.sent.filter((request) => request.kind === "completeMany").map((request) => request.body.leases.map((lease: { id: string }) => lease.id));
    expect(batches[0]).toEqual(["job-0000", "job-0001", "job-0002"]); // refused as a whole: the body is over 1 MiB
    expect(batches.slice(1).every((batch) => batch.length === 1)).toBe(true);
    const rows = await s.snapshot();
    expect(rows["job-0000"]).toMatchObject({ done: 1, dead: 0, result: '"small"' });
    expect(rows["job-0002"]).toMatchObject({ done: 1, dead: 0, result: '"small"' });
    expect(rows["job-0001"]).toMatchObject({ dead: 1, result: null, last_error: expect.stringContaining("the result could not be stored: the body must be at most") });
  });
});

describe("runWorker over HTTP, its token refused or the server unreachable", () => {
  test("a token the server refuses (401) stops the runner at its first claim, with one line that says so; nothing is claimed", async () => {
    await using s = await serving("http");
    await s.enqueue(1);
    const told: [unknown, string][] = [];
    const stranger = new LeaseClient({ baseUrl: s.baseUrl!, token: "not-a-token" });
    const worker = runWorker(stranger, { queue: "q", owner: W, concurrency: 2, ttlMs: 60_000, onError: (error, line) => told.push([error, line]) }, async () => "ok");
    await worker.done; // by itself: a 401 does not heal by asking again
    expect(told).toHaveLength(1);
    expect(told[0]![0]).toBeInstanceOf(UnauthorizedError);
    expect(told[0]![1]).toBe(`${W} on queue q: unauthorized: the bearer token is not valid (or was revoked); stopped, since a 401 does not heal by asking again`);
    expect((await s.snapshot())["job-0000"]).toMatchObject({ owner: null, fence: 0, attempts: 0, done: 0 });
  });

  test("a token that may not take the queue's jobs (403) stops the runner at its first claim, with the one line of the default onError", async () => {
    await using s = await serving("http");
    await s.enqueue(1);
    const { token } = await s.other.tokens.create({ role: "worker", queues: ["other"], name: "elsewhere" });
    const printed = vi.spyOn(console, "error").mockImplementation(() => {});
    onTestFinished(() => printed.mockRestore());
    const worker = runWorker(new LeaseClient({ baseUrl: s.baseUrl!, token }), { queue: "q", owner: W, concurrency: 2, ttlMs: 60_000 }, async () => "ok");
    await worker.done;
    expect(printed.mock.calls).toHaveLength(1);
    const [line] = printed.mock.calls[0]!;
    expect(line).toMatch(new RegExp(`^${W} on queue q: forbidden: this token "elsewhere" \\(worker for other\\) may not [^\\n]+ q[^\\n]*; stopped, since a 403 does not heal by asking again$`));
    expect(line).not.toContain("\n");
    expect((await s.snapshot())["job-0000"]).toMatchObject({ owner: null, fence: 0, attempts: 0, done: 0 });
  });

  test("with the server unreachable, the default onError prints one line per attempt, with when the next one goes, and the runner goes on until stopped", async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const { port } = closed.address() as { port: number };
    await new Promise((resolve) => closed.close(resolve)); // nobody listens there now
    const printed = vi.spyOn(console, "error").mockImplementation(() => {});
    onTestFinished(() => printed.mockRestore());
    const client = new LeaseClient({ baseUrl: `http://127.0.0.1:${port}`, retry: { retries: 0 } });
    const worker = runWorker(client, { queue: "q", owner: W, concurrency: 2, ttlMs: 60_000 }, async () => "ok");
    await until(() => printed.mock.calls.length >= 3, "three attempts");
    const stopped = worker.stop();
    await stopped;
    const lines = printed.mock.calls.map(([line]) => String(line));
    for (const line of lines) {
      expect(line).toMatch(new RegExp(`^${W} on queue q: unreachable: could not reach http://127\\.0\\.0\\.1:${port}: [^\\n]+; next attempt in \\d+\\.\\d s, at \\d{4}-\\d\\d-\\d\\dT[\\d:.]+Z$`));
    }
    // The backoff doubles from 100 ms (times a jitter in [0.5, 1)), and each line says it.
    const inMs = lines.slice(0, 3).map((line) => Number(/next attempt in ([\d.]+) s/.exec(line)![1]) * 1000);
    expect(inMs[0]).toBeLessThanOrEqual(100);
    expect(inMs[2]).toBeGreaterThanOrEqual(200);
  });
});

describe("runWorker in-process, its calls failing as the database fails", () => {
  test("a completeMany with next that the database applied, its outcome unknown, is made again without next, and no result is lost", async () => {
    await using s = await serving("in-process");
    await s.enqueue(4);
    let lost = false;
    s.traffic.local = async (kind, call) => {
      const answer = await call();
      if (kind === "completeMany" && !lost) {
        lost = true;
        throw new StorageUnavailable(new Error("the connection broke"), "unknown"); // applied, but the outcome is unknown
      }
      return answer;
    };
    await expectRepeatedWithoutNext(s);
    expect(s.errors[0]).toMatchObject({ status: 503, details: { outcome: "unknown" } });
  });

  test("a claimNext the database refused (busy, nothing applied) is made again at once by the client, and the runner takes the job", async () => {
    await using s = await serving("in-process");
    await s.enqueue(1);
    let busy = 2;
    s.traffic.local = async (kind, call) => {
      if (kind === "claimNext" && busy-- > 0) throw new StorageUnavailable(new Error("SQLITE_BUSY"), "not_applied");
      return call();
    };
    const worker = s.run({ concurrency: 1, idleMs: 60_000 }, async () => "ok");
    await until(async () => (await s.snapshot())["job-0000"]!.done === 1, "the job");
    await worker.stop();
    expect(s.sent.filter((request) => request.kind === "claimNext").slice(0, 3).map((request) => request.body)).toEqual([
      { owner: W, ttlMs: 60_000, limit: 1 },
      { owner: W, ttlMs: 60_000, limit: 1 },
      { owner: W, ttlMs: 60_000, limit: 1 },
    ]);
    expect(s.errors).toEqual([]); // within the client's retries: the runner never saw it
  });

  test("a claimNext the database could not serve past the client's retries is told by the default onError in one line, with when the next attempt goes, and the runner goes on", async () => {
    await using s = await serving("in-process");
    await s.enqueue(1);
    let busy = 6; // the first claim and its 2 retries, then the next attempt and its 2
    s.traffic.local = async (kind, call) => {
      if (kind === "claimNext" && busy-- > 0) throw new StorageUnavailable(new Error("SQLITE_BUSY"), "not_applied");
      return call();
    };
    const printed = vi.spyOn(console, "error").mockImplementation(() => {});
    onTestFinished(() => printed.mockRestore());
    const worker = s.run({ concurrency: 1, idleMs: 60_000, onError: undefined }, async () => "ok");
    await until(async () => (await s.snapshot())["job-0000"]!.done === 1, "the job");
    await worker.stop();
    const lines = printed.mock.calls.map(([line]) => String(line));
    expect(lines).toHaveLength(2);
    for (const line of lines) {
      expect(line).toMatch(new RegExp(`^${W} on queue q: unavailable: the database is busy \\(another writer holds its lock\\); nothing was written; retry shortly; next attempt in \\d+\\.\\d s, at \\d{4}-\\d\\d-\\d\\dT[\\d:.]+Z$`));
    }
    expect((await s.snapshot())["job-0000"]).toMatchObject({ owner: W, fence: 1, attempts: 1, done: 1, result: '"ok"' });
  });
});

describe.each(TRANSPORTS)("runWorker's drain: stop({ drain: true }), %s", (transport) => {
  test("finishes exactly the jobs that are due, each once, and resolves once the queue has none: the runner has stopped, jobs due later untouched", async () => {
    await using s = await serving(transport);
    await s.enqueue(120);
    for (const id of ["later-1", "later-2"]) await s.other.enqueue({ id, queue: "q", delayMs: 60_000 });
    await s.other.enqueue({ id: "elsewhere", queue: "other" });
    const before = await s.snapshot();
    const calls = new Map<string, number>();
    const worker = s.run({ concurrency: 8 }, async ({ job }) => {
      calls.set(job.id, (calls.get(job.id) ?? 0) + 1);
      await wait(Math.random() * 3);
      return { n: (job.payload as { n: number }).n };
    });
    const drained = worker.stop({ drain: true });
    expect(worker.stop({ drain: true })).toBe(drained); // idempotent: the same promise
    await drained;
    await worker.done;

    const rows = await s.snapshot();
    for (let i = 0; i < 120; i++) {
      const id = `job-${String(i).padStart(4, "0")}`;
      expect(rows[id]).toMatchObject({ owner: W, fence: 1, attempts: 1, done: 1, result: JSON.stringify({ n: i }) });
      expect(calls.get(id)).toBe(1);
    }
    expect(calls.size).toBe(120);
    for (const id of ["later-1", "later-2", "elsewhere"]) expect(rows[id]).toEqual(before[id]);
    const events = await s.events();
    for (const id of calls.keys()) expect(events[id]).toEqual(["enqueued", "claimed", "completed"]);
    expect(s.claims().waiting).toEqual([]); // no claim long-polled: a drain never waits out an empty queue
    expect(s.errors).toEqual([]);
    const sent = s.sent.length;
    await wait(100);
    expect(s.sent.length).toBe(sent); // stopped: no renew, no claim
  });

  test("takes the jobs that become due while it drains: one a handler enqueues, and a failed attempt due again at once, until it is done", async () => {
    await using s = await serving(transport);
    await s.other.enqueue({ id: "parent", queue: "q" });
    await s.other.enqueue({ id: "flaky", queue: "q", maxAttempts: 3 });
    const calls: string[] = [];
    const worker = s.run({ concurrency: 2, retryInMs: 0 }, async ({ job }) => {
      calls.push(job.id);
      if (job.id === "parent") await s.other.enqueue({ id: "child", queue: "q" });
      if (job.id === "flaky" && calls.filter((id) => id === "flaky").length < 3) throw new Error("not yet");
      return "ok";
    });
    await worker.stop({ drain: true });

    expect(calls.toSorted()).toEqual(["child", "flaky", "flaky", "flaky", "parent"]);
    expect(await s.other.get("child")).toMatchObject({ status: "done", result: "ok", attempts: 1 });
    expect(await s.other.get("flaky")).toMatchObject({ status: "done", result: "ok", attempts: 3, lastError: "not yet" });
    expect(await s.other.get("parent")).toMatchObject({ status: "done", attempts: 1 });
    expect(s.errors).toEqual([]);
  });

  test("of a runner waiting on an empty queue, gives up its long poll and resolves at once, taking nothing", async () => {
    await using s = await serving(transport);
    const worker = s.run({ concurrency: 4 }, async () => "never"); // waitMs: the default 30 s
    await until(() => s.waiting() === 1, "the long poll on the server");
    const startedAt = Date.now();
    await worker.stop({ drain: true });
    expect(Date.now() - startedAt).toBeLessThan(10_000); // not the 30 s of the long poll
    const { now, waiting } = s.claims();
    expect(waiting).toHaveLength(1); // the one given up
    expect(now.at(-1)!.body).toEqual({ owner: W, ttlMs: 60_000, limit: 4 }); // the last look, without waitMs
    expect(await s.snapshot()).toEqual({});
    await until(() => s.waiting() === 0, "the server to see the long poll given up");
    expect(s.errors).toEqual([]);
  });

  test("waits for a rate-limited queue's tokens, since its jobs are due; a paused queue ends it at once, its jobs left queued", async () => {
    await using s = await serving(transport);
    await s.enqueue(3);
    await s.other.queues.set("q", { ratePerSecond: 5, burst: 1 }); // a token every 200 ms
    const done: string[] = [];
    await s.run({ concurrency: 4 }, async ({ job }) => void done.push(job.id)).stop({ drain: true });
    expect(done.toSorted()).toEqual(["job-0000", "job-0001", "job-0002"]);
    const claimed = (await s.rows("SELECT at FROM events WHERE kind = 'claimed' ORDER BY at")).map((row) => row.at as number);
    for (let i = 1; i < 3; i++) expect(claimed[i]! - claimed[i - 1]!).toBeGreaterThanOrEqual(200); // one token at a time

    await s.other.enqueue({ id: "held", queue: "q" });
    await s.other.queues.pause("q");
    const before = await s.snapshot();
    const paused: string[] = [];
    await s.run({ concurrency: 4 }, async ({ job }) => void paused.push(job.id)).stop({ drain: true });
    expect(paused).toEqual([]);
    expect(await s.snapshot()).toEqual(before);
    expect(s.errors).toEqual([]);
  });

  test("a plain stop() during a drain ends it early: the jobs in hand finish, no more are taken", async () => {
    await using s = await serving(transport);
    await s.enqueue(10);
    const release = gate();
    const started: string[] = [];
    const worker = s.run({ concurrency: 2 }, async ({ job }) => {
      started.push(job.id);
      await release.opened;
      return "done";
    });
    const drained = worker.stop({ drain: true });
    await until(() => started.length === 2, "two handlers");
    const stopped = worker.stop();
    release.open();
    await Promise.all([drained, stopped]);
    expect(started).toHaveLength(2);
    const rows = Object.values(await s.snapshot());
    expect(rows.filter((row) => row.done === 1)).toHaveLength(2);
    expect(rows.filter((row) => row.done === 0 && row.owner === null && row.fence === 0)).toHaveLength(8);
  });
});
