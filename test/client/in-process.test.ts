import { spawn } from "node:child_process";
import { describe, expect, test } from "vitest";
import { type EmbeddedStore, LeaseClient, LeaseLostError } from "../../src/client/index.ts";
import type { LeaseStore } from "../../src/index.ts";
import { openStore } from "../../src/node.ts";
import { freshStore } from "../fresh-db.ts";
import { served, type TransportName } from "./transports.ts";

// What is particular to the client in the same process: it answers what the
// server answers, call for call, refusals to the message; and its waiting
// calls wait in a room of this process, woken at once by a write through any
// client over the same store, and within the re-check by another process's.

const TTL = 30_000;
const T = 1_000_000;

/** What a call answered, or the refusal it threw, as plain data. */
async function outcome(call: () => Promise<unknown>): Promise<unknown> {
  try {
    return { answer: await call() };
  } catch (error) {
    const { name, status, code, message, details } = error as LeaseLostError;
    return { refused: { name, status, code, message, details } };
  }
}

/** One job's life and every refusal of the store, at hand-set times, through a client over `transport`: each call's outcome, and the rows left. */
async function story(transport: TransportName) {
  const clock = { now: T };
  await using s = await served(transport, { clock: () => clock.now });
  const c = s.client;
  const outcomes: unknown[] = [];
  const note = async (call: () => Promise<unknown>) => void outcomes.push(await outcome(call));
  await note(() => c.enqueue({ id: "job-1", queue: "q", payload: { n: 1 }, priority: 2 }));
  await note(() => c.enqueue({ id: "job-1", queue: "q" }));
  await note(() => c.enqueueMany("q", [{ id: "job-2" }, { id: "job-3", delayMs: 500 }, { id: "job-1" }]));
  await note(() => c.get("job-3"));
  await note(() => c.claim("job-1", { owner: "A", ttlMs: TTL }));
  await note(() => c.claim("job-1", { owner: "B", ttlMs: TTL }));
  clock.now += 10;
  await note(() => c.renew("job-1", { owner: "A", fence: 1, ttlMs: TTL, progress: { pct: 50 } }));
  await note(() => c.step("job-1", "charge", { owner: "A", fence: 1, result: { chargeId: "ch_1" } }));
  await note(() => c.step("job-1", "charge", { owner: "A", fence: 1, result: 2 }));
  await note(() => c.step("job-1", "email", { owner: "B", fence: 1, result: 3 }));
  await note(() => c.step("job-1", "big", { owner: "A", fence: 1, result: "x".repeat(70_000) }));
  await note(() => c.complete("job-1", { owner: "B", fence: 1, result: "stale" }));
  await note(() => c.complete("job-1", { owner: "A", fence: 1, result: { ok: true }, next: { limit: 5, ttlMs: TTL } }));
  await note(() => c.complete("job-1", { owner: "A", fence: 1, result: { ok: true } }));
  await note(() => c.claimNext("q", { owner: "A", ttlMs: TTL, limit: 5 }));
  clock.now += 500;
  await note(() => c.claimNextAnswer("q", { owner: "C", ttlMs: TTL, limit: 5 }));
  await note(() => c.renewMany({ owner: "A", ttlMs: TTL, leases: [{ id: "job-2", fence: 1 }, { id: "job-3", fence: 1 }, { id: "nobody", fence: 1 }] }));
  await note(() => c.checkLease("job-3", { owner: "A", fence: 1 }));
  await note(() => c.completeMany({ owner: "C", leases: [{ id: "job-3", fence: 1, result: [3] }, { id: "job-2", fence: 1, result: 2 }], next: { queue: "q", limit: 1, ttlMs: TTL } }));
  await note(() => c.fail("job-2", { owner: "A", fence: 1, error: "disk full", retryInMs: 1_000 }));
  await note(() => c.fail("job-2", { owner: "A", fence: 1, error: "again" }));
  await note(() => c.release("job-2", { owner: "A", fence: 1 }));
  await note(() => c.retry("job-2"));
  await note(() => c.delete("job-2"));
  await note(() => c.delete("nobody"));
  await note(() => c.cancel("job-2", { by: "ops", reason: "refunded" }));
  await note(() => c.cancel("job-2"));
  await note(() => c.cancel("job-1"));
  await note(() => c.list({ queue: "q", limit: 2 }));
  await note(() => c.events("job-1", { limit: 3 }));
  await note(() => c.queues.set("q", { maxLeased: 3, ratePerSecond: 2 }));
  await note(() => c.queues.pause("q"));
  await note(() => c.queues.resume("q"));
  await note(() => c.queues.get("q"));
  await note(() => c.queues.list());
  await note(() => c.queues.stats());
  await note(() => c.queues.keys("q", { limit: 1 }));
  await note(() => c.queues.series("q", { step: 3_600_000 }));
  await note(() => c.queues.set("keyed", { maxLeasedPerKey: 1, keyRatePerSecond: 1, orderedByKey: true, fairByKey: true }));
  await note(() => c.enqueueMany("keyed", [{ id: "k-1", key: "tenant" }, { id: "k-2", key: "tenant" }, { id: "k-3", key: "other" }]));
  await note(() => c.enqueue({ id: "k-4", queue: "keyed", key: "tenant" }));
  await note(() => c.claim("k-2", { owner: "A", ttlMs: TTL })); // key_ordered, behind k-1
  await note(() => c.claimNext("keyed", { owner: "A", ttlMs: TTL, limit: 5 }));
  await note(() => c.claim("k-2", { owner: "A", ttlMs: TTL }));
  await note(() => c.schedules.put("keyed-tick", { queue: "keyed", everyMs: 60_000, key: "tenant" }));
  await note(() => c.schedules.put("nightly", { queue: "q", cron: "0 3 * * *", timezone: "Europe/Paris", payload: { full: true } }));
  await note(() => c.schedules.get("nightly"));
  await note(() => c.schedules.list());
  await note(() => c.schedules.delete("nightly"));
  await note(() => c.schedules.get("nightly"));
  await note(() => c.tokens.self());
  await note(() => c.tokens.list());
  // Each store has a clock id of its own (src/store/step-back.ts): the one column that differs by which store wrote.
  const rows = Object.fromEntries(Object.entries(await s.snapshot()).map(([id, { claim_clock, ...row }]) => [id, { ...row, claimClock: claim_clock === null ? null : "a store's" }]));
  return { outcomes, rows, events: await s.rows("SELECT job_id, kind, action, owner, fence, current_owner, current_fence, error, at FROM events ORDER BY seq") };
}

describe("the client in the same process", () => {
  test("answers every call as the server does, at the same times: the same values, the same rows left, the same refusals to the message", async () => {
    const overHttp = await story("http");
    const inProcess = await story("in-process");
    expect(inProcess.outcomes).toEqual(overHttp.outcomes);
    expect(inProcess.rows).toEqual(overHttp.rows);
    expect(inProcess.events).toEqual(overHttp.events);
    // The story meets every kind of refusal, so the comparison above covers each.
    const refused = overHttp.outcomes.flatMap((o) => ("refused" in (o as object) ? [(o as { refused: { code: string } }).refused.code] : []));
    expect(new Set(refused)).toEqual(new Set(["not_claimable", "stale_lease", "conflict", "not_found", "steps_too_large"]));
    expect(inProcess.outcomes.find((o) => "refused" in (o as object) && (o as { refused: { code: string } }).refused.code === "stale_lease")).toEqual({
      refused: { name: "LeaseLostError", status: 409, code: "stale_lease", message: 'the lease on job "job-1" is no longer yours (not_owner); the current fence is 1', details: { reason: "not_owner", currentFence: 1 } },
    });
  }, 30_000);

  test("a refusal is the client's typed error, with the store's error as its cause; anything else is thrown as it is", async () => {
    const { store } = await freshStore();
    const client = new LeaseClient({ store });
    await client.enqueue({ id: "job-1" });
    const { fence } = await client.claim("job-1", { owner: "A", ttlMs: TTL });
    const lost = await client.complete("job-1", { owner: "B", fence, result: 1 }).catch((error) => error);
    expect(lost).toBeInstanceOf(LeaseLostError);
    expect(lost.cause).toMatchObject({ name: "LeaseLost", code: "stale_lease", reason: "not_owner" });
    // A result JSON cannot carry is refused before the store is called, as the server would refuse the body without it.
    await expect(client.complete("job-1", { owner: "A", fence, result: undefined })).rejects.toMatchObject({ name: "InvalidRequestError", message: "result is required: any JSON value" });
    await expect(client.complete("job-1", { owner: "A", fence, result: 10n })).rejects.toThrow(TypeError);
    expect(await client.get("job-1")).toMatchObject({ status: "leased", result: null });
    expect(() => new LeaseClient({ store: null as never })).toThrow(TypeError);
  });

  test("a claim waiting on an empty queue takes a job enqueued through another client over the same store within a few ms, having claimed once", async () => {
    const { store } = await freshStore();
    const calls: string[] = [];
    const watched = { ...bound(store), claimNext: (...args: Parameters<typeof store.claimNext>) => (calls.push("claimNext"), store.claimNext(...args)) };
    const worker = new LeaseClient({ store: watched });
    const producer = new LeaseClient({ store: watched });
    const waiting = worker.claimNextAnswer("q", { owner: "A", ttlMs: TTL, waitMs: 10_000 });
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(calls).toEqual(["claimNext"]); // claimed once, then waits: no polling
    const enqueuedAt = performance.now();
    await producer.enqueue({ id: "job-1", queue: "q" });
    const answer = await waiting;
    expect(performance.now() - enqueuedAt).toBeLessThan(50);
    expect(answer.leases.map((lease) => [lease.job.id, lease.fence, lease.job.owner])).toEqual([["job-1", 1, "A"]]);
    expect(answer.waitedMs).toBeGreaterThanOrEqual(99);
    expect(calls).toEqual(["claimNext", "claimNext"]);
  });

  test("a claim waiting on an empty queue takes a job another process enqueues within the re-check (1 s), and a get with waitMs sees another process finish it", async () => {
    const { store, url } = await freshStore();
    const client = new LeaseClient({ store });
    const waiting = client.claimNextAnswer("q", { owner: "A", ttlMs: TTL, waitMs: 10_000 });
    await new Promise((resolve) => setTimeout(resolve, 50));
    const enqueuedAt = Number(await inAnotherProcess(url, `await client.enqueue({ id: "job-1", queue: "q" }); console.log(Date.now());`));
    const answer = await waiting;
    expect(Date.now() - enqueuedAt).toBeLessThan(1_200); // the re-check's second, and a little
    expect(answer.leases.map((lease) => lease.job.id)).toEqual(["job-1"]);

    const [lease] = answer.leases;
    const finished = client.get("job-1", { waitMs: 10_000 });
    await inAnotherProcess(url, `await client.complete("job-1", { owner: "A", fence: ${lease!.fence}, result: "from afar" });`);
    expect(await finished).toMatchObject({ status: "done", result: "from afar" });
  }, 20_000);

  test("a job written on the store directly, not through a client (the app's own enqueue, a schedule maintain fires), reaches a waiting claim within the re-check", { timeout: 15_000 }, async () => {
    const { store } = await freshStore();
    const client = new LeaseClient({ store });
    const waiting = client.claimNextAnswer("q", { owner: "A", ttlMs: TTL, waitMs: 10_000 });
    await new Promise((resolve) => setTimeout(resolve, 1_100)); // past the room's first re-check, which reads whatever the version
    const enqueuedAt = Date.now();
    await store.enqueue("direct", { queue: "q" }); // this connection's own write: its data_version does not change
    const answer = await waiting;
    expect(Date.now() - enqueuedAt).toBeLessThan(1_200);
    expect(answer.leases.map((lease) => [lease.job.id, lease.job.owner])).toEqual([["direct", "A"]]);
  });

  test("a server beside it on the same file: a job enqueued over HTTP reaches a claim waiting in-process within the re-check", async () => {
    await using s = await served("http");
    const store = await openStore({ url: s.url, migrations: false });
    try {
      const client = new LeaseClient({ store });
      const waiting = client.claimNext("q", { owner: "A", ttlMs: TTL, waitMs: 10_000 });
      await new Promise((resolve) => setTimeout(resolve, 50));
      await s.client.enqueue({ id: "over-http", queue: "q" });
      expect((await waiting).map((lease) => lease.job.id)).toEqual(["over-http"]);
      expect((await s.client.get("over-http")).owner).toBe("A");
    } finally {
      store.close();
    }
  }, 20_000);
});

/** The store's verbs bound to it, as a plain object a test may change one verb of. */
function bound(store: LeaseStore): EmbeddedStore {
  const verbs = Object.getOwnPropertyNames(Object.getPrototypeOf(store)).filter((name) => name !== "constructor");
  return Object.assign(Object.fromEntries(verbs.map((name) => [name, (store as unknown as Record<string, (...args: unknown[]) => unknown>)[name]!.bind(store)])), store) as EmbeddedStore;
}

/** Runs `code` in a new Node process with `client`, a LeaseClient in-process over its own store on `url`; answers what it printed. */
async function inAnotherProcess(url: string, code: string): Promise<string> {
  const script = `import { openStore } from "./src/node.ts"; import { LeaseClient } from "./src/client/index.ts";
const store = await openStore({ url: ${JSON.stringify(url)}, migrations: false }); const client = new LeaseClient({ store });
${code}
store.close();`;
  const child = spawn(process.execPath, ["--input-type=module", "-e", script], { stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (chunk) => (stdout += chunk));
  child.stderr.on("data", (chunk) => (stderr += chunk));
  const exit = await new Promise((resolve) => child.on("close", resolve));
  expect([exit, stderr]).toEqual([0, ""]);
  return stdout.trim();
}
