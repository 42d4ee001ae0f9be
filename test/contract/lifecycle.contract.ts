import { describe, expect, test } from "vitest";
import { LeaseLost, NotFound, WrongStatus } from "../../src/store/errors.ts";
import type { JobEvent } from "../../src/store/job.ts";
import type { LeaseStore } from "../../src/store/store.ts";
import type { FreshStore } from "./store.contract.ts";
import { noteVerbs } from "../../src/store/note.ts";

// A job's whole life (issue 6) over the store, run on every driver like the
// store contract: failures and backoff, dead letters, retry, delete, retention,
// the events of every transition and refusal, listings and numbers.

const HOUR = 3_600_000;
const T = 100 * HOUR; // the test clock, far enough from 0 to look hours back
const TTL = 30_000;

/** The kinds of a job's events, oldest first. */
async function kinds(store: LeaseStore, id: string): Promise<string[]> {
  return (await store.events(id, { limit: 1000 })).items.map((event) => event.kind);
}

/** Registers the lifecycle contract for one driver. */
export function lifecycleContract(freshStore: () => Promise<FreshStore>): void {
  /** job-1 leased by A (fence 1, until T + TTL) with maxAttempts 3, and a bystander. */
  async function leasedByA(maxAttempts = 3) {
    const fresh = await freshStore();
    await fresh.store.enqueue("job-1", { maxAttempts, now: T });
    await fresh.store.enqueue("bystander", { now: T });
    expect(await noteVerbs(fresh.store).claim("job-1", "A", T, TTL)).toBe(1);
    return { ...fresh, before: await fresh.snapshot() };
  }

  describe("fail", () => {
    test("ends the current lease as a failed attempt: due again after retryInMs, the error kept", async () => {
      const { store, snapshot, before } = await leasedByA();
      expect(await noteVerbs(store).fail("job-1", "A", 1, T + 10, "disk full", 5_000)).toBe(true);
      const after = await snapshot();
      expect(after["job-1"]).toMatchObject({ owner: null, until: 0, fence: 1, attempts: 1, run_at: T + 10 + 5_000, last_error: "disk full", done: 0, dead: 0 });
      expect(after.bystander).toEqual(before.bystander);
      expect(await store.get("job-1", { now: T + 10 })).toMatchObject({ status: "scheduled", lastError: "disk full", done: false });
      expect(await store.get("job-1", { now: T + 10 + 5_000 })).toMatchObject({ status: "queued" });
      const [failed] = (await store.events("job-1")).items.filter((event) => event.kind === "failed");
      expect(failed).toMatchObject({ owner: "A", fence: 1, at: T + 10, error: "disk full" });
    });

    test("without retryInMs waits the backoff: 1 s doubling per attempt, capped at 1 hour, times the jitter", async () => {
      const { reopen } = await freshStore();
      const store = await reopen({ random: () => 0 }); // jitter 0.5
      await store.enqueue("job-1", { maxAttempts: 100, now: T });
      const waits: number[] = [];
      for (let attempt = 1; attempt <= 14; attempt++) {
        const now = T + attempt * 10 * HOUR;
        const { fence } = await store.claim("job-1", { owner: "A", ttlMs: TTL, now });
        await store.fail("job-1", { owner: "A", fence, error: "again", now });
        waits.push((await store.get("job-1", { now }))!.runAt - now);
      }
      expect(waits).toEqual([500, 1000, 2000, 4000, 8000, 16000, 32000, 64000, 128000, 256000, 512000, 1024000, 1800000, 1800000]);
    });

    test("the jitter is 0.5 plus half the random draw: a draw of 0.5 waits 0.75 of the backoff, a draw just under 1 almost all of it", async () => {
      const { reopen } = await freshStore();
      const waits: number[] = [];
      for (const draw of [0.5, 0.999]) {
        const store = await reopen({ random: () => draw });
        const id = `job-${draw}`;
        await store.enqueue(id, { maxAttempts: 100, now: T });
        const { fence } = await store.claim(id, { owner: "A", ttlMs: TTL, now: T });
        const failed = await store.fail(id, { owner: "A", fence, error: "again", now: T });
        expect(failed.changed).toBe(true);
        waits.push(failed.job.runAt - T);
      }
      expect(waits).toEqual([750, 999]); // 1 s times 0.75, and times 0.9995 (floored)
    });

    test("on attempt maxAttempts - 1 the job comes back; on attempt maxAttempts it dies", async () => {
      const { store, snapshot } = await leasedByA(2);
      await store.fail("job-1", { owner: "A", fence: 1, error: "first", retryInMs: 0, now: T + 1 });
      expect(await store.get("job-1", { now: T + 1 })).toMatchObject({ status: "queued", attempts: 1 });
      expect(await noteVerbs(store).claim("job-1", "A", T + 2, TTL)).toBe(2);
      const dead = (await store.fail("job-1", { owner: "A", fence: 2, error: "second", retryInMs: 0, now: T + 3 })).job;
      expect(dead).toMatchObject({ status: "dead", done: false, attempts: 2, lastError: "second", owner: null, fence: 2 });
      expect((await snapshot())["job-1"]).toMatchObject({ dead: 1, done: 1, last_event: "dead" });
      expect(await kinds(store, "job-1")).toEqual(["enqueued", "claimed", "failed", "claimed", "dead"]);
      expect(await noteVerbs(store).claim("job-1", "B", T + 4 * HOUR, TTL)).toBeNull();
      await expect(store.claim("job-1", { owner: "B", ttlMs: TTL, now: T + 4 * HOUR })).rejects.toMatchObject({ reason: "dead" });
      expect((await store.claimNext("default", { owner: "B", ttlMs: TTL, limit: 10, now: T + 4 * HOUR })).map((lease) => lease.job.id)).toEqual(["bystander"]);
    });

    test.each([
      ["another owner", "B", 1, T + 1],
      ["a fence from the future", "A", 2, T + 1],
      ["an expired lease", "A", 1, T + TTL],
    ])("refuses %s: false, the job unchanged, and exactly one refusal recorded with both fences", async (_, owner, fence, now) => {
      const { store, snapshot, before } = await leasedByA();
      expect(await noteVerbs(store).fail("job-1", owner, fence, now, "nope")).toBe(false);
      expect(await snapshot()).toEqual(before);
      const refusals = (await store.events("job-1")).items.filter((event) => event.kind === "refused");
      expect(refusals).toEqual([expect.objectContaining({ action: "fail", owner, fence, currentOwner: "A", currentFence: 1, at: now })]);
    });

    test("fail throws LeaseLost for a stale lease and NotFound for an unknown id", async () => {
      const { store } = await leasedByA();
      await expect(store.fail("job-1", { owner: "B", fence: 1, error: "x", now: T + 1 })).rejects.toBeInstanceOf(LeaseLost);
      await expect(store.fail("nope", { owner: "A", fence: 1, error: "x", now: T + 1 })).rejects.toBeInstanceOf(NotFound);
    });
  });

  describe("expiry", () => {
    test("the cron ends an expired lease as a failed attempt, and the last one makes the job dead", async () => {
      const fresh = await freshStore();
      const { store } = fresh;
      await store.enqueue("one-left", { maxAttempts: 2, now: T });
      await store.enqueue("last", { maxAttempts: 1, now: T });
      await store.claim("one-left", { owner: "A", ttlMs: TTL, now: T });
      await store.claim("last", { owner: "A", ttlMs: TTL, now: T });
      expect(await store.expire({ now: T + TTL })).toEqual([{ id: "last", queue: "default", dead: true }, { id: "one-left", queue: "default", dead: false }]);
      expect(await store.get("one-left", { now: T + TTL })).toMatchObject({ status: "queued", owner: null, fence: 1, lastError: "the lease of A expired" });
      expect(await store.get("last", { now: T + TTL })).toMatchObject({ status: "dead", owner: null, fence: 1, lastError: "the lease of A expired" });
      expect(await kinds(store, "one-left")).toEqual(["enqueued", "claimed", "expired"]);
      const events = (await store.events("last")).items;
      expect(events.at(-1)).toMatchObject({ kind: "dead", owner: "A", fence: 1, error: "the lease of A expired" });
    });

    test("a claim that takes over an expired lease records the expiry, then the claim", async () => {
      const { store } = await leasedByA();
      expect(await noteVerbs(store).claim("job-1", "B", T + TTL, TTL)).toBe(2);
      const events = (await store.events("job-1")).items;
      expect(events.map((event) => [event.kind, event.owner, event.fence])).toEqual([["enqueued", null, null], ["claimed", "A", 1], ["expired", "A", 1], ["claimed", "B", 2]]);
      expect(await store.get("job-1", { now: T + TTL })).toMatchObject({ lastError: "the lease of A expired", attempts: 2 });
    });

    test("claim-next takes over an expired lease with both events, but leaves one on its last attempt to die", async () => {
      const { store } = await freshStore();
      await store.enqueue("again", { queue: "q", maxAttempts: 5, now: T });
      await store.enqueue("spent", { queue: "q", maxAttempts: 1, now: T });
      await store.claimNext("q", { owner: "A", ttlMs: TTL, limit: 2, now: T });
      const taken = await store.claimNext("q", { owner: "B", ttlMs: TTL, limit: 2, now: T + TTL });
      expect(taken.map((lease) => lease.job.id)).toEqual(["again"]);
      expect(await kinds(store, "again")).toEqual(["enqueued", "claimed", "expired", "claimed"]);
      expect(await store.get("spent", { now: T + TTL })).toMatchObject({ status: "queued", owner: "A" }); // expired, not yet ended
      expect(await store.expire({ now: T + TTL })).toHaveLength(1);
      expect(await store.get("spent", { now: T + TTL })).toMatchObject({ status: "dead" });
    });

    test("claim by id of a job whose expired lease was its last attempt makes it dead and refuses", async () => {
      const { store } = await leasedByA(1);
      await expect(store.claim("job-1", { owner: "B", ttlMs: TTL, now: T + TTL })).rejects.toMatchObject({ reason: "dead" });
      expect(await store.get("job-1", { now: T + TTL })).toMatchObject({ status: "dead", fence: 1, owner: null });
      expect(await kinds(store, "job-1")).toEqual(["enqueued", "claimed", "dead"]);
    });
  });

  describe("release and attempts", () => {
    test("a release in time gives the attempt back, so releases alone never kill a job", async () => {
      const { store } = await leasedByA(1);
      for (let i = 1; i <= 3; i++) {
        expect(await noteVerbs(store).release("job-1", "A", i, T + i)).toBe(true);
        expect(await noteVerbs(store).claim("job-1", "A", T + i, TTL)).toBe(i + 1);
      }
      expect(await store.get("job-1", { now: T + 4 })).toMatchObject({ status: "leased", attempts: 1, fence: 4 });
      expect(await noteVerbs(store).fail("job-1", "A", 4, T + 5, "the one real failure")).toBe(true);
      expect(await store.get("job-1", { now: T + 5 })).toMatchObject({ status: "dead", attempts: 1 });
    });

    test("a release after the lease ended counts as the expiry it was: on the last attempt the job dies", async () => {
      const { store } = await leasedByA(1);
      expect(await noteVerbs(store).release("job-1", "A", 1, T + TTL)).toBe(true);
      expect(await store.get("job-1", { now: T + TTL })).toMatchObject({ status: "dead", attempts: 1, owner: null, fence: 1, lastError: "the lease of A expired" });
      expect(await kinds(store, "job-1")).toEqual(["enqueued", "claimed", "dead"]);
    });
  });

  describe("retry", () => {
    test("puts a dead job back, due at once, attempts reset, and the next claim gets a higher fence", async () => {
      const { store } = await leasedByA(1);
      await store.fail("job-1", { owner: "A", fence: 1, error: "boom", now: T + 1 });
      const back = await store.retry("job-1", { now: T + 2 });
      expect(back).toMatchObject({ status: "queued", attempts: 0, fence: 1, runAt: T + 2, lastError: "boom" });
      expect(await noteVerbs(store).claim("job-1", "B", T + 3, TTL)).toBe(2);
      expect(await kinds(store, "job-1")).toEqual(["enqueued", "claimed", "dead", "retried", "claimed"]);
    });

    test("refuses a job that is not dead, and an unknown id, changing nothing", async () => {
      const { store, snapshot, before } = await leasedByA();
      await expect(store.retry("job-1", { now: T + 1 })).rejects.toMatchObject({ name: "WrongStatus", status: "leased", message: 'only a dead job can be retried; job "job-1" is leased' });
      await expect(store.retry("nope", { now: T + 1 })).rejects.toBeInstanceOf(NotFound);
      expect(await snapshot()).toEqual(before);
    });
  });

  describe("delete", () => {
    test("deletes a job nobody leases, records it, and a re-enqueued id starts above its old fence", async () => {
      const { store, snapshot, before } = await leasedByA();
      await store.release("job-1", { owner: "A", fence: 1, now: T + 1 });
      await store.delete("job-1", { now: T + 2 });
      expect(await noteVerbs(store).state("job-1", T + 2)).toBeNull();
      expect((await snapshot()).bystander).toEqual(before.bystander);
      expect((await store.events("job-1")).items.at(-1)).toMatchObject({ kind: "deleted", fence: 1, at: T + 2 });
      await store.enqueue("job-1", { now: T + 3 });
      expect(await noteVerbs(store).claim("job-1", "B", T + 3, TTL)).toBe(2);
    });

    test("refuses a leased job while its lease lasts, and deletes it once the lease has expired", async () => {
      const { store, snapshot, before } = await leasedByA();
      await expect(store.delete("job-1", { now: T + TTL - 1 })).rejects.toMatchObject({ name: "WrongStatus", status: "leased", message: 'job "job-1" is leased; it can be deleted once its lease ends' });
      expect(await snapshot()).toEqual(before);
      await store.delete("job-1", { now: T + TTL });
      expect(await noteVerbs(store).state("job-1", T + TTL)).toBeNull();
    });

    test("an unknown id is NotFound", async () => {
      const { store } = await freshStore();
      await expect(store.delete("nope", { now: T })).rejects.toBeInstanceOf(NotFound);
    });
  });

  describe("retention", () => {
    test("purges done and dead jobs exactly at the retention age, with their events, and keeps the rest", async () => {
      const { store, snapshot } = await freshStore();
      for (const id of ["done-old", "done-young", "dead-old", "queued"]) await store.enqueue(id, { maxAttempts: 1, now: T });
      for (const id of ["done-old", "done-young", "dead-old"]) await store.claim(id, { owner: "A", ttlMs: TTL, now: T });
      await store.complete("done-old", { owner: "A", fence: 1, result: "r", now: T + 100 });
      await store.complete("done-young", { owner: "A", fence: 1, result: "r", now: T + 101 });
      await store.fail("dead-old", { owner: "A", fence: 1, error: "x", now: T + 100 });
      const retention = 7 * 24 * HOUR;
      expect(await store.purge({ retentionMs: retention, now: T + 100 + retention })).toBe(2);
      expect(Object.keys(await snapshot())).toEqual(["done-young", "queued"]);
      expect((await store.events("done-old")).items).toEqual([]);
      expect(await kinds(store, "done-young")).toEqual(["enqueued", "claimed", "completed"]);
      expect(await store.purge({ retentionMs: retention, now: T + 100 + retention })).toBe(0);
    });

    test("takes the purged job's later refusals with it, and old events of deleted jobs", async () => {
      const { store } = await freshStore();
      const retention = HOUR;
      await store.enqueue("done", { now: T });
      await store.claim("done", { owner: "A", ttlMs: TTL, now: T });
      await store.complete("done", { owner: "A", fence: 1, result: "r", now: T + 1 });
      await expect(store.complete("done", { owner: "Z", fence: 9, result: "stale", now: T + retention })).rejects.toBeInstanceOf(LeaseLost); // refused after the job finished: newer than the cutoff
      await store.enqueue("deleted", { now: T });
      await store.delete("deleted", { now: T + 1 });
      expect(await store.purge({ retentionMs: retention, now: T + 1 + retention })).toBe(1);
      expect((await store.events("done")).items).toEqual([]);
      expect((await store.events("deleted")).items).toEqual([]);
    });

    test("a purged id enqueued again starts above every fence it ever had", async () => {
      const { store } = await leasedByA();
      expect(await noteVerbs(store).claim("job-1", "B", T + TTL, TTL)).toBe(2);
      await store.complete("job-1", { owner: "B", fence: 2, result: "done", now: T + TTL });
      expect(await store.purge({ retentionMs: HOUR, now: T + TTL + HOUR })).toBe(1);
      await store.enqueue("job-1", { now: T + 2 * HOUR });
      expect(await noteVerbs(store).claim("job-1", "C", T + 2 * HOUR, TTL)).toBe(3);
    });
  });

  describe("events", () => {
    test("record every transition of a job, oldest first, with who acted and with which fence", async () => {
      const { store } = await leasedByA();
      await store.renew("job-1", { owner: "A", fence: 1, ttlMs: TTL, now: T + 1 });
      await store.complete("job-1", { owner: "A", fence: 1, result: "ok", now: T + 2 });
      const events = (await store.events("job-1")).items.map(({ kind, owner, fence, at, count, lastAt }) => ({ kind, owner, fence, at, count, lastAt }));
      expect(events).toEqual([
        { kind: "enqueued", owner: null, fence: null, at: T, count: 1, lastAt: T },
        { kind: "claimed", owner: "A", fence: 1, at: T, count: 1, lastAt: T },
        { kind: "renewed", owner: "A", fence: 1, at: T + 1, count: 1, lastAt: T + 1 },
        { kind: "completed", owner: "A", fence: 1, at: T + 2, count: 1, lastAt: T + 2 },
      ]);
    });

    test("a stale complete leaves exactly one refusal with both fences, and the stats count it", async () => {
      const { store } = await leasedByA();
      await store.claim("job-1", { owner: "B", ttlMs: TTL, now: T + TTL });
      await store.complete("job-1", { owner: "B", fence: 2, result: "B's", now: T + TTL + 1 });
      expect(await noteVerbs(store).complete("job-1", "A", 1, T + TTL + 2, "A's")).toBe(false);
      const refusals = (await store.events("job-1")).items.filter((event) => event.kind === "refused");
      expect(refusals).toEqual([
        expect.objectContaining<Partial<JobEvent>>({ action: "complete", owner: "A", fence: 1, currentOwner: "B", currentFence: 2, at: T + TTL + 2 }),
      ]);
      const [stats] = await store.stats({ now: T + TTL + 3 });
      expect(stats).toMatchObject({ queue: "default", refused: { lastHour: 1, total: 1 } });
    });

    test("the same completion sent again is not a refusal; a stale renew and release are", async () => {
      const { store } = await leasedByA();
      await store.complete("job-1", { owner: "A", fence: 1, result: "ok", now: T + 1 });
      await store.complete("job-1", { owner: "A", fence: 1, result: "ok", now: T + 2 });
      expect(await noteVerbs(store).renew("job-1", "A", 1, T + 3, TTL)).toBe(false);
      expect(await noteVerbs(store).release("job-1", "A", 1, T + 4)).toBe(false);
      const refusals = (await store.events("job-1")).items.filter((event) => event.kind === "refused").map((event) => event.action);
      expect(refusals).toEqual(["renew", "release"]);
    });

    test("another result for a done job, from the lease that completed it, is a refusal", async () => {
      const { store } = await leasedByA();
      await store.complete("job-1", { owner: "A", fence: 1, result: "first", now: T + 1 });
      await expect(store.complete("job-1", { owner: "A", fence: 1, result: "second", now: T + 2 })).rejects.toMatchObject({ reason: "done" });
      const refusals = (await store.events("job-1")).items.filter((event) => event.kind === "refused");
      expect(refusals).toEqual([expect.objectContaining({ action: "complete", owner: "A", fence: 1, currentOwner: "A", currentFence: 1 })]);
    });

    test("a page of three answers three events, its cursor the last one's seq", async () => {
      const { store } = await leasedByA();
      await store.release("job-1", { owner: "A", fence: 1, now: T + 1 });
      await store.claim("job-1", { owner: "B", ttlMs: TTL, now: T + 2 });
      await store.release("job-1", { owner: "B", fence: 2, now: T + 3 });
      const all = (await store.events("job-1")).items;
      expect(all.map((event) => event.kind)).toEqual(["enqueued", "claimed", "released", "claimed", "released"]);
      const first = await store.events("job-1", { limit: 3 });
      expect(first).toEqual({ items: all.slice(0, 3), next: String(all[2]!.seq) });
      expect(await store.events("job-1", { limit: 3, cursor: first.next! })).toEqual({ items: all.slice(3), next: null });
    });

    test("with a token's queues, a job of another queue has no events, and no cursor", async () => {
      const { store } = await leasedByA();
      await store.release("job-1", { owner: "A", fence: 1, now: T + 1 });
      expect(await store.events("job-1", { limit: 1, queues: ["mail", "default-*"] })).toEqual({ items: [], next: null });
      expect((await store.events("job-1", { limit: 1, queues: ["default"] })).next).toBe("1");
    });

    test("page oldest first with a cursor, to the end", async () => {
      const { store } = await leasedByA();
      for (let i = 1; i <= 2; i++) {
        await store.release("job-1", { owner: "A", fence: i, now: T + i });
        await store.claim("job-1", { owner: "A", ttlMs: TTL, now: T + i });
      }
      const first = await store.events("job-1", { limit: 2 });
      const second = await store.events("job-1", { limit: 2, cursor: first.next! });
      const third = await store.events("job-1", { limit: 2, cursor: second.next! });
      expect([...first.items, ...second.items, ...third.items].map((event) => event.kind)).toEqual(["enqueued", "claimed", "released", "claimed", "released", "claimed"]);
      expect(third.next).toBeNull();
    });
  });

  describe("list", () => {
    test("filters by queue and status at now", async () => {
      const { store } = await freshStore();
      await store.enqueue("a", { queue: "q", now: T });
      await store.enqueue("b", { queue: "q", runAt: T + 1, now: T });
      await store.enqueue("c", { queue: "q", now: T });
      await store.enqueue("d", { queue: "other", now: T });
      await store.claim("c", { owner: "A", ttlMs: TTL, now: T });
      const ids = async (filter: Parameters<LeaseStore["list"]>[0]) => (await store.list({ ...filter, now: T })).items.map((job) => job.id);
      expect(await ids({ queue: "q" })).toEqual(["a", "b", "c"]);
      expect(await ids({ status: "queued" })).toEqual(["a", "d"]);
      expect(await ids({ queue: "q", status: "scheduled" })).toEqual(["b"]);
      expect(await ids({ status: "leased" })).toEqual(["c"]);
      expect(await ids({ status: "dead" })).toEqual([]);
    });

    test("a page of three answers three jobs, its cursor the last of them", async () => {
      const { store } = await freshStore();
      for (const id of ["a", "b", "c", "d"]) await store.enqueue(id, { now: T });
      const first = await store.list({ limit: 3, now: T });
      expect(first).toMatchObject({ items: [{ id: "a" }, { id: "b" }, { id: "c" }], next: "c" });
      expect(first.items).toHaveLength(3);
      expect(await store.list({ limit: 3, cursor: "c", now: T })).toMatchObject({ items: [{ id: "d" }], next: null });
    });

    test("with a token's queues, reads only their jobs (names, and prefixes up to their *), so its cursor is always one of them", async () => {
      const { store } = await freshStore();
      for (const [id, queue] of [["a", "mail"], ["b", "invoices"], ["c", "mail"], ["d", "mail-eu"], ["e", "mail-"], ["f", "invoices-old"]]) await store.enqueue(id!, { queue, now: T });
      await store.claim("c", { owner: "A", ttlMs: TTL, now: T });
      const queues = ["invoices", "mail-*"];
      expect(await store.list({ limit: 2, queues, now: T })).toMatchObject({ items: [{ id: "b" }, { id: "d" }], next: "d" });
      expect(await store.list({ limit: 2, cursor: "d", queues, now: T })).toMatchObject({ items: [{ id: "e" }], next: null });
      expect(await store.list({ limit: 1, status: "leased", queues, now: T })).toEqual({ items: [], next: null });
      expect((await store.list({ queues: ["*"], now: T })).items).toHaveLength(6);
      await expect(store.list({ queues: ["a*b"], now: T })).rejects.toThrow(/may have a \* only at its end/);
    });

    test("pages by id and stays stable while jobs are added and removed between pages", async () => {
      const { store } = await freshStore();
      for (const id of ["a", "c", "e", "g"]) await store.enqueue(id, { now: T });
      const first = await store.list({ limit: 2, now: T });
      expect(first).toMatchObject({ items: [{ id: "a" }, { id: "c" }], next: "c" });
      await store.enqueue("b", { now: T }); // before the cursor: not seen again
      await store.enqueue("f", { now: T }); // after it: seen once
      await store.delete("e", { now: T });
      const second = await store.list({ limit: 2, cursor: first.next!, now: T });
      expect(second).toMatchObject({ items: [{ id: "f" }, { id: "g" }], next: null });
    });
  });

  describe("stats", () => {
    test("list the queues by name", async () => {
      const { store } = await freshStore();
      for (const queue of ["zeta", "alpha", "mu"]) await store.enqueue(`job-${queue}`, { queue, now: T });
      expect((await store.stats({ now: T })).map((stats) => stats.queue)).toEqual(["alpha", "mu", "zeta"]);
      expect((await store.stats({ now: T }))[0]).toEqual({ queue: "alpha", jobs: { queued: 1, scheduled: 0, leased: 0, done: 0, dead: 0, cancelled: 0 }, oldestDueAgeMs: 0, refused: { lastHour: 0, total: 0 }, paused: false, topKeys: [] });
    });

    test("the oldest due job is the one due longest, whether it waits or its lease expired", async () => {
      const { store } = await freshStore();
      await store.enqueue("expired", { queue: "q", runAt: T - 9_000, now: T - 9_000 });
      await store.claim("expired", { owner: "A", ttlMs: 1_000, now: T - 9_000 }); // ended at T - 8_000
      await store.enqueue("waiting", { queue: "q", runAt: T - 2_000, now: T - 2_000 });
      await store.enqueue("scheduled", { queue: "q", runAt: T + 1, now: T - 2_000 });
      const [stats] = await store.stats({ now: T });
      expect(stats).toMatchObject({ jobs: { queued: 2, scheduled: 1, leased: 0 }, oldestDueAgeMs: 9_000 });
      await store.claim("expired", { owner: "B", ttlMs: TTL, now: T });
      expect((await store.stats({ now: T }))[0]).toMatchObject({ jobs: { queued: 1, scheduled: 1, leased: 1 }, oldestDueAgeMs: 2_000 });
    });

    test("count jobs by status per queue, the oldest due job's age, and refusals in the last hour and ever", async () => {
      const { store } = await freshStore();
      await store.enqueue("old", { queue: "q", runAt: T - 5_000, now: T - 5_000 });
      await store.enqueue("new", { queue: "q", now: T });
      await store.enqueue("later", { queue: "q", runAt: T + 1, now: T });
      await store.enqueue("held", { queue: "q", now: T });
      await store.claim("held", { owner: "A", ttlMs: TTL, now: T - 2 * HOUR }); // expired long ago: due again
      await store.claim("held", { owner: "B", ttlMs: TTL, now: T - 2 * HOUR + TTL });
      await expect(store.complete("held", { owner: "A", fence: 1, result: "stale", now: T - 2 * HOUR + TTL + 1 })).rejects.toBeInstanceOf(LeaseLost); // refused two hours ago
      await store.complete("held", { owner: "B", fence: 2, result: "ok", now: T - 2 * HOUR + TTL + 2 });
      await expect(store.complete("held", { owner: "A", fence: 1, result: "stale again", now: T - 1 })).rejects.toBeInstanceOf(LeaseLost); // refused just now
      expect(await store.stats({ now: T })).toEqual([
        { queue: "q", jobs: { queued: 2, scheduled: 1, leased: 0, done: 1, dead: 0, cancelled: 0 }, oldestDueAgeMs: 5_000, refused: { lastHour: 1, total: 2 }, paused: false, topKeys: [] },
      ]);
    });
  });

  describe("leaseCheck", () => {
    test("answers whether (owner, fence) is the current lease, with the job's fence, and why not as a stale write is told", async () => {
      const { store } = await leasedByA();
      expect(await store.leaseCheck("job-1", { owner: "A", fence: 1, now: T + TTL - 1 })).toEqual({ current: true, fence: 1, until: T + TTL });
      expect(await store.leaseCheck("job-1", { owner: "A", fence: 1, now: T + TTL })).toEqual({ current: false, fence: 1, until: T + TTL, reason: "expired" });
      expect(await store.leaseCheck("job-1", { owner: "B", fence: 1, now: T + 1 })).toEqual({ current: false, fence: 1, until: T + TTL, reason: "not_owner" });
      await store.claim("job-1", { owner: "B", ttlMs: TTL, now: T + TTL });
      expect(await store.leaseCheck("job-1", { owner: "A", fence: 1, now: T + TTL + 1 })).toEqual({ current: false, fence: 2, until: T + 2 * TTL, reason: "superseded" });
      await store.complete("job-1", { owner: "B", fence: 2, result: "r", now: T + TTL + 2 });
      expect(await store.leaseCheck("job-1", { owner: "B", fence: 2, now: T + TTL + 3 })).toMatchObject({ current: false, fence: 2, reason: "done" });
      await expect(store.leaseCheck("nope", { owner: "A", fence: 1, now: T })).rejects.toBeInstanceOf(NotFound);
    });
  });

  describe("status", () => {
    test("is queued, scheduled, leased, done or dead at the time asked", async () => {
      const { store } = await freshStore();
      await store.enqueue("job-1", { runAt: T + 10, now: T });
      expect((await store.get("job-1", { now: T }))?.status).toBe("scheduled");
      expect((await store.get("job-1", { now: T + 10 }))?.status).toBe("queued");
      await store.claim("job-1", { owner: "A", ttlMs: TTL, now: T + 10 });
      expect((await store.get("job-1", { now: T + 10 + TTL - 1 }))?.status).toBe("leased");
      expect((await store.get("job-1", { now: T + 10 + TTL }))?.status).toBe("queued"); // expired: claimable
      await store.complete("job-1", { owner: "A", fence: 1, result: "ok", now: T + 11 });
      expect((await store.get("job-1", { now: T + 11 }))?.status).toBe("done");
    });
  });


  // retryAfterMs beside the rate limit's other rules, which rate-limit.contract.ts holds.
  describe("retryAfterMs of a rate-limited claim-next", () => {
    /** Queue q at 1 token a second with a burst of 2, its bucket drained by jobs a and b claimed at T. */
    async function drained() {
      const { store } = await freshStore();
      await store.queues.set("q", { ratePerSecond: 1, burst: 2, now: T });
      await store.enqueueMany("q", { jobs: [{ id: "a" }, { id: "b" }], now: T });
      expect((await store.claimNext("q", { owner: "A", ttlMs: TTL, limit: 2, now: T })).map((lease) => lease.job.id)).toEqual(["a", "b"]);
      return store;
    }

    test("is absent when the only job left is scheduled later: the bucket is not what holds it back", async () => {
      const store = await drained();
      await store.enqueue("later", { queue: "q", runAt: T + 10_000, now: T });
      const none = await store.claimNext("q", { owner: "B", ttlMs: TTL, now: T + 1 });
      expect([...none]).toEqual([]);
      expect("retryAfterMs" in none).toBe(false);
      expect((await store.get("later", { now: T + 1 })).status).toBe("scheduled");
      // A job due now is held back by the empty bucket: then the hint is there.
      await store.enqueue("c", { queue: "q", now: T + 1 });
      expect((await store.claimNext("q", { owner: "B", ttlMs: TTL, now: T + 1 })).retryAfterMs).toBe(999);
    });

    test("is absent when a job is due but the claim took its limit", async () => {
      const { store } = await freshStore();
      await store.queues.set("q", { ratePerSecond: 1, burst: 2, now: T });
      await store.enqueueMany("q", { jobs: [{ id: "a" }, { id: "b" }, { id: "c" }], now: T });
      const taken = await store.claimNext("q", { owner: "A", ttlMs: TTL, limit: 2, now: T });
      expect(taken.map((lease) => lease.job.id)).toEqual(["a", "b"]);
      expect("retryAfterMs" in taken).toBe(false); // c is due and the bucket is empty, but the claim was not short
      const short = await store.claimNext("q", { owner: "A", ttlMs: TTL, now: T });
      expect([...short]).toEqual([]);
      expect(short.retryAfterMs).toBe(1_000);
    });
  });
}
