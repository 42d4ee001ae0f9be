import { describe, expect, test } from "vitest";
import { InvalidArgument } from "../src/index.ts";
import { freshStore } from "./fresh-db.ts";

const T = 1_000_000; // the test clock; every time below is T plus something
const TTL = 30_000;

// Values that are not a positive safe integer, for ttlMs and fence.
const NOT_POSITIVE_INTS: unknown[] = [0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, "1000", null, undefined, 2 ** 53];

describe("enqueue", () => {
  test("inserts a new job in the default state and answers true", async () => {
    const { store, snapshot } = await freshStore();
    expect(await store.enqueue("job-1", { now: T })).toBe(true);
    expect((await snapshot())["job-1"]).toEqual({
      id: "job-1", queue: "default", payload: null, priority: 0, run_at: T,
      owner: null, until: 0, fence: 0, result: null, done: 0,
      attempts: 0, max_attempts: 25, created_at: T, updated_at: T,
    });
  });

  test("stores the queue, payload, priority, runAt and maxAttempts it is given", async () => {
    const { store } = await freshStore();
    const payload = { to: "ada@example.com", tags: ["a", 1, null], nested: { ok: true } };
    await store.enqueue("job-1", { queue: "mail", payload, priority: -3, runAt: T + 500, maxAttempts: 2, now: T });
    expect(await store.state("job-1")).toMatchObject({
      queue: "mail", payload, priority: -3, runAt: T + 500, maxAttempts: 2, createdAt: T,
    });
  });

  test("answers false and changes nothing when the id exists, above all not a lease in progress", async () => {
    const { store, snapshot } = await freshStore();
    await store.enqueue("job-1", { now: T });
    await store.claim("job-1", "A", T, TTL);
    const before = await snapshot();
    expect(await store.enqueue("job-1", { queue: "other", payload: 1, priority: 9, runAt: 0, now: T + 1 })).toBe(false);
    expect(await snapshot()).toEqual(before);
  });

  test.each([
    ["an empty id", "", {}],
    ["a non-string id", 42, {}],
    ["an empty queue", "job-1", { queue: "" }],
    ["a fractional priority", "job-1", { priority: 1.5 }],
    ["a negative runAt", "job-1", { runAt: -1 }],
    ["a zero maxAttempts", "job-1", { maxAttempts: 0 }],
    ["a payload JSON cannot carry", "job-1", { payload: () => 1 }],
    ["a payload with a bigint", "job-1", { payload: { n: 1n } }],
    ["a fractional now", "job-1", { now: 1.5 }],
  ])("refuses %s with a RangeError and writes nothing", async (_, id, options) => {
    const { store, snapshot } = await freshStore();
    await expect(store.enqueue(id as string, options)).rejects.toThrow(RangeError);
    expect(await snapshot()).toEqual({});
  });
});

describe("state", () => {
  test("answers null, not an empty object, for an unknown id", async () => {
    const { store } = await freshStore();
    expect(await store.state("nope")).toBeNull();
  });

  test("reads what is stored, including another connection's writes", async () => {
    const { store, url } = await freshStore();
    await store.enqueue("job-1", { now: T });
    const other = await (await import("../src/index.ts")).openStore({ url, migrations: false });
    try {
      await other.claim("job-1", "B", T, TTL);
    } finally {
      other.close();
    }
    expect(await store.state("job-1")).toEqual({
      id: "job-1", queue: "default", payload: null, priority: 0, runAt: T,
      owner: "B", until: T + TTL, fence: 1, result: null, done: false,
      attempts: 1, maxAttempts: 25, createdAt: T, updatedAt: T,
    });
  });
});

describe("claim", () => {
  test("takes an unclaimed job: owner, until = now + ttl, fence + 1, attempts + 1", async () => {
    const { store, snapshot } = await freshStore();
    await store.enqueue("job-1", { now: T });
    await store.enqueue("bystander", { now: T });
    const bystander = (await snapshot()).bystander;
    expect(await store.claim("job-1", "A", T + 10, TTL)).toBe(1);
    const after = await snapshot();
    expect(after["job-1"]).toMatchObject({ owner: "A", until: T + 10 + TTL, fence: 1, attempts: 1, done: 0, updated_at: T + 10 });
    expect(after.bystander).toEqual(bystander);
  });

  test("gives null and changes nothing while the lease is held (now == until - 1)", async () => {
    const { store, snapshot } = await freshStore();
    await store.enqueue("job-1", { now: T });
    await store.claim("job-1", "A", T, TTL);
    const before = await snapshot();
    expect(await store.claim("job-1", "B", T + TTL - 1, TTL)).toBeNull();
    expect(await store.claim("job-1", "A", T + TTL - 1, TTL)).toBeNull();
    expect(await snapshot()).toEqual(before);
  });

  test("takes over an expired lease at exactly now == until, with the next fence", async () => {
    const { store, snapshot } = await freshStore();
    await store.enqueue("job-1", { now: T });
    await store.claim("job-1", "A", T, TTL);
    expect(await store.claim("job-1", "B", T + TTL, TTL)).toBe(2);
    expect((await snapshot())["job-1"]).toMatchObject({ owner: "B", until: T + 2 * TTL, fence: 2, attempts: 2 });
  });

  test("gives null and changes nothing for a done job, even long after its lease", async () => {
    const { store, snapshot } = await freshStore();
    await store.enqueue("job-1", { now: T });
    await store.claim("job-1", "A", T, TTL);
    await store.complete("job-1", "A", 1, T + 1, "ok");
    const before = await snapshot();
    expect(await store.claim("job-1", "B", T + 10 * TTL, TTL)).toBeNull();
    expect(await snapshot()).toEqual(before);
  });

  test("gives null and creates nothing for an unknown id", async () => {
    const { store, snapshot } = await freshStore();
    expect(await store.claim("nope", "A", T, TTL)).toBeNull();
    expect(await snapshot()).toEqual({});
  });

  test.each(NOT_POSITIVE_INTS)("refuses ttlMs %s with a RangeError before touching the database", async (ttl) => {
    const { store, snapshot } = await freshStore();
    await store.enqueue("job-1", { now: T });
    const before = await snapshot();
    await expect(store.claim("job-1", "A", T, ttl as number)).rejects.toThrow(RangeError);
    expect(await snapshot()).toEqual(before);
  });

  test.each([["", "an empty owner"], [7, "a non-string owner"]])("refuses owner %j (%s) with a RangeError", async (owner, _why) => {
    const { store, snapshot } = await freshStore();
    await store.enqueue("job-1", { now: T });
    const before = await snapshot();
    await expect(store.claim("job-1", owner as string, T, TTL)).rejects.toThrow(InvalidArgument);
    expect(await snapshot()).toEqual(before);
  });

  test("refuses a negative or fractional now", async () => {
    const { store } = await freshStore();
    await store.enqueue("job-1", { now: T });
    await expect(store.claim("job-1", "A", -1, TTL)).rejects.toThrow(RangeError);
    await expect(store.claim("job-1", "A", 1.5, TTL)).rejects.toThrow(RangeError);
    expect((await store.state("job-1"))?.fence).toBe(0);
  });
});

/** A store holding one job leased by A with fence 1 until T + TTL, and a bystander leased by A too. */
async function leasedByA() {
  const fresh = await freshStore();
  await fresh.store.enqueue("job-1", { now: T });
  await fresh.store.enqueue("bystander", { now: T });
  expect(await fresh.store.claim("job-1", "A", T, TTL)).toBe(1);
  expect(await fresh.store.claim("bystander", "A", T, TTL)).toBe(1);
  return { ...fresh, before: await fresh.snapshot() };
}

describe("renew", () => {
  test("extends the current lease to now + ttl and touches nothing else", async () => {
    const { store, snapshot, before } = await leasedByA();
    expect(await store.renew("job-1", "A", 1, T + TTL - 1, 5_000)).toBe(true);
    const after = await snapshot();
    expect(after["job-1"]).toEqual({ ...before["job-1"], until: T + TTL - 1 + 5_000, updated_at: T + TTL - 1 });
    expect(after.bystander).toEqual(before.bystander);
  });

  test("cannot revive a lease that expired at now == until", async () => {
    const { store, snapshot, before } = await leasedByA();
    expect(await store.renew("job-1", "A", 1, T + TTL, TTL)).toBe(false);
    expect(await snapshot()).toEqual(before);
  });

  test.each([
    ["another owner", "B", 1],
    ["a fence from the future (fence + 1)", "A", 2],
  ])("refuses %s and changes nothing", async (_, owner, fence) => {
    const { store, snapshot, before } = await leasedByA();
    expect(await store.renew("job-1", owner, fence, T + 1, TTL)).toBe(false);
    expect(await snapshot()).toEqual(before);
  });

  test("refuses the fence before the current one after a takeover", async () => {
    const { store, snapshot } = await leasedByA();
    expect(await store.claim("job-1", "A", T + TTL, TTL)).toBe(2);
    const before = await snapshot();
    expect(await store.renew("job-1", "A", 1, T + TTL + 1, TTL)).toBe(false);
    expect(await snapshot()).toEqual(before);
  });

  test("refuses a done job, a released lease and an unknown id", async () => {
    const { store, snapshot } = await leasedByA();
    await store.complete("bystander", "A", 1, T + 1, "ok");
    await store.release("job-1", "A", 1, T + 1);
    const before = await snapshot();
    expect(await store.renew("bystander", "A", 1, T + 2, TTL)).toBe(false);
    expect(await store.renew("job-1", "A", 1, T + 2, TTL)).toBe(false);
    expect(await store.renew("nope", "A", 1, T + 2, TTL)).toBe(false);
    expect(await snapshot()).toEqual(before);
  });

  test.each(NOT_POSITIVE_INTS)("refuses ttlMs %s with a RangeError and changes nothing", async (ttl) => {
    const { store, snapshot, before } = await leasedByA();
    await expect(store.renew("job-1", "A", 1, T + 1, ttl as number)).rejects.toThrow(RangeError);
    expect(await snapshot()).toEqual(before);
  });

  test.each(NOT_POSITIVE_INTS)("refuses fence %s with a RangeError and changes nothing", async (fence) => {
    const { store, snapshot, before } = await leasedByA();
    await expect(store.renew("job-1", "A", fence as number, T + 1, TTL)).rejects.toThrow(RangeError);
    expect(await snapshot()).toEqual(before);
  });
});

describe("complete", () => {
  test("stores the result of the current lease and marks the job done", async () => {
    const { store, snapshot, before } = await leasedByA();
    expect(await store.complete("job-1", "A", 1, T + TTL - 1, "result of A")).toBe(true);
    const after = await snapshot();
    expect(after["job-1"]).toEqual({ ...before["job-1"], result: "result of A", done: 1, updated_at: T + TTL - 1 });
    expect(after.bystander).toEqual(before.bystander);
  });

  test("stores an empty string as a result", async () => {
    const { store } = await leasedByA();
    expect(await store.complete("job-1", "A", 1, T + 1, "")).toBe(true);
    expect(await store.state("job-1")).toMatchObject({ result: "", done: true });
  });

  test("refuses a completion at now == until and keeps the job open", async () => {
    const { store, snapshot, before } = await leasedByA();
    expect(await store.complete("job-1", "A", 1, T + TTL, "late")).toBe(false);
    expect(await snapshot()).toEqual(before);
  });

  test.each([
    ["another owner", "B", 1],
    ["a fence from the future (fence + 1)", "A", 2],
  ])("refuses %s and changes nothing", async (_, owner, fence) => {
    const { store, snapshot, before } = await leasedByA();
    expect(await store.complete("job-1", owner, fence, T + 1, "forged")).toBe(false);
    expect(await snapshot()).toEqual(before);
  });

  test("refuses a second completion and keeps the first result", async () => {
    const { store, snapshot } = await leasedByA();
    expect(await store.complete("job-1", "A", 1, T + 1, "first")).toBe(true);
    const before = await snapshot();
    expect(await store.complete("job-1", "A", 1, T + 2, "second")).toBe(false);
    expect(await snapshot()).toEqual(before);
    expect((await store.state("job-1"))?.result).toBe("first");
  });

  test("refuses an unknown id and creates nothing", async () => {
    const { store, snapshot, before } = await leasedByA();
    expect(await store.complete("nope", "A", 1, T + 1, "x")).toBe(false);
    expect(await snapshot()).toEqual(before);
  });

  test.each([[42], [null], [undefined], [{ ok: true }]])("refuses result %j: it must be a string", async (result) => {
    const { store, snapshot, before } = await leasedByA();
    await expect(store.complete("job-1", "A", 1, T + 1, result as unknown as string)).rejects.toThrow(RangeError);
    expect(await snapshot()).toEqual(before);
  });
});

describe("release", () => {
  test("gives the lease back: owner NULL, until 0, the fence kept", async () => {
    const { store, snapshot, before } = await leasedByA();
    expect(await store.release("job-1", "A", 1, T + 5)).toBe(true);
    const after = await snapshot();
    expect(after["job-1"]).toEqual({ ...before["job-1"], owner: null, until: 0, fence: 1, updated_at: T + 5 });
    expect(after.bystander).toEqual(before.bystander);
  });

  test("makes the job claimable at once, with a fence above the released one", async () => {
    const { store } = await leasedByA();
    await store.release("job-1", "A", 1, T + 5);
    expect(await store.claim("job-1", "B", T + 6, TTL)).toBe(2);
  });

  test("still works after the lease expired, while nobody else has claimed the job", async () => {
    const { store } = await leasedByA();
    expect(await store.release("job-1", "A", 1, T + TTL + 1)).toBe(true);
    expect(await store.state("job-1")).toMatchObject({ owner: null, until: 0, fence: 1 });
  });

  test("refuses another owner, fence - 1, fence + 1, a done job, a second release and an unknown id", async () => {
    const { store, snapshot } = await leasedByA();
    expect(await store.claim("job-1", "A", T + TTL, TTL)).toBe(2); // A's own takeover: fence 2
    await store.complete("bystander", "A", 1, T + 1, "ok");
    const before = await snapshot();
    expect(await store.release("job-1", "B", 2, T + TTL + 1)).toBe(false);
    expect(await store.release("job-1", "A", 1, T + TTL + 1)).toBe(false);
    expect(await store.release("job-1", "A", 3, T + TTL + 1)).toBe(false);
    expect(await store.release("bystander", "A", 1, T + TTL + 1)).toBe(false);
    expect(await store.release("nope", "A", 1, T + TTL + 1)).toBe(false);
    expect(await snapshot()).toEqual(before);
    expect(await store.release("job-1", "A", 2, T + TTL + 1)).toBe(true);
    const released = await snapshot();
    expect(await store.release("job-1", "A", 2, T + TTL + 2)).toBe(false);
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
    const leases = await store.claimNext("default", "A", T, TTL, 10);
    expect(leases.map((lease) => lease.job.id)).toEqual(["high-due-first", "high-due-later", "high-same-due-newer", "low"]);
  });

  test("answers each lease with its fence and until, and writes them", async () => {
    const { store, snapshot } = await freshStore();
    await store.enqueue("job-1", { payload: { n: 1 }, now: T });
    const [lease] = await store.claimNext("default", "A", T, TTL);
    expect(lease).toEqual({ fence: 1, until: T + TTL, job: expect.objectContaining({ id: "job-1", owner: "A", fence: 1, attempts: 1, payload: { n: 1 } }) });
    expect((await snapshot())["job-1"]).toMatchObject({ owner: "A", until: T + TTL, fence: 1, attempts: 1 });
  });

  test("skips done, leased, not yet due and other queues' jobs, and takes expired leases", async () => {
    const { store, snapshot } = await freshStore();
    for (const id of ["done", "leased", "expired", "free"]) await store.enqueue(id, { now: T });
    await store.enqueue("scheduled", { runAt: T + 1, now: T });
    await store.enqueue("elsewhere", { queue: "other", now: T });
    await store.claim("done", "X", T, TTL);
    await store.complete("done", "X", 1, T, "ok");
    await store.claim("leased", "X", T, TTL);
    await store.claim("expired", "X", T - TTL, TTL); // until == T
    const untouched = await snapshot();
    const leases = await store.claimNext("default", "A", T, TTL, 100);
    expect(leases.map((lease) => lease.job.id).sort()).toEqual(["expired", "free"]);
    expect(leases.find((lease) => lease.job.id === "expired")?.fence).toBe(2);
    const after = await snapshot();
    for (const id of ["done", "leased", "scheduled", "elsewhere"]) expect(after[id]).toEqual(untouched[id]);
  });

  test("takes no more than limit, and never the same job twice in a row", async () => {
    const { store } = await freshStore();
    for (let i = 0; i < 5; i++) await store.enqueue(`job-${i}`, { now: T + i });
    const first = await store.claimNext("default", "A", T + 10, TTL, 2);
    const second = await store.claimNext("default", "B", T + 10, TTL, 2);
    expect(first.map((lease) => lease.job.id)).toEqual(["job-0", "job-1"]);
    expect(second.map((lease) => lease.job.id)).toEqual(["job-2", "job-3"]);
  });

  test("answers an empty list when nothing is due", async () => {
    const { store, snapshot } = await freshStore();
    await store.enqueue("later", { runAt: T + 1, now: T });
    const before = await snapshot();
    expect(await store.claimNext("default", "A", T, TTL)).toEqual([]);
    expect(await store.claimNext("empty", "A", T, TTL)).toEqual([]);
    expect(await snapshot()).toEqual(before);
  });

  test.each([[0], [-1], [1.5], ["2"]])("refuses limit %j with a RangeError", async (limit) => {
    const { store, snapshot } = await freshStore();
    await store.enqueue("job-1", { now: T });
    const before = await snapshot();
    await expect(store.claimNext("default", "A", T, TTL, limit as number)).rejects.toThrow(RangeError);
    expect(await snapshot()).toEqual(before);
  });
});
