import { describe, expect, test } from "vitest";
import type { Row } from "../../src/drivers/driver.ts";
import { InvalidArgument, LeaseLost, NotClaimable, NotFound } from "../../src/store/errors.ts";
import type { LeaseStore } from "../../src/store/store.ts";
import { noteVerbs } from "../../src/store/note.ts";

// The contract of the lease store, written once and run against every driver:
// libSQL on a file (test/store/store.test.ts) and D1 in the Workers runtime
// (test/worker/store-d1.test.ts). Each test starts on a fresh, empty database.

/** Every job as stored, by id, read outside the store under test. */
export type Snapshot = Record<string, Row>;

/** A store on a fresh database, and ways to look at that database from outside the store. */
export type FreshStore = {
  store: LeaseStore;
  /** Everything in the jobs table, read over another connection. */
  snapshot: () => Promise<Snapshot>;
  /** A second store over the same database; `random` draws its backoff jitter. */
  reopen: (options?: { random?: () => number }) => Promise<LeaseStore>;
  /** Runs raw SQL on the database, as another writer would. */
  exec: (sql: string) => Promise<void>;
};

const T = 1_000_000; // the test clock; every time below is T plus something
const TTL = 30_000;

/** Registers the whole store contract for one driver. */
export function storeContract(freshStore: () => Promise<FreshStore>): void {
  // Values that are not a positive safe integer, for ttlMs and fence.
  const NOT_POSITIVE_INTS: unknown[] = [0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, "1000", null, undefined, 2 ** 53];

  describe("enqueue", () => {
    test("inserts a new job in the default state and answers true", async () => {
      const { store, snapshot } = await freshStore();
      expect(await noteVerbs(store).enqueue("job-1", { now: T })).toBe(true);
      expect((await snapshot())["job-1"]).toEqual({
        id: "job-1", queue: "default", payload: null, priority: 0, run_at: T,
        owner: null, until: 0, fence: 0, result: null, done: 0,
        attempts: 0, max_attempts: 25, created_at: T, updated_at: T,
        dead: 0, last_error: null, last_event: null, cancelled: 0, progress: null,
        // What the row tells of its history (migrations/0015): its enqueue, first; no lease yet.
        enqueued_seq: 1, claimed_seq: null, claimed_at: null, renewed_seq: null, renewed_at: null, renewed_last_at: null, renews: 0, seq: 1,
        claim_clock: null, // the clock of its last claim (migrations/0013): none yet
        traceparent: null, tracestate: null,
        key: null, held_back: 0, turn: null, place: 0, // no key (migrations/0034): never held back, no turn, first of its call
        step_count: 0, step_bytes: 0, // no step recorded (migrations/0036)
        dedup_key: null, dedup_until: null, debounce_until: null, superseded_by: null, // no dedup key (migrations/0035)
      });
    });

    test("stores the queue, payload, priority, runAt and maxAttempts it is given", async () => {
      const { store } = await freshStore();
      const payload = { to: "ada@example.com", tags: ["a", 1, null], nested: { ok: true } };
      await store.enqueue("job-1", { queue: "mail", payload, priority: -3, runAt: T + 500, maxAttempts: 2, now: T });
      expect(await store.get("job-1")).toMatchObject({
        queue: "mail", payload, priority: -3, runAt: T + 500, maxAttempts: 2, createdAt: T,
      });
    });

    test("answers false and changes nothing when the id exists, above all not a lease in progress", async () => {
      const { store, snapshot } = await freshStore();
      await store.enqueue("job-1", { now: T });
      await store.claim("job-1", { owner: "A", ttlMs: TTL, now: T });
      const before = await snapshot();
      expect(await noteVerbs(store).enqueue("job-1", { queue: "other", payload: 1, priority: 9, runAt: 0, now: T + 1 })).toBe(false);
      expect(await snapshot()).toEqual(before);
    });

    test.each([
      ["an empty id", "", {}],
      ["a non-string id", 42, {}],
      ["an array id, even one with a length", ["job-1"], {}],
      ["an empty queue", "job-1", { queue: "" }],
      ["a fractional priority", "job-1", { priority: 1.5 }],
      ["a negative runAt", "job-1", { runAt: -1 }],
      ["a zero maxAttempts", "job-1", { maxAttempts: 0 }],
      ["a payload JSON cannot carry", "job-1", { payload: () => 1 }],
      ["a payload with a bigint", "job-1", { payload: { n: 1n } }],
      ["a fractional now", "job-1", { now: 1.5 }],
    ])("refuses %s with a RangeError and writes nothing", async (_, id, options) => {
      const { store, snapshot } = await freshStore();
      await expect(noteVerbs(store).enqueue(id as string, options)).rejects.toThrow(RangeError);
      expect(await snapshot()).toEqual({});
    });
  });

  describe("state", () => {
    test("answers null, not an empty object, for an unknown id", async () => {
      const { store } = await freshStore();
      expect(await noteVerbs(store).state("nope")).toBeNull();
    });

    test("reads what is stored, including another connection's writes", async () => {
      const { store, reopen } = await freshStore();
      await store.enqueue("job-1", { now: T });
      const other = await reopen();
      try {
        await other.claim("job-1", { owner: "B", ttlMs: TTL, now: T });
      } finally {
        other.close();
      }
      expect(await noteVerbs(store).state("job-1", T)).toEqual({
        id: "job-1", queue: "default", key: null, payload: null, priority: 0, runAt: T,
        owner: "B", until: T + TTL, fence: 1, result: null, done: false,
        attempts: 1, maxAttempts: 25, createdAt: T, updatedAt: T,
        status: "leased", lastError: null, progress: null, traceparent: null, tracestate: null,
        steps: {}, // none recorded (migrations/0036)
        dedupKey: null, dedupUntil: null, supersededBy: null, // no dedup key (migrations/0035)
      });
    });
  });

  describe("claim", () => {
    test("takes an unclaimed job: owner, until = now + ttl, fence + 1, attempts + 1", async () => {
      const { store, snapshot } = await freshStore();
      await store.enqueue("job-1", { now: T });
      await store.enqueue("bystander", { now: T });
      const bystander = (await snapshot()).bystander;
      expect(await noteVerbs(store).claim("job-1", "A", T + 10, TTL)).toBe(1);
      const after = await snapshot();
      expect(after["job-1"]).toMatchObject({ owner: "A", until: T + 10 + TTL, fence: 1, attempts: 1, done: 0, updated_at: T + 10 });
      expect(after.bystander).toEqual(bystander);
    });

    test("gives null and changes nothing while the lease is held (now == until - 1)", async () => {
      const { store, snapshot } = await freshStore();
      await store.enqueue("job-1", { now: T });
      await store.claim("job-1", { owner: "A", ttlMs: TTL, now: T });
      const before = await snapshot();
      expect(await noteVerbs(store).claim("job-1", "B", T + TTL - 1, TTL)).toBeNull();
      expect(await noteVerbs(store).claim("job-1", "A", T + TTL - 1, TTL)).toBeNull();
      expect(await snapshot()).toEqual(before);
    });

    test("takes over an expired lease at exactly now == until, with the next fence", async () => {
      const { store, snapshot } = await freshStore();
      await store.enqueue("job-1", { now: T });
      await store.claim("job-1", { owner: "A", ttlMs: TTL, now: T });
      expect(await noteVerbs(store).claim("job-1", "B", T + TTL, TTL)).toBe(2);
      expect((await snapshot())["job-1"]).toMatchObject({ owner: "B", until: T + 2 * TTL, fence: 2, attempts: 2 });
    });

    test("gives null and changes nothing for a done job, even long after its lease", async () => {
      const { store, snapshot } = await freshStore();
      await store.enqueue("job-1", { now: T });
      await store.claim("job-1", { owner: "A", ttlMs: TTL, now: T });
      await store.complete("job-1", { owner: "A", fence: 1, result: "ok", now: T + 1 });
      const before = await snapshot();
      expect(await noteVerbs(store).claim("job-1", "B", T + 10 * TTL, TTL)).toBeNull();
      expect(await snapshot()).toEqual(before);
    });

    test("gives null and creates nothing for an unknown id", async () => {
      const { store, snapshot } = await freshStore();
      expect(await noteVerbs(store).claim("nope", "A", T, TTL)).toBeNull();
      expect(await snapshot()).toEqual({});
    });

    test.each(NOT_POSITIVE_INTS)("refuses ttlMs %s with a RangeError before touching the database", async (ttl) => {
      const { store, snapshot } = await freshStore();
      await store.enqueue("job-1", { now: T });
      const before = await snapshot();
      await expect(noteVerbs(store).claim("job-1", "A", T, ttl as number)).rejects.toThrow(RangeError);
      expect(await snapshot()).toEqual(before);
    });

    test.each([["", "an empty owner"], [7, "a non-string owner"]])("refuses owner %j (%s) with a RangeError", async (owner, _why) => {
      const { store, snapshot } = await freshStore();
      await store.enqueue("job-1", { now: T });
      const before = await snapshot();
      await expect(noteVerbs(store).claim("job-1", owner as string, T, TTL)).rejects.toThrow(InvalidArgument);
      expect(await snapshot()).toEqual(before);
    });

    test("refuses a negative or fractional now", async () => {
      const { store } = await freshStore();
      await store.enqueue("job-1", { now: T });
      await expect(noteVerbs(store).claim("job-1", "A", -1, TTL)).rejects.toThrow(RangeError);
      await expect(noteVerbs(store).claim("job-1", "A", 1.5, TTL)).rejects.toThrow(RangeError);
      expect((await store.get("job-1"))?.fence).toBe(0);
    });
  });

  /** A store holding one job leased by A with fence 1 until T + TTL, and a bystander leased by A too. */
  async function leasedByA() {
    const fresh = await freshStore();
    await fresh.store.enqueue("job-1", { now: T });
    await fresh.store.enqueue("bystander", { now: T });
    expect(await noteVerbs(fresh.store).claim("job-1", "A", T, TTL)).toBe(1);
    expect(await noteVerbs(fresh.store).claim("bystander", "A", T, TTL)).toBe(1);
    return { ...fresh, before: await fresh.snapshot() };
  }

  describe("renew", () => {
    test("extends the current lease to now + ttl and touches nothing else", async () => {
      const { store, snapshot, before } = await leasedByA();
      expect(await noteVerbs(store).renew("job-1", "A", 1, T + TTL - 1, 5_000)).toBe(true);
      const after = await snapshot();
      const renewed = { renews: 1, renewed_at: T + TTL - 1, renewed_last_at: T + TTL - 1, renewed_seq: 3, seq: 3 }; // the row tells the renew
      expect(after["job-1"]).toEqual({ ...before["job-1"], until: T + TTL - 1 + 5_000, updated_at: T + TTL - 1, ...renewed });
      expect(after.bystander).toEqual(before.bystander);
    });

    test("cannot revive a lease that expired at now == until", async () => {
      const { store, snapshot, before } = await leasedByA();
      expect(await noteVerbs(store).renew("job-1", "A", 1, T + TTL, TTL)).toBe(false);
      expect(await snapshot()).toEqual(before);
    });

    test.each([
      ["another owner", "B", 1],
      ["a fence from the future (fence + 1)", "A", 2],
    ])("refuses %s and changes nothing", async (_, owner, fence) => {
      const { store, snapshot, before } = await leasedByA();
      expect(await noteVerbs(store).renew("job-1", owner, fence, T + 1, TTL)).toBe(false);
      expect(await snapshot()).toEqual(before);
    });

    test("refuses the fence before the current one after a takeover", async () => {
      const { store, snapshot } = await leasedByA();
      expect(await noteVerbs(store).claim("job-1", "A", T + TTL, TTL)).toBe(2);
      const before = await snapshot();
      expect(await noteVerbs(store).renew("job-1", "A", 1, T + TTL + 1, TTL)).toBe(false);
      expect(await snapshot()).toEqual(before);
    });

    test("refuses a done job, a released lease and an unknown id", async () => {
      const { store, snapshot } = await leasedByA();
      await store.complete("bystander", { owner: "A", fence: 1, result: "ok", now: T + 1 });
      await store.release("job-1", { owner: "A", fence: 1, now: T + 1 });
      const before = await snapshot();
      expect(await noteVerbs(store).renew("bystander", "A", 1, T + 2, TTL)).toBe(false);
      expect(await noteVerbs(store).renew("job-1", "A", 1, T + 2, TTL)).toBe(false);
      expect(await noteVerbs(store).renew("nope", "A", 1, T + 2, TTL)).toBe(false);
      expect(await snapshot()).toEqual(before);
    });

    test.each(NOT_POSITIVE_INTS)("refuses ttlMs %s with a RangeError and changes nothing", async (ttl) => {
      const { store, snapshot, before } = await leasedByA();
      await expect(noteVerbs(store).renew("job-1", "A", 1, T + 1, ttl as number)).rejects.toThrow(RangeError);
      expect(await snapshot()).toEqual(before);
    });

    test.each(NOT_POSITIVE_INTS)("refuses fence %s with a RangeError and changes nothing", async (fence) => {
      const { store, snapshot, before } = await leasedByA();
      await expect(noteVerbs(store).renew("job-1", "A", fence as number, T + 1, TTL)).rejects.toThrow(RangeError);
      expect(await snapshot()).toEqual(before);
    });
  });

  describe("complete", () => {
    test("stores the result of the current lease and marks the job done", async () => {
      const { store, snapshot, before } = await leasedByA();
      expect(await noteVerbs(store).complete("job-1", "A", 1, T + TTL - 1, "result of A")).toBe(true);
      const after = await snapshot();
      expect(after["job-1"]).toEqual({ ...before["job-1"], result: "result of A", done: 1, updated_at: T + TTL - 1, seq: 3 }); // the row tells the completion, third
      expect(after.bystander).toEqual(before.bystander);
    });

    test("stores an empty string as a result", async () => {
      const { store } = await leasedByA();
      expect(await noteVerbs(store).complete("job-1", "A", 1, T + 1, "")).toBe(true);
      expect(await store.get("job-1")).toMatchObject({ result: "", done: true });
    });

    test("refuses a completion at now == until and keeps the job open", async () => {
      const { store, snapshot, before } = await leasedByA();
      expect(await noteVerbs(store).complete("job-1", "A", 1, T + TTL, "late")).toBe(false);
      expect(await snapshot()).toEqual(before);
    });

    test.each([
      ["another owner", "B", 1],
      ["a fence from the future (fence + 1)", "A", 2],
    ])("refuses %s and changes nothing", async (_, owner, fence) => {
      const { store, snapshot, before } = await leasedByA();
      expect(await noteVerbs(store).complete("job-1", owner, fence, T + 1, "forged")).toBe(false);
      expect(await snapshot()).toEqual(before);
    });

    test("answers false for the same completion sent again: it writes nothing", async () => {
      const { store, snapshot } = await leasedByA();
      expect(await noteVerbs(store).complete("job-1", "A", 1, T + 1, "r")).toBe(true);
      const before = await snapshot();
      expect(await noteVerbs(store).complete("job-1", "A", 1, T + 2, "r")).toBe(false);
      expect(await snapshot()).toEqual(before);
    });

    test("refuses a second completion and keeps the first result", async () => {
      const { store, snapshot } = await leasedByA();
      expect(await noteVerbs(store).complete("job-1", "A", 1, T + 1, "first")).toBe(true);
      const before = await snapshot();
      expect(await noteVerbs(store).complete("job-1", "A", 1, T + 2, "second")).toBe(false);
      expect(await snapshot()).toEqual(before);
      expect((await store.get("job-1"))?.result).toBe("first");
    });

    test("refuses an unknown id and creates nothing", async () => {
      const { store, snapshot, before } = await leasedByA();
      expect(await noteVerbs(store).complete("nope", "A", 1, T + 1, "x")).toBe(false);
      expect(await snapshot()).toEqual(before);
    });

    test.each([[42], [null], [undefined], [{ ok: true }]])("refuses result %j: it must be a string", async (result) => {
      const { store, snapshot, before } = await leasedByA();
      await expect(noteVerbs(store).complete("job-1", "A", 1, T + 1, result as unknown as string)).rejects.toThrow(RangeError);
      expect(await snapshot()).toEqual(before);
    });
  });

  describe("release", () => {
    test("gives the lease back: owner NULL, until 0, the fence kept", async () => {
      const { store, snapshot, before } = await leasedByA();
      expect(await noteVerbs(store).release("job-1", "A", 1, T + 5)).toBe(true);
      const after = await snapshot();
      expect(after["job-1"]).toEqual({ ...before["job-1"], owner: null, until: 0, fence: 1, attempts: 0, last_event: "released", updated_at: T + 5, seq: 3 }); // the attempt given back
      expect(after.bystander).toEqual(before.bystander);
    });

    test("makes the job claimable at once, with a fence above the released one", async () => {
      const { store } = await leasedByA();
      await store.release("job-1", { owner: "A", fence: 1, now: T + 5 });
      expect(await noteVerbs(store).claim("job-1", "B", T + 6, TTL)).toBe(2);
    });

    test("still works after the lease expired, while nobody else has claimed the job", async () => {
      const { store } = await leasedByA();
      expect(await noteVerbs(store).release("job-1", "A", 1, T + TTL + 1)).toBe(true);
      expect(await noteVerbs(store).state("job-1")).toMatchObject({ owner: null, until: 0, fence: 1 });
    });

    test("refuses another owner, fence - 1, fence + 1, a done job, a second release and an unknown id", async () => {
      const { store, snapshot } = await leasedByA();
      expect(await noteVerbs(store).claim("job-1", "A", T + TTL, TTL)).toBe(2); // A's own takeover: fence 2
      await store.complete("bystander", { owner: "A", fence: 1, result: "ok", now: T + 1 });
      const before = await snapshot();
      expect(await noteVerbs(store).release("job-1", "B", 2, T + TTL + 1)).toBe(false);
      expect(await noteVerbs(store).release("job-1", "A", 1, T + TTL + 1)).toBe(false);
      expect(await noteVerbs(store).release("job-1", "A", 3, T + TTL + 1)).toBe(false);
      expect(await noteVerbs(store).release("bystander", "A", 1, T + TTL + 1)).toBe(false);
      expect(await noteVerbs(store).release("nope", "A", 1, T + TTL + 1)).toBe(false);
      expect(await snapshot()).toEqual(before);
      expect(await noteVerbs(store).release("job-1", "A", 2, T + TTL + 1)).toBe(true);
      const released = await snapshot();
      expect(await noteVerbs(store).release("job-1", "A", 2, T + TTL + 2)).toBe(false);
      expect(await snapshot()).toEqual(released);
    });
  });

  describe("claimNext", () => {
    test("takes the highest priority first, then the job due longest, then the oldest", async () => {
      const { store } = await freshStore();
      await store.enqueue("low", { priority: 0, runAt: T - 100, now: T - 100 });
      await store.enqueue("high-due-later", { priority: 5, runAt: T - 10, now: T - 300 });
      await store.enqueue("high-due-first", { priority: 5, runAt: T - 20, now: T - 200 });
      await store.enqueue("high-same-due-newer", { priority: 5, runAt: T - 10, now: T - 250 });
      const leases = await store.claimNext("default", { owner: "A", ttlMs: TTL, limit: 10, now: T });
      expect(leases.map((lease) => lease.job.id)).toEqual(["high-due-first", "high-due-later", "high-same-due-newer", "low"]);
    });

    test("answers in claim order whatever order the ids sort in, ties broken by the oldest, then by id", async () => {
      const { store } = await freshStore();
      await store.enqueue("a-lowest", { priority: 0, runAt: T - 100, now: T - 100 });
      await store.enqueue("b-due-last", { priority: 5, runAt: T - 5, now: T - 300 });
      await store.enqueue("c-newer", { priority: 5, runAt: T - 10, now: T - 50 });
      await store.enqueue("d-older", { priority: 5, runAt: T - 10, now: T - 100 });
      // Twins enqueued against their id order: only their ids tell them apart.
      await store.enqueue("e-twin-2", { priority: 1, runAt: T - 10, now: T - 10 });
      await store.enqueue("e-twin-1", { priority: 1, runAt: T - 10, now: T - 10 });
      const leases = await store.claimNext("default", { owner: "A", ttlMs: TTL, limit: 10, now: T });
      expect(leases.map((lease) => lease.job.id)).toEqual(["d-older", "c-newer", "b-due-last", "e-twin-1", "e-twin-2", "a-lowest"]);
    });

    test("answers twins in the order it takes them one at a time: SQLite's order of their ids, not JavaScript's", async () => {
      const { store } = await freshStore();
      // SQLite compares ids by their UTF-8 bytes, which put U+FF01 before U+1F600;
      // JavaScript's < compares UTF-16 units, which put the emoji first.
      const [fullwidth, emoji] = ["twin-\uFF01", "twin-\u{1F600}"];
      await store.enqueueMany("both", { jobs: [{ id: `${emoji}-both` }, { id: `${fullwidth}-both` }], now: T });
      await store.enqueueMany("one", { jobs: [{ id: `${emoji}-one` }, { id: `${fullwidth}-one` }], now: T });
      const both = await store.claimNext("both", { owner: "A", ttlMs: TTL, limit: 2, now: T });
      expect(both.map((lease) => lease.job.id)).toEqual([`${fullwidth}-both`, `${emoji}-both`]);
      const first = await store.claimNext("one", { owner: "A", ttlMs: TTL, limit: 1, now: T });
      expect(first.map((lease) => lease.job.id)).toEqual([`${fullwidth}-one`]);
    });

    test("answers each lease with its fence and until, and writes them", async () => {
      const { store, snapshot } = await freshStore();
      await store.enqueue("job-1", { payload: { n: 1 }, now: T });
      const [lease] = await store.claimNext("default", { owner: "A", ttlMs: TTL, now: T });
      expect(lease).toEqual({ fence: 1, until: T + TTL, job: expect.objectContaining({ id: "job-1", owner: "A", fence: 1, attempts: 1, payload: { n: 1 } }) });
      expect((await snapshot())["job-1"]).toMatchObject({ owner: "A", until: T + TTL, fence: 1, attempts: 1 });
    });

    test("skips done, leased, not yet due and other queues' jobs, and takes expired leases", async () => {
      const { store, snapshot } = await freshStore();
      for (const id of ["done", "leased", "expired", "free"]) await store.enqueue(id, { now: T });
      await store.enqueue("scheduled", { runAt: T + 1, now: T });
      await store.enqueue("elsewhere", { queue: "other", now: T });
      await store.claim("done", { owner: "X", ttlMs: TTL, now: T });
      await store.complete("done", { owner: "X", fence: 1, result: "ok", now: T });
      await store.claim("leased", { owner: "X", ttlMs: TTL, now: T });
      await store.claim("expired", { owner: "X", ttlMs: TTL, now: T - TTL }); // until == T
      const untouched = await snapshot();
      const leases = await store.claimNext("default", { owner: "A", ttlMs: TTL, limit: 100, now: T });
      expect(leases.map((lease) => lease.job.id).sort()).toEqual(["expired", "free"]);
      expect(leases.find((lease) => lease.job.id === "expired")?.fence).toBe(2);
      const after = await snapshot();
      for (const id of ["done", "leased", "scheduled", "elsewhere"]) expect(after[id]).toEqual(untouched[id]);
    });

    test("takes no more than limit, and never the same job twice in a row", async () => {
      const { store } = await freshStore();
      for (let i = 0; i < 5; i++) await store.enqueue(`job-${i}`, { now: T + i });
      const first = await store.claimNext("default", { owner: "A", ttlMs: TTL, limit: 2, now: T + 10 });
      const second = await store.claimNext("default", { owner: "B", ttlMs: TTL, limit: 2, now: T + 10 });
      expect(first.map((lease) => lease.job.id)).toEqual(["job-0", "job-1"]);
      expect(second.map((lease) => lease.job.id)).toEqual(["job-2", "job-3"]);
    });

    test("answers an empty list when nothing is due", async () => {
      const { store, snapshot } = await freshStore();
      await store.enqueue("later", { runAt: T + 1, now: T });
      const before = await snapshot();
      expect(await store.claimNext("default", { owner: "A", ttlMs: TTL, now: T })).toEqual([]);
      expect(await store.claimNext("empty", { owner: "A", ttlMs: TTL, now: T })).toEqual([]);
      expect(await snapshot()).toEqual(before);
    });

    test.each([[0], [-1], [1.5], ["2"]])("refuses limit %j with a RangeError", async (limit) => {
      const { store, snapshot } = await freshStore();
      await store.enqueue("job-1", { now: T });
      const before = await snapshot();
      await expect(store.claimNext("default", { owner: "A", ttlMs: TTL, limit: limit as number, now: T })).rejects.toThrow(RangeError);
      expect(await snapshot()).toEqual(before);
    });
  });

  describe("refusals", () => {
    /** `leaf` inside `depth` arrays, one in the other. */
    const nested = (depth: number, leaf: unknown): unknown => {
      let value = leaf;
      for (let i = 0; i < depth; i++) value = [value];
      return value;
    };
    const holdingItself = () => {
      const value: { self?: unknown } = {};
      value.self = value;
      return value;
    };
    const TOO_DEEP = "must nest at most 64 levels of arrays and objects; flatten it, or send its deep part as a string";

    // Each row: the call, and the message it must be refused with. The message
    // names the argument and shows the value (a string quoted), for a person to read.
    const cases: [string, (store: LeaseStore) => Promise<unknown>, string][] = [
      ["enqueue id", (s) => noteVerbs(s).enqueue("", { now: T }), 'id must be a non-empty string of printable text, got ""'],
      ["enqueue queue", (s) => noteVerbs(s).enqueue("job-2", { queue: "", now: T }), 'queue must be a non-empty string of printable text, got ""'],
      ["enqueue payload", (s) => noteVerbs(s).enqueue("job-2", { payload: { n: [1, Number.NaN] }, now: T }), "payload must not hold NaN or Infinity, which JSON cannot carry"],
      ["enqueue payload", (s) => noteVerbs(s).enqueue("job-2", { payload: Symbol("x"), now: T }), "payload must be a JSON value, got Symbol(x)"],
      ["enqueue payload with a bigint", (s) => noteVerbs(s).enqueue("job-2", { payload: 1n, now: T }), "payload must be a JSON value: Do not know how to serialize a BigInt"],
      ["enqueue priority", (s) => noteVerbs(s).enqueue("job-2", { priority: 1.5, now: T }), "priority must be a safe integer, got 1.5"],
      ["enqueue runAt", (s) => noteVerbs(s).enqueue("job-2", { runAt: -1, now: T }), "runAt must be integer milliseconds since the epoch, got -1"],
      ["enqueue maxAttempts", (s) => noteVerbs(s).enqueue("job-2", { maxAttempts: 0, now: T }), "maxAttempts must be a positive safe integer, got 0"],
      ["enqueue now", (s) => noteVerbs(s).enqueue("job-2", { now: "1000" as unknown as number }), 'now must be integer milliseconds since the epoch, got "1000"'],
      ["get id", (s) => s.get(""), 'id must be a non-empty string of printable text, got ""'],
      ["claim id", (s) => noteVerbs(s).claim("", "B", T, TTL), 'id must be a non-empty string of printable text, got ""'],
      ["claim owner", (s) => noteVerbs(s).claim("job-1", 7 as unknown as string, T, TTL), "owner must be a non-empty string of printable text, got 7"],
      ["claim now", (s) => noteVerbs(s).claim("job-1", "B", Number.NaN, TTL), "now must be integer milliseconds since the epoch, got NaN"],
      ["claim ttlMs", (s) => noteVerbs(s).claim("job-1", "B", T, 0), "ttlMs must be a positive safe integer, got 0"],
      ["claimNext queue", (s) => s.claimNext("", { owner: "B", ttlMs: TTL, now: T }), 'queue must be a non-empty string of printable text, got ""'],
      ["claimNext owner", (s) => s.claimNext("default", { owner: "", ttlMs: TTL, now: T }), 'owner must be a non-empty string of printable text, got ""'],
      ["claimNext now", (s) => s.claimNext("default", { owner: "B", ttlMs: TTL, now: -1 }), "now must be integer milliseconds since the epoch, got -1"],
      ["claimNext ttlMs", (s) => s.claimNext("default", { owner: "B", ttlMs: -1, now: T }), "ttlMs must be a positive safe integer, got -1"],
      ["claimNext limit", (s) => s.claimNext("default", { owner: "B", ttlMs: TTL, limit: 0, now: T }), "limit must be a positive safe integer, got 0"],
      ["renew id", (s) => noteVerbs(s).renew("", "A", 1, T, TTL), 'id must be a non-empty string of printable text, got ""'],
      ["renew owner", (s) => noteVerbs(s).renew("job-1", "", 1, T, TTL), 'owner must be a non-empty string of printable text, got ""'],
      ["renew fence", (s) => noteVerbs(s).renew("job-1", "A", 0, T, TTL), "fence must be a positive safe integer, got 0"],
      ["renew now", (s) => noteVerbs(s).renew("job-1", "A", 1, -1, TTL), "now must be integer milliseconds since the epoch, got -1"],
      ["renew ttlMs", (s) => noteVerbs(s).renew("job-1", "A", 1, T, 0), "ttlMs must be a positive safe integer, got 0"],
      ["complete id", (s) => noteVerbs(s).complete("", "A", 1, T, "x"), 'id must be a non-empty string of printable text, got ""'],
      ["complete owner", (s) => noteVerbs(s).complete("job-1", "", 1, T, "x"), 'owner must be a non-empty string of printable text, got ""'],
      ["complete fence", (s) => noteVerbs(s).complete("job-1", "A", 0, T, "x"), "fence must be a positive safe integer, got 0"],
      ["complete now", (s) => noteVerbs(s).complete("job-1", "A", 1, -1, "x"), "now must be integer milliseconds since the epoch, got -1"],
      ["complete result", (s) => noteVerbs(s).complete("job-1", "A", 1, T, 42 as unknown as string), "result must be a string, got 42"],
      ["release id", (s) => noteVerbs(s).release("", "A", 1, T), 'id must be a non-empty string of printable text, got ""'],
      ["release owner", (s) => noteVerbs(s).release("job-1", "", 1, T), 'owner must be a non-empty string of printable text, got ""'],
      ["release fence", (s) => noteVerbs(s).release("job-1", "A", 0, T), "fence must be a positive safe integer, got 0"],
      ["release now", (s) => noteVerbs(s).release("job-1", "A", 1, -1), "now must be integer milliseconds since the epoch, got -1"],
      ["get now", (s) => s.get("job-1", { now: -1 }), "now must be integer milliseconds since the epoch, got -1"],
      ["fail id", (s) => noteVerbs(s).fail("", "A", 1, T, "x"), 'id must be a non-empty string of printable text, got ""'],
      ["fail owner", (s) => noteVerbs(s).fail("job-1", "", 1, T, "x"), 'owner must be a non-empty string of printable text, got ""'],
      ["fail fence", (s) => noteVerbs(s).fail("job-1", "A", 0, T, "x"), "fence must be a positive safe integer, got 0"],
      ["fail now", (s) => noteVerbs(s).fail("job-1", "A", 1, -1, "x"), "now must be integer milliseconds since the epoch, got -1"],
      ["fail error", (s) => noteVerbs(s).fail("job-1", "A", 1, T, 7 as unknown as string), "error must be a string, got 7"],
      ["fail retryInMs", (s) => noteVerbs(s).fail("job-1", "A", 1, T, "x", -5), "retryInMs must be a whole number of milliseconds, 0 or more, got -5"],
      ["retry id", (s) => s.retry("", { now: T }), 'id must be a non-empty string of printable text, got ""'],
      ["retry now", (s) => s.retry("job-1", { now: -1 }), "now must be integer milliseconds since the epoch, got -1"],
      ["delete id", (s) => s.delete("", { now: T }), 'id must be a non-empty string of printable text, got ""'],
      ["delete now", (s) => s.delete("job-1", { now: -1 }), "now must be integer milliseconds since the epoch, got -1"],
      ["leaseCheck id", (s) => s.leaseCheck("", { owner: "A", fence: 1, now: T }), 'id must be a non-empty string of printable text, got ""'],
      ["leaseCheck owner", (s) => s.leaseCheck("job-1", { owner: "", fence: 1, now: T }), 'owner must be a non-empty string of printable text, got ""'],
      ["leaseCheck fence", (s) => s.leaseCheck("job-1", { owner: "A", fence: 0, now: T }), "fence must be a positive safe integer, got 0"],
      ["leaseCheck now", (s) => s.leaseCheck("job-1", { owner: "A", fence: 1, now: -1 }), "now must be integer milliseconds since the epoch, got -1"],
      ["list limit", (s) => s.list({ limit: 0, now: T }), "limit must be a positive safe integer, got 0"],
      ["list queue", (s) => s.list({ queue: "", now: T }), 'queue must be a non-empty string of printable text, got ""'],
      ["list cursor", (s) => s.list({ cursor: "", now: T }), 'cursor must be a non-empty string of printable text, got ""'],
      ["list now", (s) => s.list({ now: -1 }), "now must be integer milliseconds since the epoch, got -1"],
      ["events id", (s) => s.events(""), 'id must be a non-empty string of printable text, got ""'],
      ["events limit", (s) => s.events("job-1", { limit: 0 }), "limit must be a positive safe integer, got 0"],
      ["events cursor", (s) => s.events("job-1", { cursor: "-1" }), "cursor must be integer milliseconds since the epoch, got -1"],
      ["stats now", (s) => s.stats({ now: -1 }), "now must be integer milliseconds since the epoch, got -1"],
      ["purge now", (s) => s.purge({ retentionMs: 1, now: -1 }), "now must be integer milliseconds since the epoch, got -1"],
      ["purge retentionMs", (s) => s.purge({ retentionMs: 0, now: T }), "retentionMs must be a positive safe integer, got 0"],
      ["enqueueMany queue", (s) => s.enqueueMany("", { jobs: [{ id: "job-2" }], now: T }), 'queue must be a non-empty string of printable text, got ""'],
      ["enqueueMany now", (s) => s.enqueueMany("q", { jobs: [{ id: "job-2" }], now: -1 }), "now must be integer milliseconds since the epoch, got -1"],
      ["enqueueMany payload", (s) => s.enqueueMany("q", { jobs: [{ id: "job-2" }, { id: "job-3", payload: Symbol("x") }], now: T }), "jobs[1].payload must be a JSON value, got Symbol(x)"],
      ["enqueueMany priority", (s) => s.enqueueMany("q", { jobs: [{ id: "job-2" }, { id: "job-3", priority: 0.5 }], now: T }), "jobs[1].priority must be a safe integer, got 0.5"],
      ["enqueueMany maxAttempts", (s) => s.enqueueMany("q", { jobs: [{ id: "job-2" }, { id: "job-3", maxAttempts: 0 }], now: T }), "jobs[1].maxAttempts must be a positive safe integer, got 0"],
      ["cancel id", (s) => s.cancel("", { now: T }), 'id must be a non-empty string of printable text, got ""'],
      ["cancel by", (s) => s.cancel("job-1", { by: "", now: T }), 'by must be a non-empty string of printable text, got ""'],
      ["cancel reason", (s) => s.cancel("job-1", { reason: 7 as unknown as string, now: T }), "reason must be a string, got 7"],
      ["cancel now", (s) => s.cancel("job-1", { now: -1 }), "now must be integer milliseconds since the epoch, got -1"],
      ["finishedOf id", (s) => s.finishedOf(["job-1", ""]), 'id must be a non-empty string of printable text, got ""'],
      ["nextClaimableAt queue", (s) => s.nextClaimableAt("", { now: T }), 'queue must be a non-empty string of printable text, got ""'],
      ["nextClaimableAt now", (s) => s.nextClaimableAt("default", { now: -1 }), "now must be integer milliseconds since the epoch, got -1"],
      ["nextClaimableAtEach queue", (s) => s.nextClaimableAtEach(["default", ""], { now: T }), 'queue must be a non-empty string of printable text, got ""'],
      ["nextClaimableAtEach now", (s) => s.nextClaimableAtEach(["default"], { now: -1 }), "now must be integer milliseconds since the epoch, got -1"],
      ["queuesOf id", (s) => s.queuesOf(["job-1", ""]), 'id must be a non-empty string of printable text, got ""'],
      ["renewMany id", (s) => s.renewMany({ owner: "A", leases: [{ id: "job-1", fence: 1 }, { id: "", fence: 1 }], ttlMs: TTL, now: T }), 'id must be a non-empty string of printable text, got ""'],
      ["renewMany fence", (s) => s.renewMany({ owner: "A", leases: [{ id: "job-1", fence: 0 }], ttlMs: TTL, now: T }), "fence must be a positive safe integer, got 0"],
      ["renewMany progress", (s) => s.renewMany({ owner: "A", leases: [{ id: "job-1", fence: 1, progress: Symbol("x") }], ttlMs: TTL, now: T }), "leases[0].progress must be a JSON value, got Symbol(x)"],
      ["renewMany owner", (s) => s.renewMany({ owner: "", leases: [{ id: "job-1", fence: 1 }], ttlMs: TTL, now: T }), 'owner must be a non-empty string of printable text, got ""'],
      ["renewMany now", (s) => s.renewMany({ owner: "A", leases: [{ id: "job-1", fence: 1 }], ttlMs: TTL, now: -1 }), "now must be integer milliseconds since the epoch, got -1"],
      ["renewMany ttlMs", (s) => s.renewMany({ owner: "A", leases: [{ id: "job-1", fence: 1 }], ttlMs: 0, now: T }), "ttlMs must be a positive safe integer, got 0"],
      ["completeMany id", (s) => s.completeMany({ owner: "A", leases: [{ id: "job-1", fence: 1, result: "x" }, { id: "", fence: 1, result: "x" }], now: T }), 'id must be a non-empty string of printable text, got ""'],
      ["completeMany fence", (s) => s.completeMany({ owner: "A", leases: [{ id: "job-1", fence: 0, result: "x" }], now: T }), "fence must be a positive safe integer, got 0"],
      ["completeMany result", (s) => s.completeMany({ owner: "A", leases: [{ id: "job-1", fence: 1, result: 7 as unknown as string }], now: T }), "leases[0].result must be a string, got 7"],
      ["completeMany owner", (s) => s.completeMany({ owner: "", leases: [{ id: "job-1", fence: 1, result: "x" }], now: T }), 'owner must be a non-empty string of printable text, got ""'],
      ["completeMany now", (s) => s.completeMany({ owner: "A", leases: [{ id: "job-1", fence: 1, result: "x" }], now: -1 }), "now must be integer milliseconds since the epoch, got -1"],
      ["completeMany next limit", (s) => s.completeMany({ owner: "A", leases: [{ id: "job-1", fence: 1, result: "x" }], next: { queue: "default", limit: 0, ttlMs: TTL }, now: T }), "limit must be a positive safe integer, got 0"],
      ["completeMany next ttlMs", (s) => s.completeMany({ owner: "A", leases: [{ id: "job-1", fence: 1, result: "x" }], next: { queue: "default", limit: 1, ttlMs: 0 }, now: T }), "ttlMs must be a positive safe integer, got 0"],
      ["complete next limit", (s) => s.complete("job-1", { owner: "A", fence: 1, result: "x", next: { limit: 0, ttlMs: TTL }, now: T }), "limit must be a positive safe integer, got 0"],
      ["fail next ttlMs", (s) => s.fail("job-1", { owner: "A", fence: 1, error: "x", next: { limit: 1, ttlMs: 0 }, now: T }), "ttlMs must be a positive safe integer, got 0"],
      ["cancel reason too long", (s) => s.cancel("job-1", { reason: "é".repeat(513), now: T }), "reason must be at most 1024 bytes of UTF-8, got 1026"],
      ["enqueue payload with NaN deep down", (s) => s.enqueue("job-2", { payload: nested(60, Number.NaN), now: T }), "payload must not hold NaN or Infinity, which JSON cannot carry"],
      // One depth for every JSON value, whoever sends it (docs/limits.md): 64 levels of arrays and objects.
      ["enqueue payload nested 65 deep", (s) => s.enqueue("job-2", { payload: nested(65, 1), now: T }), `payload ${TOO_DEEP}`],
      ["enqueue payload nested 500,000 deep", (s) => s.enqueue("job-2", { payload: nested(500_000, 1), now: T }), `payload ${TOO_DEEP}`],
      ["enqueue payload that holds itself", (s) => s.enqueue("job-2", { payload: holdingItself(), now: T }), `payload ${TOO_DEEP}`],
      ["enqueueMany payload nested 65 deep", (s) => s.enqueueMany("default", { jobs: [{ id: "job-2" }, { id: "job-3", payload: nested(65, 1) }], now: T }), `jobs[1].payload ${TOO_DEEP}`],
      ["renew progress nested 65 deep", (s) => s.renew("job-1", { owner: "A", fence: 1, ttlMs: TTL, progress: nested(65, 1), now: T }), `progress ${TOO_DEEP}`],
      ["renewMany progress nested 65 deep", (s) => s.renewMany({ owner: "A", leases: [{ id: "job-1", fence: 1, progress: nested(65, 1) }], ttlMs: TTL, now: T }), `leases[0].progress ${TOO_DEEP}`],
      ["complete result of JSON text nested 65 deep", (s) => s.complete("job-1", { owner: "A", fence: 1, result: JSON.stringify(nested(65, 1)), now: T }), `result ${TOO_DEEP}`],
      ["completeMany result of JSON text nested 65 deep", (s) => s.completeMany({ owner: "A", leases: [{ id: "job-1", fence: 1, result: "[".repeat(100_000) + "]".repeat(100_000) }], now: T }), `leases[0].result ${TOO_DEEP}`],
    ];

    test.each(cases)("%s: a bad value is refused with a message naming it, and nothing changes", async (_, call, message) => {
      const { store, snapshot, before } = await leasedByA();
      await expect(call(store)).rejects.toMatchObject({ name: "InvalidArgument", code: "invalid_request", message });
      expect(await snapshot()).toEqual(before);
    });
  });

  // The store's verbs themselves, which the HTTP API calls: each answers the
  // job, the lease, or what changed, or throws the domain error that says why
  // it refused. The note's operations above are noteVerbs over these.
  describe("the store's verbs", () => {
    describe("enqueue and get", () => {
      test("enqueue answers created and the new job; an existing id answers the job unchanged", async () => {
        const { store, snapshot, before } = await leasedByA();
        const fresh = await store.enqueue("job-2", { now: T + 1 });
        expect(fresh).toEqual({ created: true, job: expect.objectContaining({ id: "job-2", owner: null, fence: 0, createdAt: T + 1 }) });
        const again = await store.enqueue("job-1", { priority: 9, now: T + 2 });
        expect(again).toEqual({ created: false, job: expect.objectContaining({ id: "job-1", owner: "A", fence: 1, priority: 0 }) });
        expect(await snapshot()).toEqual({ ...before, "job-2": expect.objectContaining({ fence: 0 }) });
      });

      test("enqueue takes delayMs: due that many ms after now; with runAt too, or below 0, it is InvalidArgument and writes nothing", async () => {
        const { store, snapshot, before } = await leasedByA();
        expect((await store.enqueue("job-2", { delayMs: 500, now: T + 1 })).job).toMatchObject({ runAt: T + 501, status: "scheduled" });
        expect(await store.enqueueMany("q", { jobs: [{ id: "job-3", delayMs: 0 }, { id: "job-4", delayMs: 70 }], now: T + 2 })).toEqual([{ id: "job-3", created: true }, { id: "job-4", created: true }]);
        expect((await store.get("job-3")).runAt).toBe(T + 2);
        expect((await store.get("job-4")).runAt).toBe(T + 72);
        const written = await snapshot();
        await expect(store.enqueue("job-5", { runAt: T, delayMs: 1, now: T })).rejects.toMatchObject({ name: "InvalidArgument", message: "give runAt or delayMs, not both" });
        await expect(store.enqueue("job-5", { delayMs: -1, now: T })).rejects.toMatchObject({ name: "InvalidArgument", message: "delayMs must be a whole number of milliseconds, 0 or more, got -1" });
        await expect(store.enqueueMany("q", { jobs: [{ id: "job-5" }, { id: "job-6", delayMs: 1.5 }], now: T })).rejects.toMatchObject({ name: "InvalidArgument" });
        expect(await snapshot()).toEqual(written);
        expect(Object.keys(written)).toEqual([...Object.keys(before), "job-2", "job-3", "job-4"].sort());
      });

      test("get answers the job, and throws NotFound for an unknown id", async () => {
        const { store } = await leasedByA();
        expect(await store.get("job-1")).toMatchObject({ id: "job-1", owner: "A", fence: 1 });
        await expect(store.get("nope")).rejects.toMatchObject({ name: "NotFound", code: "not_found", id: "nope" });
        await expect(store.get("nope")).rejects.toBeInstanceOf(NotFound);
      });
    });

    describe("claim", () => {
      test("answers the lease taken: fence, until and the job as now held", async () => {
        const { store, snapshot } = await freshStore();
        await store.enqueue("job-1", { now: T });
        const lease = await store.claim("job-1", { owner: "A", ttlMs: TTL, now: T + 5 });
        expect(lease).toEqual({ fence: 1, until: T + 5 + TTL, job: expect.objectContaining({ owner: "A", fence: 1, until: T + 5 + TTL }) });
        expect((await snapshot())["job-1"]).toMatchObject({ owner: "A", fence: 1, until: T + 5 + TTL });
      });

      test("throws NotClaimable leased while another lease holds the job, and changes nothing", async () => {
        const { store, snapshot, before } = await leasedByA();
        const refused = store.claim("job-1", { owner: "B", ttlMs: TTL, now: T + TTL - 1 });
        await expect(refused).rejects.toBeInstanceOf(NotClaimable);
        await expect(refused).rejects.toMatchObject({ code: "not_claimable", reason: "leased", id: "job-1" });
        expect(await snapshot()).toEqual(before);
      });

      test("throws NotClaimable done for a done job, and NotFound for an unknown id without creating it", async () => {
        const { store, snapshot } = await leasedByA();
        await store.complete("job-1", { owner: "A", fence: 1, result: "ok", now: T + 1 });
        const before = await snapshot();
        await expect(store.claim("job-1", { owner: "B", ttlMs: TTL, now: T + 10 * TTL })).rejects.toMatchObject({ code: "not_claimable", reason: "done" });
        await expect(store.claim("nope", { owner: "B", ttlMs: TTL, now: T })).rejects.toBeInstanceOf(NotFound);
        expect(await snapshot()).toEqual(before);
      });
    });

    describe("renew, complete and release", () => {
      test("renew answers the new until; a superseded fence throws LeaseLost naming the current fence", async () => {
        const { store, snapshot } = await leasedByA();
        expect((await store.renew("job-1", { owner: "A", fence: 1, ttlMs: 5_000, now: T + 1 })).until).toBe(T + 1 + 5_000);
        expect(await noteVerbs(store).claim("job-1", "B", T + 1 + 5_000, TTL)).toBe(2);
        const before = await snapshot();
        const refused = store.renew("job-1", { owner: "A", fence: 1, ttlMs: TTL, now: T + 6_000 });
        await expect(refused).rejects.toBeInstanceOf(LeaseLost);
        await expect(refused).rejects.toMatchObject({ code: "stale_lease", reason: "superseded", currentFence: 2 });
        await expect(store.renew("nope", { owner: "A", fence: 1, ttlMs: TTL, now: T + 6_000 })).rejects.toBeInstanceOf(NotFound);
        expect(await snapshot()).toEqual(before);
      });

      test("complete answers the done job, and again, changed false, for the same completion sent twice", async () => {
        const { store, snapshot } = await leasedByA();
        const first = await store.complete("job-1", { owner: "A", fence: 1, result: "r", now: T + 1 });
        expect(first).toMatchObject({ changed: true, leases: [], job: { done: true, result: "r", owner: "A", fence: 1 } });
        const done = await snapshot();
        const again = await store.complete("job-1", { owner: "A", fence: 1, result: "r", now: T + 2 });
        expect(again).toMatchObject({ changed: false, leases: [], job: { done: true, result: "r", updatedAt: T + 1 } });
        expect(await snapshot()).toEqual(done);
      });

      test.each([
        ["another result", "A", 1, "other", "done"],
        ["another owner", "B", 1, "r", "not_owner"],
        ["another fence", "A", 2, "r", "not_owner"],
      ])("complete on a done job with %s throws LeaseLost and keeps the first result", async (_, owner, fence, result, reason) => {
        const { store, snapshot } = await leasedByA();
        await store.complete("job-1", { owner: "A", fence: 1, result: "r", now: T + 1 });
        const before = await snapshot();
        await expect(store.complete("job-1", { owner, fence, result, now: T + 2 })).rejects.toMatchObject({ code: "stale_lease", reason });
        expect(await snapshot()).toEqual(before);
      });

      test("complete on an expired lease throws LeaseLost expired and leaves the job open; an unknown id throws NotFound", async () => {
        const { store, snapshot, before } = await leasedByA();
        await expect(store.complete("job-1", { owner: "A", fence: 1, result: "late", now: T + TTL })).rejects.toMatchObject({ reason: "expired", currentFence: 1 });
        await expect(store.complete("nope", { owner: "A", fence: 1, result: "x", now: T + 1 })).rejects.toBeInstanceOf(NotFound);
        expect(await snapshot()).toEqual(before);
      });

      test("release answers the released job with its fence kept; another owner throws LeaseLost not_owner", async () => {
        const { store, snapshot } = await leasedByA();
        await expect(store.release("job-1", { owner: "B", fence: 1, now: T + 1 })).rejects.toMatchObject({ code: "stale_lease", reason: "not_owner" });
        expect(await store.release("job-1", { owner: "A", fence: 1, now: T + 2 })).toMatchObject({ owner: null, until: 0, fence: 1, updatedAt: T + 2 });
        expect((await snapshot())["job-1"]).toMatchObject({ owner: null, until: 0, fence: 1, updated_at: T + 2 });
      });
    });

    describe("finishedOf (what a waiting read's re-check asks)", () => {
      test("answers the jobs done, dead, cancelled or gone among those asked, none still open, and writes nothing", async () => {
        const { store, snapshot } = await freshStore();
        for (const id of ["queued", "leased", "expired", "done", "cancelled", "deleted"]) await store.enqueue(id, { now: T });
        await store.enqueue("dead", { maxAttempts: 1, now: T });
        await store.enqueue("later", { runAt: T + 1, now: T });
        await store.claim("leased", { owner: "A", ttlMs: TTL, now: T });
        await store.claim("expired", { owner: "A", ttlMs: 1, now: T - 1 }); // ended at T: open still
        await store.claim("done", { owner: "A", ttlMs: TTL, now: T });
        await store.complete("done", { owner: "A", fence: 1, result: "ok", now: T });
        await store.claim("dead", { owner: "A", ttlMs: TTL, now: T });
        await store.fail("dead", { owner: "A", fence: 1, error: "boom", now: T });
        await store.cancel("cancelled", { now: T });
        await store.delete("deleted", { now: T });
        const before = await snapshot();
        const asked = ["queued", "leased", "expired", "later", "done", "dead", "cancelled", "deleted", "never-enqueued"];
        expect((await store.finishedOf(asked)).sort()).toEqual(["cancelled", "dead", "deleted", "done", "never-enqueued"]);
        expect(await store.finishedOf(["queued", "leased"])).toEqual([]);
        expect(await store.finishedOf([])).toEqual([]);
        expect(await snapshot()).toEqual(before);
      });
    });

    describe("nextClaimableAtEach (what the wait rooms' re-check asks)", () => {
      test("answers each queue asked that has a time, with it, and leaves out those that have none, writing nothing", async () => {
        const { store, snapshot } = await freshStore();
        await store.enqueue("due", { queue: "a", now: T });
        await store.enqueue("later", { queue: "b", runAt: T + 5, now: T });
        await store.enqueue("held", { queue: "c", now: T });
        await store.claim("held", { owner: "A", ttlMs: TTL, now: T });
        const before = await snapshot();
        const each = await store.nextClaimableAtEach(["a", "b", "c", "empty"], { now: T });
        expect([...each].sort((x, y) => x.queue.localeCompare(y.queue))).toEqual([{ queue: "a", at: T }, { queue: "b", at: T + 5 }, { queue: "c", at: T + TTL }]);
        expect(await store.nextClaimableAtEach(["empty"], { now: T })).toEqual([]);
        expect(await snapshot()).toEqual(before);
      });
    });
  });

  describe("expire", () => {
    test("clears the owner of every lease expired at now (now == until included), keeps fences, and answers how many", async () => {
      const { store, snapshot } = await freshStore();
      for (const id of ["expired", "at-until", "held", "done", "free"]) await store.enqueue(id, { now: T });
      await store.claim("expired", { owner: "A", ttlMs: TTL, now: T - 2 * TTL });
      await store.claim("at-until", { owner: "A", ttlMs: TTL, now: T - TTL }); // until == T
      await store.claim("held", { owner: "A", ttlMs: TTL, now: T - TTL + 1 });
      await store.claim("done", { owner: "A", ttlMs: TTL, now: T - 2 * TTL });
      await store.complete("done", { owner: "A", fence: 1, result: "ok", now: T - 2 * TTL });
      const before = await snapshot();
      expect(await store.expire({ now: T })).toHaveLength(2);
      const after = await snapshot();
      const expired = { owner: null, until: 0, fence: 1, last_event: "expired", last_error: "the lease of A expired", updated_at: T, seq: 3 };
      expect(after.expired).toEqual({ ...before.expired, ...expired });
      expect(after["at-until"]).toEqual({ ...before["at-until"], ...expired });
      for (const id of ["held", "done", "free"]) expect(after[id]).toEqual(before[id]);
      expect(await store.expire({ now: T })).toHaveLength(0);
    });

    test("refuses a bad now by name", async () => {
      const { store, snapshot, before } = await leasedByA();
      await expect(store.expire({ now: -1 })).rejects.toMatchObject({ message: "now must be integer milliseconds since the epoch, got -1" });
      expect(await snapshot()).toEqual(before);
    });
  });

  describe("ping", () => {
    test("answers while the database does", async () => {
      const { store } = await freshStore();
      await expect(store.ping()).resolves.toBeUndefined();
    });
  });

  describe("the design note's story", () => {
    // The design note's story: A takes the job and stalls; its lease expires; B
    // takes the job and completes it; A comes back late and every write it tries
    // is refused, so B's result stays.
    test("a worker that stalled past its lease cannot overwrite the newer worker's result", async () => {
      const { store, snapshot } = await freshStore();
      await store.enqueue("invoice-42", { now: T });

      const fenceA = await noteVerbs(store).claim("invoice-42", "A", T, TTL);
      expect(fenceA).toBe(1);

      const fenceB = await noteVerbs(store).claim("invoice-42", "B", T + TTL, TTL);
      expect(fenceB).toBe(2);
      expect(await noteVerbs(store).complete("invoice-42", "B", 2, T + TTL + 10, "paid by B")).toBe(true);
      const settled = await snapshot();

      const late = T + TTL + 20;
      expect(await noteVerbs(store).renew("invoice-42", "A", 1, late, TTL)).toBe(false);
      expect(await noteVerbs(store).complete("invoice-42", "A", 1, late, "paid by A")).toBe(false);
      expect(await noteVerbs(store).release("invoice-42", "A", 1, late)).toBe(false);
      // Even borrowing B's name with its old fence, or B's fence with its own name, gets nowhere.
      expect(await noteVerbs(store).complete("invoice-42", "A", 2, late, "paid by A")).toBe(false);
      expect(await noteVerbs(store).complete("invoice-42", "B", 1, late, "paid by A")).toBe(false);

      expect(await snapshot()).toEqual(settled);
      expect(await store.get("invoice-42")).toMatchObject({ owner: "B", fence: 2, result: "paid by B", done: true });
    });
  });

  describe("fences", () => {
    test("a deleted and re-enqueued id starts above every fence it ever had", async () => {
      const { store, exec } = await freshStore();
      await store.enqueue("job-1", { now: T });
      await store.claim("job-1", { owner: "A", ttlMs: TTL, now: T });
      await store.claim("job-1", { owner: "B", ttlMs: TTL, now: T + TTL }); // fence 2
      await exec("DELETE FROM jobs WHERE id = 'job-1'");
      expect(await noteVerbs(store).enqueue("job-1", { now: T + 2 * TTL })).toBe(true);
      expect(await noteVerbs(store).state("job-1")).toMatchObject({ fence: 2, owner: null, done: false });
      expect(await noteVerbs(store).complete("job-1", "B", 2, T + 2 * TTL, "stale")).toBe(false);
      expect(await noteVerbs(store).claim("job-1", "C", T + 2 * TTL, TTL)).toBe(3);

      await exec("DELETE FROM jobs WHERE id = 'job-1'");
      await store.enqueue("job-1", { now: T + 3 * TTL });
      expect(await noteVerbs(store).claim("job-1", "D", T + 3 * TTL, TTL)).toBe(4);
    });

    test("the database itself refuses to lower a fence, whoever writes", async () => {
      const { store, exec, snapshot } = await freshStore();
      await store.enqueue("job-1", { now: T });
      await store.claim("job-1", { owner: "A", ttlMs: TTL, now: T });
      const before = await snapshot();
      await expect(exec("UPDATE jobs SET fence = 0 WHERE id = 'job-1'")).rejects.toThrow(/a fence may only grow/);
      expect(await snapshot()).toEqual(before);
    });
  });
}
