import { describe, expect, test } from "vitest";
import { LeaseClient, LeaseLostError, withLease } from "../../src/client/index.ts";
import { InProcessApi } from "../../src/client/in-process/api.ts";
import { openStore, type ServerConfig, startServer } from "../../src/node.ts";
import { freshStore } from "../fresh-db.ts";
import { TRANSPORTS, type TransportName } from "./transports.ts";

const TOKEN = "with-lease-token";

// These tests run on the real clock: heartbeats and expiry are what they are
// about. Leases are a few hundred ms, so the slowest test takes two seconds.
// They run over HTTP and in-process, but for those about the server's own
// answers arriving late or its long polls being full.

/**
 * The Node server on a fresh database (or a store of this process), and a
 * client whose renews the test can hold back and count: over HTTP through its
 * fetch, in-process through the in-process api's renew.
 */
async function serving(transport: TransportName = "http", config: Partial<ServerConfig> = {}) {
  const fresh = await freshStore();
  const traffic = { renews: 0, holdRenewsMs: 0 };
  const renewing = async () => {
    traffic.renews++;
    if (traffic.holdRenewsMs > 0) await new Promise((resolve) => setTimeout(resolve, traffic.holdRenewsMs)); // the worker is paused
  };
  if (transport === "in-process") {
    const store = await openStore({ url: fresh.url, migrations: false });
    const api = InProcessApi.of(store);
    const renew = api.renew.bind(api);
    api.renew = async (...args) => (await renewing(), renew(...args));
    const client = new LeaseClient({ store, retry: { retries: 0 } });
    return { ...fresh, server: undefined, client, other: new LeaseClient({ store }), traffic, waiting: () => api.waiting, [Symbol.asyncDispose]: async () => store.close() };
  }
  const server = await startServer({ host: "127.0.0.1", port: 0, databaseUrl: fresh.url, auth: { tokens: [TOKEN] }, ...config });
  const fetchThrough: typeof fetch = async (input, init) => {
    if (String(input).endsWith("/renew")) await renewing();
    return fetch(input, init);
  };
  const client = new LeaseClient({ baseUrl: server.url, token: TOKEN, fetch: fetchThrough, retry: { retries: 0 } });
  const other = new LeaseClient({ baseUrl: server.url, token: TOKEN });
  return { ...fresh, server, client, other, traffic, waiting: () => server.waiting, [Symbol.asyncDispose]: () => server.stop() };
}

const wait = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe.each(TRANSPORTS)("withLease, %s", (transport) => {
  test("heartbeats keep the lease alive past several ttls, then completes with fn's value and the fence", async () => {
    await using s = await serving(transport);
    await s.client.enqueue({ id: "job-1" });
    let seen: { fence: number; aborted: boolean } | undefined;
    const done = await withLease(s.client, "job-1", async ({ fence, signal }) => {
      await wait(1_800); // three ttls
      seen = { fence, aborted: signal.aborted };
      return { rows: 42 };
    }, { owner: "A", ttlMs: 600 });
    expect(seen).toEqual({ fence: 1, aborted: false });
    expect(done).toMatchObject({ id: "job-1", done: true, fence: 1, owner: "A", result: { rows: 42 } });
    expect(s.traffic.renews).toBeGreaterThanOrEqual(6); // every 200 ms
    expect((await s.snapshot())["job-1"]).toMatchObject({ owner: "A", fence: 1, attempts: 1, done: 1, result: '{"rows":42}' });
  });

  test("a worker paused past its ttl loses the lease: the signal aborts, and its late result is never written", async () => {
    await using s = await serving(transport);
    await s.client.enqueue({ id: "job-1" });
    s.traffic.holdRenewsMs = 2_000; // from now on no renew gets through in time
    let abortedWith: unknown;
    const outcome = withLease(s.client, "job-1", async ({ signal }) => {
      await new Promise((resolve) => signal.addEventListener("abort", resolve, { once: true }));
      abortedWith = signal.reason;
      // B takes the job over once the lease has run out on the server, and finishes it.
      for (let tries = 0; ; tries++) {
        try {
          const { fence } = await s.other.claim("job-1", { owner: "B", ttlMs: 60_000 });
          await s.other.complete("job-1", { owner: "B", fence, result: "B's result" });
          break;
        } catch (error) {
          if (tries > 50) throw error;
          await wait(20);
        }
      }
      return "A's late result";
    }, { owner: "A", ttlMs: 300 });

    const error = await outcome.catch((error) => error);
    expect(error).toBeInstanceOf(LeaseLostError);
    expect(error.reason).toBe("expired");
    expect(abortedWith).toBe(error);
    expect((await s.snapshot())["job-1"]).toMatchObject({ owner: "B", fence: 2, done: 1, result: '"B\'s result"' });
  });

  test("a renew still in flight when fn returns goes before the complete, so no refusal is recorded against the worker", async () => {
    await using s = await serving(transport);
    await s.client.enqueue({ id: "job-1" });
    s.traffic.holdRenewsMs = 150; // each renew takes 150 ms to arrive
    const done = await withLease(s.client, "job-1", async () => {
      await wait(80); // returns while the first renew (sent at 50 ms) is still on its way
      return "ok";
    }, { owner: "A", ttlMs: 60_000, renewEveryMs: 50 });
    expect(done).toMatchObject({ done: true, result: "ok" });
    expect(s.traffic.renews).toBe(1);
    const kinds = (await s.client.events("job-1")).events.map((event) => event.kind);
    expect(kinds).toEqual(["enqueued", "claimed", "renewed", "completed"]);
  });

  test("a refused renew aborts the signal at once", async () => {
    await using s = await serving(transport);
    await s.client.enqueue({ id: "job-1" });
    const error = await withLease(s.client, "job-1", async ({ signal }) => {
      const sql = (await import("@libsql/client")).createClient({ url: s.url });
      await sql.execute("UPDATE jobs SET owner = 'intruder', fence = fence + 1 WHERE id = 'job-1'"); // someone else's lease now
      sql.close();
      await new Promise((resolve) => signal.addEventListener("abort", resolve, { once: true }));
      return "never stored";
    }, { owner: "A", ttlMs: 60_000, renewEveryMs: 20 }).catch((error) => error);
    expect(error).toBeInstanceOf(LeaseLostError);
    expect(error).toMatchObject({ reason: "superseded", currentFence: 2 });
    expect((await s.snapshot())["job-1"]).toMatchObject({ owner: "intruder", fence: 2, done: 0, result: null });
  });

  test("a job cancelled while fn runs: the next renew is refused with reason cancelled, fn's signal aborts, and the job is neither completed nor failed", async () => {
    await using s = await serving(transport);
    await s.client.enqueue({ id: "job-1" });
    let abortedWith: unknown;
    const error = await withLease(s.client, "job-1", async ({ signal }) => {
      await s.other.cancel("job-1", { by: "ops", reason: "refunded" });
      await new Promise((resolve) => signal.addEventListener("abort", resolve, { once: true }));
      abortedWith = signal.reason;
      return "never stored";
    }, { owner: "A", ttlMs: 60_000, renewEveryMs: 20 }).catch((caught) => caught);
    expect(error).toBeInstanceOf(LeaseLostError);
    expect(error).toMatchObject({ reason: "cancelled", currentFence: 1 });
    expect(abortedWith).toBe(error);
    expect((await s.snapshot())["job-1"]).toMatchObject({ owner: "A", fence: 1, done: 1, cancelled: 1, result: null, last_error: null });
    const kinds = (await s.other.events("job-1")).events.map((event) => [event.kind, event.action]);
    expect(kinds).toEqual([["enqueued", null], ["claimed", null], ["cancelled", null], ["refused", "renew"]]);
  });

  test("a job cancelled after fn's last renew: fn's late complete is refused with reason cancelled, and nothing is stored", async () => {
    await using s = await serving(transport);
    await s.client.enqueue({ id: "job-1" });
    const error = await withLease(s.client, "job-1", async ({ signal }) => {
      await s.other.cancel("job-1");
      expect(signal.aborted).toBe(false); // no renew has told it yet
      return "late";
    }, { owner: "A", ttlMs: 60_000 }).catch((caught) => caught);
    expect(error).toBeInstanceOf(LeaseLostError);
    expect(error).toMatchObject({ reason: "cancelled", code: "stale_lease", status: 409 });
    expect(await s.other.get("job-1")).toMatchObject({ status: "cancelled", result: null, fence: 1 });
  });

  test("fn's progress goes with the next renew, the latest report only, and a report the server would refuse throws at once", async () => {
    await using s = await serving(transport);
    await s.client.enqueue({ id: "job-1" });
    const seen: unknown[] = [];
    await withLease(s.client, "job-1", async ({ progress }) => {
      progress({ step: 1 });
      progress({ step: 2 }); // replaces step 1 before any renew
      expect(() => progress("x".repeat(4095))).toThrow(RangeError);
      expect(() => progress(Number.NaN)).toThrow(TypeError);
      expect(() => progress(undefined)).toThrow(TypeError);
      while (s.traffic.renews < 2) await wait(5);
      seen.push((await s.other.get("job-1")).progress);
      const reported = { step: 3 };
      progress(reported);
      reported.step = 99; // what was reported is kept, not what the object became
      const renews = s.traffic.renews;
      while (s.traffic.renews < renews + 2) await wait(5);
      seen.push((await s.other.get("job-1")).progress);
      return "ok";
    }, { owner: "A", ttlMs: 60_000, renewEveryMs: 20 });
    expect(seen).toEqual([{ step: 2 }, { step: 3 }]);
    const renewed = (await s.other.events("job-1")).events.filter((event) => event.kind === "renewed");
    expect(renewed).toEqual([expect.objectContaining({ progress: { step: 3 } })]);
  });

  test("fn throwing fails the attempt with the error's message, and rethrows fn's error", async () => {
    await using s = await serving(transport);
    await s.client.enqueue({ id: "job-1" });
    const boom = new Error("boom");
    await expect(withLease(s.client, "job-1", async () => { throw boom; }, { owner: "A", ttlMs: 60_000, retryInMs: 0 })).rejects.toBe(boom);
    expect((await s.snapshot())["job-1"]).toMatchObject({ owner: null, until: 0, fence: 1, attempts: 1, last_error: "boom", done: 0, dead: 0 });
    expect(await s.client.get("job-1")).toMatchObject({ status: "queued", lastError: "boom", attempts: 1, owner: null });
    expect(await s.other.claimNext("default", { owner: "B", ttlMs: 60_000 })).toMatchObject([{ fence: 2, job: { id: "job-1" } }]); // due at once
  });

  test("without retryInMs the failed job waits out the server's backoff; on its last attempt it is dead", async () => {
    await using s = await serving(transport);
    await s.client.enqueue({ id: "job-1" });
    await s.client.enqueue({ id: "last", maxAttempts: 1 });
    const failing = async () => { throw new Error("flaky"); };
    const sentAt = Date.now();
    await expect(withLease(s.client, "job-1", failing, { owner: "A", ttlMs: 60_000 })).rejects.toThrow("flaky");
    const job = await s.client.get("job-1");
    expect(job).toMatchObject({ status: "scheduled", lastError: "flaky", attempts: 1 });
    expect(job.runAt).toBeGreaterThanOrEqual(sentAt + 500); // 1 s times a jitter in [0.5, 1)
    await expect(withLease(s.client, "last", failing, { owner: "A", ttlMs: 60_000 })).rejects.toThrow("flaky");
    expect((await s.snapshot()).last).toMatchObject({ owner: null, attempts: 1, dead: 1, done: 1, last_error: "flaky" });
  });

  test("a thrown value that is not an Error is kept as text, and a message over the server's limit is cut to fit", async () => {
    await using s = await serving(transport);
    await s.client.enqueue({ id: "text" });
    await s.client.enqueue({ id: "long" });
    await expect(withLease(s.client, "text", async () => { throw "out of paper"; }, { owner: "A", ttlMs: 60_000 })).rejects.toBe("out of paper");
    const long = new Error("x".repeat(20_000));
    await expect(withLease(s.client, "long", async () => { throw long; }, { owner: "A", ttlMs: 60_000 })).rejects.toBe(long);
    const rows = await s.snapshot();
    expect(rows.text).toMatchObject({ owner: null, attempts: 1, last_error: "out of paper" });
    expect(rows.long).toMatchObject({ owner: null, attempts: 1, last_error: "x".repeat(10_000) });
  });

  test("a retryInMs that is not a whole number of ms, 0 or more, is refused before anything is claimed", async () => {
    await using s = await serving(transport);
    await s.client.enqueue({ id: "job-1" });
    const before = await s.snapshot();
    for (const retryInMs of [-1, 1.5]) {
      await expect(withLease(s.client, "job-1", async () => 1, { owner: "A", ttlMs: 60_000, retryInMs })).rejects.toThrow(/retryInMs must be a whole number/);
    }
    expect(await s.snapshot()).toEqual(before);
  });

  test("fn throwing after the caller's signal aborted releases the lease: a graceful stop is not a failure", async () => {
    await using s = await serving(transport);
    await s.client.enqueue({ id: "job-1" });
    const stop = new AbortController();
    const outcome = withLease(s.client, "job-1", async ({ signal }) => {
      stop.abort(new Error("shutting down"));
      throw signal.reason;
    }, { owner: "A", ttlMs: 60_000, signal: stop.signal });
    await expect(outcome).rejects.toThrow("stopped by the caller");
    expect((await s.snapshot())["job-1"]).toMatchObject({ owner: null, until: 0, fence: 1, attempts: 0, last_error: null, last_event: "released", done: 0 });
  });

  test("takes the next due job of a queue, and answers null when none is due", async () => {
    await using s = await serving(transport);
    await s.client.enqueue({ id: "low", queue: "q" });
    await s.client.enqueue({ id: "high", queue: "q", priority: 1 });
    const done = await withLease(s.client, { queue: "q" }, async ({ job }) => job.id, { owner: "A", ttlMs: 60_000 });
    expect(done).toMatchObject({ id: "high", done: true, result: "high" });
    expect(await withLease(s.client, { queue: "empty" }, async () => 1, { owner: "A", ttlMs: 60_000 })).toBeNull();
  });

  test("with waitMs it waits on the server for a job of the queue enqueued meanwhile; the lease's deadline counts from when the server took it", async () => {
    await using s = await serving(transport);
    const enqueued = wait(600).then(() => s.other.enqueue({ id: "late", queue: "q" }));
    const sentAt = Date.now();
    let seen: { aborted: boolean; after: number } | undefined;
    const done = await withLease(s.client, { queue: "q" }, async ({ signal }) => {
      await wait(200);
      seen = { aborted: signal.aborted, after: Date.now() - sentAt };
      return "in time";
    }, { owner: "A", ttlMs: 500, renewEveryMs: 450, waitMs: 5_000 }); // no renew before fn returns: the deadline is the claim's own
    await enqueued;
    expect(s.traffic.renews).toBe(0);
    // Counted from the send, the lease would have been given up at 500 ms, before the job even came.
    expect(seen).toMatchObject({ aborted: false });
    expect(seen!.after).toBeGreaterThanOrEqual(790);
    expect(done).toMatchObject({ id: "late", done: true, result: "in time", fence: 1 });
  });

  test("with waitMs, aborting the caller's signal gives up the wait: the call rejects, and the server takes nothing for it", async () => {
    await using s = await serving(transport);
    const stop = new AbortController();
    const outcome = withLease(s.client, { queue: "q" }, async () => "never", { owner: "A", ttlMs: 60_000, waitMs: 10_000, signal: stop.signal });
    while (s.waiting() === 0) await wait(2);
    stop.abort(new Error("shutting down"));
    await expect(outcome).rejects.toThrow("shutting down");
    while (s.waiting() > 0) await wait(2);
    await s.other.enqueue({ id: "after", queue: "q" });
    expect((await s.snapshot()).after).toMatchObject({ owner: null, fence: 0 });
  });

  test("the caller's signal stops fn and releases the lease without completing", async () => {
    await using s = await serving(transport);
    await s.client.enqueue({ id: "job-1" });
    const stop = new AbortController();
    const outcome = withLease(s.client, "job-1", async ({ signal }) => {
      stop.abort(new Error("shutting down"));
      expect(signal.aborted).toBe(true);
      return "partial";
    }, { owner: "A", ttlMs: 60_000, signal: stop.signal });
    await expect(outcome).rejects.toThrow("shutting down");
    expect((await s.snapshot())["job-1"]).toMatchObject({ owner: null, fence: 1, done: 0, result: null });
  });
});

describe("withLease over HTTP, its answers late or its long polls full", () => {
  test("a stop that comes while the claim is on its way gives the job back, and fn never starts", async () => {
    await using s = await serving();
    await s.client.enqueue({ id: "job-1" });
    const stop = new AbortController();
    const claiming: typeof fetch = async (input, init) => {
      const response = await fetch(input, init);
      if (String(input).endsWith("/claim")) stop.abort(new Error("shutting down")); // the answer arrives after the stop
      return response;
    };
    const client = new LeaseClient({ baseUrl: s.server!.url, token: TOKEN, fetch: claiming });
    let started = false;
    const outcome = withLease(client, "job-1", async () => (started = true), { owner: "A", ttlMs: 60_000, signal: stop.signal });
    await expect(outcome).rejects.toThrow("shutting down");
    expect(started).toBe(false);
    expect((await s.snapshot())["job-1"]).toMatchObject({ owner: null, fence: 1, attempts: 0, last_event: "released" });
    await expect(withLease(client, "job-1", async () => (started = true), { owner: "A", ttlMs: 60_000, signal: stop.signal })).rejects.toThrow("shutting down");
    expect((await s.snapshot())["job-1"]).toMatchObject({ fence: 1 }); // already stopped: not even claimed
  });

  test("with waitMs, a claim the queue's rate limit stopped is asked again when its next token is due, even where the server could not wait", async () => {
    await using s = await serving("http", { maxWaiting: 0 }); // a long poll answers after one claim, as on a full server
    await s.other.enqueueMany("q", [{ id: "a" }, { id: "b" }]);
    await s.other.queues.set("q", { ratePerSecond: 5, burst: 1 }); // a token every 200 ms
    const [first] = await s.other.claimNext("q", { owner: "B", ttlMs: 60_000 });
    expect(await withLease(s.client, { queue: "q" }, async () => "x", { owner: "A", ttlMs: 60_000 })).toBeNull(); // no waitMs: at once
    const done = await withLease(s.client, { queue: "q" }, async () => "y", { owner: "A", ttlMs: 60_000, waitMs: 3_000 });
    expect(done).toMatchObject({ id: "b", status: "done", result: "y" });
    expect(done!.until - 60_000 - (first!.until - 60_000)).toBeGreaterThanOrEqual(200); // taken at its token, on the server's clock
  });
});
