import { createClient } from "@libsql/client";
import { describe, expect, test } from "vitest";
import {
  claimMany,
  InvalidRequestError,
  LeaseClient,
  LeaseLostError,
  NotClaimableError,
  NotFoundError,
  UnauthorizedError,
  UnavailableError,
} from "../src/client/index.ts";
import { type RunningServer, startServer } from "../src/index.ts";
import { freshStore } from "./fresh-db.ts";

const TOKEN = "client-test-token";
const TTL = 30_000;

/** The Node server on a fresh file database, a client for it, and the rows it leaves. */
async function serving(options: { busyTimeoutMs?: number } = {}) {
  const fresh = await freshStore();
  const server = await startServer({ host: "127.0.0.1", port: 0, databaseUrl: fresh.url, auth: { tokens: [TOKEN] }, ...options });
  const delays: number[] = [];
  const client = new LeaseClient({
    baseUrl: server.url,
    token: TOKEN,
    retry: { retries: 3, baseDelayMs: 100, random: () => 0.5, sleep: async (ms) => void delays.push(ms) },
  });
  return { ...fresh, server, client, delays, [Symbol.asyncDispose]: () => server.stop() };
}

describe("LeaseClient against the real Node server", () => {
  test("each method answers what the route answers", async () => {
    await using s = await serving();
    expect(await s.client.enqueue({ id: "job-1", payload: { n: 1 } })).toMatchObject({ created: true, job: { id: "job-1", payload: { n: 1 } } });
    expect(await s.client.enqueue({ id: "job-1" })).toMatchObject({ created: false, job: { id: "job-1" } });
    expect(await s.client.get("job-1")).toMatchObject({ id: "job-1", fence: 0 });
    const lease = await s.client.claim("job-1", { owner: "A", ttlMs: TTL });
    expect(lease).toMatchObject({ fence: 1, job: { owner: "A" } });
    expect(await s.client.renew("job-1", { owner: "A", fence: 1, ttlMs: TTL })).toBeGreaterThanOrEqual(lease.until);
    expect(await s.client.release("job-1", { owner: "A", fence: 1 })).toMatchObject({ owner: null, fence: 1 });
    const [next] = await s.client.claimNext("default", { owner: "B", ttlMs: TTL });
    expect(next).toMatchObject({ fence: 2, job: { id: "job-1", owner: "B" } });
    expect(await s.client.complete("job-1", { owner: "B", fence: 2, result: { ok: true } })).toMatchObject({ done: true, result: { ok: true } });
    expect(await s.client.claimNext("default", { owner: "B", ttlMs: TTL })).toEqual([]);
    expect((await s.snapshot())["job-1"]).toMatchObject({ owner: "B", fence: 2, done: 1, result: '{"ok":true}' });
  });

  test("refusals are typed errors that carry the server's code and message", async () => {
    await using s = await serving();
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
    expect(invalid).toMatchObject({ status: 400, code: "invalid_request", message: "ttlMs must be at least 1" });

    const stranger = new LeaseClient({ baseUrl: s.server.url, token: "wrong" });
    expect(await stranger.get("job-1").catch((error) => error)).toMatchObject({ name: "UnauthorizedError", code: "unauthorized", status: 401 });
    expect(await stranger.get("job-1").catch((error) => error)).toBeInstanceOf(UnauthorizedError);
    expect(await s.snapshot()).toEqual(before);
    expect(s.delays).toEqual([]); // refusals are answers, never retried
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
    expect(await client.complete("job-1", { owner: "A", fence: 1, result: "r" })).toMatchObject({ done: true, result: "r" });
  });

  test("claimMany over HTTP: all requests in flight at once, exactly one winner, answers in input order", async () => {
    await using s = await serving();
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

export type { RunningServer };
