import { describe, expect, test } from "vitest";
import { InvalidArgument, NotClaimable } from "../../src/store/errors.ts";
import type { LeaseStore } from "../../src/store/store.ts";
import { MAX_BURST, MAX_RATE_PER_SECOND, type QueueLimits } from "../../src/store/shapes.ts";
import type { FreshStorage } from "./storage.contract.ts";
import { NO_KEY_LIMITS } from "./queues.contract.ts";
import { noteVerbs } from "../../src/store/note.ts";

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
const rated = (queue: string, ratePerSecond: number, burst: number) => ({ queue, paused: false, maxLeased: null, ratePerSecond, burst, ...NO_KEY_LIMITS });

/** Registers the rate limit's contract for one driver. */
export function rateLimitContract(freshStore: () => Promise<FreshStorage>): void {
  /** The bucket as stored: micro-tokens and when they were counted. */
  const bucketOf = async (fresh: FreshStorage, queue: string) => (await fresh.rows("SELECT micro_tokens, tokens_at FROM queues WHERE queue = ?", [queue]))[0];

  describe("rate limit settings", () => {
    test("queues.set stores ratePerSecond and burst with maxLeased, keeps paused, and reads them back", async () => {
      const { store } = await freshStore();
      await store.queues.pause("mail", { now: T });
      expect(await store.queues.set("mail", { ratePerSecond: 2, burst: 5, maxLeased: 3, now: T })).toEqual({ queue: "mail", paused: true, maxLeased: 3, ratePerSecond: 2, burst: 5, ...NO_KEY_LIMITS });
      expect(await store.queues.get("mail")).toEqual({ queue: "mail", paused: true, maxLeased: 3, ratePerSecond: 2, burst: 5, ...NO_KEY_LIMITS });
      expect(await store.queues.list()).toEqual([{ queue: "mail", paused: true, maxLeased: 3, ratePerSecond: 2, burst: 5, ...NO_KEY_LIMITS }]);
      expect(await store.queues.set("mail", { ratePerSecond: 12.345, burst: 1, now: T })).toMatchObject({ ratePerSecond: 12.345, burst: 1, maxLeased: null });
      expect(await store.queues.set("mail", { now: T })).toEqual({ queue: "mail", paused: true, maxLeased: null, ratePerSecond: null, burst: null, ...NO_KEY_LIMITS });
    });

    test("burst defaults to max(1, ceil(ratePerSecond))", async () => {
      const { store } = await freshStore();
      expect(await store.queues.set("a", { ratePerSecond: 0.5, now: T })).toEqual(rated("a", 0.5, 1));
      expect(await store.queues.set("a", { ratePerSecond: 2.5, now: T })).toEqual(rated("a", 2.5, 3));
      expect(await store.queues.set("a", { ratePerSecond: 7, burst: null, now: T })).toEqual(rated("a", 7, 7));
    });

    test("bad settings are InvalidArgument naming the setting and the value, and change nothing", async () => {
      const fresh = await freshStore();
      const { store } = fresh;
      await store.queues.set("q", { ratePerSecond: 2, burst: 4, maxLeased: 9, now: T });
      const before = await bucketOf(fresh, "q");
      const rateOutOfRange = (got: string) => `ratePerSecond must be a number above 0 and at most ${MAX_RATE_PER_SECOND}, got ${got}`;
      const notMultiple = (got: string) => `ratePerSecond must be a multiple of 0.001 (the bucket counts thousandths of a token a second), got ${got}`;
      const refused: [QueueLimits, string][] = [
        [{ burst: 3 }, "burst needs ratePerSecond: a burst is the most a rate limit's bucket holds; send ratePerSecond too, or leave burst out"],
        [{ maxLeased: 2, burst: 1, ratePerSecond: null }, "burst needs ratePerSecond: a burst is the most a rate limit's bucket holds; send ratePerSecond too, or leave burst out"],
        [{ ratePerSecond: 0 }, rateOutOfRange("0")],
        [{ ratePerSecond: -1 }, rateOutOfRange("-1")],
        [{ ratePerSecond: Number.NaN }, rateOutOfRange("NaN")],
        [{ ratePerSecond: Number.POSITIVE_INFINITY }, rateOutOfRange("Infinity")],
        [{ ratePerSecond: "2" as never }, rateOutOfRange('"2"')],
        [{ ratePerSecond: MAX_RATE_PER_SECOND + 0.001 }, rateOutOfRange("1000000.001")],
        [{ ratePerSecond: 0.0001 }, notMultiple("0.0001")],
        [{ ratePerSecond: 1e-10 }, notMultiple("1e-10")], // closer to 0 than any float's noise: still not a multiple
        [{ ratePerSecond: 1.0005 }, notMultiple("1.0005")],
        [{ ratePerSecond: 1, burst: 0 }, "burst must be a positive safe integer, got 0"],
        [{ ratePerSecond: 1, burst: -1 }, "burst must be a positive safe integer, got -1"],
        [{ ratePerSecond: 1, burst: 1.5 }, "burst must be a positive safe integer, got 1.5"],
        [{ ratePerSecond: 1, burst: "2" as never }, 'burst must be a positive safe integer, got "2"'],
        [{ ratePerSecond: 1, burst: MAX_BURST + 1 }, `burst must be at most ${MAX_BURST}, got ${MAX_BURST + 1}`],
        [{ ratePerSecond: 1, maxLeased: 0 }, "maxLeased must be a positive safe integer, got 0"],
      ];
      for (const [settings, message] of refused) {
        const refusal = await store.queues.set("q", { ...settings, now: T + 5 }).catch((error: unknown) => error);
        expect(refusal, message).toBeInstanceOf(InvalidArgument);
        expect((refusal as InvalidArgument).message).toBe(message);
      }
      expect(await store.queues.get("q")).toEqual({ queue: "q", paused: false, maxLeased: 9, ratePerSecond: 2, burst: 4, ...NO_KEY_LIMITS });
      expect(await bucketOf(fresh, "q")).toEqual(before);
    });

    test("the bounds are taken exactly: the least rate, the greatest rate and the greatest burst; one step past each is refused", async () => {
      const { store } = await freshStore();
      expect(await store.queues.set("q", { ratePerSecond: 0.001, now: T })).toEqual(rated("q", 0.001, 1));
      expect(await store.queues.set("q", { ratePerSecond: MAX_RATE_PER_SECOND, now: T })).toEqual(rated("q", MAX_RATE_PER_SECOND, MAX_RATE_PER_SECOND));
      expect(await store.queues.set("q", { ratePerSecond: 1, burst: MAX_BURST, now: T })).toEqual(rated("q", 1, MAX_BURST));
      await expect(store.queues.set("q", { ratePerSecond: 0, now: T + 1 })).rejects.toThrow(/^ratePerSecond must be a number above 0/);
      await expect(store.queues.set("q", { ratePerSecond: MAX_RATE_PER_SECOND + 0.001, now: T + 1 })).rejects.toThrow(/^ratePerSecond must be a number above 0 and at most 1000000/);
      await expect(store.queues.set("q", { ratePerSecond: 1, burst: MAX_BURST + 1, now: T + 1 })).rejects.toThrow(/^burst must be at most 1000000000/);
      expect(await store.queues.get("q")).toEqual(rated("q", 1, MAX_BURST));
    });
  });

  describe("the token bucket in the claim", () => {
    test("claim-next hands out exactly burst leases at one instant, and none beyond; a bystander is untouched", async () => {
      const { store } = await freshStore();
      await enqueueJobs(store, "q", 5);
      await enqueueJobs(store, "other", 5);
      await store.queues.set("q", { ratePerSecond: 1, burst: 3, now: T });
      expect(await store.claimNext("q", { owner: "A", ttlMs: TTL, limit: 2, now: T })).toHaveLength(2);
      const last = await store.claimNext("q", { owner: "B", ttlMs: TTL, limit: 5, now: T });
      expect(last.map((lease) => lease.job.id)).toEqual(["q-3"]); // the limit exactly reached: 3 of 3
      expect(last.retryAfterMs).toBe(1_000); // short because of the bucket
      const none = await store.claimNext("q", { owner: "C", ttlMs: TTL, limit: 1, now: T }); // one more would exceed it
      expect([...none]).toEqual([]);
      expect(none.retryAfterMs).toBe(1_000);
      expect((await store.stats({ now: T })).find((stats) => stats.queue === "q")!.jobs).toMatchObject({ leased: 3, queued: 2 });
      expect(await store.claimNext("other", { owner: "D", ttlMs: TTL, limit: 5, now: T })).toHaveLength(5);
    });

    test("a bucket refills at its exact instant: rate 2/s, burst 2", async () => {
      const { store } = await freshStore();
      await enqueueJobs(store, "q", 6);
      await store.queues.set("q", { ratePerSecond: 2, burst: 2, now: T });
      expect(await store.claimNext("q", { owner: "A", ttlMs: TTL, limit: 5, now: T })).toHaveLength(2);
      const early = await store.claimNext("q", { owner: "A", ttlMs: TTL, limit: 5, now: T + 499 });
      expect([...early]).toEqual([]);
      expect(early.retryAfterMs).toBe(1);
      expect(await store.claimNext("q", { owner: "A", ttlMs: TTL, limit: 5, now: T + 500 })).toHaveLength(1);
      expect((await store.claimNext("q", { owner: "A", ttlMs: TTL, limit: 5, now: T + 999 })).retryAfterMs).toBe(1);
      expect(await store.claimNext("q", { owner: "A", ttlMs: TTL, limit: 5, now: T + 1_000 })).toHaveLength(1);
    });

    test("a rate that is not a whole number loses nothing between spends: 0.3/s gives a token at 3334 ms, then 6667 ms", async () => {
      const { store } = await freshStore();
      await enqueueJobs(store, "q", 5);
      await store.queues.set("q", { ratePerSecond: 0.3, burst: 2, now: T }); // a burst of 2, so that the bucket is never full below
      expect(await store.claimNext("q", { owner: "A", ttlMs: TTL, limit: 5, now: T })).toHaveLength(2);
      expect((await store.claimNext("q", { owner: "A", ttlMs: TTL, now: T + 3_333 })).retryAfterMs).toBe(1);
      expect(await store.claimNext("q", { owner: "A", ttlMs: TTL, now: T + 3_334 })).toHaveLength(1); // 10/3 s after T
      expect((await store.claimNext("q", { owner: "A", ttlMs: TTL, now: T + 6_666 })).retryAfterMs).toBe(1);
      expect(await store.claimNext("q", { owner: "A", ttlMs: TTL, now: T + 6_667 })).toHaveLength(1); // 20/3 s after T: no remainder was dropped at 3334
    });

    test("after a long idle the bucket holds no more than its burst", async () => {
      const { store } = await freshStore();
      await enqueueJobs(store, "q", 10);
      await store.queues.set("q", { ratePerSecond: 1, burst: 3, now: T });
      expect(await store.claimNext("q", { owner: "A", ttlMs: TTL, limit: 10, now: T })).toHaveLength(3);
      expect(await store.claimNext("q", { owner: "A", ttlMs: TTL, limit: 10, now: T + DAY })).toHaveLength(3);
      expect((await store.claimNext("q", { owner: "A", ttlMs: TTL, limit: 10, now: T + DAY })).retryAfterMs).toBe(1_000);
    });

    test("a claim by id past the bucket is NotClaimable rate_limited and changes nothing; the token comes at its instant", async () => {
      const fresh = await freshStore();
      const { store, snapshot } = fresh;
      await enqueueJobs(store, "q", 2);
      await store.queues.set("q", { ratePerSecond: 1, burst: 1, now: T });
      expect(await store.claim("q-1", { owner: "A", ttlMs: TTL, now: T })).toMatchObject({ fence: 1 }); // the limit exactly reached
      const before = { jobs: await snapshot(), bucket: await bucketOf(fresh, "q") };
      const refused = store.claim("q-2", { owner: "A", ttlMs: TTL, now: T + 999 });
      await expect(refused).rejects.toBeInstanceOf(NotClaimable);
      await expect(refused).rejects.toMatchObject({ reason: "rate_limited" });
      expect(await noteVerbs(store).claim("q-2", "A", T + 999, TTL)).toBeNull();
      expect({ jobs: await snapshot(), bucket: await bucketOf(fresh, "q") }).toEqual(before);
      expect(await store.claim("q-2", { owner: "A", ttlMs: TTL, now: T + 1_000 })).toMatchObject({ fence: 1 });
    });

    test("complete's and fail's next, and completeMany's take, obey the bucket", async () => {
      const { store } = await freshStore();
      await enqueueJobs(store, "q", 8);
      await store.queues.set("q", { ratePerSecond: 1, burst: 2, now: T });
      const [first] = await store.claimNext("q", { owner: "A", ttlMs: TTL, limit: 1, now: T });
      const settled = await store.complete(first!.job.id, { owner: "A", fence: first!.fence, result: "ok", next: { limit: 5, ttlMs: TTL }, now: T });
      expect(settled.leases.map((lease) => lease.job.id)).toEqual(["q-2"]); // the one token left
      const failed = await store.fail("q-2", { owner: "A", fence: settled.leases[0]!.fence, error: "boom", retryInMs: 0, next: { limit: 5, ttlMs: TTL }, now: T });
      expect(failed.leases).toEqual([]); // no token: the failed job waits too
      const { leases } = await store.completeMany({ owner: "A", leases: [], next: { queue: "q", limit: 5, ttlMs: TTL }, now: T + 1_000 });
      expect(leases).toHaveLength(1); // one token a second
      expect(await store.claimNext("q", { owner: "A", ttlMs: TTL, limit: 5, now: T + 1_000 })).toHaveLength(0);
    });

    test("a paused queue spends no tokens, and a claim there says paused, not when a token is due", async () => {
      const fresh = await freshStore();
      const { store } = fresh;
      await enqueueJobs(store, "q", 5);
      await store.queues.set("q", { ratePerSecond: 1, burst: 2, now: T });
      await store.queues.pause("q", { now: T });
      const before = await bucketOf(fresh, "q");
      const none = await store.claimNext("q", { owner: "A", ttlMs: TTL, limit: 5, now: T });
      expect(none.retryAfterMs).toBeUndefined();
      await expect(store.claim("q-1", { owner: "A", ttlMs: TTL, now: T })).rejects.toMatchObject({ reason: "paused" });
      expect(await bucketOf(fresh, "q")).toEqual(before);
      await store.queues.resume("q", { now: T });
      expect(await store.claimNext("q", { owner: "A", ttlMs: TTL, limit: 5, now: T })).toHaveLength(2); // the bucket as it was: full
    });

    test("refused claims spend nothing: a leased or done job, a full queue, an empty queue", async () => {
      const fresh = await freshStore();
      const { store } = fresh;
      await enqueueJobs(store, "q", 3);
      await store.queues.set("q", { ratePerSecond: 1, burst: 3, maxLeased: 1, now: T });
      const [held] = await store.claimNext("q", { owner: "A", ttlMs: TTL, limit: 1, now: T });
      const before = await bucketOf(fresh, "q");
      await expect(store.claim(held!.job.id, { owner: "B", ttlMs: TTL, now: T })).rejects.toMatchObject({ reason: "leased" });
      await expect(store.claim("q-2", { owner: "B", ttlMs: TTL, now: T })).rejects.toMatchObject({ reason: "full" });
      const full = await store.claimNext("q", { owner: "B", ttlMs: TTL, limit: 2, now: T });
      expect([...full]).toEqual([]);
      expect(full.retryAfterMs).toBeUndefined(); // the bucket did not stop it
      await store.complete(held!.job.id, { owner: "A", fence: held!.fence, result: "ok", now: T });
      await expect(store.claim(held!.job.id, { owner: "B", ttlMs: TTL, now: T })).rejects.toMatchObject({ reason: "done" });
      expect(await bucketOf(fresh, "q")).toEqual(before);
      await store.queues.set("q", { ratePerSecond: 1, burst: 3, now: T }); // the same rate: the bucket is kept
      expect(await store.claimNext("q", { owner: "B", ttlMs: TTL, limit: 5, now: T })).toHaveLength(2); // the 2 tokens left, for the 2 jobs left
      const empty = await store.claimNext("q", { owner: "B", ttlMs: TTL, limit: 1, now: T });
      expect(empty.retryAfterMs).toBeUndefined(); // nothing due: the bucket did not stop it
    });

    test("with maxLeased and a rate, the tighter of the two decides", async () => {
      const { store } = await freshStore();
      await enqueueJobs(store, "q", 10);
      await store.queues.set("q", { ratePerSecond: 10, burst: 4, maxLeased: 2, now: T });
      const held = await store.claimNext("q", { owner: "A", ttlMs: TTL, limit: 10, now: T });
      expect(held).toHaveLength(2); // maxLeased
      for (const lease of held) await store.complete(lease.job.id, { owner: "A", fence: lease.fence, result: "ok", now: T });
      const more = await store.claimNext("q", { owner: "A", ttlMs: TTL, limit: 10, now: T });
      expect(more).toHaveLength(2); // the 2 tokens left
      expect("retryAfterMs" in (await store.claimNext("q", { owner: "A", ttlMs: TTL, limit: 10, now: T }))).toBe(false); // full again: a token alone would not do
      for (const lease of more) await store.complete(lease.job.id, { owner: "A", fence: lease.fence, result: "ok", now: T });
      expect((await store.claimNext("q", { owner: "A", ttlMs: TTL, limit: 10, now: T })).retryAfterMs).toBe(100); // now the bucket is what holds it back
    });

    test("a queue both full and out of tokens says full, not when a token is due: a token alone would not let a claim through", async () => {
      const { store } = await freshStore();
      const [first, second] = await enqueueJobs(store, "q", 2);
      await store.queues.set("q", { ratePerSecond: 1, burst: 1, maxLeased: 1, now: T });
      const [held] = await store.claimNext("q", { owner: "A", ttlMs: TTL, now: T });
      expect(held!.job.id).toBe(first);
      expect("retryAfterMs" in (await store.claimNext("q", { owner: "B", ttlMs: TTL, now: T + 1 }))).toBe(false);
      await expect(store.claim(second!, { owner: "B", ttlMs: TTL, now: T + 1 })).rejects.toMatchObject({ name: "NotClaimable", reason: "full" });
      await store.complete(first!, { owner: "A", fence: held!.fence, result: "ok", now: T + 2 }); // the slot is free; the token is not back yet
      expect((await store.claimNext("q", { owner: "B", ttlMs: TTL, now: T + 2 })).retryAfterMs).toBe(998);
      await expect(store.claim(second!, { owner: "B", ttlMs: TTL, now: T + 2 })).rejects.toMatchObject({ name: "NotClaimable", reason: "rate_limited" });
    });
  });

  describe("changing the rate", () => {
    test("a changed rate keeps the tokens the bucket holds, at most the new burst; a new rate starts full", async () => {
      const fresh = await freshStore();
      const { store } = fresh;
      await enqueueJobs(store, "q", 20);
      await store.queues.set("q", { ratePerSecond: 1, burst: 5, now: T });
      expect(await store.claimNext("q", { owner: "A", ttlMs: TTL, limit: 3, now: T })).toHaveLength(3); // 2 left
      await store.queues.set("q", { ratePerSecond: 10, burst: 5, now: T + 500 }); // 2.5 by the old rate
      expect(await bucketOf(fresh, "q")).toEqual({ micro_tokens: 2_500_000, tokens_at: T + 500 });
      expect(await store.claimNext("q", { owner: "A", ttlMs: TTL, limit: 5, now: T + 550 })).toHaveLength(3); // 2.5 + 0.5 at the new rate
      await store.queues.set("q", { ratePerSecond: 10, burst: 1, now: T + 10_000 }); // full at 5, cut to 1
      expect(await store.claimNext("q", { owner: "A", ttlMs: TTL, limit: 5, now: T + 10_000 })).toHaveLength(1);
      await store.queues.set("q", { maxLeased: 50, now: T + 10_000 }); // no rate: no bucket
      expect(await bucketOf(fresh, "q")).toEqual({ micro_tokens: null, tokens_at: null });
      await store.queues.set("q", { ratePerSecond: 1, burst: 4, now: T + 10_000 }); // a new rate: full
      expect(await store.claimNext("q", { owner: "A", ttlMs: TTL, limit: 10, now: T + 10_000 })).toHaveLength(4);
    });

    test("nextClaimableAt waits for the next token, and for a later due job if that comes later", async () => {
      const { store } = await freshStore();
      await enqueueJobs(store, "q", 2);
      await store.queues.set("q", { ratePerSecond: 2, burst: 1, now: T });
      expect(await store.nextClaimableAt("q", { now: T })).toBe(T);
      await store.claimNext("q", { owner: "A", ttlMs: TTL, now: T });
      expect(await store.nextClaimableAt("q", { now: T + 100 })).toBe(T + 500);
      await store.claimNext("q", { owner: "A", ttlMs: TTL, now: T + 500 }); // the last due job
      await store.enqueue("later", { queue: "q", runAt: T + 5_000, now: T });
      expect(await store.nextClaimableAt("q", { now: T + 600 })).toBe(T + 5_000);
      await store.enqueue("soon", { queue: "q", runAt: T + 700, now: T });
      expect(await store.nextClaimableAt("q", { now: T + 600 })).toBe(T + 1_000); // due at 700, the token at 1000
    });

    test("the bucket is persisted: a second store over the same database spends from it", async () => {
      const { store, reopen } = await freshStore();
      await enqueueJobs(store, "q", 3);
      await store.queues.set("q", { ratePerSecond: 1, burst: 2, now: T });
      await store.claimNext("q", { owner: "A", ttlMs: TTL, now: T });
      const other = await reopen();
      expect(await other.claimNext("q", { owner: "B", ttlMs: TTL, limit: 5, now: T })).toHaveLength(1);
      expect((await other.claimNext("q", { owner: "B", ttlMs: TTL, limit: 5, now: T })).retryAfterMs).toBe(1_000);
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
      await store.queues.set("q", { ratePerSecond: 10, burst: 10, now: NOW });
      expect(await store.claimNext("q", { owner: "A", ttlMs: TTL, limit: 20, now: NOW })).toHaveLength(10);
      expect(await store.nextClaimableAt("q", { now: NOW })).toBe(NOW + 100);
      // The clock steps back an hour: the next token comes 100 ms later by the corrected clock, not in an hour.
      const stepped = await store.claimNext("q", { owner: "A", ttlMs: TTL, now: BACK });
      expect([...stepped]).toEqual([]);
      expect(stepped.retryAfterMs).toBe(100);
      expect(await store.nextClaimableAt("q", { now: BACK })).toBe(BACK + 100);
      expect((await store.claimNext("q", { owner: "A", ttlMs: TTL, now: BACK + 99 })).retryAfterMs).toBe(1);
      expect(await store.claimNext("q", { owner: "A", ttlMs: TTL, limit: 5, now: BACK + 100 })).toHaveLength(1);
      expect((await store.claimNext("q", { owner: "A", ttlMs: TTL, now: BACK + 100 })).retryAfterMs).toBe(100);
      expect(await store.claimNext("q", { owner: "A", ttlMs: TTL, limit: 5, now: BACK + 250 })).toHaveLength(1); // one and a half tokens: one lease
      // An idle spell refills it to its burst, no more.
      expect(await store.claimNext("q", { owner: "A", ttlMs: TTL, limit: 30, now: BACK + 60_000 })).toHaveLength(10);
      expect(await bucketOf(fresh, "q")).toEqual({ micro_tokens: 0, tokens_at: BACK + 60_000 });
    });

    test("after a step back, a bucket that held tokens hands out those, then one a refill", async () => {
      const { store } = await freshStore();
      const NOW = T + 10 * DAY;
      await dueJobs(store, "q", 30);
      await store.queues.set("q", { ratePerSecond: 10, burst: 10, now: NOW });
      expect(await store.claimNext("q", { owner: "A", ttlMs: TTL, limit: 3, now: NOW })).toHaveLength(3);
      expect(await store.claimNext("q", { owner: "A", ttlMs: TTL, limit: 20, now: BACK })).toHaveLength(7);
      expect((await store.claimNext("q", { owner: "A", ttlMs: TTL, now: BACK + 99 })).retryAfterMs).toBe(1);
      expect(await store.claimNext("q", { owner: "A", ttlMs: TTL, limit: 20, now: BACK + 100 })).toHaveLength(1);
    });

    test("after a step back, a claim by id is rate_limited until the refill from the corrected clock, then takes the job", async () => {
      const { store } = await freshStore();
      const NOW = T + 10 * DAY;
      await dueJobs(store, "q", 3);
      await store.queues.set("q", { ratePerSecond: 10, burst: 1, now: NOW });
      expect(await store.claimNext("q", { owner: "A", ttlMs: TTL, now: NOW })).toHaveLength(1);
      await expect(store.claim("q-2", { owner: "B", ttlMs: TTL, now: BACK })).rejects.toMatchObject({ reason: "rate_limited" });
      await expect(store.claim("q-2", { owner: "B", ttlMs: TTL, now: BACK + 99 })).rejects.toMatchObject({ reason: "rate_limited" });
      expect((await store.claim("q-2", { owner: "B", ttlMs: TTL, now: BACK + 100 })).fence).toBe(1);
    });

    test("after a step back of half a second of the clock that counted, the bucket refills from the corrected clock", async () => {
      const fresh = await freshStore();
      const { store } = fresh;
      await dueJobs(store, "q", 10);
      await store.queues.set("q", { ratePerSecond: 10, burst: 1, now: T });
      expect(await store.claimNext("q", { owner: "A", ttlMs: TTL, now: T + 1_000 })).toHaveLength(1);
      const stepped = await store.claimNext("q", { owner: "A", ttlMs: TTL, now: T + 500 }); // the same store's clock, 500 ms back
      expect([...stepped]).toEqual([]);
      expect(stepped.retryAfterMs).toBe(100);
      expect(await bucketOf(fresh, "q")).toEqual({ micro_tokens: 0, tokens_at: T + 500 });
      expect(await store.claimNext("q", { owner: "A", ttlMs: TTL, limit: 5, now: T + 600 })).toHaveLength(1);
      expect(await store.claimNext("q", { owner: "A", ttlMs: TTL, limit: 5, now: T + 650 })).toHaveLength(0);
    });

    test("a server whose clock is behind another's count, by up to ten minutes, waits for it: no token twice", async () => {
      for (const behindMs of [700, 5 * 60_000]) {
        const fresh = await freshStore();
        const { store } = fresh;
        const other = await fresh.reopen();
        await dueJobs(store, "q", 10);
        await store.queues.set("q", { ratePerSecond: 10, burst: 1, now: T });
        const AHEAD = T + 10 * 60_000;
        expect(await store.claimNext("q", { owner: "A", ttlMs: TTL, now: AHEAD })).toHaveLength(1);
        const behind = await other.claimNext("q", { owner: "B", ttlMs: TTL, now: AHEAD - behindMs });
        expect([...behind]).toEqual([]);
        expect(behind.retryAfterMs).toBe(behindMs + 100); // when the token is due by the bucket's count: AHEAD + 100
        expect(await other.claim("q-5", { owner: "B", ttlMs: TTL, now: AHEAD - behindMs + 200 }).catch((error) => error.reason)).toBe("rate_limited");
        expect(await bucketOf(fresh, "q")).toEqual({ micro_tokens: 0, tokens_at: AHEAD }); // not moved back
        expect(await store.claimNext("q", { owner: "A", ttlMs: TTL, now: AHEAD + 100 })).toHaveLength(1);
        expect(await other.claimNext("q", { owner: "B", ttlMs: TTL, now: AHEAD + 150 })).toHaveLength(0); // 50 ms after the last spend
      }
    });

    test("two servers whose clocks differ by 2 s or 9 minutes, claiming in turn for a second, hand out no more than burst + rate x 1 s", async () => {
      for (const skewMs of [2_000, 9 * 60_000]) {
        const fresh = await freshStore();
        const { store } = fresh;
        const other = await fresh.reopen();
        const NOW = T + DAY; // the jobs are due by both clocks
        await store.queues.set("q", { ratePerSecond: 1, burst: 1, now: NOW });
        await dueJobs(store, "q", 50);
        let handedOut = 0;
        for (let ms = 0; ms <= 1_000; ms += 50) {
          handedOut += (await store.claimNext("q", { owner: "A", ttlMs: TTL, now: NOW + ms })).length;
          handedOut += (await other.claimNext("q", { owner: "B", ttlMs: TTL, now: NOW + ms - skewMs })).length;
        }
        expect(handedOut).toBe(1 + 1);
      }
    });

    test("a clock more than ten minutes behind another clock's count takes that clock for broken, and the bucket counts on from it", async () => {
      const fresh = await freshStore();
      const { store } = fresh;
      const other = await fresh.reopen();
      await dueJobs(store, "q", 10);
      await store.queues.set("q", { ratePerSecond: 10, burst: 1, now: T });
      const AHEAD = T + DAY;
      expect(await store.claimNext("q", { owner: "A", ttlMs: TTL, now: AHEAD })).toHaveLength(1);
      const behind = await other.claimNext("q", { owner: "B", ttlMs: TTL, now: AHEAD - 10 * 60_000 - 1 });
      expect(behind.retryAfterMs).toBe(100);
      expect(await bucketOf(fresh, "q")).toEqual({ micro_tokens: 0, tokens_at: AHEAD - 10 * 60_000 - 1 });
      expect(await other.claimNext("q", { owner: "B", ttlMs: TTL, now: AHEAD - 10 * 60_000 + 99 })).toHaveLength(1);
    });

    test("a step forward fills the bucket to its burst, no more", async () => {
      const { store } = await freshStore();
      await dueJobs(store, "q", 30);
      await store.queues.set("q", { ratePerSecond: 10, burst: 5, now: T });
      expect(await store.claimNext("q", { owner: "A", ttlMs: TTL, limit: 10, now: T })).toHaveLength(5);
      expect(await store.claimNext("q", { owner: "A", ttlMs: TTL, limit: 20, now: T + 365 * DAY })).toHaveLength(5);
    });
  });
}
