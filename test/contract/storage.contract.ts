import { describe, expect, test } from "vitest";
import type { Row, Statement } from "../../src/drivers/driver.ts";
import { LeaseLost } from "../../src/store/errors.ts";
import type { JobStatus } from "../../src/store/job.ts";
import * as claims from "../../src/store/sql/claim-next.ts";
import * as housekeeping from "../../src/store/sql/housekeeping.ts";
import * as readStatements from "../../src/store/sql/reads.ts";
import { keysOf } from "../../src/store/sql/key-reads.ts";
import type { QueueStats } from "../../src/store/stats.ts";
import type { FreshStore } from "./store.contract.ts";
import { noteVerbs } from "../../src/store/note.ts";

// What the store keeps, and what it costs to keep (issue 10): fences of
// removed ids folded into one floor, counts per queue kept by every
// statement that moves jobs between them, so that the stats read a few rows per queue, a lease's
// history that stays small however often it renews or is refused, and the
// housekeeping that runs in bounded chunks. Run on every
// driver like the store contract; these tests also read tables other than
// `jobs`, so their fresh store can run any query.

/** A fresh store, and a way to run any query on its database from outside the store. */
export type FreshStorage = FreshStore & { rows: (sql: string, args?: Statement["args"]) => Promise<Row[]> };

const HOUR = 3_600_000;
const MINUTE = 60_000;
const T = 100 * HOUR;
const TTL = 30_000;
/** The counts of queue_counts, without the current minute's tallies (migrations/0037, the series contract's). */
const COUNTED = "queue, open, done, dead, cancelled, enqueued_at";

/** Whether a job is due at `now`, from its stored row: its run_at has come, or had come at its enqueue (a fail's run_at aside), as `due` in src/store/sql/lease.ts says. */
function isDue(row: Row, now: number): boolean {
  const runAt = row.run_at as number;
  return runAt <= now || (runAt <= (row.created_at as number) && row.last_event !== "failed");
}

/** A job's status at `now`, from its stored row, as the README defines it. */
function statusOf(row: Row, now: number): JobStatus {
  if (row.dead === 1) return "dead";
  if (row.cancelled === 1) return "cancelled";
  if (row.done === 1) return "done";
  if (row.owner !== null && (row.until as number) > now) return "leased";
  return isDue(row, now) ? "queued" : "scheduled";
}

/** The jobs part of the stats, worked out from every row: what the store's counts must agree with. */
function expectedJobs(rows: Row[], now: number): Pick<QueueStats, "queue" | "jobs" | "oldestDueAgeMs">[] {
  const queues = new Map<string, Pick<QueueStats, "queue" | "jobs" | "oldestDueAgeMs">>();
  for (const row of rows) {
    const queue = row.queue as string;
    if (!queues.has(queue)) queues.set(queue, { queue, jobs: { queued: 0, scheduled: 0, leased: 0, done: 0, dead: 0, cancelled: 0 }, oldestDueAgeMs: null });
    const stats = queues.get(queue)!;
    const status = statusOf(row, now);
    stats.jobs[status]++;
    if (status === "queued") stats.oldestDueAgeMs = Math.max(stats.oldestDueAgeMs ?? 0, now - (row.run_at as number)); // 0 for a job due at its enqueue on a clock ahead of `now`
  }
  return [...queues.values()].sort((a, b) => (a.queue < b.queue ? -1 : 1));
}

/** Registers the storage contract for one driver. */
export function storageContract(freshStore: () => Promise<FreshStorage>): void {
  describe("the fence floor", () => {
    test("a fresh database starts every job at fence 0 and its first claim at 1, with a floor of 0", async () => {
      const { store, rows } = await freshStore();
      expect(await rows("SELECT * FROM fence_floor")).toEqual([{ one: 1, fence: 0 }]);
      await store.enqueue("job-1", { now: T });
      await store.enqueueMany("default", { jobs: [{ id: "job-2" }], now: T });
      expect((await store.get("job-1", { now: T }))?.fence).toBe(0);
      expect((await store.get("job-2", { now: T }))?.fence).toBe(0);
      expect(await noteVerbs(store).claim("job-1", "A", T, TTL)).toBe(1);
    });

    test("deleting and purging ids keeps one floor, the highest fence removed, and no row per id", async () => {
      const { store, rows, exec } = await freshStore();
      for (const id of ["purged", "deleted", "raw-deleted", "kept"]) await store.enqueue(id, { now: T });
      for (let fence = 1; fence <= 3; fence++) expect(await noteVerbs(store).claim("purged", "A", T + fence * TTL, TTL)).toBe(fence);
      await store.complete("purged", { owner: "A", fence: 3, result: "r", now: T + 3 * TTL });
      expect(await noteVerbs(store).claim("deleted", "A", T, TTL)).toBe(1);
      await store.release("deleted", { owner: "A", fence: 1, now: T + 1 });
      expect(await noteVerbs(store).claim("raw-deleted", "A", T, TTL)).toBe(1);
      expect(await noteVerbs(store).claim("raw-deleted", "A", T + TTL, TTL)).toBe(2);
      expect(await noteVerbs(store).claim("kept", "A", T, TTL)).toBe(1);
      const kept = await store.get("kept", { now: T });

      await store.delete("deleted", { now: T + 2 });
      expect(await rows("SELECT * FROM fence_floor")).toEqual([{ one: 1, fence: 1 }]);
      await exec("DELETE FROM jobs WHERE id = 'raw-deleted'"); // whoever deletes a row raises the floor
      expect(await rows("SELECT * FROM fence_floor")).toEqual([{ one: 1, fence: 2 }]);
      expect(await store.purge({ retentionMs: HOUR, now: T + 3 * TTL + HOUR })).toBe(1);
      expect(await rows("SELECT * FROM fence_floor")).toEqual([{ one: 1, fence: 3 }]);
      expect(await rows("SELECT name FROM sqlite_master WHERE name = 'retired_fences'")).toEqual([]);
      expect(await store.get("kept", { now: T })).toEqual(kept);

      // Every id, removed or new, starts at the floor: above every fence it ever had.
      for (const id of ["purged", "deleted", "raw-deleted", "new"]) {
        expect(await noteVerbs(store).enqueue(id, { now: T + 2 * HOUR })).toBe(true);
        expect((await store.get(id, { now: T + 2 * HOUR }))?.fence).toBe(3);
        expect(await noteVerbs(store).claim(id, "B", T + 2 * HOUR, TTL)).toBe(4);
      }
    });

    test("removing a row with a lower fence never lowers the floor", async () => {
      const { store, rows } = await freshStore();
      await store.enqueue("high", { now: T });
      await store.enqueue("low", { now: T });
      for (let fence = 1; fence <= 2; fence++) await store.claim("high", { owner: "A", ttlMs: TTL, now: T + fence * TTL });
      await store.release("high", { owner: "A", fence: 2, now: T + 2 * TTL });
      await store.delete("high", { now: T + 3 * TTL });
      await store.delete("low", { now: T + 3 * TTL });
      expect(await rows("SELECT * FROM fence_floor")).toEqual([{ one: 1, fence: 2 }]);
    });
  });

  describe("queue counts", () => {
    /** Jobs in every state, in three queues: what the counts must follow through each kind of transition. */
    async function everyState() {
      const fresh = await freshStore();
      const { store } = fresh;
      await store.enqueueMany("a", { jobs: [{ id: "a-queued" }, { id: "a-scheduled", runAt: T + HOUR }, { id: "a-high-later", priority: 9, runAt: T + 2 * HOUR }], now: T });
      for (const id of ["a-leased", "a-expiring", "a-done", "a-dead", "a-retried", "a-released", "a-never-claimed", "a-deleted", "a-cancelled", "a-cancelled-leased"]) await store.enqueue(id, { queue: "a", maxAttempts: 1, now: T - MINUTE });
      await store.enqueue("a-expired-scheduled", { queue: "a", runAt: T + HOUR, maxAttempts: 1, now: T - MINUTE });
      await store.claim("a-leased", { owner: "A", ttlMs: HOUR, now: T });
      await store.claim("a-expiring", { owner: "A", ttlMs: MINUTE + 10, now: T - MINUTE }); // until T + 10
      await store.claim("a-expired-scheduled", { owner: "A", ttlMs: MINUTE, now: T - MINUTE }); // by id, before its runAt; until T: expired, not ended
      await store.claim("a-done", { owner: "A", ttlMs: TTL, now: T });
      await store.complete("a-done", { owner: "A", fence: 1, result: "r", now: T + 1 });
      await store.claim("a-dead", { owner: "A", ttlMs: TTL, now: T });
      await store.fail("a-dead", { owner: "A", fence: 1, error: "x", now: T + 1 });
      await store.claim("a-retried", { owner: "A", ttlMs: TTL, now: T });
      await store.fail("a-retried", { owner: "A", fence: 1, error: "x", now: T + 1 });
      await store.retry("a-retried", { now: T + 2 });
      await store.claim("a-released", { owner: "A", ttlMs: TTL, now: T });
      await store.release("a-released", { owner: "A", fence: 1, now: T + 1 });
      await store.cancel("a-cancelled", { by: "ops", now: T + 1 });
      await store.claim("a-cancelled-leased", { owner: "A", ttlMs: TTL, now: T });
      await store.cancel("a-cancelled-leased", { by: "ops", now: T + 1 });
      await store.delete("a-deleted", { now: T });
      await store.enqueue("b-1", { queue: "b", maxAttempts: 5, now: T });
      await store.claim("b-1", { owner: "B", ttlMs: TTL, now: T });
      await store.fail("b-1", { owner: "B", fence: 1, error: "again", retryInMs: 10 * MINUTE, now: T + 1 }); // scheduled again
      await store.enqueue("b-ahead", { queue: "b", maxAttempts: 5, now: T + HOUR }); // on a clock an hour ahead: due at once
      await store.claim("b-ahead", { owner: "B", ttlMs: TTL, now: T });
      await store.fail("b-ahead", { owner: "B", fence: 1, error: "again", retryInMs: MINUTE, now: T + 1 }); // its retry, before its enqueue's time, waits on the clock
      await store.enqueue("c-expired", { queue: "c", runAt: T - HOUR, now: T - HOUR });
      await store.claimNext("c", { owner: "C", ttlMs: TTL, now: T - HOUR }); // expired at T - HOUR + TTL
      return fresh;
    }

    test("stats agree, at every time, with the status of every row", async () => {
      const { store, snapshot } = await everyState();
      const rows = Object.values(await snapshot());
      for (const now of [T - HOUR, T - 1, T, T + 1, T + 10, T + MINUTE, T + MINUTE + 1, T + HOUR - 1, T + HOUR, T + 2 * HOUR, T + 3 * HOUR]) {
        const stats = (await store.stats({ now })).map(({ queue, jobs, oldestDueAgeMs }) => ({ queue, jobs, oldestDueAgeMs }));
        expect(stats, `at T + ${now - T}`).toEqual(expectedJobs(rows, now));
      }
    });

    test("are one row per queue, kept by every insert, transition and delete; a queue with no jobs counts none", async () => {
      const { store, rows, snapshot } = await everyState();
      // open: not done (waiting, or held: the stats count those in jobs_held_by_until); a cancelled job is
      // cancelled, held or not when it was cancelled; dead and cancelled jobs are done too, but not counted done.
      // enqueued_at: the highest time an enqueue of the queue read (migrations/0033), whatever happened since.
      const counts = [
        { queue: "a", open: 9, done: 1, dead: 1, cancelled: 2, enqueued_at: T },
        { queue: "b", open: 2, done: 0, dead: 0, cancelled: 0, enqueued_at: T + HOUR },
        { queue: "c", open: 1, done: 0, dead: 0, cancelled: 0, enqueued_at: T - HOUR },
      ];
      expect(await rows(`SELECT ${COUNTED} FROM queue_counts ORDER BY queue`)).toEqual(counts);
      expect(await store.expire({ now: T + HOUR })).toHaveLength(4); // a-expiring, a-expired-scheduled, a-leased (their last attempt: dead), c-expired
      expect(await rows(`SELECT ${COUNTED} FROM queue_counts ORDER BY queue`)).toEqual([{ ...counts[0], open: 6, dead: 4 }, counts[1], counts[2]]);
      for (const id of Object.keys(await snapshot()).filter((id) => id.startsWith("c-"))) await store.delete(id, { now: T + HOUR });
      expect(await rows(`SELECT ${COUNTED} FROM queue_counts WHERE queue = 'c'`)).toEqual([{ ...counts[2], open: 0 }]);
      expect((await store.stats({ now: T + HOUR })).map(({ queue }) => queue)).toEqual(["a", "b"]);
      expect((await store.queues.list()).map(({ queue }) => queue)).toEqual(["a", "b"]);
    });

    test("count the job of each schedule's fire once, in its queue, and none for a fire whose job is already there", async () => {
      const { store, rows, reopen, exec } = await freshStore();
      const at = Date.UTC(2026, 10, 30, 3, 0);
      await store.schedules.put("tick", { queue: "s", cron: "* * * * *", now: at - 30_000 });
      await store.schedules.put("tock", { queue: "t", cron: "* * * * *", now: at - 30_000 });
      // The fire's id taken before fire ids were reserved: a job of its own, counted as the store counts one.
      await exec(`INSERT INTO jobs (id, queue, created_at, updated_at) VALUES ('tick@2026-11-30T03:00:00.000Z', 's', ${at - 1}, ${at - 1})`);
      await exec("INSERT INTO queue_counts (queue, open) VALUES ('s', 1)");
      const other = await reopen(); // two runners fire at once
      const fired = await Promise.all([store.schedules.fireDue({ now: at }), other.schedules.fireDue({ now: at })]);
      expect(fired.flatMap((answer) => answer.jobs.map((job) => job.id))).toEqual(["tock@2026-11-30T03:00:00.000Z"]);
      expect(await rows("SELECT queue, open, enqueued_at FROM queue_counts ORDER BY queue")).toEqual([{ queue: "s", open: 1, enqueued_at: null }, { queue: "t", open: 1, enqueued_at: at }]);
    });

    test("a queue whose jobs are all gone is still listed while it has refusals to count", async () => {
      const { store } = await freshStore();
      await store.enqueue("job-1", { queue: "gone", now: T });
      await store.claim("job-1", { owner: "A", ttlMs: TTL, now: T });
      await store.complete("job-1", { owner: "A", fence: 1, result: "r", now: T + 1 });
      expect(await noteVerbs(store).complete("job-1", "Z", 1, T + 2, "stale")).toBe(false);
      expect(await store.purge({ retentionMs: HOUR, now: T + 1 + HOUR })).toBe(1);
      expect(await store.stats({ now: T + 1 + HOUR })).toEqual([
        { queue: "gone", jobs: { queued: 0, scheduled: 0, leased: 0, done: 0, dead: 0, cancelled: 0 }, oldestDueAgeMs: null, refused: { lastHour: 0, total: 1 }, paused: false, topKeys: [] },
      ]);
    });
  });

  describe("refusals in the last hour", () => {
    test("count the refusals from the start of the minute 59 minutes before now's, per queue, and every one ever", async () => {
      const { store } = await freshStore();
      for (const queue of ["q", "r"]) {
        await store.enqueue(`${queue}-job`, { queue, now: 0 });
        await store.claim(`${queue}-job`, { owner: "A", ttlMs: 1_000 * HOUR, now: 0 });
      }
      const now = T + 30_000; // half a minute into a minute
      const windowStart = T - 59 * MINUTE; // the start of the 60th minute, counting now's
      for (const at of [windowStart - 1, windowStart, now - 1, now]) await expect(store.renew("q-job", { owner: "Z", fence: 1, ttlMs: TTL, now: at })).rejects.toBeInstanceOf(LeaseLost);
      await expect(store.renew("r-job", { owner: "Z", fence: 1, ttlMs: TTL, now: windowStart - MINUTE })).rejects.toBeInstanceOf(LeaseLost);
      expect((await store.stats({ now })).map(({ queue, refused }) => ({ queue, refused }))).toEqual([
        { queue: "q", refused: { lastHour: 3, total: 4 } },
        { queue: "r", refused: { lastHour: 0, total: 1 } },
      ]);
      expect((await store.stats({ now: now + HOUR })).map(({ refused }) => refused)).toEqual([{ lastHour: 0, total: 4 }, { lastHour: 0, total: 1 }]);
    });
  });

  describe("a lease's history", () => {
    /** The events of a job, as the API answers them, without the fields these tests do not speak of. */
    async function history(store: FreshStorage["store"], id: string) {
      return (await store.events(id, { limit: 1000 })).items.map(({ kind, action, owner, fence, currentFence, at, count, lastAt }) => ({ kind, action, owner, fence, currentFence, at, count, lastAt }));
    }

    test("a lease held 3 hours with a renew every 10 s is four events: its renews are one, with their count, first and last time", async () => {
      const { store, rows } = await freshStore();
      await store.enqueue("job-1", { now: T });
      await store.enqueue("bystander", { now: T });
      await store.claim("job-1", { owner: "A", ttlMs: TTL, now: T });
      await store.claim("bystander", { owner: "A", ttlMs: TTL, now: T });
      await store.renew("bystander", { owner: "A", fence: 1, ttlMs: TTL, now: T + 1 });
      const renews = (3 * HOUR) / 10_000;
      await store.renewMany({ owner: "A", ttlMs: TTL, leases: [{ id: "job-1", fence: 1 }], now: T + 10_000 }); // the heartbeat of many leases coalesces too
      for (let i = 2; i <= renews; i++) expect(await noteVerbs(store).renew("job-1", "A", 1, T + i * 10_000, TTL)).toBe(true);
      await store.complete("job-1", { owner: "A", fence: 1, result: "r", now: T + 3 * HOUR + 1 });
      const lease = { action: null, owner: "A", fence: 1, currentFence: null };
      expect(await history(store, "job-1")).toEqual([
        { ...lease, kind: "enqueued", owner: null, fence: null, at: T, count: 1, lastAt: T },
        { ...lease, kind: "claimed", at: T, count: 1, lastAt: T },
        { ...lease, kind: "renewed", at: T + 10_000, count: renews, lastAt: T + 3 * HOUR },
        { ...lease, kind: "completed", at: T + 3 * HOUR + 1, count: 1, lastAt: T + 3 * HOUR + 1 },
      ]);
      expect(await rows("SELECT count(*) AS n FROM events WHERE job_id = 'job-1'")).toEqual([{ n: 4 }]);
      expect((await history(store, "bystander")).map(({ kind, count }) => [kind, count])).toEqual([["enqueued", 1], ["claimed", 1], ["renewed", 1]]);
    }, 30_000); // 1,080 renews: seconds on D1 in the local runtime when the machine is busy

    test("the renews of the next lease are an event of their own, after its claim", async () => {
      const { store } = await freshStore();
      await store.enqueue("job-1", { now: T });
      await store.claim("job-1", { owner: "A", ttlMs: TTL, now: T });
      await store.renew("job-1", { owner: "A", fence: 1, ttlMs: TTL, now: T + 1 });
      await store.renew("job-1", { owner: "A", fence: 1, ttlMs: TTL, now: T + 2 });
      expect(await noteVerbs(store).claim("job-1", "B", T + 2 + TTL, TTL)).toBe(2);
      await store.renew("job-1", { owner: "B", fence: 2, ttlMs: TTL, now: T + 3 + TTL });
      expect((await history(store, "job-1")).map(({ kind, owner, fence, count }) => [kind, owner, fence, count])).toEqual([
        ["enqueued", null, null, 1], ["claimed", "A", 1, 1], ["renewed", "A", 1, 2], ["expired", "A", 1, 1], ["claimed", "B", 2, 1], ["renewed", "B", 2, 1],
      ]);
    });

    test("a zombie refused again and again is one event, while the live lease renews beside it; the stats count every refusal", async () => {
      const { store, rows } = await freshStore();
      await store.enqueue("job-1", { queue: "q", now: T });
      await store.claim("job-1", { owner: "A", ttlMs: TTL, now: T });
      await store.claim("job-1", { owner: "B", ttlMs: HOUR, now: T + TTL }); // A's lease expired: B holds fence 2
      for (let i = 1; i <= 50; i++) {
        expect(await noteVerbs(store).renew("job-1", "A", 1, T + TTL + i, TTL)).toBe(false);
        expect(await noteVerbs(store).renew("job-1", "B", 2, T + TTL + i, HOUR)).toBe(true);
      }
      const refusedMany = await store.renewMany({ owner: "A", ttlMs: TTL, leases: [{ id: "job-1", fence: 1 }], now: T + TTL + 51 });
      expect(refusedMany).toEqual([{ id: "job-1", error: expect.objectContaining({ reason: "superseded" }) }]);
      expect((await history(store, "job-1")).slice(3)).toEqual([
        { kind: "claimed", action: null, owner: "B", fence: 2, currentFence: null, at: T + TTL, count: 1, lastAt: T + TTL },
        { kind: "refused", action: "renew", owner: "A", fence: 1, currentFence: 2, at: T + TTL + 1, count: 51, lastAt: T + TTL + 51 },
        { kind: "renewed", action: null, owner: "B", fence: 2, currentFence: null, at: T + TTL + 1, count: 50, lastAt: T + TTL + 50 },
      ]);
      expect(await rows("SELECT count(*) AS n FROM events")).toEqual([{ n: 6 }]);
      expect((await store.stats({ now: T + TTL + 60 })).map(({ refused }) => refused)).toEqual([{ lastHour: 51, total: 51 }]);
    });

    test("refusals of another action, another fence or against another lease are events of their own", async () => {
      const { store } = await freshStore();
      await store.enqueue("job-1", { now: T });
      await store.claim("job-1", { owner: "A", ttlMs: TTL, now: T });
      await store.claim("job-1", { owner: "B", ttlMs: TTL, now: T + TTL }); // fence 2
      expect(await noteVerbs(store).renew("job-1", "A", 1, T + TTL + 1, TTL)).toBe(false);
      expect(await noteVerbs(store).complete("job-1", "A", 1, T + TTL + 2, "x")).toBe(false);
      expect(await noteVerbs(store).complete("job-1", "A", 1, T + TTL + 3, "y")).toBe(false); // the same refusal again
      expect(await store.completeMany({ owner: "A", leases: [{ id: "job-1", fence: 1, result: "z" }], now: T + TTL + 4 })).toMatchObject({ completed: [{ id: "job-1", error: expect.anything() }] });
      expect(await noteVerbs(store).renew("job-1", "Z", 1, T + TTL + 5, TTL)).toBe(false);
      expect(await noteVerbs(store).renew("job-1", "A", 3, T + TTL + 6, TTL)).toBe(false);
      expect(await noteVerbs(store).claim("job-1", "C", T + 2 * TTL, TTL)).toBe(3);
      expect(await noteVerbs(store).renew("job-1", "A", 1, T + 2 * TTL + 1, TTL)).toBe(false); // against C's lease now
      const refusals = (await history(store, "job-1")).filter((event) => event.kind === "refused");
      expect(refusals.map(({ action, owner, fence, currentFence, count }) => [action, owner, fence, currentFence, count])).toEqual([
        ["renew", "A", 1, 2, 1], ["complete", "A", 1, 2, 3], ["renew", "Z", 1, 2, 1], ["renew", "A", 3, 2, 1], ["renew", "A", 1, 3, 1],
      ]);
      expect((await store.stats({ now: T + 2 * TTL + 2 }))[0]?.refused).toEqual({ lastHour: 7, total: 7 });
    });
  });

  describe("claim-next behind jobs it must not take", () => {
    /** The ids claim-next must take at `now`, worked out from every row: due, nobody's current lease, not an ended last attempt; in claim order. */
    function expectedTake(rows: Row[], now: number, limit: number): string[] {
      const claimable = rows.filter((row) => row.done === 0 && (row.until as number) <= now && isDue(row, now) && !(row.owner !== null && (row.attempts as number) >= (row.max_attempts as number)));
      const key = (row: Row) => [-(row.priority as number), row.run_at as number, row.created_at as number];
      claimable.sort((a, b) => {
        const [x, y] = [key(a), key(b)];
        for (let i = 0; i < x.length; i++) if (x[i] !== y[i]) return x[i]! - y[i]!;
        return (a.id as string) < (b.id as string) ? -1 : 1;
      });
      return claimable.slice(0, limit).map((row) => row.id as string);
    }

    test("takes due jobs in claim order across priorities, past leased and scheduled jobs of every priority, with the ended leases among them", async () => {
      const { store, snapshot } = await freshStore();
      const now = T;
      let n = 0;
      const add = async (priority: number, runIn: number, setup?: "leased" | "ended" | "ended-last" | "done") => {
        const id = `p${priority}-${String(n++).padStart(3, "0")}`;
        await store.enqueue(id, { queue: "q", priority, runAt: now + runIn - HOUR, maxAttempts: setup === "ended-last" ? 1 : 5, now: now - HOUR - (n % 7) });
        if (setup === "leased") await store.claim(id, { owner: "X", ttlMs: 2 * HOUR, now: now - HOUR });
        if (setup === "ended" || setup === "ended-last") await store.claim(id, { owner: "X", ttlMs: HOUR - (n % 3), now: now - HOUR }); // until now or before
        if (setup === "done") await store.complete(id, { owner: "X", fence: (await store.claim(id, { owner: "X", ttlMs: TTL, now: now - HOUR })).fence, result: "r", now: now - HOUR });
      };
      for (const priority of [9, 7, 5, 3, 0, -2]) {
        // Each priority has jobs held and scheduled (ahead of its due ones in the index), and some due ones.
        for (let i = 0; i < 3; i++) await add(priority, HOUR + 1 + i); // scheduled
        for (let i = 0; i < 2; i++) await add(priority, -i, "leased");
        if (priority !== 7) for (let i = 0; i < 3; i++) await add(priority, -(i % 2) * 1_000); // due; priority 7 has none
        if (priority % 2 === 1) await add(priority, -5, "ended");
        if (priority === 5) await add(priority, -6, "ended-last");
        await add(priority, -7, "done");
      }
      await store.enqueue("elsewhere", { queue: "other", priority: 99, now: now - HOUR });
      for (const limit of [1, 2, 4, 5, 3, 100]) {
        const expected = expectedTake(Object.values(await snapshot()).filter((row) => row.queue === "q"), now, limit);
        expect(expected.length).toBeGreaterThan(0);
        const taken = await store.claimNext("q", { owner: `W${limit}`, ttlMs: TTL, limit, now });
        expect(taken.map((lease) => lease.job.id), `limit ${limit}`).toEqual(expected);
      }
      expect(await store.claimNext("q", { owner: "W", ttlMs: TTL, limit: 100, now })).toEqual([]);
      expect((await store.get("elsewhere", { now }))?.owner).toBeNull();
    });

    test("a complete with next takes from the same order", async () => {
      const { store } = await freshStore();
      await store.enqueue("held", { queue: "q", now: T - HOUR });
      await store.enqueue("later", { queue: "q", priority: 9, runAt: T + HOUR, now: T - HOUR });
      await store.enqueue("due-low", { queue: "q", priority: 1, runAt: T - 10, now: T - HOUR });
      await store.enqueue("due-high", { queue: "q", priority: 2, runAt: T - 5, now: T - HOUR });
      expect(await noteVerbs(store).claim("held", "A", T, TTL)).toBe(1);
      const { leases } = await store.complete("held", { owner: "A", fence: 1, result: "r", next: { limit: 5, ttlMs: TTL }, now: T + 1 });
      expect(leases.map((lease) => lease.job.id)).toEqual(["due-high", "due-low"]);
    });
  });

  describe("housekeeping in chunks", () => {
    test("purge takes at most chunkSize finished jobs a transaction, those finished first, and at most maxChunks chunks a call", async () => {
      const { store, snapshot, rows } = await freshStore();
      for (let i = 1; i <= 5; i++) {
        await store.enqueue(`done-${i}`, { now: T });
        await store.claim(`done-${i}`, { owner: "A", ttlMs: TTL, now: T });
        await store.complete(`done-${i}`, { owner: "A", fence: 1, result: "r", now: T + 10 - i }); // done-5 finished first
      }
      await store.enqueue("young", { now: T });
      const young = await store.claim("young", { owner: "A", ttlMs: 2 * HOUR, now: T });
      await store.complete("young", { owner: "A", fence: young.fence, result: "r", now: T + HOUR }); // finished, but less than the retention ago
      await store.enqueue("open", { now: T });
      const kept = await snapshot();
      expect(await store.purge({ retentionMs: HOUR, now: T + 9 + HOUR, chunkSize: 2, maxChunks: 2 })).toBe(4);
      expect(Object.keys(await snapshot())).toEqual(["done-1", "open", "young"]);
      expect(await snapshot()).toEqual({ "done-1": kept["done-1"], open: kept.open, young: kept.young });
      expect(await rows("SELECT DISTINCT job_id FROM events ORDER BY job_id")).toEqual([{ job_id: "done-1" }, { job_id: "open" }, { job_id: "young" }]);
      expect(await store.purge({ retentionMs: HOUR, now: T + 9 + HOUR, chunkSize: 2 })).toBe(1);
      expect(await store.purge({ retentionMs: HOUR, now: T + 9 + HOUR })).toBe(0);
      expect(Object.keys(await snapshot())).toEqual(["open", "young"]);
    });

    test("purge goes on chunk after chunk while a chunk takes chunkSize deleted jobs' histories, with no finished job to purge", async () => {
      const { store, rows } = await freshStore();
      for (const id of ["gone-1", "gone-2", "gone-3"]) {
        await store.enqueue(id, { now: T });
        const { fence } = await store.claim(id, { owner: "A", ttlMs: TTL, now: T });
        await store.release(id, { owner: "A", fence, now: T + 1 });
        await store.delete(id, { now: T + 2 }); // four events each, the last one deleted
      }
      await store.enqueue("open", { now: T });
      expect(await store.purge({ retentionMs: HOUR, now: T + 2 + HOUR, chunkSize: 2 })).toBe(0); // jobs purged: none finished
      expect(await rows("SELECT job_id, kind FROM events ORDER BY seq")).toEqual([{ job_id: "open", kind: "enqueued" }]);
    });

    test("expire goes on chunk after chunk while each chunk ends chunkSize leases", async () => {
      const { store } = await freshStore();
      for (const id of ["a", "b", "c"]) {
        await store.enqueue(id, { now: T });
        await store.claim(id, { owner: "A", ttlMs: TTL, now: T });
      }
      expect((await store.expire({ now: T + TTL, chunkSize: 1 })).map((ended) => ended.id).sort()).toEqual(["a", "b", "c"]);
    });

    test("a deleted job's history goes once its deletion is older than the retention; a new job under its id keeps its own", async () => {
      const { store, rows } = await freshStore();
      await store.enqueue("again", { now: T });
      await store.claim("again", { owner: "A", ttlMs: TTL, now: T });
      await store.release("again", { owner: "A", fence: 1, now: T + 1 });
      await store.delete("again", { now: T + 2 });
      await store.enqueue("again", { now: T + 3 });
      await store.claim("again", { owner: "B", ttlMs: HOUR, now: T + 3 });
      await store.enqueue("recent", { now: T });
      await store.delete("recent", { now: T + 10 });
      expect(await store.purge({ retentionMs: HOUR, now: T + 9 + HOUR })).toBe(0); // jobs purged: none finished
      expect((await store.events("again")).items.map((event) => [event.kind, event.owner])).toEqual([["enqueued", null], ["claimed", "B"]]);
      expect((await store.events("recent")).items.map((event) => event.kind)).toEqual(["enqueued", "deleted"]); // deleted less than an hour ago
      expect(await store.purge({ retentionMs: HOUR, now: T + 10 + HOUR })).toBe(0);
      expect(await rows("SELECT job_id, kind FROM events ORDER BY seq")).toEqual([{ job_id: "again", kind: "enqueued" }, { job_id: "again", kind: "claimed" }]);
    });

    test("expire ends at most chunkSize leases a transaction and maxChunks chunks a call, in every queue", async () => {
      const { store, snapshot } = await freshStore();
      for (const [id, queue] of [["a-1", "a"], ["a-2", "a"], ["b-1", "b"], ["held", "b"]]) {
        await store.enqueue(id!, { queue, now: T });
        await store.claim(id!, { owner: "A", ttlMs: id === "held" ? HOUR : TTL, now: T });
      }
      expect(await store.expire({ now: T + TTL, chunkSize: 2, maxChunks: 1 })).toHaveLength(2);
      expect(Object.values(await snapshot()).filter((row) => row.owner === null)).toHaveLength(2);
      expect(await store.expire({ now: T + TTL, chunkSize: 2 })).toHaveLength(1);
      const after = await snapshot();
      expect(["a-1", "a-2", "b-1"].map((id) => after[id]!.owner)).toEqual([null, null, null]);
      expect(after.held).toMatchObject({ owner: "A", until: T + HOUR });
    });

    test.each([["chunkSize", { chunkSize: 0 }], ["maxChunks", { maxChunks: 1.5 }]])("refuses a bad %s by name, before touching the database", async (name, options) => {
      const { store } = await freshStore();
      await expect(store.purge({ retentionMs: HOUR, now: T, ...options })).rejects.toMatchObject({ name: "InvalidArgument", message: expect.stringContaining(name) });
      await expect(store.expire({ now: T, ...options })).rejects.toMatchObject({ name: "InvalidArgument", message: expect.stringContaining(name) });
    });
  });

  describe("query plans", () => {
    /** The lines of the database's own plan for a statement that read jobs or the history (`h`: a job's history in NEXT_SEQ). */
    async function reads(statement: Statement): Promise<string[]> {
      const { rows } = await freshStore();
      const plan = await rows(`EXPLAIN QUERY PLAN ${statement.sql}`, statement.args);
      return plan.map((row) => String(row.detail)).filter((detail) => /^(SEARCH|SCAN) (jobs|history|h|dedup_keys)\b/.test(detail));
    }

    /** A job by its id, or its stored history's last place (NEXT_SEQ): the primary keys. */
    const BY_ID = /^SEARCH (jobs (EXISTS )?USING PRIMARY KEY \(id=\?\)|h USING PRIMARY KEY \(job_id=\?\))$/;

    test("the stats never scan every job or every event: each count is an index range of one queue, the waiting jobs' a range a priority", async () => {
      const lines = await reads(readStatements.stats(T));
      expect(lines.length).toBeGreaterThan(0);
      for (const line of lines) {
        expect(line).toMatch(/^SEARCH jobs USING (COVERING )?INDEX (jobs_held_by_until \(queue=\?( AND until<\?)?\)|jobs_claim_waiting \(queue=\?( AND priority<\?| AND priority=\?( AND run_at>\?)?)?\)|jobs_turn_waiting \(queue=\?\))$|^SEARCH h USING COVERING INDEX jobs_held_by_until \(queue=\? AND until>\?\)$/);
      }
      // The top keys: a seek a key (k) or a queue, each key's open jobs a range (o), each queue's current leases a range (h).
      const { rows } = await freshStore();
      const keyLines = (await rows(`EXPLAIN QUERY PLAN ${readStatements.stats(T).sql}`, readStatements.stats(T).args)).map((row) => String(row.detail)).filter((detail) => /^(SEARCH|SCAN) (k|o)\b/.test(detail));
      expect(new Set(keyLines)).toEqual(new Set([
        "SEARCH k USING COVERING INDEX jobs_key_open (queue>?)",
        "SEARCH k USING COVERING INDEX jobs_key_open (queue=? AND key>?)",
        "SEARCH o USING COVERING INDEX jobs_key_open (queue=? AND key=?)",
      ]));
    });

    test("a page of keys seeks each key in jobs_key_open, counts its open jobs there, and its leases in its queue's range of jobs_held_by_until", async () => {
      const { rows } = await freshStore();
      const statement = keysOf("q", "a", 101, T);
      const lines = (await rows(`EXPLAIN QUERY PLAN ${statement.sql}`, statement.args)).map((row) => String(row.detail)).filter((detail) => /^(SEARCH|SCAN) (jobs|k|o|h|f)\b/.test(detail));
      expect(new Set(lines)).toEqual(new Set([
        "SEARCH k USING COVERING INDEX jobs_key_open (queue=? AND key>?)",
        "SEARCH o USING COVERING INDEX jobs_key_open (queue=? AND key=?)",
        "SEARCH h USING COVERING INDEX jobs_held_by_until (queue=? AND until>?)",
        "SEARCH f USING INDEX jobs_key_open (queue=? AND key=?)",
      ]));
    });

    test("a purge chunk with nothing due is an index lookup or two: finished jobs by when they finished, deletions by when they happened, windows by when they end", async () => {
      const lines = (await Promise.all(housekeeping.purge(T, 500, T).map(reads))).flat();
      for (const line of lines) {
        expect(line).toMatch(/^SEARCH (jobs USING (COVERING )?INDEX jobs_finished \(updated_at<\?\)|history USING (COVERING )?INDEX history_deleted \(at<\?\)|history USING PRIMARY KEY \(job_id=\?( AND seq[=<]\?)?\)|jobs USING PRIMARY KEY \(id=\?\)|dedup_keys USING (COVERING )?INDEX dedup_keys_until \(until<\?\)|dedup_keys USING PRIMARY KEY \(queue=\? AND dedup_key=\?\))$/);
      }
      expect(lines.filter((line) => line.includes("jobs_finished"))).toHaveLength(3);
      expect(lines.filter((line) => line.includes("history_deleted"))).toHaveLength(1);
      expect(lines.filter((line) => line.includes("dedup_keys_until"))).toHaveLength(1);
    });

    test("the cron's expiry seeks each queue's ended leases, never every lease held", async () => {
      for (const line of await reads(housekeeping.expireSome(T, 500))) {
        expect(line).toMatch(/^SEARCH jobs USING (COVERING )?INDEX jobs_held_by_until( \(queue>\?\)| \(queue=\? AND until<\?\))?$|^SEARCH (jobs USING PRIMARY KEY \(id=\?\)|h USING PRIMARY KEY \(job_id=\?\))$/);
      }
    });

    test("a job's events are read by its id, for a token of some queues too: its stored history from the cursor on, and its row", async () => {
      for (const scope of [null, '["invoices","mail-*"]']) {
        const lines = await reads(readStatements.events("job-1", 5, 100, scope));
        expect(lines).toContain("SEARCH history USING PRIMARY KEY (job_id=? AND seq>?)");
        for (const line of lines) expect(line).toMatch(/^SEARCH (history USING PRIMARY KEY \(job_id=\?( AND seq>\?)?\)|jobs USING PRIMARY KEY \(id=\?\))$/);
      }
    });

    test("claim-next seeks the due jobs nobody holds priority by priority, and the ended leases: never the leased or future jobs", async () => {
      const allowed = [
        BY_ID, // the rows it takes; a complete's job; the last place in a job's history
        /^SEARCH jobs USING (COVERING )?INDEX jobs_claim_waiting \(queue=\?\)$/, // the highest priority (LIMIT 1)
        /^SEARCH jobs USING (COVERING )?INDEX jobs_claim_waiting \(queue=\? AND priority<\?\)$/, // the next priority down (LIMIT 1)
        /^SEARCH jobs USING INDEX jobs_claim_waiting \(queue=\? AND priority=\? AND run_at<\?\)$/, // the due jobs of a priority
        /^SEARCH jobs USING INDEX jobs_held_by_until \(queue=\? AND until<\?\)$/, // the leases that have ended
        /^SEARCH jobs USING INDEX jobs_turn_waiting \(queue=\?\)$/, // a fair queue's keyed jobs in turn order (migrations/0034): no entry in any other queue
        /^SEARCH (jobs|h) USING (COVERING )?INDEX jobs_held_by_until \(queue=\? AND until>\?\)$/, // a limited queue's current leases, and its keys' (h)
      ];
      const push = claims.claimToPush("q", T, 10, "clock");
      for (const statement of [...claims.claimNext("q", "A", T, TTL, 10, "clock"), claims.claimNextAfter("job-1", "A", T, { limit: 10, ttlMs: TTL, clock: "clock" }), push]) {
        const lines = await reads(statement);
        expect(lines.some((line) => line.includes("priority=? AND run_at<?"))).toBe(true);
        for (const line of lines) expect(allowed.some((pattern) => pattern.test(line)), line).toBe(true);
      }
    });

    test("the reads of what is due seek it along run_at, up to an end read from the queue's counts by primary key: never every job of a priority", async () => {
      const { rows } = await freshStore();
      const plan = async (statement: Statement) => (await rows(`EXPLAIN QUERY PLAN ${statement.sql}`, statement.args)).map((row) => String(row.detail));
      for (const statement of [...claims.claimNext("q", "A", T, TTL, 10, "clock"), claims.claimToPush("q", T, 10, "clock"), claims.retryAfter("q", T, "clock"), claims.retryAfter("q", T, "clock", 10)]) {
        const lines = await plan(statement);
        expect(lines).toContain("SEARCH jobs USING INDEX jobs_claim_waiting (queue=? AND priority=? AND run_at<?)");
        expect(lines.filter((line) => line.includes("jobs_claim_waiting (queue=? AND priority=?)"))).toEqual([]);
        const ends = lines.filter((line) => line.includes("queue_counts"));
        expect(ends.length).toBeGreaterThan(0);
        for (const line of ends) expect(line).toBe("SEARCH queue_counts USING PRIMARY KEY (queue=?)");
      }
      // When a job is next claimable: the first run_at of a priority (one entry), and whether one is due ahead of `now`, a range up to that end.
      for (const statement of [claims.nextClaimable(["q", "r"], T, "clock"), claims.nextToPush("q", T, "clock")]) {
        const lines = await plan(statement);
        expect(lines).toContain("SEARCH jobs USING INDEX jobs_claim_waiting (queue=? AND priority=? AND run_at>? AND run_at<?)");
        for (const line of lines.filter((line) => line.includes("queue_counts"))) expect(line).toBe("SEARCH queue_counts USING PRIMARY KEY (queue=?)");
      }
    });

    test("claims find their queue's settings by its primary key, never by a scan", async () => {
      const { rows } = await freshStore();
      for (const statement of [...claims.claimNext("q", "A", T, TTL, 10, "clock"), claims.claim("job-1", "A", T, TTL, "clock")[1]!]) {
        const plan = (await rows(`EXPLAIN QUERY PLAN ${statement.sql}`, statement.args)).map((row) => String(row.detail));
        const settings = plan.filter((detail) => detail.includes("queues"));
        expect(settings.length).toBeGreaterThan(0);
        for (const line of settings) expect(line).toMatch(/^SEARCH (s|queues) USING INDEX sqlite_autoindex_queues_1 \(queue=\?\)$/);
      }
    });
  });
}
