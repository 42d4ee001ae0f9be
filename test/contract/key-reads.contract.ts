import { describe, expect, test } from "vitest";
import { InvalidArgument } from "../../src/store/errors.ts";
import type { LeaseStore } from "../../src/store/store.ts";
import type { FreshStore } from "./store.contract.ts";

// What the store says of a queue's keys (src/store/sql/key-reads.ts): a page
// of its keys with their counts and why each holds jobs back, and the top keys
// of the stats, on every driver. Each test starts on a fresh database, with a
// bystander queue whose keys must not show in the queue read.

const T = 1_000_000; // the test clock
const TTL = 30_000;

/** Enqueues the jobs `{key}-1`… of each key in `queue` (`counts`: key → how many), due at T. */
async function enqueueKeyed(store: LeaseStore, queue: string, counts: Record<string, number>): Promise<void> {
  const jobs = Object.entries(counts).flatMap(([key, count]) => Array.from({ length: count }, (_, i) => ({ id: `${queue}:${key}-${i + 1}`, key })));
  await store.enqueueMany(queue, { jobs, now: T });
}

/** Registers the key reads' contract for one driver. */
export function keyReadsContract(freshStore: () => Promise<FreshStore>): void {
  describe("queues.keys", () => {
    test("pages through a queue's keys with open jobs in key order, counting waiting and leased, and leaves other queues and unkeyed jobs out", async () => {
      const { store } = await freshStore();
      await enqueueKeyed(store, "q", { b: 1, a: 3, c: 2 });
      await store.enqueue("unkeyed", { queue: "q", now: T });
      await enqueueKeyed(store, "other", { a: 5, ab: 1 });
      await store.claim("q:b-1", { owner: "w", ttlMs: TTL, now: T });
      await store.claim("q:a-1", { owner: "w", ttlMs: TTL, now: T });

      const first = await store.queues.keys("q", { limit: 2, now: T + 1 });
      expect(first).toEqual({
        keys: [
          { key: "a", waiting: 2, leased: 1, heldBack: null },
          { key: "b", waiting: 0, leased: 1, heldBack: null },
        ],
        next: "b",
      });
      expect(await store.queues.keys("q", { cursor: first.next, limit: 2, now: T + 1 })).toEqual({ keys: [{ key: "c", waiting: 2, leased: 0, heldBack: null }], next: null });
      expect(await store.queues.keys("q", { limit: 3, now: T + 1 })).toEqual({ keys: [expect.objectContaining({ key: "a" }), expect.objectContaining({ key: "b" }), expect.objectContaining({ key: "c" })], next: null });
      expect((await store.queues.keys("other", { now: T + 1 })).keys).toEqual([
        { key: "a", waiting: 5, leased: 0, heldBack: null },
        { key: "ab", waiting: 1, leased: 0, heldBack: null },
      ]);
      expect(await store.queues.keys("empty", { now: T + 1 })).toEqual({ keys: [], next: null });
    });

    test("a key leaves the page when its last job is done, and an expired lease counts as waiting", async () => {
      const { store } = await freshStore();
      await enqueueKeyed(store, "q", { a: 1, b: 1 });
      const lease = await store.claim("q:a-1", { owner: "w", ttlMs: TTL, now: T });
      await store.claim("q:b-1", { owner: "w", ttlMs: TTL, now: T });
      expect((await store.queues.keys("q", { now: T + TTL })).keys).toEqual([
        { key: "a", waiting: 1, leased: 0, heldBack: null },
        { key: "b", waiting: 1, leased: 0, heldBack: null },
      ]);
      await store.complete("q:a-1", { owner: "w", fence: lease.fence, result: "ok", now: T + 1 });
      expect((await store.queues.keys("q", { now: T + 2 })).keys).toEqual([{ key: "b", waiting: 0, leased: 1, heldBack: null }]);
    });

    test("a key with maxLeasedPerKey current leases and jobs waiting is key_full, until a lease ends", async () => {
      const { store } = await freshStore();
      await store.queues.set("q", { maxLeasedPerKey: 2, now: T });
      await enqueueKeyed(store, "q", { a: 4, b: 3 });
      const leases = await store.claimNext("q", { owner: "w", ttlMs: TTL, limit: 3, now: T });
      expect(leases.map(({ job }) => job.id).sort()).toEqual(["q:a-1", "q:a-2", "q:b-1"]);
      expect((await store.queues.keys("q", { now: T + 1 })).keys).toEqual([
        { key: "a", waiting: 2, leased: 2, heldBack: "key_full" },
        { key: "b", waiting: 2, leased: 1, heldBack: null },
      ]);
      expect((await store.queues.keys("q", { now: T + TTL })).keys[0]).toEqual({ key: "a", waiting: 4, leased: 0, heldBack: null });
    });

    test("a key whose jobs are all leased holds nothing back", async () => {
      const { store } = await freshStore();
      await store.queues.set("q", { maxLeasedPerKey: 1, now: T });
      await enqueueKeyed(store, "q", { a: 1 });
      await store.claim("q:a-1", { owner: "w", ttlMs: TTL, now: T });
      expect((await store.queues.keys("q", { now: T + 1 })).keys).toEqual([{ key: "a", waiting: 0, leased: 1, heldBack: null }]);
    });

    test("an ordered key is key_ordered while its first job is held or waits for its retry, and not once that job is due", async () => {
      const { store } = await freshStore();
      await store.queues.set("q", { orderedByKey: true, now: T });
      await enqueueKeyed(store, "q", { a: 2, b: 1 });
      const lease = await store.claim("q:a-1", { owner: "w", ttlMs: TTL, now: T });
      await store.claim("q:b-1", { owner: "w", ttlMs: TTL, now: T });
      expect((await store.queues.keys("q", { now: T + 1 })).keys).toEqual([
        { key: "a", waiting: 1, leased: 1, heldBack: "key_ordered" },
        { key: "b", waiting: 0, leased: 1, heldBack: null },
      ]);
      await store.fail("q:a-1", { owner: "w", fence: lease.fence, error: "boom", retryInMs: 5000, now: T + 10 });
      const retryAt = (await store.get("q:a-1")).runAt;
      expect((await store.queues.keys("q", { now: retryAt - 1 })).keys[0]).toEqual({ key: "a", waiting: 2, leased: 0, heldBack: "key_ordered" });
      expect((await store.queues.keys("q", { now: retryAt })).keys[0]).toEqual({ key: "a", waiting: 2, leased: 0, heldBack: null });
    });

    test("a key whose bucket holds no whole token is key_rate_limited until it refills", async () => {
      const { store } = await freshStore();
      await store.queues.set("q", { keyRatePerSecond: 1, keyBurst: 1, now: T });
      await enqueueKeyed(store, "q", { a: 2, b: 1 });
      await store.claim("q:a-1", { owner: "w", ttlMs: TTL, now: T });
      await store.claim("q:b-1", { owner: "w", ttlMs: TTL, now: T });
      expect((await store.queues.keys("q", { now: T })).keys).toEqual([
        { key: "a", waiting: 1, leased: 1, heldBack: "key_rate_limited" },
        { key: "b", waiting: 0, leased: 1, heldBack: null },
      ]);
      expect((await store.queues.keys("q", { now: T + 999 })).keys[0]!.heldBack).toBe("key_rate_limited");
      expect((await store.queues.keys("q", { now: T + 1000 })).keys[0]!.heldBack).toBeNull();
    });

    test("refuses a limit outside 1 to 1000 and a cursor that is not a key, naming them", async () => {
      const { store } = await freshStore();
      await enqueueKeyed(store, "q", { a: 1 });
      const refusals: [Parameters<LeaseStore["queues"]["keys"]>[1], string][] = [
        [{ limit: 0 }, "limit must be a positive safe integer, got 0"],
        [{ limit: 1.5 }, "limit must be a positive safe integer, got 1.5"],
        [{ limit: "2" as unknown as number }, 'limit must be a positive safe integer, got "2"'],
        [{ limit: 1001 }, "limit must be at most 1000, got 1001"],
        [{ cursor: "" }, 'cursor must be a non-empty string of printable text, got ""'],
        [{ cursor: "é".repeat(128) }, "cursor must be at most 255 bytes of UTF-8, got 256"],
      ];
      for (const [request, message] of refusals) {
        const refusal = await store.queues.keys("q", request).catch((error: unknown) => error);
        expect(refusal, message).toBeInstanceOf(InvalidArgument);
        expect((refusal as InvalidArgument).message).toBe(message);
      }
      expect(await store.queues.keys("q", { limit: 1000, now: T })).toEqual({ keys: [{ key: "a", waiting: 1, leased: 0, heldBack: null }], next: null });
    });
  });

  describe("top keys in the stats", () => {
    test("each queue's stats name its ten keys with the most waiting jobs, most first, and a queue without keys has none", async () => {
      const { store } = await freshStore();
      const counts = Object.fromEntries(Array.from({ length: 12 }, (_, i) => [`k${String(i).padStart(2, "0")}`, i + 1]));
      await enqueueKeyed(store, "q", counts);
      await store.claim("q:k11-1", { owner: "w", ttlMs: TTL, now: T });
      await store.claim("q:k11-2", { owner: "w", ttlMs: TTL, now: T });
      await enqueueKeyed(store, "other", { x: 1 });
      await store.enqueue("plain", { queue: "plain", now: T });

      const stats = await store.stats({ now: T + 1 });
      expect(stats.map(({ queue, topKeys }) => ({ queue, topKeys }))).toEqual([
        { queue: "other", topKeys: [{ key: "x", waiting: 1 }] },
        { queue: "plain", topKeys: [] },
        {
          queue: "q",
          topKeys: [
            { key: "k10", waiting: 11 },
            { key: "k09", waiting: 10 },
            { key: "k11", waiting: 10 },
            { key: "k08", waiting: 9 },
            { key: "k07", waiting: 8 },
            { key: "k06", waiting: 7 },
            { key: "k05", waiting: 6 },
            { key: "k04", waiting: 5 },
            { key: "k03", waiting: 4 },
            { key: "k02", waiting: 3 },
          ],
        },
      ]);
    });

    test("the top keys come from a queue's first 1,000 keys, in key order", async () => {
      const { store } = await freshStore();
      const jobs = Array.from({ length: 1000 }, (_, i) => ({ id: `j${i}`, key: `k${String(i).padStart(4, "0")}` }));
      await store.enqueueMany("q", { jobs, now: T });
      await enqueueKeyed(store, "q", { zz: 5, k0999: 1 });
      const [stats] = await store.stats({ now: T });
      expect(stats!.topKeys[0]).toEqual({ key: "k0999", waiting: 2 });
      expect(stats!.topKeys.map(({ key }) => key)).not.toContain("zz");
      expect((await store.queues.keys("q", { cursor: "k0999", now: T })).keys).toEqual([{ key: "zz", waiting: 5, leased: 0, heldBack: null }]);
    });
  });
}
