import { describe, expect, test } from "vitest";
import { InvalidArgument, NotClaimable } from "../../src/store/errors.ts";
import type { LeaseStore } from "../../src/store/store.ts";
import type { FreshStore } from "./store.contract.ts";

// The queue controls (pause, resume, maxLeased) of migrations/0008, decided in
// the claim statements themselves, run against every driver as the store
// contract is. Each test starts on a fresh, empty database, and a bystander
// queue without settings goes on as before.

const T = 1_000_000; // the test clock
const TTL = 30_000;

/** Enqueues `count` jobs `<prefix>-1`… in `queue`, due at T. */
async function enqueueJobs(store: LeaseStore, queue: string, count: number, prefix = queue): Promise<string[]> {
  const ids = Array.from({ length: count }, (_, i) => `${prefix}-${i + 1}`);
  for (const id of ids) await store.enqueue(id, { queue, now: T });
  return ids;
}

/** Registers the queue controls' contract for one driver. */
export function queuesContract(freshStore: () => Promise<FreshStore>): void {
  describe("queue settings", () => {
    test("a queue never set is not paused and has no limit, and is listed once it has jobs", async () => {
      const { store } = await freshStore();
      expect(await store.getQueue("mail")).toEqual({ queue: "mail", paused: false, maxLeased: null, ratePerSecond: null, burst: null });
      expect(await store.listQueues()).toEqual([]);
      await store.enqueue("job-1", { queue: "mail", now: T });
      expect(await store.listQueues()).toEqual([{ queue: "mail", paused: false, maxLeased: null, ratePerSecond: null, burst: null }]);
    });

    test("setQueue stores maxLeased, keeps paused, and null takes the limit away", async () => {
      const { store } = await freshStore();
      await store.pauseQueue("mail", T);
      expect(await store.setQueue("mail", { maxLeased: 3 }, T)).toEqual({ queue: "mail", paused: true, maxLeased: 3, ratePerSecond: null, burst: null });
      expect(await store.getQueue("mail")).toEqual({ queue: "mail", paused: true, maxLeased: 3, ratePerSecond: null, burst: null });
      expect(await store.setQueue("mail", { maxLeased: null }, T)).toEqual({ queue: "mail", paused: true, maxLeased: null, ratePerSecond: null, burst: null });
      expect(await store.listQueues()).toEqual([{ queue: "mail", paused: true, maxLeased: null, ratePerSecond: null, burst: null }]);
    });

    test("setQueue refuses a maxLeased that is not a positive integer and changes nothing", async () => {
      const { store } = await freshStore();
      await store.setQueue("mail", { maxLeased: 2 }, T);
      for (const bad of [0, -1, 1.5, Number.NaN, "2"]) {
        await expect(store.setQueue("mail", { maxLeased: bad as number }, T)).rejects.toBeInstanceOf(InvalidArgument);
      }
      expect(await store.getQueue("mail")).toEqual({ queue: "mail", paused: false, maxLeased: 2, ratePerSecond: null, burst: null });
    });
  });

  describe("maxLeased", () => {
    test("claim-next hands out leases until the limit is exactly reached, and none beyond it", async () => {
      const { store } = await freshStore();
      await enqueueJobs(store, "q", 5);
      await enqueueJobs(store, "other", 5);
      await store.setQueue("q", { maxLeased: 3 }, T);
      expect(await store.claimNext("q", "A", T, TTL, 2)).toHaveLength(2);
      expect((await store.claimNext("q", "B", T, TTL, 5)).map((lease) => lease.job.id)).toEqual(["q-3"]); // exactly reached: 3 of 3
      expect(await store.claimNext("q", "C", T, TTL, 1)).toEqual([]); // one more would exceed it
      expect((await store.stats(T)).find((stats) => stats.queue === "q")!.jobs).toMatchObject({ leased: 3, queued: 2 });
      expect(await store.claimNext("other", "D", T, TTL, 5)).toHaveLength(5); // the bystander has no limit
    });

    test("a claim by id that would exceed the limit by one is NotClaimable full and changes nothing", async () => {
      const { store, snapshot } = await freshStore();
      await enqueueJobs(store, "q", 3);
      await store.setQueue("q", { maxLeased: 2 }, T);
      await store.claimJob("q-1", "A", T, TTL);
      expect(await store.claimJob("q-2", "A", T, TTL)).toMatchObject({ fence: 1 }); // the limit exactly reached
      const before = await snapshot();
      const refused = store.claimJob("q-3", "A", T, TTL);
      await expect(refused).rejects.toBeInstanceOf(NotClaimable);
      await expect(refused).rejects.toMatchObject({ reason: "full" });
      expect(await store.claim("q-3", "A", T, TTL)).toBeNull();
      expect(await snapshot()).toEqual(before);
    });

    test("an expired lease frees its slot at now == until, without waiting for the cron", async () => {
      const { store } = await freshStore();
      await enqueueJobs(store, "q", 3);
      await store.setQueue("q", { maxLeased: 2 }, T);
      await store.claimNext("q", "A", T, TTL, 1);
      await store.claimNext("q", "B", T + 1, TTL, 1);
      expect(await store.claimNext("q", "C", T + TTL - 1, TTL, 1)).toEqual([]); // both still current
      const [lease] = await store.claimNext("q", "C", T + TTL, TTL, 1); // A's lease ends at T + TTL
      expect(lease!.job.id).toBe("q-1"); // A's job, taken over: first in claim order
      expect(await store.claimNext("q", "D", T + TTL, TTL, 1)).toEqual([]); // B's and C's: the limit again
    });

    test("a completion frees its slot, and complete with next takes it in the same transaction", async () => {
      const { store } = await freshStore();
      await enqueueJobs(store, "q", 4);
      await store.setQueue("q", { maxLeased: 2 }, T);
      const [first] = await store.claimNext("q", "A", T, TTL, 2);
      const settled = await store.completeJob(first!.job.id, "A", first!.fence, T + 1, "ok", { next: { limit: 5, ttlMs: TTL } });
      expect(settled.leases.map((lease) => lease.job.id)).toEqual(["q-3"]); // one slot, freed by the completion
      expect((await store.stats(T + 1)).find((stats) => stats.queue === "q")!.jobs).toMatchObject({ leased: 2, queued: 1, done: 1 });
    });

    test("completeMany with next takes no more than the limit leaves room for", async () => {
      const { store } = await freshStore();
      await enqueueJobs(store, "q", 6);
      await store.setQueue("q", { maxLeased: 3 }, T);
      const held = await store.claimNext("q", "A", T, TTL, 3);
      const { leases } = await store.completeMany("A", [{ id: held[0]!.job.id, fence: held[0]!.fence, result: "ok" }], T + 1, { queue: "q", limit: 5, ttlMs: TTL });
      expect(leases.map((lease) => lease.job.id)).toEqual(["q-4"]);
    });

    test("a lower limit leaves leases already held above it, and hands out none until they are below it", async () => {
      const { store } = await freshStore();
      await enqueueJobs(store, "q", 4);
      const held = await store.claimNext("q", "A", T, TTL, 3);
      await store.setQueue("q", { maxLeased: 2 }, T);
      expect(await store.renew(held[0]!.job.id, "A", held[0]!.fence, T + 1, TTL)).toBe(true);
      expect(await store.claimNext("q", "B", T + 1, TTL, 1)).toEqual([]);
      await store.complete(held[0]!.job.id, "A", held[0]!.fence, T + 2, "ok");
      expect(await store.claimNext("q", "B", T + 2, TTL, 1)).toEqual([]); // 2 held: the limit exactly reached
      await store.complete(held[1]!.job.id, "A", held[1]!.fence, T + 3, "ok");
      expect(await store.claimNext("q", "B", T + 3, TTL, 5)).toHaveLength(1);
    });
  });

  describe("pause and resume", () => {
    test("while a queue is paused, claim-next hands out nothing and a bystander queue is unchanged", async () => {
      const { store } = await freshStore();
      await enqueueJobs(store, "q", 2);
      await enqueueJobs(store, "other", 1);
      expect(await store.pauseQueue("q", T)).toEqual({ queue: "q", paused: true, maxLeased: null, ratePerSecond: null, burst: null });
      expect(await store.claimNext("q", "A", T, TTL, 5)).toEqual([]);
      expect(await store.claimNext("other", "A", T, TTL, 5)).toHaveLength(1);
      const stats = await store.stats(T);
      expect(stats.find((s) => s.queue === "q")).toMatchObject({ paused: true, jobs: { queued: 2 } });
      expect(stats.find((s) => s.queue === "other")).toMatchObject({ paused: false, jobs: { leased: 1 } });
    });

    test("a claim by id in a paused queue is NotClaimable paused and changes nothing", async () => {
      const { store, snapshot } = await freshStore();
      await enqueueJobs(store, "q", 1);
      await store.pauseQueue("q", T);
      const before = await snapshot();
      const refused = store.claimJob("q-1", "A", T, TTL);
      await expect(refused).rejects.toBeInstanceOf(NotClaimable);
      await expect(refused).rejects.toMatchObject({ reason: "paused" });
      expect(await snapshot()).toEqual(before);
    });

    test("a job leased in a paused queue is still NotClaimable leased", async () => {
      const { store } = await freshStore();
      await enqueueJobs(store, "q", 1);
      await store.claimJob("q-1", "A", T, TTL);
      await store.pauseQueue("q", T);
      await expect(store.claimJob("q-1", "B", T + 1, TTL)).rejects.toMatchObject({ reason: "leased" });
    });

    test("leases held while paused are still renewed, completed, failed and released, and their next takes nothing", async () => {
      const { store } = await freshStore();
      await enqueueJobs(store, "q", 6);
      const held = await store.claimNext("q", "A", T, TTL, 4);
      await store.pauseQueue("q", T);
      const [a, b, c, d] = held;
      expect(await store.renewLease(a!.job.id, "A", a!.fence, T + 1, TTL)).toBe(T + 1 + TTL);
      expect(await store.completeJob(a!.job.id, "A", a!.fence, T + 2, "ok", { next: { limit: 3, ttlMs: TTL } })).toMatchObject({ job: { status: "done" }, leases: [] });
      expect(await store.failJob(b!.job.id, "A", b!.fence, T + 2, "boom", { retryInMs: 0, next: { limit: 3, ttlMs: TTL } })).toMatchObject({ job: { status: "queued" }, leases: [] });
      expect(await store.releaseLease(c!.job.id, "A", c!.fence, T + 2)).toMatchObject({ status: "queued" });
      const { completed, leases } = await store.completeMany("A", [{ id: d!.job.id, fence: d!.fence, result: "ok" }], T + 2, { queue: "q", limit: 3, ttlMs: TTL });
      expect(completed).toEqual([{ id: d!.job.id, done: true }]);
      expect(leases).toEqual([]);
      expect((await store.stats(T + 2)).find((s) => s.queue === "q")!.jobs).toMatchObject({ leased: 0, done: 2, queued: 4 });
    });

    test("an expired lease in a paused queue is not taken over", async () => {
      const { store } = await freshStore();
      await enqueueJobs(store, "q", 1);
      await store.claimNext("q", "A", T, TTL, 1);
      await store.pauseQueue("q", T);
      expect(await store.claimNext("q", "B", T + TTL, TTL, 1)).toEqual([]);
      await expect(store.claimJob("q-1", "B", T + TTL, TTL)).rejects.toMatchObject({ reason: "paused" });
    });

    test("resume lets claims take the queue's jobs again, keeping its maxLeased", async () => {
      const { store } = await freshStore();
      await enqueueJobs(store, "q", 3);
      await store.setQueue("q", { maxLeased: 2 }, T);
      await store.pauseQueue("q", T);
      expect(await store.claimNext("q", "A", T, TTL, 5)).toEqual([]);
      expect(await store.resumeQueue("q", T + 1)).toEqual({ queue: "q", paused: false, maxLeased: 2, ratePerSecond: null, burst: null });
      expect(await store.claimNext("q", "A", T + 1, TTL, 5)).toHaveLength(2);
      expect((await store.stats(T + 1)).find((s) => s.queue === "q")!.paused).toBe(false);
    });

    test("nextClaimableAt answers null while the queue is paused, and the first lease end while it is full", async () => {
      const { store } = await freshStore();
      await enqueueJobs(store, "q", 3);
      expect(await store.nextClaimableAt("q", T)).toBe(T);
      await store.pauseQueue("q", T);
      expect(await store.nextClaimableAt("q", T)).toBeNull();
      await store.resumeQueue("q", T);
      await store.setQueue("q", { maxLeased: 2 }, T);
      await store.claimNext("q", "A", T, TTL, 1);
      expect(await store.nextClaimableAt("q", T)).toBe(T); // one slot left
      await store.claimNext("q", "A", T + 5, TTL, 1);
      expect(await store.nextClaimableAt("q", T + 5)).toBe(T + TTL); // full: A's first lease frees a slot then
    });

    test("a queue paused or set before it has any job is in stats with zero counts, and says whether it is paused", async () => {
      const { store } = await freshStore();
      await store.pauseQueue("idle", T);
      await store.setQueue("limited", { maxLeased: 2 }, T);
      const none = { queued: 0, scheduled: 0, leased: 0, done: 0, dead: 0, cancelled: 0 };
      expect(await store.stats(T)).toEqual([
        { queue: "idle", jobs: none, oldestDueAgeMs: null, refused: { lastHour: 0, total: 0 }, paused: true },
        { queue: "limited", jobs: none, oldestDueAgeMs: null, refused: { lastHour: 0, total: 0 }, paused: false },
      ]);
      await store.enqueue("idle-1", { queue: "idle", now: T });
      expect((await store.stats(T)).find((stats) => stats.queue === "idle")).toMatchObject({ jobs: { queued: 1 }, paused: true });
    });

    test("pause is persisted: a second store over the same database sees it", async () => {
      const { store, reopen } = await freshStore();
      await enqueueJobs(store, "q", 1);
      await store.pauseQueue("q", T);
      const other = await reopen();
      expect(await other.getQueue("q")).toEqual({ queue: "q", paused: true, maxLeased: null, ratePerSecond: null, burst: null });
      expect(await other.claimNext("q", "A", T, TTL, 1)).toEqual([]);
    });
  });
}
