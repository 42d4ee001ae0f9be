import { describe, expect, test } from "vitest";
import { InvalidArgument } from "../../src/store/errors.ts";
import type { SeriesPoint } from "../../src/store/series.ts";
import type { LeaseStore } from "../../src/store/store.ts";
import type { FreshStorage } from "./storage.contract.ts";

// What a queue did, minute by minute (issue 31, migrations/0037), run on every
// driver like the store contract: the series add up to what the jobs' events
// say, the minutes add up to their hours, what outlived its keeping goes, and
// a bad range changes nothing. Each test starts on a fresh, empty database.

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const T = 100 * HOUR; // the test clock, at a whole hour
const TTL = 30_000;

/** The counts of a point, without its quantiles. */
function countsOf({ at, enqueued, completed, failed, expired, dead, refused }: SeriesPoint) {
  return { at, enqueued, completed, failed, expired, dead, refused };
}

/** The counts per minute that the events of `ids` add up to, from `from` for `minutes` minutes. */
async function countsFromEvents(store: LeaseStore, ids: string[], from: number, minutes: number) {
  const points = Array.from({ length: minutes }, (_, i) => ({ at: from + i * MINUTE, enqueued: 0, completed: 0, failed: 0, expired: 0, dead: 0, refused: 0 }));
  for (const id of ids) {
    for (const event of (await store.events(id, { limit: 1000 })).items) {
      const point = points[Math.floor((event.at - from) / MINUTE)]!;
      if (event.kind in point && event.kind !== "at") point[event.kind as keyof typeof point] += event.kind === "refused" ? (event.count ?? 1) : 1;
    }
  }
  return points;
}

/**
 * A known mix over three minutes of queue q: seven jobs enqueued, three
 * completed (one of them with completeMany), a failure to be retried, a
 * death, a refused stale complete (sent twice, folded into one event), an
 * expiry to be retried, and a job of another queue that must not count.
 */
async function knownMix(store: LeaseStore): Promise<string[]> {
  for (const id of ["a", "b", "c", "d", "e"]) await store.enqueue(id, { queue: "q", now: T });
  await store.enqueue("f", { queue: "q", maxAttempts: 1, now: T + 500 });
  await store.enqueue("other", { queue: "elsewhere", now: T });
  await store.claimNext("q", { owner: "A", ttlMs: TTL, limit: 6, now: T + 1_000 });
  await store.complete("a", { owner: "A", fence: 1, result: "1", now: T + 5_000 });
  await store.complete("b", { owner: "A", fence: 1, result: "2", now: T + 10_000 });
  await store.fail("c", { owner: "A", fence: 1, error: "boom", retryInMs: 0, now: T + 20_000 });
  await store.renewMany({ owner: "A", ttlMs: HOUR, leases: [{ id: "d", fence: 1 }, { id: "e", fence: 1 }, { id: "f", fence: 1 }], now: T + 25_000 });
  await store.completeMany({ owner: "A", leases: [{ id: "d", fence: 1, result: "4" }, { id: "e", fence: 1, result: "5" }], now: T + MINUTE + 1_000 });
  await store.fail("f", { owner: "A", fence: 1, error: "fatal", now: T + MINUTE + 2_000 });
  await store.claim("c", { owner: "B", ttlMs: TTL, now: T + MINUTE + 10_000 });
  for (const at of [T + MINUTE + 11_000, T + MINUTE + 12_000]) {
    await expect(store.complete("c", { owner: "A", fence: 1, result: "late", now: at })).rejects.toMatchObject({ code: "stale_lease" });
  }
  await store.expire({ now: T + 2 * MINUTE + 5_000 });
  await store.enqueue("g", { queue: "q", now: T + 2 * MINUTE + 6_000 });
  return ["a", "b", "c", "d", "e", "f", "g"];
}

/** Registers the series contract for one driver. */
export function seriesContract(freshStore: () => Promise<FreshStorage>): void {
  describe("series", () => {
    test("the minutes of a queue answer the counts its jobs' events add up to, and its own only", async () => {
      const { store } = await freshStore();
      const ids = await knownMix(store);
      const series = await store.queues.series("q", { from: T, to: T + 3 * MINUTE - 1, step: MINUTE, now: T + 3 * MINUTE });
      expect(series.points.map(countsOf)).toEqual(await countsFromEvents(store, ids, T, 3));
      expect(series.points.map(countsOf)).toEqual([
        { at: T, enqueued: 6, completed: 2, failed: 1, expired: 0, dead: 0, refused: 0 },
        { at: T + MINUTE, enqueued: 0, completed: 2, failed: 0, expired: 0, dead: 1, refused: 2 },
        { at: T + 2 * MINUTE, enqueued: 1, completed: 0, failed: 0, expired: 1, dead: 0, refused: 0 },
      ]);
      expect(series).toMatchObject({ queue: "q", step: MINUTE, from: T, to: T + 3 * MINUTE - 1, keptFrom: T + 3 * MINUTE - 24 * HOUR });
      const elsewhere = await store.queues.series("elsewhere", { from: T, to: T + 3 * MINUTE - 1, now: T + 3 * MINUTE });
      expect(elsewhere.points.map(countsOf)[0]).toEqual({ at: T, enqueued: 1, completed: 0, failed: 0, expired: 0, dead: 0, refused: 0 });
    });

    test("a minute's wait and run times are its completed jobs', read from their buckets", async () => {
      const { store } = await freshStore();
      await knownMix(store);
      const [first, second] = (await store.queues.series("q", { from: T, to: T + 2 * MINUTE - 1, now: T + 3 * MINUTE })).points;
      // a and b waited 1 s (due at T, claimed at T + 1 s: bucket 1 to 2.5 s) and ran 4 s and 9 s (2.5 to 5 s, 5 to 10 s).
      expect(first!.wait).toEqual({ count: 2, p50: 1_750, p90: 2_350, p99: 2_485 });
      expect(first!.run).toEqual({ count: 2, p50: 5_000, p90: 9_000, p99: 9_900 });
      // d and e waited 1 s and ran 61 s (1 to 5 minutes).
      expect(second!.wait).toMatchObject({ count: 2, p50: 1_750 });
      expect(second!.run).toMatchObject({ count: 2, p50: 180_000 });
      expect((await store.queues.series("q", { from: T + 2 * MINUTE, to: T + 2 * MINUTE, now: T + 3 * MINUTE })).points[0]!.wait).toEqual({ count: 0, p50: null, p90: null, p99: null });
    });

    test("minutes add up to their hour, the current minute included, and a step of many minutes adds up its minutes", async () => {
      const { store } = await freshStore();
      const ids = await knownMix(store);
      const hours = await store.queues.series("q", { from: T, to: T + 3 * MINUTE, step: HOUR, now: T + 3 * MINUTE });
      expect(hours.points.map(countsOf)).toEqual([{ at: T, enqueued: 7, completed: 4, failed: 1, expired: 1, dead: 1, refused: 2 }]);
      expect(hours.points[0]!.run.count).toBe(4);
      const quarters = await store.queues.series("q", { from: T, to: T + 15 * MINUTE - 1, step: 15 * MINUTE, now: T + 3 * MINUTE });
      expect(quarters.points.map(countsOf)).toEqual(hours.points.map(countsOf));
      const summed = (await countsFromEvents(store, ids, T, 3)).reduce((sum, point) => sum + point.completed, 0);
      expect(summed).toBe(4);
    });

    test("a minute is kept 24 hours and an hour 30 days: the first minute to end after that lets it go", async () => {
      const { store, rows } = await freshStore();
      await knownMix(store); // minutes M, M + 1 and M + 2 (still the queue's current one), and their hour
      const M = T / MINUTE;
      const stored = async () => (await rows("SELECT span, minute FROM queue_series WHERE queue = 'q' ORDER BY span, minute")).map(({ span, minute }) => [span, Number(minute) - M]);
      const day = T + 24 * HOUR;
      await store.enqueue("day-1", { queue: "q", now: day + 2 * MINUTE + 30_000 }); // ends M + 2: 24 hours before it, nothing yet
      await store.enqueue("day-2", { queue: "q", now: day + 3 * MINUTE + 30_000 }); // ends M + 1442: minutes before M + 2 go
      expect(await stored()).toEqual([[1, 2], [1, 1442], [60, 0], [60, 1440]]);
      const now = day + 3 * MINUTE + 30_000;
      const hours = await store.queues.series("q", { from: T, to: now, step: HOUR, now });
      expect(hours.points).toHaveLength(25);
      expect(countsOf(hours.points[0]!)).toEqual({ at: T, enqueued: 7, completed: 4, failed: 1, expired: 1, dead: 1, refused: 2 });
      expect(countsOf(hours.points[24]!)).toEqual({ at: day, enqueued: 2, completed: 0, failed: 0, expired: 0, dead: 0, refused: 0 });
      // By the minute, what is older than 24 hours is not kept: its points are zeros, the minute M + 2 still stored among them.
      const minutes = await store.queues.series("q", { from: T + 2 * MINUTE, to: T + 4 * MINUTE, now });
      expect(minutes.keptFrom).toBe(T + 3 * MINUTE);
      expect(minutes.points.map((point) => point.enqueued)).toEqual([0, 0, 0]);

      const month = T + 31 * 24 * HOUR;
      await store.enqueue("month-1", { queue: "q", now: month }); // ends M + 1443
      await store.enqueue("month-2", { queue: "q", now: month + MINUTE }); // ends M + 44640: the hour of M goes, and every minute before it
      expect(await stored()).toEqual([[1, 44640], [60, 1440], [60, 44640]]);
    });

    test("a write whose clock is behind its queue's minute adds to that minute", async () => {
      const { store, rows } = await freshStore();
      await store.enqueue("ahead", { queue: "q", now: T + 5 * MINUTE });
      await store.enqueue("behind", { queue: "q", now: T + 2 * MINUTE });
      expect(await rows("SELECT minute, minute_enqueued FROM queue_counts WHERE queue = 'q'")).toEqual([{ minute: T / MINUTE + 5, minute_enqueued: 2 }]);
      expect(await rows("SELECT * FROM queue_series")).toEqual([]);
      const series = await store.queues.series("q", { from: T, to: T + 5 * MINUTE, now: T + 5 * MINUTE });
      expect(series.points.map((point) => point.enqueued)).toEqual([0, 0, 0, 0, 0, 2]);
    });

    test("a write whose clock ran a day ahead deletes nothing kept, and the next write more than 10 minutes behind it takes the queue's minute back", async () => {
      const { store, rows } = await freshStore();
      await knownMix(store);
      await store.enqueue("ahead", { queue: "q", now: T + 25 * HOUR });
      await store.enqueue("back", { queue: "q", now: T + 3 * MINUTE + 5_000 });
      expect(await rows("SELECT minute, minute_enqueued FROM queue_counts WHERE queue = 'q'")).toEqual([{ minute: T / MINUTE + 3, minute_enqueued: 1 }]);
      const now = T + 3 * MINUTE + 5_000;
      const series = await store.queues.series("q", { from: T, to: now, now });
      expect(series.points.map((point) => point.enqueued)).toEqual([6, 0, 1, 1]);
      // The minute ahead is stored where its clock put it, and none of the queue's minutes went with it.
      expect(await rows("SELECT span, minute, enqueued FROM queue_series WHERE queue = 'q' AND span = 1 ORDER BY minute")).toEqual([
        { span: 1, minute: T / MINUTE, enqueued: 6 },
        { span: 1, minute: T / MINUTE + 1, enqueued: 0 },
        { span: 1, minute: T / MINUTE + 2, enqueued: 1 },
        { span: 1, minute: (T + 25 * HOUR) / MINUTE, enqueued: 1 },
      ]);
    });

    test("a job enqueued with a runAt already past waits from its enqueue, not from its runAt", async () => {
      const { store } = await freshStore();
      await store.enqueue("past", { queue: "q", runAt: 0, now: T });
      await store.claim("past", { owner: "A", ttlMs: TTL, now: T + 20 });
      await store.complete("past", { owner: "A", fence: 1, result: "1", now: T + 30 });
      const [point] = (await store.queues.series("q", { from: T, to: T, now: T + 30 })).points;
      expect(point!.wait).toEqual({ count: 1, p50: 18, p90: 24, p99: 25 }); // 20 ms: the bucket of 10 to 25 ms
    });

    test("a queue that did nothing answers zeros, a step for each minute asked", async () => {
      const { store } = await freshStore();
      const series = await store.queues.series("quiet", { now: T + 30_000 });
      expect(series).toMatchObject({ queue: "quiet", step: MINUTE, from: T - 59 * MINUTE, to: T + 30_000 });
      expect(series.points).toHaveLength(60);
      expect(series.points.every((point) => point.enqueued === 0 && point.run.p50 === null)).toBe(true);
    });

    test("a bad range is refused naming what is wrong, and writes nothing", async () => {
      const { store, snapshot } = await freshStore();
      await store.enqueue("a", { queue: "q", now: T });
      const before = await snapshot();
      const refused = [
        [{ step: 30_000 }, /step must be a whole number of minutes/],
        [{ step: 0 }, /step must be a positive safe integer/],
        [{ from: T + MINUTE, to: T }, /from .* must not be after to/],
        [{ from: T - 2 * 24 * HOUR, to: T }, /2881 points; at most 1440/],
        [{ from: -1 }, /from must be integer milliseconds/],
      ] as const;
      for (const [range, message] of refused) {
        const error = await store.queues.series("q", { ...range, now: T }).catch((caught: unknown) => caught);
        expect(error).toBeInstanceOf(InvalidArgument);
        expect((error as Error).message).toMatch(message);
      }
      await expect(store.queues.series("", { now: T })).rejects.toBeInstanceOf(InvalidArgument);
      expect(await snapshot()).toEqual(before);
    });
  });
}
