import { describe, expect, test } from "vitest";
import type { LeaseStore } from "../../src/store/store.ts";
import type { FreshStorage } from "./storage.contract.ts";

// Jobs when the clock steps back (issue 28): a job enqueued while the
// server's clock was an hour ahead has its run_at an hour ahead of the
// corrected clock. What was due when it was enqueued stays due whatever the
// clock reads later; a delay and a retry's backoff still wait for their time
// on the clock. Run against every driver as the store contract is; the clock
// is the `now` of each call: an hour ahead (AHEAD), then set back to T.

const HOUR = 3_600_000;
const MINUTE = 60_000;
const T = Date.UTC(2026, 0, 1, 12); // the corrected clock
const AHEAD = T + HOUR; // the clock before NTP set it back
const TTL = 30_000;

/** The ids a claim-next of `queue` at `now` took, in claim order; their leases last past every time a test reaches. */
async function taken(store: LeaseStore, queue: string, now: number, limit = 10, owner = "W"): Promise<string[]> {
  return (await store.claimNext(queue, { owner, ttlMs: 3 * HOUR, limit, now })).map((lease) => lease.job.id);
}

/** The jobs part of a queue's stats at `now`. */
async function jobsOf(store: LeaseStore, queue: string, now: number) {
  const stats = (await store.stats({ now })).find((row) => row.queue === queue);
  return stats && { jobs: stats.jobs, oldestDueAgeMs: stats.oldestDueAgeMs };
}

const counts = (queued: number, scheduled: number, leased = 0) => ({ queued, scheduled, leased, done: 0, dead: 0, cancelled: 0 });

/** Registers the clock-step contract for one driver. */
export function clockStepContract(freshStore: () => Promise<FreshStorage>): void {
  describe("a clock that steps back an hour", () => {
    test("a job enqueued without a delay on the clock ahead is queued by the corrected clock, and claim-next takes it at once", async () => {
      const { store, snapshot, rows } = await freshStore();
      await store.enqueue("ahead", { queue: "q", payload: { n: 1 }, now: AHEAD });
      await store.enqueue("bystander", { queue: "other", now: AHEAD });
      const before = await snapshot();

      expect(await store.get("ahead", { now: T })).toMatchObject({ status: "queued", runAt: AHEAD, createdAt: AHEAD });
      expect((await store.list({ queue: "q", status: "queued", now: T })).items.map((job) => job.id)).toEqual(["ahead"]);
      expect(await jobsOf(store, "q", T)).toEqual({ jobs: counts(1, 0), oldestDueAgeMs: 0 });
      expect(await store.nextClaimableAt("q", { now: T })).toBe(T);

      const [lease] = await store.claimNext("q", { owner: "A", ttlMs: TTL, now: T });
      expect(lease).toMatchObject({ fence: 1, until: T + TTL, job: { id: "ahead", owner: "A", status: "leased", payload: { n: 1 } } });
      const after = await snapshot();
      expect(after.ahead).toMatchObject({ owner: "A", fence: 1, until: T + TTL, run_at: AHEAD, created_at: AHEAD, attempts: 1 });
      expect(after.bystander).toEqual(before.bystander);
      // The highest enqueue's clock, kept by the queue's counts: how far claims look along run_at.
      expect(await rows("SELECT queue, open, enqueued_at FROM queue_counts ORDER BY queue")).toEqual([
        { queue: "other", open: 1, enqueued_at: AHEAD },
        { queue: "q", open: 1, enqueued_at: AHEAD },
      ]);
    });

    test("what was due when it was enqueued stays due: a runAt already past, and a schedule's fire", async () => {
      const { store } = await freshStore();
      await store.enqueue("past-run-at", { queue: "q", runAt: AHEAD - 30 * MINUTE, now: AHEAD });
      await store.schedules.put("tick", { queue: "ticks", everyMs: MINUTE, now: AHEAD - MINUTE });
      expect((await store.schedules.fireDue({ now: AHEAD + 5 })).jobs).toEqual([{ id: "tick@2026-01-01T13:00:00.000Z", queue: "ticks" }]);
      expect(await store.get("tick@2026-01-01T13:00:00.000Z", { now: T })).toMatchObject({ status: "queued", runAt: AHEAD, createdAt: AHEAD + 5 });
      expect(await jobsOf(store, "q", T)).toEqual({ jobs: counts(1, 0), oldestDueAgeMs: 0 });
      expect(await taken(store, "q", T)).toEqual(["past-run-at"]);
      expect(await taken(store, "ticks", T)).toEqual(["tick@2026-01-01T13:00:00.000Z"]);
    });

    test("a claim by id takes it, as it takes any job nobody holds", async () => {
      const { store } = await freshStore();
      await store.enqueue("ahead", { queue: "q", now: AHEAD });
      expect(await store.claim("ahead", { owner: "A", ttlMs: TTL, now: T })).toMatchObject({ fence: 1, until: T + TTL, job: { status: "leased" } });
      expect(await taken(store, "q", T)).toEqual([]);
    });

    test("a job delayed by runAt or delayMs still waits for its time on the clock, while one due at its enqueue beside it is taken", async () => {
      const { store, snapshot } = await freshStore();
      await store.enqueue("delayed-before", { queue: "q", delayMs: 30 * MINUTE, now: T - 10 * MINUTE }); // due at T + 20 min, inside the hour ahead
      await store.enqueue("delayed-ahead", { queue: "q", delayMs: 10 * MINUTE, now: AHEAD }); // due at AHEAD + 10 min
      await store.enqueue("run-at-ahead", { queue: "q", runAt: AHEAD + 1, now: AHEAD });
      await store.enqueue("ahead", { queue: "q", now: AHEAD });

      expect(await jobsOf(store, "q", T)).toEqual({ jobs: counts(1, 3), oldestDueAgeMs: 0 });
      expect(await taken(store, "q", T)).toEqual(["ahead"]);
      const delayed = await snapshot();
      for (const id of ["delayed-before", "delayed-ahead", "run-at-ahead"]) {
        expect((await store.get(id, { now: T })).status).toBe("scheduled");
        expect(delayed[id]).toMatchObject({ owner: null, fence: 0 });
      }
      expect(await store.nextClaimableAt("q", { now: T })).toBe(T + 20 * MINUTE);

      expect(await taken(store, "q", T + 20 * MINUTE - 1)).toEqual([]);
      expect(await taken(store, "q", T + 20 * MINUTE)).toEqual(["delayed-before"]);
      expect(await taken(store, "q", AHEAD)).toEqual([]);
      expect(await taken(store, "q", AHEAD + 1)).toEqual(["run-at-ahead"]);
      expect(await taken(store, "q", AHEAD + 10 * MINUTE - 1)).toEqual([]);
      expect(await taken(store, "q", AHEAD + 10 * MINUTE)).toEqual(["delayed-ahead"]);
    });

    test("a retry's backoff waits on the clock that failed it, though it ends before the enqueue's time", async () => {
      const { store, reopen } = await freshStore();
      await store.enqueue("ahead", { queue: "q", maxAttempts: 5, now: AHEAD });
      await store.enqueue("bystander", { queue: "q", runAt: AHEAD + HOUR, now: AHEAD });
      expect(await taken(store, "q", T, 1, "A")).toEqual(["ahead"]);

      const failed = await store.fail("ahead", { owner: "A", fence: 1, error: "try later", retryInMs: 1_000, now: T + 1 });
      expect(failed.job).toMatchObject({ status: "scheduled", runAt: T + 1_001, owner: null, attempts: 1 });
      expect(await jobsOf(store, "q", T + 1)).toEqual({ jobs: counts(0, 2), oldestDueAgeMs: null });
      expect(await store.nextClaimableAt("q", { now: T + 1 })).toBe(T + 1_001);
      expect(await taken(store, "q", T + 1_000, 1, "B")).toEqual([]);
      expect(await taken(store, "q", T + 1_001, 1, "B")).toEqual(["ahead"]);

      // The backoff (1 s doubled for the second attempt, times a jitter of 0.5) waits on the clock as well.
      const jittered = await reopen({ random: () => 0 });
      expect((await jittered.fail("ahead", { owner: "B", fence: 2, error: "again", now: T + 1_002 })).job).toMatchObject({ status: "scheduled", runAt: T + 2_002 });
      expect(await taken(store, "q", T + 2_001, 1, "C")).toEqual([]);
      expect(await store.claim("ahead", { owner: "C", ttlMs: TTL, now: T + 2_001 })).toMatchObject({ fence: 3 }); // by id, before its time, as ever
      expect((await store.get("bystander", { now: T + 2_001 })).status).toBe("scheduled");
    });

    test("claim order stays first in first out: among the jobs enqueued ahead, and after them those enqueued since the step", async () => {
      const { store } = await freshStore();
      for (let i = 1; i <= 4; i++) await store.enqueue(`ahead-${i}`, { queue: "q", now: AHEAD + i });
      for (let i = 1; i <= 2; i++) await store.enqueue(`since-${i}`, { queue: "q", now: T + i });
      await store.enqueue("urgent-ahead", { queue: "q", priority: 5, now: AHEAD + 9 });
      expect(await taken(store, "q", T + 3, 1)).toEqual(["urgent-ahead"]); // priority first, as ever
      // By run_at, then by enqueue: the jobs enqueued since the step were enqueued at an earlier time.
      expect(await taken(store, "q", T + 3, 2)).toEqual(["since-1", "since-2"]);
      for (let i = 1; i <= 4; i++) expect(await taken(store, "q", T + 3, 1)).toEqual([`ahead-${i}`]);
      expect(await taken(store, "q", T + 3)).toEqual([]);
    });

    test("a rate-limited queue hands out its tokens by the corrected clock", async () => {
      const { store } = await freshStore();
      await store.queues.set("q", { ratePerSecond: 1, burst: 1, now: AHEAD });
      for (const id of ["r-1", "r-2"]) await store.enqueue(id, { queue: "q", now: AHEAD });
      const first = await store.claimNext("q", { owner: "A", ttlMs: TTL, limit: 2, now: T });
      expect(first.map((lease) => lease.job.id)).toEqual(["r-1"]);
      expect(first.retryAfterMs).toBe(1_000);
      expect(await taken(store, "q", T + 999)).toEqual([]);
      expect(await taken(store, "q", T + 1_000)).toEqual(["r-2"]);
    });

    test("the claims of a complete's next and of push take it too", async () => {
      const { store } = await freshStore();
      for (const id of ["held", "next-1"]) await store.enqueue(id, { queue: "q", now: AHEAD });
      await store.push.put("pushed", { url: "https://push.example/a", now: AHEAD });
      await store.enqueue("push-1", { queue: "pushed", now: AHEAD });
      expect(await store.claim("held", { owner: "A", ttlMs: TTL, now: T })).toMatchObject({ fence: 1 });
      const { leases } = await store.complete("held", { owner: "A", fence: 1, result: "r", next: { limit: 5, ttlMs: TTL }, now: T + 1 });
      expect(leases.map((lease) => lease.job.id)).toEqual(["next-1"]);
      expect((await store.push.claim("pushed", { limit: 5, now: T })).leases.map((lease) => lease.job.id)).toEqual(["push-1"]);
    });

    test("a server whose clock runs behind another's takes at once the jobs the other enqueued due now", async () => {
      const { store, reopen } = await freshStore();
      const behind = await reopen(); // another store: another clock, 5 minutes behind
      await store.enqueue("now-by-the-clock-ahead", { queue: "q", now: T + 5 * MINUTE });
      await store.enqueue("in-a-minute", { queue: "q", delayMs: MINUTE, now: T + 5 * MINUTE });
      expect(await taken(behind, "q", T)).toEqual(["now-by-the-clock-ahead"]);
      expect(await taken(behind, "q", T + 6 * MINUTE - 1)).toEqual([]);
      expect(await taken(behind, "q", T + 6 * MINUTE)).toEqual(["in-a-minute"]);
    });
  });
}
