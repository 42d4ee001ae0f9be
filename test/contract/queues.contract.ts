import { describe, expect, test } from "vitest";
import { InvalidArgument, NotClaimable } from "../../src/store/errors.ts";
import type { LeaseStore } from "../../src/store/store.ts";
import type { QueueSettings } from "../../src/store/shapes.ts";
import type { FreshStore } from "./store.contract.ts";
import { noteVerbs } from "../../src/store/note.ts";

// The queue controls (pause, resume, maxLeased) of migrations/0008, decided in
// the claim statements themselves, run against every driver as the store
// contract is. Each test starts on a fresh, empty database, and a bystander
// queue without settings goes on as before.

/** The per-key settings (migrations/0034) of a queue that does not limit its keys: what every queue's settings answer unless set. */
export const NO_KEY_LIMITS = { maxLeasedPerKey: null, keyRatePerSecond: null, keyBurst: null, orderedByKey: false, fairByKey: false } as const satisfies Partial<QueueSettings>;

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
      expect(await store.queues.get("mail")).toEqual({ queue: "mail", paused: false, maxLeased: null, ratePerSecond: null, burst: null, ...NO_KEY_LIMITS });
      expect(await store.queues.list()).toEqual([]);
      await store.enqueue("job-1", { queue: "mail", now: T });
      expect(await store.queues.list()).toEqual([{ queue: "mail", paused: false, maxLeased: null, ratePerSecond: null, burst: null, ...NO_KEY_LIMITS }]);
    });

    test("queues.set stores maxLeased, keeps paused, and null takes the limit away", async () => {
      const { store } = await freshStore();
      await store.queues.pause("mail", { now: T });
      expect(await store.queues.set("mail", { maxLeased: 3, now: T })).toEqual({ queue: "mail", paused: true, maxLeased: 3, ratePerSecond: null, burst: null, ...NO_KEY_LIMITS });
      expect(await store.queues.get("mail")).toEqual({ queue: "mail", paused: true, maxLeased: 3, ratePerSecond: null, burst: null, ...NO_KEY_LIMITS });
      expect(await store.queues.set("mail", { maxLeased: null, now: T })).toEqual({ queue: "mail", paused: true, maxLeased: null, ratePerSecond: null, burst: null, ...NO_KEY_LIMITS });
      expect(await store.queues.list()).toEqual([{ queue: "mail", paused: true, maxLeased: null, ratePerSecond: null, burst: null, ...NO_KEY_LIMITS }]);
    });

    test("queues.set refuses a maxLeased that is not a positive integer and changes nothing", async () => {
      const { store } = await freshStore();
      await store.queues.set("mail", { maxLeased: 2, now: T });
      for (const [bad, got] of [[0, "0"], [-1, "-1"], [1.5, "1.5"], [Number.NaN, "NaN"], ["2", '"2"']] as const) {
        const refusal = await store.queues.set("mail", { maxLeased: bad as number, now: T }).catch((error: unknown) => error);
        expect(refusal, got).toBeInstanceOf(InvalidArgument);
        expect((refusal as InvalidArgument).message).toBe(`maxLeased must be a positive safe integer, got ${got}`);
      }
      expect(await store.queues.get("mail")).toEqual({ queue: "mail", paused: false, maxLeased: 2, ratePerSecond: null, burst: null, ...NO_KEY_LIMITS });
    });

    test("a bad queue name or now is InvalidArgument naming it, for pause, resume, set and get, and changes nothing", async () => {
      const { store } = await freshStore();
      await store.queues.set("mail", { maxLeased: 2, now: T });
      const verbs = {
        pause: (queue: string, now: number) => store.queues.pause(queue, { now }),
        resume: (queue: string, now: number) => store.queues.resume(queue, { now }),
        set: (queue: string, now: number) => store.queues.set(queue, { maxLeased: 5, now }),
        get: (queue: string) => store.queues.get(queue),
      };
      for (const [verb, call] of Object.entries(verbs)) {
        const badName = await call("", T).catch((error: unknown) => error);
        expect(badName, verb).toBeInstanceOf(InvalidArgument);
        expect((badName as InvalidArgument).message, verb).toBe('queue must be a non-empty string of printable text, got ""');
        if (verb === "get") continue; // get takes no now
        const badNow = await call("mail", -1).catch((error: unknown) => error);
        expect(badNow, verb).toBeInstanceOf(InvalidArgument);
        expect((badNow as InvalidArgument).message, verb).toBe("now must be integer milliseconds since the epoch, got -1");
      }
      expect(await store.queues.list()).toEqual([{ queue: "mail", paused: false, maxLeased: 2, ratePerSecond: null, burst: null, ...NO_KEY_LIMITS }]);
    });
  });

  describe("maxLeased", () => {
    test("claim-next hands out leases until the limit is exactly reached, and none beyond it", async () => {
      const { store } = await freshStore();
      await enqueueJobs(store, "q", 5);
      await enqueueJobs(store, "other", 5);
      await store.queues.set("q", { maxLeased: 3, now: T });
      expect(await store.claimNext("q", { owner: "A", ttlMs: TTL, limit: 2, now: T })).toHaveLength(2);
      expect((await store.claimNext("q", { owner: "B", ttlMs: TTL, limit: 5, now: T })).map((lease) => lease.job.id)).toEqual(["q-3"]); // exactly reached: 3 of 3
      expect(await store.claimNext("q", { owner: "C", ttlMs: TTL, limit: 1, now: T })).toEqual([]); // one more would exceed it
      expect((await store.stats({ now: T })).find((stats) => stats.queue === "q")!.jobs).toMatchObject({ leased: 3, queued: 2 });
      expect(await store.claimNext("other", { owner: "D", ttlMs: TTL, limit: 5, now: T })).toHaveLength(5); // the bystander has no limit
    });

    test("a claim by id that would exceed the limit by one is NotClaimable full and changes nothing", async () => {
      const { store, snapshot } = await freshStore();
      await enqueueJobs(store, "q", 3);
      await store.queues.set("q", { maxLeased: 2, now: T });
      await store.claim("q-1", { owner: "A", ttlMs: TTL, now: T });
      expect(await store.claim("q-2", { owner: "A", ttlMs: TTL, now: T })).toMatchObject({ fence: 1 }); // the limit exactly reached
      const before = await snapshot();
      const refused = store.claim("q-3", { owner: "A", ttlMs: TTL, now: T });
      await expect(refused).rejects.toBeInstanceOf(NotClaimable);
      await expect(refused).rejects.toMatchObject({ reason: "full" });
      expect(await noteVerbs(store).claim("q-3", "A", T, TTL)).toBeNull();
      expect(await snapshot()).toEqual(before);
    });

    test("an expired lease frees its slot at now == until, without waiting for the cron", async () => {
      const { store } = await freshStore();
      await enqueueJobs(store, "q", 3);
      await store.queues.set("q", { maxLeased: 2, now: T });
      await store.claimNext("q", { owner: "A", ttlMs: TTL, limit: 1, now: T });
      await store.claimNext("q", { owner: "B", ttlMs: TTL, limit: 1, now: T + 1 });
      expect(await store.claimNext("q", { owner: "C", ttlMs: TTL, limit: 1, now: T + TTL - 1 })).toEqual([]); // both still current
      const [lease] = await store.claimNext("q", { owner: "C", ttlMs: TTL, limit: 1, now: T + TTL }); // A's lease ends at T + TTL
      expect(lease!.job.id).toBe("q-1"); // A's job, taken over: first in claim order
      expect(await store.claimNext("q", { owner: "D", ttlMs: TTL, limit: 1, now: T + TTL })).toEqual([]); // B's and C's: the limit again
    });

    test("a completion frees its slot, and complete with next takes it in the same transaction", async () => {
      const { store } = await freshStore();
      await enqueueJobs(store, "q", 4);
      await store.queues.set("q", { maxLeased: 2, now: T });
      const [first] = await store.claimNext("q", { owner: "A", ttlMs: TTL, limit: 2, now: T });
      const settled = await store.complete(first!.job.id, { owner: "A", fence: first!.fence, result: "ok", next: { limit: 5, ttlMs: TTL }, now: T + 1 });
      expect(settled.leases.map((lease) => lease.job.id)).toEqual(["q-3"]); // one slot, freed by the completion
      expect((await store.stats({ now: T + 1 })).find((stats) => stats.queue === "q")!.jobs).toMatchObject({ leased: 2, queued: 1, done: 1 });
    });

    test("completeMany with next takes no more than the limit leaves room for", async () => {
      const { store } = await freshStore();
      await enqueueJobs(store, "q", 6);
      await store.queues.set("q", { maxLeased: 3, now: T });
      const held = await store.claimNext("q", { owner: "A", ttlMs: TTL, limit: 3, now: T });
      const { leases } = await store.completeMany({ owner: "A", leases: [{ id: held[0]!.job.id, fence: held[0]!.fence, result: "ok" }], next: { queue: "q", limit: 5, ttlMs: TTL }, now: T + 1 });
      expect(leases.map((lease) => lease.job.id)).toEqual(["q-4"]);
    });

    test("a lower limit leaves leases already held above it, and hands out none until they are below it", async () => {
      const { store } = await freshStore();
      await enqueueJobs(store, "q", 4);
      const held = await store.claimNext("q", { owner: "A", ttlMs: TTL, limit: 3, now: T });
      await store.queues.set("q", { maxLeased: 2, now: T });
      expect(await noteVerbs(store).renew(held[0]!.job.id, "A", held[0]!.fence, T + 1, TTL)).toBe(true);
      expect(await store.claimNext("q", { owner: "B", ttlMs: TTL, limit: 1, now: T + 1 })).toEqual([]);
      await store.complete(held[0]!.job.id, { owner: "A", fence: held[0]!.fence, result: "ok", now: T + 2 });
      expect(await store.claimNext("q", { owner: "B", ttlMs: TTL, limit: 1, now: T + 2 })).toEqual([]); // 2 held: the limit exactly reached
      await store.complete(held[1]!.job.id, { owner: "A", fence: held[1]!.fence, result: "ok", now: T + 3 });
      expect(await store.claimNext("q", { owner: "B", ttlMs: TTL, limit: 5, now: T + 3 })).toHaveLength(1);
    });
  });

  describe("pause and resume", () => {
    test("while a queue is paused, claim-next hands out nothing and a bystander queue is unchanged", async () => {
      const { store } = await freshStore();
      await enqueueJobs(store, "q", 2);
      await enqueueJobs(store, "other", 1);
      expect(await store.queues.pause("q", { now: T })).toEqual({ queue: "q", paused: true, maxLeased: null, ratePerSecond: null, burst: null, ...NO_KEY_LIMITS });
      expect(await store.claimNext("q", { owner: "A", ttlMs: TTL, limit: 5, now: T })).toEqual([]);
      expect(await store.claimNext("other", { owner: "A", ttlMs: TTL, limit: 5, now: T })).toHaveLength(1);
      const stats = await store.stats({ now: T });
      expect(stats.find((s) => s.queue === "q")).toMatchObject({ paused: true, jobs: { queued: 2 } });
      expect(stats.find((s) => s.queue === "other")).toMatchObject({ paused: false, jobs: { leased: 1 } });
    });

    test("a claim by id in a paused queue is NotClaimable paused and changes nothing", async () => {
      const { store, snapshot } = await freshStore();
      await enqueueJobs(store, "q", 1);
      await store.queues.pause("q", { now: T });
      const before = await snapshot();
      const refused = store.claim("q-1", { owner: "A", ttlMs: TTL, now: T });
      await expect(refused).rejects.toBeInstanceOf(NotClaimable);
      await expect(refused).rejects.toMatchObject({ reason: "paused" });
      expect(await snapshot()).toEqual(before);
    });

    test("a job leased in a paused queue is still NotClaimable leased", async () => {
      const { store } = await freshStore();
      await enqueueJobs(store, "q", 1);
      await store.claim("q-1", { owner: "A", ttlMs: TTL, now: T });
      await store.queues.pause("q", { now: T });
      await expect(store.claim("q-1", { owner: "B", ttlMs: TTL, now: T + 1 })).rejects.toMatchObject({ reason: "leased" });
    });

    test("leases held while paused are still renewed, completed, failed and released, and their next takes nothing", async () => {
      const { store } = await freshStore();
      await enqueueJobs(store, "q", 6);
      const held = await store.claimNext("q", { owner: "A", ttlMs: TTL, limit: 4, now: T });
      await store.queues.pause("q", { now: T });
      const [a, b, c, d] = held;
      expect((await store.renew(a!.job.id, { owner: "A", fence: a!.fence, ttlMs: TTL, now: T + 1 })).until).toBe(T + 1 + TTL);
      expect(await store.complete(a!.job.id, { owner: "A", fence: a!.fence, result: "ok", next: { limit: 3, ttlMs: TTL }, now: T + 2 })).toMatchObject({ job: { status: "done" }, leases: [] });
      expect(await store.fail(b!.job.id, { owner: "A", fence: b!.fence, error: "boom", retryInMs: 0, next: { limit: 3, ttlMs: TTL }, now: T + 2 })).toMatchObject({ job: { status: "queued" }, leases: [] });
      expect(await store.release(c!.job.id, { owner: "A", fence: c!.fence, now: T + 2 })).toMatchObject({ status: "queued" });
      const { completed, leases } = await store.completeMany({ owner: "A", leases: [{ id: d!.job.id, fence: d!.fence, result: "ok" }], next: { queue: "q", limit: 3, ttlMs: TTL }, now: T + 2 });
      expect(completed).toEqual([{ id: d!.job.id, done: true }]);
      expect(leases).toEqual([]);
      expect((await store.stats({ now: T + 2 })).find((s) => s.queue === "q")!.jobs).toMatchObject({ leased: 0, done: 2, queued: 4 });
    });

    test("an expired lease in a paused queue is not taken over", async () => {
      const { store } = await freshStore();
      await enqueueJobs(store, "q", 1);
      await store.claimNext("q", { owner: "A", ttlMs: TTL, limit: 1, now: T });
      await store.queues.pause("q", { now: T });
      expect(await store.claimNext("q", { owner: "B", ttlMs: TTL, limit: 1, now: T + TTL })).toEqual([]);
      await expect(store.claim("q-1", { owner: "B", ttlMs: TTL, now: T + TTL })).rejects.toMatchObject({ reason: "paused" });
    });

    test("resume lets claims take the queue's jobs again, keeping its maxLeased", async () => {
      const { store } = await freshStore();
      await enqueueJobs(store, "q", 3);
      await store.queues.set("q", { maxLeased: 2, now: T });
      await store.queues.pause("q", { now: T });
      expect(await store.claimNext("q", { owner: "A", ttlMs: TTL, limit: 5, now: T })).toEqual([]);
      expect(await store.queues.resume("q", { now: T + 1 })).toEqual({ queue: "q", paused: false, maxLeased: 2, ratePerSecond: null, burst: null, ...NO_KEY_LIMITS });
      expect(await store.claimNext("q", { owner: "A", ttlMs: TTL, limit: 5, now: T + 1 })).toHaveLength(2);
      expect((await store.stats({ now: T + 1 })).find((s) => s.queue === "q")!.paused).toBe(false);
    });

    test("nextClaimableAt answers null while the queue is paused, and the first lease end while it is full", async () => {
      const { store } = await freshStore();
      await enqueueJobs(store, "q", 3);
      expect(await store.nextClaimableAt("q", { now: T })).toBe(T);
      await store.queues.pause("q", { now: T });
      expect(await store.nextClaimableAt("q", { now: T })).toBeNull();
      await store.queues.resume("q", { now: T });
      await store.queues.set("q", { maxLeased: 2, now: T });
      await store.claimNext("q", { owner: "A", ttlMs: TTL, limit: 1, now: T });
      expect(await store.nextClaimableAt("q", { now: T })).toBe(T); // one slot left
      await store.claimNext("q", { owner: "A", ttlMs: TTL, limit: 1, now: T + 5 });
      expect(await store.nextClaimableAt("q", { now: T + 5 })).toBe(T + TTL); // full: A's first lease frees a slot then
    });

    test("a queue paused or set before it has any job is in stats with zero counts, and says whether it is paused", async () => {
      const { store } = await freshStore();
      await store.queues.pause("idle", { now: T });
      await store.queues.set("limited", { maxLeased: 2, now: T });
      const none = { queued: 0, scheduled: 0, leased: 0, done: 0, dead: 0, cancelled: 0 };
      expect(await store.stats({ now: T })).toEqual([
        { queue: "idle", jobs: none, oldestDueAgeMs: null, refused: { lastHour: 0, total: 0 }, paused: true, topKeys: [] },
        { queue: "limited", jobs: none, oldestDueAgeMs: null, refused: { lastHour: 0, total: 0 }, paused: false, topKeys: [] },
      ]);
      await store.enqueue("idle-1", { queue: "idle", now: T });
      expect((await store.stats({ now: T })).find((stats) => stats.queue === "idle")).toMatchObject({ jobs: { queued: 1 }, paused: true });
    });

    test("pause is persisted: a second store over the same database sees it", async () => {
      const { store, reopen } = await freshStore();
      await enqueueJobs(store, "q", 1);
      await store.queues.pause("q", { now: T });
      const other = await reopen();
      expect(await other.queues.get("q")).toEqual({ queue: "q", paused: true, maxLeased: null, ratePerSecond: null, burst: null, ...NO_KEY_LIMITS });
      expect(await other.claimNext("q", { owner: "A", ttlMs: TTL, limit: 1, now: T })).toEqual([]);
    });
  });
}
