import { describe, expect, test } from "vitest";
import { type EmbeddedStore, LeaseClient, UnavailableError } from "../../src/client/index.ts";
import { type Outcome, StorageUnavailable } from "../../src/store/errors.ts";
import { freshStore } from "../fresh-db.ts";

// The Retries rule, as written on Repeat (src/client/transport.ts), call by
// call: what is sent again after an answer lost on the way back (the outcome
// unknown), and what only when the request provably never left. In-process,
// the same rule on the store's StorageUnavailable: outcome unknown (a remote
// database's connection broke) or not_applied (busy).

const lease = { id: "job-1", fence: 1 };
const next = { limit: 1, ttlMs: 1_000 };

/** Every call of the client, with whether the rule lets it be sent again after a lost answer. */
const CALLS: [name: string, repeat: "always" | "if-unsent", call: (client: LeaseClient) => Promise<unknown>][] = [
  ["get", "always", (c) => c.get("job-1")],
  ["waitFor", "always", (c) => c.waitFor("job-1", { timeoutMs: 0 })],
  ["list", "always", (c) => c.list()],
  ["events", "always", (c) => c.events("job-1")],
  ["checkLease", "always", (c) => c.checkLease("job-1", { owner: "A", fence: 1 })],
  ["enqueue", "always", (c) => c.enqueue({ id: "job-1" })],
  ["enqueueMany", "always", (c) => c.enqueueMany("q", [{ id: "job-1" }])],
  ["renew", "always", (c) => c.renew("job-1", { owner: "A", fence: 1, ttlMs: 1_000 })],
  ["renewMany", "always", (c) => c.renewMany({ owner: "A", ttlMs: 1_000, leases: [lease] })],
  ["step", "always", (c) => c.step("job-1", "charge", { owner: "A", fence: 1, result: 1 })],
  ["complete", "always", (c) => c.complete("job-1", { owner: "A", fence: 1, result: 1 })],
  ["completeMany", "always", (c) => c.completeMany({ owner: "A", leases: [{ ...lease, result: 1 }] })],
  ["cancel", "always", (c) => c.cancel("job-1")],
  ["bulk with dryRun", "always", (c) => c.bulk({ action: "cancel", dryRun: true })],
  ["queues.stats", "always", (c) => c.queues.stats()],
  ["queues.get", "always", (c) => c.queues.get("q")],
  ["queues.list", "always", (c) => c.queues.list()],
  ["queues.keys", "always", (c) => c.queues.keys("q")],
  ["queues.series", "always", (c) => c.queues.series("q")],
  ["queues.pause", "always", (c) => c.queues.pause("q")],
  ["queues.resume", "always", (c) => c.queues.resume("q")],
  ["queues.set", "always", (c) => c.queues.set("q", { maxLeased: 2 })],
  ["schedules.put", "always", (c) => c.schedules.put("nightly", { queue: "q", everyMs: 60_000 })],
  ["schedules.get", "always", (c) => c.schedules.get("nightly")],
  ["schedules.list", "always", (c) => c.schedules.list()],
  ["push.get", "always", (c) => c.push.get("q")],
  ["push.list", "always", (c) => c.push.list()],
  ["claim", "if-unsent", (c) => c.claim("job-1", { owner: "A", ttlMs: 1_000 })],
  ["claimNext", "if-unsent", (c) => c.claimNext("q", { owner: "A", ttlMs: 1_000 })],
  ["claimNextAnswer", "if-unsent", (c) => c.claimNextAnswer("q", { owner: "A", ttlMs: 1_000 })],
  ["complete with next", "if-unsent", (c) => c.complete("job-1", { owner: "A", fence: 1, result: 1, next })],
  ["completeMany with next", "if-unsent", (c) => c.completeMany({ owner: "A", leases: [{ ...lease, result: 1 }], next: { queue: "q", ...next } })],
  ["release", "if-unsent", (c) => c.release("job-1", { owner: "A", fence: 1 })],
  ["fail", "if-unsent", (c) => c.fail("job-1", { owner: "A", fence: 1, error: "boom" })],
  ["retry", "if-unsent", (c) => c.retry("job-1")],
  ["bulk", "if-unsent", (c) => c.bulk({ action: "retry" })],
  ["delete", "if-unsent", (c) => c.delete("job-1")],
  ["schedules.delete", "if-unsent", (c) => c.schedules.delete("nightly")],
  ["push.set", "if-unsent", (c) => c.push.set("q", { url: "https://push.example/q" })],
  ["push.rotate", "if-unsent", (c) => c.push.rotate("q")],
  ["push.delete", "if-unsent", (c) => c.push.delete("q")],
];

/** A client whose first attempt fails as `failure` builds it, and whose next attempts are answered 200; and how many were sent. */
function flaky(failure: () => Error) {
  let sent = 0;
  const answer = { status: "done", job: { id: "job-1" }, changed: true, until: 1, jobs: [], leases: [], completed: [], queues: [], keys: [], schedules: [], endpoints: [], events: [], nextCursor: null };
  const fetch: typeof globalThis.fetch = async () => {
    if (sent++ === 0) throw failure();
    return new Response(JSON.stringify(answer), { status: 200, headers: { "Content-Type": "application/json" } });
  };
  const client = new LeaseClient({ baseUrl: "http://fencelease.test", fetch, retry: { retries: 1, sleep: async () => {} } });
  return { client, sent: () => sent };
}

/** A fetch failure after the request went out: the server may have applied it. */
const answerLost = () => new TypeError("fetch failed", { cause: Object.assign(new Error("socket hang up"), { code: "ECONNRESET" }) });
/** A fetch failure that proves the request never left: nothing was applied. */
const refused = () => new TypeError("fetch failed", { cause: Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" }) });

describe("which calls the client sends again", () => {
  test("every call of the client is in the table", () => {
    const { client } = flaky(answerLost);
    const methods = (target: object, prefix = "") =>
      Object.getOwnPropertyNames(Object.getPrototypeOf(target)).filter((name) => name !== "constructor").map((name) => prefix + name);
    const listed = new Set(CALLS.map(([name]) => name.replace(/ with (next|dryRun)$/, "")));
    expect([...methods(client), ...methods(client.queues, "queues."), ...methods(client.schedules, "schedules."), ...methods(client.push, "push.")].sort()).toEqual([...listed].sort());
  });

  test.each(CALLS)("%s after a lost answer: sent again %s", async (_name, repeat, call) => {
    const { client, sent } = flaky(answerLost);
    const outcome = await call(client).then(() => "answered", (error: unknown) => error);
    if (repeat === "always") expect([outcome, sent()]).toEqual(["answered", 2]);
    else {
      expect(outcome).toBeInstanceOf(UnavailableError);
      expect(sent()).toBe(1);
    }
  });

  test.each(CALLS)("a request that never left is sent again, whatever the call: %s", async (_name, _repeat, call) => {
    const { client, sent } = flaky(refused);
    expect(await call(client).then(() => "answered")).toBe("answered");
    expect(sent()).toBe(2);
  });
});

/**
 * An in-process client over a real store whose first call, whatever the verb,
 * fails as the database's would (StorageUnavailable with `outcome`), and how
 * many calls reached the store's verbs.
 */
async function failingFirst(outcome: Outcome) {
  const { store } = await freshStore();
  let calls = 0;
  const failFirst = <T extends object>(target: T): T => {
    const verbs = Object.getOwnPropertyNames(Object.getPrototypeOf(target)).filter((name) => name !== "constructor");
    return Object.fromEntries(
      verbs.map((name) => [name, (...args: unknown[]) => {
        if (calls++ === 0) return Promise.reject(new StorageUnavailable(new Error("the database could not serve it"), outcome));
        return (target as Record<string, (...args: unknown[]) => unknown>)[name]!.apply(target, args);
      }]),
    ) as T;
  };
  const given = { ...failFirst(store), queues: failFirst(store.queues), schedules: failFirst(store.schedules), push: failFirst(store.push), tokens: failFirst(store.tokens) } as unknown as EmbeddedStore;
  const client = new LeaseClient({ store: given, retry: { retries: 1, sleep: async () => {} } });
  return { client, calls: () => calls };
}

describe("which calls the client makes again in-process", () => {
  test.each(CALLS)("%s after StorageUnavailable whose outcome is unknown: made again %s", async (_name, repeat, call) => {
    const { client, calls } = await failingFirst("unknown");
    const outcome = await call(client).then(() => "answered", (error: unknown) => error);
    if (repeat === "always") {
      expect(outcome).not.toBeInstanceOf(UnavailableError); // the store's own answer, a refusal of this empty store included
      expect(calls()).toBe(2);
    } else {
      expect(outcome).toBeInstanceOf(UnavailableError);
      expect(outcome).toMatchObject({ status: 503, code: "unavailable", details: { outcome: "unknown", reason: "connection_lost" } });
      expect(calls()).toBe(1);
    }
  });

  test.each(CALLS)("a call the database refused before applying it (busy) is made again, whatever the call: %s", async (_name, _repeat, call) => {
    const { client, calls } = await failingFirst("not_applied");
    expect(await call(client).then(() => "answered", (error: unknown) => error)).not.toBeInstanceOf(UnavailableError);
    expect(calls()).toBe(2);
  });
});
