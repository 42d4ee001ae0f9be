import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { createClient } from "@libsql/client";
import { describe, expect, onTestFinished, test } from "vitest";
import {
  claimMany,
  ConflictError,
  InvalidRequestError,
  LeaseClient,
  LeaseLostError,
  NotClaimableError,
  NotFoundError,
  UnauthorizedError,
  UnavailableError,
} from "../../src/client/index.ts";
import { served, type ServedOptions, TOKEN, TRANSPORTS } from "./transports.ts";
import { NO_KEY_LIMITS } from "../contract/queues.contract.ts";

const TTL = 30_000;

/** The Node server on a fresh file database, a client for it, and the rows it leaves (jobs, and a job's events). */
async function serving(options: ServedOptions = {}) {
  const s = await served("http", options);
  return { ...s, server: s.server! };
}

/** A clock the test moves by hand; the server (or the store's calls) read it. */
const T = 1_000_000;
const handClock = () => {
  const clock = { now: T };
  return { clock, options: { clock: () => clock.now } };
};

describe.each(TRANSPORTS)("LeaseClient, %s", (transport) => {
  test("each method answers what the route answers", async () => {
    await using s = await served(transport);
    expect(await s.client.enqueue({ id: "job-1", payload: { n: 1 } })).toMatchObject({ created: true, job: { id: "job-1", payload: { n: 1 } } });
    expect(await s.client.enqueue({ id: "job-1" })).toMatchObject({ created: false, job: { id: "job-1" } });
    expect(await s.client.get("job-1")).toMatchObject({ id: "job-1", fence: 0 });
    const lease = await s.client.claim("job-1", { owner: "A", ttlMs: TTL });
    expect(lease).toMatchObject({ fence: 1, job: { owner: "A" } });
    expect(await s.client.renew("job-1", { owner: "A", fence: 1, ttlMs: TTL })).toBeGreaterThanOrEqual(lease.until);
    expect(await s.client.release("job-1", { owner: "A", fence: 1 })).toMatchObject({ owner: null, fence: 1 });
    const [next] = await s.client.claimNext("default", { owner: "B", ttlMs: TTL });
    expect(next).toMatchObject({ fence: 2, job: { id: "job-1", owner: "B" } });
    expect((await s.client.complete("job-1", { owner: "B", fence: 2, result: { ok: true } })).job).toMatchObject({ done: true, result: { ok: true } });
    expect(await s.client.claimNext("default", { owner: "B", ttlMs: TTL })).toEqual([]);
    expect((await s.snapshot())["job-1"]).toMatchObject({ owner: "B", fence: 2, done: 1, result: '{"ok":true}' });
  });

  test("enqueue with a dedup key answers what the route answers: deduplicated, debounced, superseded, and the checkLease of a superseded lease", async () => {
    await using s = await served(transport);
    expect(await s.client.enqueue({ id: "pay-1", queue: "q", dedupKey: "order-7", dedupTtlMs: 60_000 })).toMatchObject({ created: true, job: { dedupKey: "order-7" } });
    expect(await s.client.enqueue({ id: "pay-2", queue: "q", dedupKey: "order-7", dedupTtlMs: 60_000 })).toMatchObject({ created: false, deduplicated: true, job: { id: "pay-1" } });
    await s.client.enqueue({ id: "save-1", queue: "q", dedupKey: "doc", debounceMs: 60_000, payload: 1 });
    expect(await s.client.enqueue({ id: "save-2", queue: "q", dedupKey: "doc", debounceMs: 60_000, payload: 2 })).toMatchObject({ created: false, debounced: true, job: { id: "save-1", payload: 2 } });
    await s.client.enqueue({ id: "v1", queue: "q", dedupKey: "sync", supersede: true });
    const lease = await s.client.claim("v1", { owner: "A", ttlMs: TTL });
    expect(await s.client.enqueue({ id: "v2", queue: "q", dedupKey: "sync", supersede: true })).toMatchObject({ created: true, job: { id: "v2" }, superseded: "v1" });
    expect(await s.client.checkLease("v1", { owner: "A", fence: lease.fence })).toMatchObject({ current: false, reason: "cancelled", supersededBy: "v2" });
    const lost = await s.client.complete("v1", { owner: "A", fence: lease.fence, result: "late" }).catch((error) => error);
    expect(lost).toBeInstanceOf(LeaseLostError);
    expect(lost).toMatchObject({ reason: "cancelled" });
    expect(Object.keys(await s.snapshot()).sort()).toEqual(["pay-1", "save-1", "v1", "v2"]);
  });

  test("refusals are typed errors that carry the server's code and message", async () => {
    await using s = await served(transport);
    await s.client.enqueue({ id: "job-1" });
    await s.client.claim("job-1", { owner: "A", ttlMs: TTL });
    const before = await s.snapshot();

    const notClaimable = await s.client.claim("job-1", { owner: "B", ttlMs: TTL }).catch((error) => error);
    expect(notClaimable).toBeInstanceOf(NotClaimableError);
    expect(notClaimable).toMatchObject({ status: 409, code: "not_claimable", reason: "leased" });

    const lost = await s.client.complete("job-1", { owner: "B", fence: 1, result: 1 }).catch((error) => error);
    expect(lost).toBeInstanceOf(LeaseLostError);
    expect(lost).toMatchObject({ status: 409, code: "stale_lease", reason: "not_owner", currentFence: 1 });
    expect(lost.message).toContain("no longer yours");

    expect(await s.client.get("nope").catch((error) => error)).toBeInstanceOf(NotFoundError);
    const invalid = await s.client.claim("job-1", { owner: "B", ttlMs: 0 }).catch((error) => error);
    expect(invalid).toBeInstanceOf(InvalidRequestError);
    expect(invalid).toMatchObject({ status: 400, code: "invalid_request", message: expect.stringMatching(/^ttlMs must be/) });
    expect(await s.snapshot()).toEqual(before);
    expect(s.delays).toEqual([]); // refusals are answers, never retried
  });

  test("claimMany: all claims in flight at once, exactly one winner, answers in input order", async () => {
    await using s = await served(transport);
    const owners = Array.from({ length: 16 }, (_, i) => `w${i}`);
    for (let round = 0; round < 10; round++) {
      await s.client.enqueue({ id: `round-${round}` });
      const fences = await claimMany(s.client, `round-${round}`, owners, TTL);
      expect(fences.filter((fence) => fence === 1)).toHaveLength(1);
      expect(fences.filter((fence) => fence === null)).toHaveLength(15);
      expect((await s.snapshot())[`round-${round}`]).toMatchObject({ owner: owners[fences.indexOf(1)], fence: 1 });
    }
  });
});

describe("LeaseClient over HTTP", () => {
  test("a wrong token is UnauthorizedError, and changes nothing", async () => {
    await using s = await serving();
    await s.client.enqueue({ id: "job-1" });
    const before = await s.snapshot();
    const stranger = new LeaseClient({ baseUrl: s.server.url, token: "wrong" });
    expect(await stranger.get("job-1").catch((error) => error)).toMatchObject({ name: "UnauthorizedError", code: "unauthorized", status: 401 });
    expect(await stranger.get("job-1").catch((error) => error)).toBeInstanceOf(UnauthorizedError);
    expect(await stranger.queues.stats().catch((error) => error)).toBeInstanceOf(UnauthorizedError);
    expect(await s.snapshot()).toEqual(before);
  });

  test("a 503 is retried after the server's Retry-After, and the call then succeeds", async () => {
    await using s = await serving({ busyTimeoutMs: 20 });
    // Another writer holds the database's write lock, so the server's first attempt answers 503.
    const holder = createClient({ url: s.url });
    const lock = await holder.transaction("write");
    const client = new LeaseClient({
      baseUrl: s.server.url,
      token: TOKEN,
      retry: { sleep: async (ms) => { s.delays.push(ms); lock.close(); } }, // the lock goes while we wait
    });
    try {
      expect(await client.enqueue({ id: "job-1" })).toMatchObject({ created: true });
      expect(s.delays).toEqual([1000]); // Retry-After: 1
      expect(Object.keys(await s.snapshot())).toEqual(["job-1"]);
    } finally {
      holder.close();
    }
  });

  test("a claim is retried on 503 too: the database refused it, so nothing was written", async () => {
    await using s = await serving({ busyTimeoutMs: 20 });
    await s.client.enqueue({ id: "job-1" });
    const holder = createClient({ url: s.url });
    const lock = await holder.transaction("write");
    const client = new LeaseClient({ baseUrl: s.server.url, token: TOKEN, retry: { sleep: async () => lock.close() } });
    try {
      expect(await client.claim("job-1", { owner: "A", ttlMs: TTL })).toMatchObject({ fence: 1 });
    } finally {
      holder.close();
    }
  });

  test("an attempt that gets no answer in timeoutMs counts as a broken connection: a get is sent again, a claim is not", async () => {
    let requests = 0;
    const silent = createServer(() => void requests++); // takes every request and never answers
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
    const { port } = silent.address() as AddressInfo;
    const delays: number[] = [];
    const client = new LeaseClient({ baseUrl: `http://127.0.0.1:${port}`, timeoutMs: 100, retry: { retries: 1, sleep: async (ms) => void delays.push(ms) } });
    try {
      expect(await client.claim("job-1", { owner: "A", ttlMs: TTL }).catch((error) => error)).toMatchObject({ name: "UnavailableError", code: "unreachable" });
      expect(requests).toBe(1);
      expect(await client.get("job-1").catch((error) => error)).toBeInstanceOf(UnavailableError);
      expect(requests).toBe(3);
      expect(delays).toHaveLength(1);
    } finally {
      silent.closeAllConnections();
      silent.close();
    }
    expect(() => new LeaseClient({ baseUrl: "http://x", timeoutMs: 0 })).toThrow(RangeError);
  });

  test("a 503 whose outcome is unknown is retried for a complete, but never for a claim, which may have landed", async () => {
    let calls = 0;
    const brokenMidway: typeof fetch = async () => {
      calls++;
      const body = { error: { code: "unavailable", message: "the write may or may not have been applied", details: { outcome: "unknown" } } };
      return new Response(JSON.stringify(body), { status: 503, headers: { "Content-Type": "application/json", "Retry-After": "1" } });
    };
    const delays: number[] = [];
    const client = new LeaseClient({ baseUrl: "http://fencelease.test", fetch: brokenMidway, retry: { retries: 2, sleep: async (ms) => void delays.push(ms) } });
    expect(await client.claim("job-1", { owner: "A", ttlMs: TTL }).catch((error) => error)).toMatchObject({ name: "UnavailableError", details: { outcome: "unknown" } });
    expect([calls, delays]).toEqual([1, []]);
    expect(await client.complete("job-1", { owner: "A", fence: 1, result: 1 }).catch((error) => error)).toBeInstanceOf(UnavailableError);
    expect([calls, delays]).toEqual([4, [1000, 1000]]);
  });

  test("backs off exponentially, capped, and gives up with UnavailableError when the server stays down", async () => {
    const s = await serving();
    await s.server.stop(); // connection refused: the request was never sent, so even a claim may be retried
    const error = await s.client.claim("job-1", { owner: "A", ttlMs: TTL }).catch((error) => error);
    expect(error).toBeInstanceOf(UnavailableError);
    expect(error).toMatchObject({ code: "unreachable" });
    expect(s.delays).toEqual([50, 100, 200]); // half (random 0.5) of 100, 200, 400
  });

  test("a claim that may have reached the server is not sent again, while a complete is", async () => {
    await using s = await serving();
    await s.client.enqueue({ id: "job-1" });
    let failNext = 0;
    const flaky: typeof fetch = async (input, init) => {
      if (failNext > 0) {
        failNext--;
        await fetch(input, init); // the request is served...
        throw new TypeError("socket hang up"); // ...but its answer is lost
      }
      return fetch(input, init);
    };
    const client = new LeaseClient({ baseUrl: s.server.url, token: TOKEN, fetch: flaky, retry: { sleep: async () => {} } });
    failNext = 1;
    expect(await client.claim("job-1", { owner: "A", ttlMs: TTL }).catch((error) => error)).toBeInstanceOf(UnavailableError);
    expect((await s.snapshot())["job-1"]).toMatchObject({ owner: "A", fence: 1 }); // it did land, once
    failNext = 1;
    expect((await client.complete("job-1", { owner: "A", fence: 1, result: "r" })).job).toMatchObject({ done: true, result: "r" });
  });


  test("list refuses a limit over 100 and an unknown status with InvalidRequestError", async () => {
    await using s = await serving();
    expect(await s.client.list({ limit: 101 }).catch((error) => error)).toMatchObject({ name: "InvalidRequestError", status: 400, message: "limit must be at most 100" });
    const status = "zombie" as "dead"; // what an untyped caller could send
    expect(await s.client.list({ status }).catch((error) => error)).toMatchObject({ name: "InvalidRequestError", message: expect.stringContaining("must be one or more of queued") });
  });

  test("claimNext with waitMs is given its waitMs on top of timeoutMs, and answers the job enqueued meanwhile", async () => {
    await using s = await serving();
    // The job comes once the claim waits on the server and its timeoutMs has passed, within its waitMs.
    const client = new LeaseClient({ baseUrl: s.server.url, token: TOKEN, timeoutMs: 1_000, retry: { retries: 0 } });
    const sentAt = performance.now();
    const answered = client.claimNextAnswer("q", { owner: "A", ttlMs: TTL, waitMs: 5_000 });
    while (s.server.waiting === 0) await new Promise((resolve) => setTimeout(resolve, 2));
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, 1_500 - (performance.now() - sentAt))));
    await s.client.enqueue({ id: "late", queue: "q" });
    const answer = await answered;
    expect(performance.now() - sentAt).toBeGreaterThan(1_000); // answered past timeoutMs: the client gave it its waitMs on top
    expect(answer.leases.map((lease) => [lease.job.id, lease.fence])).toEqual([["late", 1]]);
    expect(answer.waitedMs).toBeGreaterThan(0); // the server waited before the claim that took it
    expect(await client.claimNext("q", { owner: "A", ttlMs: TTL, waitMs: 200 })).toEqual([]);
  });

  test("fail, retry and delete are not sent again after a lost answer, while the reads are", async () => {
    await using s = await serving();
    await s.client.enqueue({ id: "job-1", maxAttempts: 1 });
    await s.client.enqueue({ id: "job-2" });
    await s.client.claim("job-1", { owner: "A", ttlMs: TTL });
    let failNext = 0;
    const sent: string[] = [];
    const flaky: typeof fetch = async (input, init) => {
      sent.push(`${init?.method} ${new URL(String(input)).pathname}`);
      const response = await fetch(input, init);
      if (failNext > 0) {
        failNext--;
        throw new TypeError("socket hang up"); // served, but its answer is lost
      }
      return response;
    };
    const client = new LeaseClient({ baseUrl: s.server.url, token: TOKEN, fetch: flaky, retry: { sleep: async () => {} } });
    for (const call of [
      () => client.fail("job-1", { owner: "A", fence: 1, error: "boom" }),
      () => client.retry("job-1"),
      () => client.delete("job-2"),
    ]) {
      failNext = 1;
      expect(await call().catch((error) => error)).toBeInstanceOf(UnavailableError);
    }
    expect(sent).toEqual(["POST /v1/jobs/job-1/fail", "POST /v1/jobs/job-1/retry", "DELETE /v1/jobs/job-2"]);
    expect(await s.snapshot()).toEqual({ "job-1": expect.objectContaining({ dead: 0, attempts: 0, last_error: "boom" }) }); // each landed once
    sent.length = 0;
    for (const call of [() => client.list(), () => client.events("job-1"), () => client.checkLease("job-1", { owner: "A", fence: 1 }), () => client.queues.stats()]) {
      failNext = 1;
      await call();
    }
    expect(sent).toEqual([
      "GET /v1/jobs", "GET /v1/jobs",
      "GET /v1/jobs/job-1/events", "GET /v1/jobs/job-1/events",
      "GET /v1/jobs/job-1/lease", "GET /v1/jobs/job-1/lease",
      "GET /v1/stats", "GET /v1/stats",
    ]);
  });
});

describe("LeaseClient's base URL", () => {
  test("one without its scheme, or not http(s), is refused when the client is built, saying what to write; an http(s) URL in any case is taken", async () => {
    const refusals = ["127.0.0.1:8787", "localhost:8787", "fencelease.example/api", "ftp://fencelease.example", ""].map((baseUrl) => {
      try {
        new LeaseClient({ baseUrl });
        return `${baseUrl}: built`;
      } catch (error) {
        return `${(error as Error).name}: ${(error as Error).message}`;
      }
    });
    expect(refusals).toEqual([
      'TypeError: baseUrl must be an absolute http:// or https:// URL, such as http://127.0.0.1:8787, got "127.0.0.1:8787"; did you mean http://127.0.0.1:8787?',
      'TypeError: baseUrl must be an absolute http:// or https:// URL, such as http://127.0.0.1:8787, got "localhost:8787"; did you mean http://localhost:8787?',
      'TypeError: baseUrl must be an absolute http:// or https:// URL, such as http://127.0.0.1:8787, got "fencelease.example/api"; did you mean http://fencelease.example/api?',
      'TypeError: baseUrl must be an absolute http:// or https:// URL, such as http://127.0.0.1:8787, got "ftp://fencelease.example"',
      'TypeError: baseUrl must be an absolute http:// or https:// URL, such as http://127.0.0.1:8787, got ""',
    ]);
    await using s = await serving();
    const upper = new LeaseClient({ baseUrl: s.server.url.replace("http://", "HTTP://"), token: TOKEN });
    expect(await upper.enqueue({ id: "job-1" })).toMatchObject({ created: true });
  });
});

describe.each(TRANSPORTS)("LeaseClient: a job's whole life, %s", (transport) => {
  test("fail ends the lease as a failed attempt: the job is due again after retryInMs, its error kept", async () => {
    const { clock, options } = handClock();
    await using s = await served(transport, options);
    await s.client.enqueue({ id: "job-1", maxAttempts: 2 });
    await s.client.enqueue({ id: "bystander" });
    await s.client.claim("job-1", { owner: "A", ttlMs: TTL });
    const before = await s.snapshot();
    clock.now = T + 10;
    const { job } = await s.client.fail("job-1", { owner: "A", fence: 1, error: "disk full", retryInMs: 60_000 });
    expect(job).toMatchObject({ id: "job-1", status: "scheduled", owner: null, fence: 1, attempts: 1, lastError: "disk full", runAt: T + 60_010, done: false });
    const after = await s.snapshot();
    expect(after["job-1"]).toMatchObject({ owner: null, until: 0, fence: 1, attempts: 1, run_at: T + 60_010, last_error: "disk full", done: 0, dead: 0 });
    expect(after.bystander).toEqual(before.bystander);
    expect((await s.eventRows("job-1")).at(-1)).toEqual({ kind: "failed", action: null, owner: "A", fence: 1, current_owner: null, current_fence: null, error: "disk full" });
  });

  test("fail on the last attempt makes the job dead", async () => {
    await using s = await served(transport, handClock().options);
    await s.client.enqueue({ id: "job-1", maxAttempts: 1 });
    await s.client.claim("job-1", { owner: "A", ttlMs: TTL });
    expect((await s.client.fail("job-1", { owner: "A", fence: 1, error: "bad input" })).job).toMatchObject({ status: "dead", done: false, attempts: 1, lastError: "bad input" });
    expect((await s.snapshot())["job-1"]).toMatchObject({ owner: null, fence: 1, attempts: 1, dead: 1, done: 1, run_at: T, last_error: "bad input" });
  });

  test("a fail repeated after it landed is refused as stale: nothing changes but the refusal recorded", async () => {
    await using s = await served(transport, handClock().options);
    await s.client.enqueue({ id: "job-1" });
    await s.client.claim("job-1", { owner: "A", ttlMs: TTL });
    await s.client.fail("job-1", { owner: "A", fence: 1, error: "first" });
    const before = await s.snapshot();
    const again = await s.client.fail("job-1", { owner: "A", fence: 1, error: "again" }).catch((error) => error);
    expect(again).toBeInstanceOf(LeaseLostError);
    expect(again).toMatchObject({ status: 409, code: "stale_lease", reason: "not_owner", currentFence: 1 });
    expect(await s.snapshot()).toEqual(before);
    expect((await s.eventRows("job-1")).at(-1)).toEqual({ kind: "refused", action: "fail", owner: "A", fence: 1, current_owner: null, current_fence: 1, error: null });
    expect(await s.client.fail("nope", { owner: "A", fence: 1, error: "x" }).catch((error) => error)).toBeInstanceOf(NotFoundError);
  });

  test("retry puts a dead job back, due at once with its attempts reset; the next claim goes on from its fence", async () => {
    const { clock, options } = handClock();
    await using s = await served(transport, options);
    await s.client.enqueue({ id: "job-1", maxAttempts: 1 });
    await s.client.claim("job-1", { owner: "A", ttlMs: TTL });
    await s.client.fail("job-1", { owner: "A", fence: 1, error: "bad input" });
    clock.now = T + 5;
    expect(await s.client.retry("job-1")).toMatchObject({ status: "queued", attempts: 0, fence: 1, runAt: T + 5, owner: null, done: false });
    expect((await s.snapshot())["job-1"]).toMatchObject({ dead: 0, done: 0, attempts: 0, fence: 1, run_at: T + 5 });
    expect(await s.client.claim("job-1", { owner: "B", ttlMs: TTL })).toMatchObject({ fence: 2 });
  });

  test("retry of a job that is not dead is a ConflictError naming its status, and changes nothing", async () => {
    await using s = await served(transport);
    await s.client.enqueue({ id: "job-1" });
    const before = await s.snapshot();
    const conflict = await s.client.retry("job-1").catch((error) => error);
    expect(conflict).toBeInstanceOf(ConflictError);
    expect(conflict).toMatchObject({ status: 409, code: "conflict", jobStatus: "queued" });
    expect(conflict.message).toContain("only a dead job can be retried");
    expect(await s.client.retry("nope").catch((error) => error)).toBeInstanceOf(NotFoundError);
    expect(await s.snapshot()).toEqual(before);
  });

  test("delete removes a job nobody holds, and the id enqueued again starts above its old fence", async () => {
    await using s = await served(transport);
    await s.client.enqueue({ id: "job-1" });
    await s.client.enqueue({ id: "bystander" });
    await s.client.claim("job-1", { owner: "A", ttlMs: TTL });
    await s.client.release("job-1", { owner: "A", fence: 1 });
    const before = await s.snapshot();
    expect(await s.client.delete("job-1")).toBeUndefined();
    expect(await s.snapshot()).toEqual({ bystander: before.bystander });
    expect(await s.client.get("job-1").catch((error) => error)).toBeInstanceOf(NotFoundError);
    await s.client.enqueue({ id: "job-1" });
    expect(await s.client.claim("job-1", { owner: "B", ttlMs: TTL })).toMatchObject({ fence: 2 });
  });

  test("delete of a leased job is a ConflictError, of an unknown one a NotFoundError; nothing changes", async () => {
    await using s = await served(transport);
    await s.client.enqueue({ id: "job-1" });
    await s.client.claim("job-1", { owner: "A", ttlMs: TTL });
    const before = await s.snapshot();
    const conflict = await s.client.delete("job-1").catch((error) => error);
    expect(conflict).toBeInstanceOf(ConflictError);
    expect(conflict).toMatchObject({ status: 409, code: "conflict", jobStatus: "leased" });
    expect(await s.client.delete("nope").catch((error) => error)).toBeInstanceOf(NotFoundError);
    expect(await s.snapshot()).toEqual(before);
  });

  test("list pages through jobs in id order, by queue and by status, ids and cursors encoded", async () => {
    await using s = await served(transport);
    for (const id of ["z", "c d", "a/b", "a&b"]) await s.client.enqueue({ id, queue: "q" });
    await s.client.enqueue({ id: "other", queue: "r" });
    await s.client.claim("c d", { owner: "A", ttlMs: TTL });
    const before = await s.snapshot();
    const first = await s.client.list({ queue: "q", limit: 2 });
    expect({ ids: first.jobs.map((job) => job.id), nextCursor: first.nextCursor }).toEqual({ ids: ["a&b", "a/b"], nextCursor: "a/b" });
    const second = await s.client.list({ queue: "q", limit: 2, cursor: first.nextCursor! });
    expect({ ids: second.jobs.map((job) => job.id), nextCursor: second.nextCursor }).toEqual({ ids: ["c d", "z"], nextCursor: null });
    expect(second.jobs[0]).toMatchObject({ id: "c d", status: "leased", owner: "A", fence: 1 });
    expect(await s.client.list({ status: "leased" })).toMatchObject({ jobs: [{ id: "c d" }], nextCursor: null });
    expect((await s.client.list()).jobs.map((job) => job.id)).toEqual(["a&b", "a/b", "c d", "other", "z"]);
    expect(await s.snapshot()).toEqual(before);
  });

  test("events tell a job's history oldest first, a refusal with the lease presented and the current one, page by page", async () => {
    const { clock, options } = handClock();
    await using s = await served(transport, options);
    await s.client.enqueue({ id: "job-1" });
    await s.client.claim("job-1", { owner: "A", ttlMs: TTL });
    clock.now = T + TTL; // A's lease has run out
    await s.client.claim("job-1", { owner: "B", ttlMs: TTL });
    await s.client.complete("job-1", { owner: "A", fence: 1, result: "late" }).catch(() => undefined);
    await s.client.complete("job-1", { owner: "B", fence: 2, result: "ok" });
    const { events, nextCursor } = await s.client.events("job-1");
    expect(nextCursor).toBeNull();
    expect(events.map(({ kind, action, owner, fence, currentOwner, currentFence }) => ({ kind, action, owner, fence, currentOwner, currentFence }))).toEqual([
      { kind: "enqueued", action: null, owner: null, fence: null, currentOwner: null, currentFence: null },
      { kind: "claimed", action: null, owner: "A", fence: 1, currentOwner: null, currentFence: null },
      { kind: "expired", action: null, owner: "A", fence: 1, currentOwner: null, currentFence: null },
      { kind: "claimed", action: null, owner: "B", fence: 2, currentOwner: null, currentFence: null },
      { kind: "refused", action: "complete", owner: "A", fence: 1, currentOwner: "B", currentFence: 2 },
      { kind: "completed", action: null, owner: "B", fence: 2, currentOwner: null, currentFence: null },
    ]);
    expect(events.map((event) => event.kind)).toEqual((await s.eventRows("job-1")).map((row) => row.kind));
    const page1 = await s.client.events("job-1", { limit: 4 });
    expect(page1.events).toEqual(events.slice(0, 4));
    expect(page1.nextCursor).toBe(String(events[3]!.seq));
    expect(await s.client.events("job-1", { limit: 4, cursor: page1.nextCursor! })).toEqual({ events: events.slice(4), nextCursor: null });
  });

  test("events of an unknown job are none, and a limit of 0 is an InvalidRequestError", async () => {
    await using s = await served(transport);
    expect(await s.client.events("nope")).toEqual({ events: [], nextCursor: null });
    expect(await s.client.events("nope", { limit: 0 }).catch((error) => error)).toMatchObject({ name: "InvalidRequestError", code: "invalid_request", message: expect.stringMatching(/^limit must be/) });
  });

  test("checkLease answers whether a lease is the current one, with the job's fence and lease end, and why not", async () => {
    const { clock, options } = handClock();
    await using s = await served(transport, options);
    await s.client.enqueue({ id: "invoice/42?x" });
    await s.client.claim("invoice/42?x", { owner: "A", ttlMs: TTL });
    const before = await s.snapshot();
    expect(await s.client.checkLease("invoice/42?x", { owner: "A", fence: 1 })).toEqual({ current: true, fence: 1, until: T + TTL });
    expect(await s.client.checkLease("invoice/42?x", { owner: "B", fence: 1 })).toEqual({ current: false, fence: 1, until: T + TTL, reason: "not_owner" });
    expect(await s.client.checkLease("invoice/42?x", { owner: "A", fence: 2 })).toEqual({ current: false, fence: 1, until: T + TTL, reason: "not_owner" });
    clock.now = T + TTL; // at `until` the lease has expired
    expect(await s.client.checkLease("invoice/42?x", { owner: "A", fence: 1 })).toEqual({ current: false, fence: 1, until: T + TTL, reason: "expired" });
    expect(await s.client.checkLease("nope", { owner: "A", fence: 1 }).catch((error) => error)).toBeInstanceOf(NotFoundError);
    expect(await s.snapshot()).toEqual(before);
  });

  test("queues.stats counts each queue's jobs by status, its oldest due job's age, and its refused stale writes", async () => {
    const { clock, options } = handClock();
    await using s = await served(transport, options);
    await s.client.enqueue({ id: "queued", queue: "q" });
    await s.client.enqueue({ id: "leased", queue: "q" });
    await s.client.enqueue({ id: "later", queue: "r", delayMs: 60_000 });
    await s.client.claim("leased", { owner: "A", ttlMs: TTL });
    await s.client.complete("leased", { owner: "B", fence: 1, result: 1 }).catch(() => undefined);
    clock.now = T + 250;
    const none = { queued: 0, scheduled: 0, leased: 0, done: 0, dead: 0, cancelled: 0 };
    expect(await s.client.queues.stats()).toEqual([
      { queue: "q", jobs: { ...none, queued: 1, leased: 1 }, oldestDueAgeMs: 250, refused: { lastHour: 1, total: 1 }, paused: false, topKeys: [] },
      { queue: "r", jobs: { ...none, scheduled: 1 }, oldestDueAgeMs: null, refused: { lastHour: 0, total: 0 }, paused: false, topKeys: [] },
    ]);
  });

  test("queues.series answers what a queue did a step at a time, and a bad step is InvalidRequestError", async () => {
    const { clock, options } = handClock();
    await using s = await served(transport, options);
    await s.client.enqueue({ id: "a", queue: "q" });
    const lease = await s.client.claim("a", { owner: "A", ttlMs: TTL });
    clock.now = T + 2_000;
    await s.client.complete("a", { owner: "A", fence: lease.fence, result: "ok" });
    const minute = T - (T % 60_000);
    const none = { count: 0, p50: null, p90: null, p99: null };
    expect(await s.client.queues.series("q", { from: T, to: T + 60_000 })).toEqual({
      queue: "q", step: 60_000, from: minute, to: T + 60_000, keptFrom: 0,
      points: [
        { at: minute, enqueued: 1, completed: 1, failed: 0, expired: 0, dead: 0, refused: 0, wait: { count: 1, p50: 3, p90: 5, p99: 5 }, run: { count: 1, p50: 1_750, p90: 2_350, p99: 2_485 } },
        { at: minute + 60_000, enqueued: 0, completed: 0, failed: 0, expired: 0, dead: 0, refused: 0, wait: none, run: none },
      ],
    });
    const refused = await s.client.queues.series("q", { step: 1_000 }).catch((error) => error);
    expect(refused).toBeInstanceOf(InvalidRequestError);
    expect(refused.message).toContain("step must be a whole number of minutes");
  });

  test("queues.keys pages through a queue's keys with open jobs, and a bad limit is InvalidRequestError", async () => {
    await using s = await served(transport);
    await s.store.queues.set("q", { maxLeasedPerKey: 1 });
    await s.store.enqueueMany("q", { jobs: [{ id: "a-1", key: "acme" }, { id: "a-2", key: "acme" }, { id: "b-1", key: "beta" }] });
    await s.store.enqueueMany("other", { jobs: [{ id: "o-1", key: "acme" }] });
    await s.client.claim("a-1", { owner: "A", ttlMs: TTL });
    const first = await s.client.queues.keys("q", { limit: 1 });
    expect(first).toEqual({ keys: [{ key: "acme", waiting: 1, leased: 1, heldBack: "key_full" }], nextCursor: "acme" });
    expect(await s.client.queues.keys("q", { cursor: first.nextCursor! })).toEqual({ keys: [{ key: "beta", waiting: 1, leased: 0, heldBack: null }], nextCursor: null });
    const refused = await s.client.queues.keys("q", { limit: 1001 }).catch((error) => error);
    expect(refused).toBeInstanceOf(InvalidRequestError);
    expect(refused.message).toContain("limit must be at most 1000");
  });

  test("queues.pause, resume, set, get and list answer the queue's settings, and a paused queue's job is NotClaimableError paused", async () => {
    await using s = await served(transport);
    await s.client.enqueue({ id: "job-1", queue: "q" });
    expect(await s.client.queues.get("q")).toEqual({ queue: "q", paused: false, maxLeased: null, ratePerSecond: null, burst: null, ...NO_KEY_LIMITS });
    expect(await s.client.queues.pause("q")).toEqual({ queue: "q", paused: true, maxLeased: null, ratePerSecond: null, burst: null, ...NO_KEY_LIMITS });
    const refused = await s.client.claim("job-1", { owner: "A", ttlMs: TTL }).catch((error) => error);
    expect(refused).toBeInstanceOf(NotClaimableError);
    expect(refused).toMatchObject({ details: { reason: "paused" } });
    expect(await s.client.queues.set("q", { maxLeased: 4 })).toEqual({ queue: "q", paused: true, maxLeased: 4, ratePerSecond: null, burst: null, ...NO_KEY_LIMITS });
    expect(await s.client.queues.resume("q")).toEqual({ queue: "q", paused: false, maxLeased: 4, ratePerSecond: null, burst: null, ...NO_KEY_LIMITS });
    expect(await s.client.queues.list()).toEqual([{ queue: "q", paused: false, maxLeased: 4, ratePerSecond: null, burst: null, ...NO_KEY_LIMITS }]);
    expect(await s.client.claimNext("q", { owner: "A", ttlMs: TTL })).toHaveLength(1);
  });

  test("queues.set sets a rate limit, and claimNext says when its next token is due (retryAfterMs) when it stopped the claim", async () => {
    const { clock, options } = handClock();
    await using s = await served(transport, options);
    await s.client.enqueueMany("q", [{ id: "a" }, { id: "b" }]);
    expect(await s.client.queues.set("q", { ratePerSecond: 2, burst: 1 })).toEqual({ queue: "q", paused: false, maxLeased: null, ratePerSecond: 2, burst: 1, ...NO_KEY_LIMITS });
    const first = await s.client.claimNext("q", { owner: "A", ttlMs: TTL });
    expect(first).toHaveLength(1);
    expect("retryAfterMs" in first).toBe(false); // it took what it asked for
    const stopped = await s.client.claimNext("q", { owner: "A", ttlMs: TTL });
    expect([...stopped]).toEqual([]);
    expect(stopped.retryAfterMs).toBe(500);
    clock.now = T + 500;
    expect((await s.client.claimNext("q", { owner: "A", ttlMs: TTL })).map((lease) => lease.job.id)).toEqual(["b"]);
    await expect(s.client.claim("a", { owner: "B", ttlMs: TTL })).rejects.toMatchObject({ reason: "leased" });
  });

  test("keys: enqueue and enqueueMany carry a key, queues.set sets the per-key settings, and a claim by id its key holds back is NotClaimableError with its reason and behind", async () => {
    await using s = await served(transport);
    const keyed = { maxLeasedPerKey: 2, keyRatePerSecond: 1.5, keyBurst: 4, orderedByKey: true, fairByKey: false };
    expect(await s.client.queues.set("q", keyed)).toEqual({ queue: "q", paused: false, maxLeased: null, ratePerSecond: null, burst: null, ...keyed });
    expect(await s.client.queues.get("q")).toEqual({ queue: "q", paused: false, maxLeased: null, ratePerSecond: null, burst: null, ...keyed });
    expect((await s.client.enqueue({ id: "a-1", queue: "q", key: "tenant-a" })).job).toMatchObject({ id: "a-1", key: "tenant-a" });
    expect(await s.client.enqueueMany("q", [{ id: "a-2", key: "tenant-a" }, { id: "plain" }])).toEqual([{ id: "a-2", created: true }, { id: "plain", created: true }]);
    expect([(await s.client.get("a-2")).key, (await s.client.get("plain")).key]).toEqual(["tenant-a", null]);
    const before = await s.snapshot();
    const refused = await s.client.claim("a-2", { owner: "A", ttlMs: TTL }).catch((error) => error);
    expect(refused).toBeInstanceOf(NotClaimableError);
    expect(refused).toMatchObject({ status: 409, code: "not_claimable", reason: "key_ordered", behind: "a-1", details: { reason: "key_ordered", behind: "a-1" } });
    expect(await s.snapshot()).toEqual(before);
    expect((await s.client.claim("a-1", { owner: "A", ttlMs: TTL })).job).toMatchObject({ id: "a-1", key: "tenant-a" });
    expect(await s.client.claim("plain", { owner: "A", ttlMs: TTL })).toMatchObject({ job: { id: "plain", key: null } }); // no key: not held back
  });

  test("a bad key or per-key setting is InvalidRequestError naming the field, and nothing changes", async () => {
    await using s = await served(transport);
    await s.client.queues.set("q", { maxLeasedPerKey: 3 });
    const before = await s.snapshot();
    for (const call of [() => s.client.enqueue({ id: "job-1", key: "" }), () => s.client.enqueueMany("q", [{ id: "job-2", key: "k".repeat(256) }])]) {
      const refused = await call().catch((error) => error);
      expect(refused).toBeInstanceOf(InvalidRequestError);
      expect(refused.message).toMatch(/^(jobs(\.0|\[0\])\.)?key /); // the HTTP schema's words, or the store's
    }
    const setting = await s.client.queues.set("q", { keyBurst: 2 }).catch((error) => error);
    expect(setting).toMatchObject({ name: "InvalidRequestError", status: 400, code: "invalid_request", message: expect.stringMatching(/^keyBurst needs keyRatePerSecond/) });
    expect(await s.snapshot()).toEqual(before);
    expect((await s.client.queues.get("q")).maxLeasedPerKey).toBe(3);
  });

  test("a schedule's key: schedules.put answers it, and its fires enqueue jobs with it", async () => {
    const { options } = handClock();
    await using s = await served(transport, options);
    expect(await s.client.schedules.put("tick", { queue: "q", everyMs: 60_000, key: "tenant-a" })).toMatchObject({ name: "tick", key: "tenant-a", nextFireAt: T + 60_000 });
    expect((await s.client.schedules.get("tick")).key).toBe("tenant-a");
    const [fired] = (await s.store.schedules.fireDue({ now: T + 60_000 })).jobs;
    expect(await s.client.get(fired!.id)).toMatchObject({ queue: "q", key: "tenant-a" });
  });

  test("waitFor long-polls until the job is done and answers it; at its own timeout it answers the job as it is", async () => {
    await using s = await served(transport);
    await s.client.enqueue({ id: "job-1" });
    const lease = await s.client.claim("job-1", { owner: "A", ttlMs: TTL });
    const finished = s.client.waitFor("job-1", { timeoutMs: 10_000 });
    while (s.waiting() === 0) await new Promise((resolve) => setTimeout(resolve, 2));
    const completedAt = Date.now();
    await s.client.complete("job-1", { owner: "A", fence: lease.fence, result: "paid" });
    expect(await finished).toMatchObject({ id: "job-1", status: "done", result: "paid" });
    expect(Date.now() - completedAt).toBeLessThan(500); // woken by the complete, not by the re-check a second on

    await s.client.enqueue({ id: "job-2" });
    const startedAt = Date.now();
    expect(await s.client.waitFor("job-2", { timeoutMs: 300 })).toMatchObject({ id: "job-2", status: "queued" });
    expect(Date.now() - startedAt).toBeGreaterThanOrEqual(290);
    await expect(s.client.waitFor("nobody", { timeoutMs: 300 })).rejects.toBeInstanceOf(NotFoundError);
    expect(() => s.client.waitFor("job-2", { timeoutMs: -1 })).rejects.toThrow(RangeError);
  });

  test("cancel answers the cancelled job and that it changed it, and again as it is, unchanged; the holder's renew is LeaseLostError cancelled; a done job is ConflictError conflict", async () => {
    await using s = await served(transport);
    await s.client.enqueue({ id: "job-1" });
    await s.client.enqueue({ id: "done" });
    const { fence } = await s.client.claim("job-1", { owner: "A", ttlMs: TTL });
    const { job: cancelled, changed } = await s.client.cancel("job-1", { by: "ops", reason: "refunded" });
    expect(cancelled).toMatchObject({ id: "job-1", status: "cancelled", owner: "A", fence, done: false });
    expect(changed).toBe(true);
    expect(await s.client.cancel("job-1")).toEqual({ job: cancelled, changed: false });
    expect((await s.eventRows("job-1")).filter((event) => event.kind === "cancelled")).toEqual([
      { kind: "cancelled", action: null, owner: "ops", fence: 1, current_owner: null, current_fence: null, error: "refunded" },
    ]);
    const lost = await s.client.renew("job-1", { owner: "A", fence, ttlMs: TTL }).catch((error) => error);
    expect(lost).toBeInstanceOf(LeaseLostError);
    expect(lost).toMatchObject({ reason: "cancelled", currentFence: 1 });
    const done = await s.client.claim("done", { owner: "A", ttlMs: TTL });
    await s.client.complete("done", { owner: "A", fence: done.fence, result: 1 });
    const refused = await s.client.cancel("done").catch((error) => error);
    expect(refused).toBeInstanceOf(ConflictError);
    expect(refused).toMatchObject({ status: 409, code: "conflict", jobStatus: "done" });
    await expect(s.client.cancel("nobody")).rejects.toBeInstanceOf(NotFoundError);
    await expect(s.client.cancel("done", { by: "" })).rejects.toBeInstanceOf(InvalidRequestError);
  });

  test("renew and renewMany carry progress, which the job shows; waitFor answers a job once it is cancelled", async () => {
    await using s = await served(transport);
    await s.client.enqueue({ id: "job-1" });
    await s.client.enqueue({ id: "job-2" });
    const [one, two] = await s.client.claimNext("default", { owner: "A", ttlMs: TTL, limit: 2 });
    await s.client.renew("job-1", { owner: "A", fence: one!.fence, ttlMs: TTL, progress: { pct: 10 } });
    expect((await s.client.get("job-1")).progress).toEqual({ pct: 10 });
    await s.client.renewMany({ owner: "A", ttlMs: TTL, leases: [{ id: "job-1", fence: one!.fence }, { id: "job-2", fence: two!.fence, progress: [2] }] });
    expect((await s.client.list()).jobs.map((job) => [job.id, job.progress])).toEqual([["job-1", { pct: 10 }], ["job-2", [2]]]);
    const finished = s.client.waitFor("job-2", { timeoutMs: 10_000 });
    while (s.waiting() === 0) await new Promise((resolve) => setTimeout(resolve, 2));
    await s.client.cancel("job-2");
    expect(await finished).toMatchObject({ id: "job-2", status: "cancelled", progress: [2] });
  });

});

