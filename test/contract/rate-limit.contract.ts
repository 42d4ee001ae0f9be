import { describe, expect, test } from "vitest";
import { InvalidArgument, NotClaimable } from "../../src/store/errors.ts";
import type { LeaseStore } from "../../src/store/store.ts";
import { MAX_BURST } from "../../src/store/shapes.ts";
import type { FreshStorage } from "./storage.contract.ts";

// The rate limit of migrations/0009: a token bucket on the queue's row, decided
// inside the claim statements and spent in the claim's own statement, run
// against every driver as the store contract is. Each test starts on a fresh,
// empty database; the clock is the `now` of each call, so every boundary is
// exact to the millisecond.

const T = 1_000_000; // the test clock
const TTL = 30_000;
const DAY = 24 * 60 * 60 * 1000;

/** Enqueues `count` jobs `<queue>-1`… in `queue`, due at T. */
async function enqueueJobs(store: LeaseStore, queue: string, count: number): Promise<string[]> {
  const ids = Array.from({ length: count }, (_, i) => `${queue}-${i + 1}`);
  for (const id of ids) await store.enqueue(id, { queue, now: T });
  return ids;
}

/** The settings of a queue with a rate and nothing else. */
const rated = (queue: string, ratePerSecond: number, burst: number) => ({ queue, paused: false, maxLeased: null, ratePerSecond, burst });

/** Registers the rate limit's contract for one driver. */
export function rateLimitContract(freshStore: () => Promise<FreshStorage>): void {
  /** The bucket as stored: micro-tokens and when they were counted. */
  const bucketOf = async (fresh: FreshStorage, queue: string) => (await fresh.rows("SELECT micro_tokens, tokens_at FROM queues WHERE queue = ?", [queue]))[0];

  describe("rate limit settings", () => {
    test("setQueue stores ratePerSecond and burst with maxLeased, keeps paused, and reads them back", async () => {
      const { store } = await freshStore();
      await store.pauseQueue("mail", T);
      expect(await store.setQueue("mail", { ratePerSecond: 2, burst: 5, maxLeased: 3 }, T)).toEqual({ queue: "mail", paused: true, maxLeased: 3, ratePerSecond: 2, burst: 5 });
      expect(await store.getQueue("mail")).toEqual({ queue: "mail", paused: true, maxLeased: 3, ratePerSecond: 2, burst: 5 });
      expect(await store.listQueues()).toEqual([{ queue: "mail", paused: true, maxLeased: 3, ratePerSecond: 2, burst: 5 }]);
      expect(await store.setQueue("mail", { ratePerSecond: 12.345, burst: 1 }, T)).toMatchObject({ ratePerSecond: 12.345, burst: 1, maxLeased: null });
      expect(await store.setQueue("mail", {}, T)).toEqual({ queue: "mail", paused: true, maxLeased: null, ratePerSecond: null, burst: null });
    });

    test("burst defaults to max(1, ceil(ratePerSecond))", async () => {
      const { store } = await freshStore();
      expect(await store.setQueue("a", { ratePerSecond: 0.5 }, T)).toEqual(rated("a", 0.5, 1));
      expect(await store.setQueue("a", { ratePerSecond: 2.5 }, T)).toEqual(rated("a", 2.5, 3));
      expect(await store.setQueue("a", { ratePerSecond: 7, burst: null }, T)).toEqual(rated("a", 7, 7));
    });

    test("bad settings are InvalidArgument and change nothing", async () => {
      const fresh = await freshStore();
      const { store } = fresh;
      await store.setQueue("q", { ratePerSecond: 2, burst: 4, maxLeased: 9 }, T);
      const before = await bucketOf(fresh, "q");
      const bad = [
        { burst: 3 },
        { maxLeased: 2, burst: 1, ratePerSecond: null },
        ...[0, -1, Number.NaN, Number.POSITIVE_INFINITY, "2", 1_000_001, 0.0001, 1.0005].map((ratePerSecond) => ({ ratePerSecond })),
        ...[0, -1, 1.5, "2", MAX_BURST + 1].map((burst) => ({ ratePerSecond: 1, burst })),
        { ratePerSecond: 1, maxLeased: 0 },
      ];
      for (const settings of bad) {
        await expect(store.setQueue("q", settings as never, T + 5), JSON.stringify(settings)).rejects.toBeInstanceOf(InvalidArgument);
      }
      await expect(store.setQueue("q", { burst: 3 }, T)).rejects.toThrow(/burst needs ratePerSecond/);
      await expect(store.setQueue("q", { ratePerSecond: 0.0001 }, T)).rejects.toThrow(/multiple of 0\.001/);
      expect(await store.getQueue("q")).toEqual({ queue: "q", paused: false, maxLeased: 9, ratePerSecond: 2, burst: 4 });
      expect(await bucketOf(fresh, "q")).toEqual(before);
    });
  });

  describe("the token bucket in the claim", () => {
    test("claim-next hands out exactly burst leases at one instant, and none beyond; a bystander is untouched", async () => {
      const { store } = await freshStore();
      await enqueueJobs(store, "q", 5);
      await enqueueJobs(store, "other", 5);
      await store.setQueue("q", { ratePerSecond: 1, burst: 3 }, T);
      expect(await store.claimNext("q", "A", T, TTL, 2)).toHaveLength(2);
      const last = await store.claimNext("q", "B", T, TTL, 5);
      expect(last.map((lease) => lease.job.id)).toEqual(["q-3"]); // the limit exactly reached: 3 of 3
      expect(last.retryAfterMs).toBe(1_000); // short because of the bucket
      const none = await store.claimNext("q", "C", T, TTL, 1); // one more would exceed it
      expect([...none]).toEqual([]);
      expect(none.retryAfterMs).toBe(1_000);
      expect((await store.stats(T)).find((stats) => stats.queue === "q")!.jobs).toMatchObject({ leased: 3, queued: 2 });
      expect(await store.claimNext("other", "D", T, TTL, 5)).toHaveLength(5);
    });

    test("a bucket refills at its exact instant: rate 2/s, burst 2", async () => {
      const { store } = await freshStore();
      await enqueueJobs(store, "q", 6);
      await store.setQueue("q", { ratePerSecond: 2, burst: 2 }, T);
      expect(await store.claimNext("q", "A", T, TTL, 5)).toHaveLength(2);
      const early = await store.claimNext("q", "A", T + 499, TTL, 5);
      expect([...early]).toEqual([]);
      expect(early.retryAfterMs).toBe(1);
      expect(await store.claimNext("q", "A", T + 500, TTL, 5)).toHaveLength(1);
      expect((await store.claimNext("q", "A", T + 999, TTL, 5)).retryAfterMs).toBe(1);
      expect(await store.claimNext("q", "A", T + 1_000, TTL, 5)).toHaveLength(1);
    });

    test("a rate that is not a whole number loses nothing between spends: 0.3/s gives a token at 3334 ms, then 6667 ms", async () => {
      const { store } = await freshStore();
      await enqueueJobs(store, "q", 5);
      await store.setQueue("q", { ratePerSecond: 0.3, burst: 2 }, T); // a burst of 2, so that the bucket is never full below
      expect(await store.claimNext("q", "A", T, TTL, 5)).toHaveLength(2);
      expect((await store.claimNext("q", "A", T + 3_333, TTL)).retryAfterMs).toBe(1);
      expect(await store.claimNext("q", "A", T + 3_334, TTL)).toHaveLength(1); // 10/3 s after T
      expect((await store.claimNext("q", "A", T + 6_666, TTL)).retryAfterMs).toBe(1);
      expect(await store.claimNext("q", "A", T + 6_667, TTL)).toHaveLength(1); // 20/3 s after T: no remainder was dropped at 3334
    });

    test("after a long idle the bucket holds no more than its burst", async () => {
      const { store } = await freshStore();
      await enqueueJobs(store, "q", 10);
      await store.setQueue("q", { ratePerSecond: 1, burst: 3 }, T);
      expect(await store.claimNext("q", "A", T, TTL, 10)).toHaveLength(3);
      expect(await store.claimNext("q", "A", T + DAY, TTL, 10)).toHaveLength(3);
      expect((await store.claimNext("q", "A", T + DAY, TTL, 10)).retryAfterMs).toBe(1_000);
    });

    test("a claim by id past the bucket is NotClaimable rate_limited and changes nothing; the token comes at its instant", async () => {
      const fresh = await freshStore();
      const { store, snapshot } = fresh;
      await enqueueJobs(store, "q", 2);
      await store.setQueue("q", { ratePerSecond: 1, burst: 1 }, T);
      expect(await store.claimJob("q-1", "A", T, TTL)).toMatchObject({ fence: 1 }); // the limit exactly reached
      const before = { jobs: await snapshot(), bucket: await bucketOf(fresh, "q") };
      const refused = store.claimJob("q-2", "A", T + 999, TTL);
      await expect(refused).rejects.toBeInstanceOf(NotClaimable);
      await expect(refused).rejects.toMatchObject({ reason: "rate_limited" });
      expect(await store.claim("q-2", "A", T + 999, TTL)).toBeNull();
      expect({ jobs: await snapshot(), bucket: await bucketOf(fresh, "q") }).toEqual(before);
      expect(await store.claimJob("q-2", "A", T + 1_000, TTL)).toMatchObject({ fence: 1 });
    });

    test("complete's and fail's next, and completeMany's take, obey the bucket", async () => {
      const { store } = await freshStore();
      await enqueueJobs(store, "q", 8);
      await store.setQueue("q", { ratePerSecond: 1, burst: 2 }, T);
      const [first] = await store.claimNext("q", "A", T, TTL, 1);
      const settled = await store.completeJob(first!.job.id, "A", first!.fence, T, "ok", { next: { limit: 5, ttlMs: TTL } });
      expect(settled.leases.map((lease) => lease.job.id)).toEqual(["q-2"]); // the one token left
      const failed = await store.failJob("q-2", "A", settled.leases[0]!.fence, T, "boom", { retryInMs: 0, next: { limit: 5, ttlMs: TTL } });
      expect(failed.leases).toEqual([]); // no token: the failed job waits too
      const { leases } = await store.completeMany("A", [], T + 1_000, { queue: "q", limit: 5, ttlMs: TTL });
      expect(leases).toHaveLength(1); // one token a second
      expect(await store.claimNext("q", "A", T + 1_000, TTL, 5)).toHaveLength(0);
    });

    test("a paused queue spends no tokens, and a claim there says paused, not when a token is due", async () => {
      const fresh = await freshStore();
      const { store } = fresh;
      await enqueueJobs(store, "q", 5);
      await store.setQueue("q", { ratePerSecond: 1, burst: 2 }, T);
      await store.pauseQueue("q", T);
      const before = await bucketOf(fresh, "q");
      const none = await store.claimNext("q", "A", T, TTL, 5);
      expect(none.retryAfterMs).toBeUndefined();
      await expect(store.claimJob("q-1", "A", T, TTL)).rejects.toMatchObject({ reason: "paused" });
      expect(await bucketOf(fresh, "q")).toEqual(before);
      await store.resumeQueue("q", T);
      expect(await store.claimNext("q", "A", T, TTL, 5)).toHaveLength(2); // the bucket as it was: full
    });

    test("refused claims spend nothing: a leased or done job, a full queue, an empty queue", async () => {
      const fresh = await freshStore();
      const { store } = fresh;
      await enqueueJobs(store, "q", 3);
      await store.setQueue("q", { ratePerSecond: 1, burst: 3, maxLeased: 1 }, T);
      const [held] = await store.claimNext("q", "A", T, TTL, 1);
      const before = await bucketOf(fresh, "q");
      await expect(store.claimJob(held!.job.id, "B", T, TTL)).rejects.toMatchObject({ reason: "leased" });
      await expect(store.claimJob("q-2", "B", T, TTL)).rejects.toMatchObject({ reason: "full" });
      const full = await store.claimNext("q", "B", T, TTL, 2);
      expect([...full]).toEqual([]);
      expect(full.retryAfterMs).toBeUndefined(); // the bucket did not stop it
      await store.complete(held!.job.id, "A", held!.fence, T, "ok");
      await expect(store.claimJob(held!.job.id, "B", T, TTL)).rejects.toMatchObject({ reason: "done" });
      expect(await bucketOf(fresh, "q")).toEqual(before);
      await store.setQueue("q", { ratePerSecond: 1, burst: 3 }, T); // the same rate: the bucket is kept
      expect(await store.claimNext("q", "B", T, TTL, 5)).toHaveLength(2); // the 2 tokens left, for the 2 jobs left
      const empty = await store.claimNext("q", "B", T, TTL, 1);
      expect(empty.retryAfterMs).toBeUndefined(); // nothing due: the bucket did not stop it
    });

    test("with maxLeased and a rate, the tighter of the two decides", async () => {
      const { store } = await freshStore();
      await enqueueJobs(store, "q", 10);
      await store.setQueue("q", { ratePerSecond: 10, burst: 4, maxLeased: 2 }, T);
      const held = await store.claimNext("q", "A", T, TTL, 10);
      expect(held).toHaveLength(2); // maxLeased
      for (const lease of held) await store.complete(lease.job.id, "A", lease.fence, T, "ok");
      const more = await store.claimNext("q", "A", T, TTL, 10);
      expect(more).toHaveLength(2); // the 2 tokens left
      expect("retryAfterMs" in (await store.claimNext("q", "A", T, TTL, 10))).toBe(false); // full again: a token alone would not do
      for (const lease of more) await store.complete(lease.job.id, "A", lease.fence, T, "ok");
      expect((await store.claimNext("q", "A", T, TTL, 10)).retryAfterMs).toBe(100); // now the bucket is what holds it back
    });

    test("a queue both full and out of tokens says full, not when a token is due: a token alone would not let a claim through", async () => {
      const { store } = await freshStore();
      const [first, second] = await enqueueJobs(store, "q", 2);
      await store.setQueue("q", { ratePerSecond: 1, burst: 1, maxLeased: 1 }, T);
      const [held] = await store.claimNext("q", "A", T, TTL);
      expect(held!.job.id).toBe(first);
      expect("retryAfterMs" in (await store.claimNext("q", "B", T + 1, TTL))).toBe(false);
      await expect(store.claimJob(second!, "B", T + 1, TTL)).rejects.toMatchObject({ name: "NotClaimable", reason: "full" });
      await store.complete(first!, "A", held!.fence, T + 2, "ok"); // the slot is free; the token is not back yet
      expect((await store.claimNext("q", "B", T + 2, TTL)).retryAfterMs).toBe(998);
      await expect(store.claimJob(second!, "B", T + 2, TTL)).rejects.toMatchObject({ name: "NotClaimable", reason: "rate_limited" });
    });
  });

  describe("changing the rate", () => {
    test("a changed rate keeps the tokens the bucket holds, at most the new burst; a new rate starts full", async () => {
      const fresh = await freshStore();
      const { store } = fresh;
      await enqueueJobs(store, "q", 20);
      await store.setQueue("q", { ratePerSecond: 1, burst: 5 }, T);
      expect(await store.claimNext("q", "A", T, TTL, 3)).toHaveLength(3); // 2 left
      await store.setQueue("q", { ratePerSecond: 10, burst: 5 }, T + 500); // 2.5 by the old rate
      expect(await bucketOf(fresh, "q")).toEqual({ micro_tokens: 2_500_000, tokens_at: T + 500 });
      expect(await store.claimNext("q", "A", T + 550, TTL, 5)).toHaveLength(3); // 2.5 + 0.5 at the new rate
      await store.setQueue("q", { ratePerSecond: 10, burst: 1 }, T + 10_000); // full at 5, cut to 1
      expect(await store.claimNext("q", "A", T + 10_000, TTL, 5)).toHaveLength(1);
      await store.setQueue("q", { maxLeased: 50 }, T + 10_000); // no rate: no bucket
      expect(await bucketOf(fresh, "q")).toEqual({ micro_tokens: null, tokens_at: null });
      await store.setQueue("q", { ratePerSecond: 1, burst: 4 }, T + 10_000); // a new rate: full
      expect(await store.claimNext("q", "A", T + 10_000, TTL, 10)).toHaveLength(4);
    });

    test("nextClaimableAt waits for the next token, and for a later due job if that comes later", async () => {
      const { store } = await freshStore();
      await enqueueJobs(store, "q", 2);
      await store.setQueue("q", { ratePerSecond: 2, burst: 1 }, T);
      expect(await store.nextClaimableAt("q", T)).toBe(T);
      await store.claimNext("q", "A", T, TTL);
      expect(await store.nextClaimableAt("q", T + 100)).toBe(T + 500);
      await store.claimNext("q", "A", T + 500, TTL); // the last due job
      await store.enqueue("later", { queue: "q", runAt: T + 5_000, now: T });
      expect(await store.nextClaimableAt("q", T + 600)).toBe(T + 5_000);
      await store.enqueue("soon", { queue: "q", runAt: T + 700, now: T });
      expect(await store.nextClaimableAt("q", T + 600)).toBe(T + 1_000); // due at 700, the token at 1000
    });

    test("the bucket is persisted: a second store over the same database spends from it", async () => {
      const { store, reopen } = await freshStore();
      await enqueueJobs(store, "q", 3);
      await store.setQueue("q", { ratePerSecond: 1, burst: 2 }, T);
      await store.claimNext("q", "A", T, TTL);
      const other = await reopen();
      expect(await other.claimNext("q", "B", T, TTL, 5)).toHaveLength(1);
      expect((await other.claimNext("q", "B", T, TTL, 5)).retryAfterMs).toBe(1_000);
    });
  });

  describe("the token bucket when the clock steps", () => {
    const HOUR = 60 * 60 * 1000;
    const BACK = T + 10 * DAY - HOUR; // the clock after a step back of an hour from T + 10 days
    /** `count` jobs of `queue`, due long before either clock. */
    const dueJobs = async (store: LeaseStore, queue: string, count: number) => {
      for (let i = 1; i <= count; i++) await store.enqueue(`${queue}-${i}`, { queue, now: T });
    };

    test("after a step back of an hour, an empty bucket refills at its rate from the corrected clock, and never holds more than burst", async () => {
      const fresh = await freshStore();
      const { store } = fresh;
      const NOW = T + 10 * DAY;
      await dueJobs(store, "q", 60);
      await store.setQueue("q", { ratePerSecond: 10, burst: 10 }, NOW);
      expect(await store.claimNext("q", "A", NOW, TTL, 20)).toHaveLength(10);
      expect(await store.nextClaimableAt("q", NOW)).toBe(NOW + 100);
      // The clock steps back an hour: the next token comes 100 ms later by the corrected clock, not in an hour.
      const stepped = await store.claimNext("q", "A", BACK, TTL);
      expect([...stepped]).toEqual([]);
      expect(stepped.retryAfterMs).toBe(100);
      expect(await store.nextClaimableAt("q", BACK)).toBe(BACK + 100);
      expect((await store.claimNext("q", "A", BACK + 99, TTL)).retryAfterMs).toBe(1);
      expect(await store.claimNext("q", "A", BACK + 100, TTL, 5)).toHaveLength(1);
      expect((await store.claimNext("q", "A", BACK + 100, TTL)).retryAfterMs).toBe(100);
      expect(await store.claimNext("q", "A", BACK + 250, TTL, 5)).toHaveLength(1); // one and a half tokens: one lease
      // An idle spell refills it to its burst, no more.
      expect(await store.claimNext("q", "A", BACK + 60_000, TTL, 30)).toHaveLength(10);
      expect(await bucketOf(fresh, "q")).toEqual({ micro_tokens: 0, tokens_at: BACK + 60_000 });
    });

    test("after a step back, a bucket that held tokens hands out those, then one a refill", async () => {
      const { store } = await freshStore();
      const NOW = T + 10 * DAY;
      await dueJobs(store, "q", 30);
      await store.setQueue("q", { ratePerSecond: 10, burst: 10 }, NOW);
      expect(await store.claimNext("q", "A", NOW, TTL, 3)).toHaveLength(3);
      expect(await store.claimNext("q", "A", BACK, TTL, 20)).toHaveLength(7);
      expect((await store.claimNext("q", "A", BACK + 99, TTL)).retryAfterMs).toBe(1);
      expect(await store.claimNext("q", "A", BACK + 100, TTL, 20)).toHaveLength(1);
    });

    test("after a step back, a claim by id is rate_limited until the refill from the corrected clock, then takes the job", async () => {
      const { store } = await freshStore();
      const NOW = T + 10 * DAY;
      await dueJobs(store, "q", 3);
      await store.setQueue("q", { ratePerSecond: 10, burst: 1 }, NOW);
      expect(await store.claimNext("q", "A", NOW, TTL)).toHaveLength(1);
      await expect(store.claimJob("q-2", "B", BACK, TTL)).rejects.toMatchObject({ reason: "rate_limited" });
      await expect(store.claimJob("q-2", "B", BACK + 99, TTL)).rejects.toMatchObject({ reason: "rate_limited" });
      expect((await store.claimJob("q-2", "B", BACK + 100, TTL)).fence).toBe(1);
    });

    test("a clock up to a second behind the bucket's last count (another server's) waits for it: no token twice", async () => {
      const fresh = await freshStore();
      const { store } = fresh;
      await dueJobs(store, "q", 10);
      await store.setQueue("q", { ratePerSecond: 10, burst: 1 }, T);
      expect(await store.claimNext("q", "A", T + 1_000, TTL)).toHaveLength(1);
      const behind = await store.claimNext("q", "B", T + 300, TTL); // 700 ms behind
      expect([...behind]).toEqual([]);
      expect(behind.retryAfterMs).toBe(800); // when the token is due by the bucket's count: T + 1100
      expect(await store.claimNext("q", "B", T + 1_099, TTL)).toHaveLength(0);
      expect(await bucketOf(fresh, "q")).toEqual({ micro_tokens: 0, tokens_at: T + 1_000 }); // not moved back
      expect(await store.claimNext("q", "A", T + 1_100, TTL)).toHaveLength(1);
      expect(await store.claimNext("q", "B", T + 1_150, TTL)).toHaveLength(0); // 50 ms behind the last spend
    });

    test("a step forward fills the bucket to its burst, no more", async () => {
      const { store } = await freshStore();
      await dueJobs(store, "q", 30);
      await store.setQueue("q", { ratePerSecond: 10, burst: 5 }, T);
      expect(await store.claimNext("q", "A", T, TTL, 10)).toHaveLength(5);
      expect(await store.claimNext("q", "A", T + 365 * DAY, TTL, 20)).toHaveLength(5);
    });
  });
}
