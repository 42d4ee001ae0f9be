import { describe, expect, test } from "vitest";
import { InvalidArgument, NotClaimable } from "../../src/store/errors.ts";
import type { Lease } from "../../src/store/job.ts";
import type { QueueLimits } from "../../src/store/shapes.ts";
import type { LeaseStore } from "../../src/store/store.ts";
import { NO_KEY_LIMITS } from "./queues.contract.ts";
import type { Snapshot } from "./store.contract.ts";
import type { FreshStorage } from "./storage.contract.ts";

// Flow control by key (issue 29, migrations/0034): a job's key, and the
// per-key settings of its queue (maxLeasedPerKey, keyRatePerSecond with
// keyBurst, orderedByKey, fairByKey), decided in the claim statements. Run
// on every driver as the other contracts are. Each test starts on a fresh,
// empty database with the clock given to each call, and keeps a bystander (a
// queue without settings, or another key) that must go on as before.

const T = 1_000_000; // the test clock
const TTL = 30_000;

/** Enqueues `count` jobs of `key` (or none) in `queue` in one enqueueMany at `now`, due at `runAt`: `<prefix>-01`…, numbered so that id order is enqueue order. */
async function enqueueKeyed(store: LeaseStore, queue: string, key: string | null, count: number, options: { prefix?: string; now?: number; runAt?: number } = {}): Promise<string[]> {
  const prefix = options.prefix ?? key ?? "free";
  const width = Math.max(2, String(count).length);
  const ids = Array.from({ length: count }, (_, i) => `${prefix}-${String(i + 1).padStart(width, "0")}`);
  await store.enqueueMany(queue, { jobs: ids.map((id) => ({ id, key, runAt: options.runAt })), now: options.now ?? T });
  return ids;
}

/** The ids of leases, sorted: claim-next's answer as a set. */
const idsOf = (leases: readonly Lease[]) => leases.map((lease) => lease.job.id).sort();

/** The rows of a snapshot whose id starts with `prefix`: the bystanders a test keeps an eye on. */
const rowsOf = (snapshot: Snapshot, prefix: string) => Object.fromEntries(Object.entries(snapshot).filter(([id]) => id.startsWith(prefix)));

/** What a call was refused with (or what it answered). */
const refusalOf = (call: Promise<unknown>) => call.catch((error: unknown) => error);

/** Registers the keys' contract for one driver. */
export function keysContract(freshStore: () => Promise<FreshStorage>): void {
  describe("a job's key", () => {
    test("enqueue and enqueueMany store the key and answer it on the Job, as get and a claim do; a job without one has key null", async () => {
      const { store } = await freshStore();
      const longest = `${"é".repeat(127)}k`; // 255 bytes of UTF-8 in 128 characters: the longest key
      expect((await store.enqueue("one", { queue: "q", key: "tenant-1", now: T })).job.key).toBe("tenant-1");
      expect((await store.enqueue("plain", { queue: "q", now: T })).job.key).toBeNull();
      expect((await store.enqueue("nulled", { queue: "q", key: null, now: T })).job.key).toBeNull();
      await store.enqueueMany("q", { jobs: [{ id: "many-1", key: "tenant-2" }, { id: "many-2" }, { id: "many-3", key: longest }], now: T });
      const keys = Object.fromEntries(await Promise.all(["one", "plain", "nulled", "many-1", "many-2", "many-3"].map(async (id) => [id, (await store.get(id, { now: T })).key])));
      expect(keys).toEqual({ one: "tenant-1", plain: null, nulled: null, "many-1": "tenant-2", "many-2": null, "many-3": longest });
      expect((await store.claim("one", { owner: "A", ttlMs: TTL, now: T })).job.key).toBe("tenant-1");
      expect((await store.list({ queue: "q", now: T })).items.find((job) => job.id === "many-1")!.key).toBe("tenant-2");
    });

    test("an enqueue again of an existing id answers its stored key, untouched", async () => {
      const { store, snapshot } = await freshStore();
      await store.enqueue("job-1", { queue: "q", key: "first", now: T });
      const before = await snapshot();
      expect(await store.enqueue("job-1", { queue: "q", key: "second", now: T + 1 })).toMatchObject({ created: false, job: { key: "first" } });
      expect(await store.enqueueMany("q", { jobs: [{ id: "job-1", key: "third" }], now: T + 2 })).toEqual([{ id: "job-1", created: false }]);
      expect(await snapshot()).toEqual(before);
    });

    const badKeys: [string, unknown, string][] = [
      ["a key of 256 bytes", "é".repeat(128), "must be at most 255 bytes of UTF-8, got 256"],
      ["an empty key", "", 'must be a non-empty string of printable text, got ""'],
      ["a key with a control character", "a\nb", 'must be a non-empty string of printable text, got "a\\nb"'],
      ["a non-string key", 42, "must be a non-empty string of printable text, got 42"],
    ];
    test.each(badKeys)("%s is InvalidArgument naming it, for enqueue and enqueueMany, and nothing is stored", async (_, key, says) => {
      const { store, snapshot } = await freshStore();
      await store.enqueue("bystander", { queue: "q", key: "tenant", now: T });
      const before = await snapshot();
      const single = await refusalOf(store.enqueue("job-1", { queue: "q", key: key as string, now: T }));
      expect(single).toBeInstanceOf(InvalidArgument);
      expect((single as InvalidArgument).message).toBe(`key ${says}`);
      const many = await refusalOf(store.enqueueMany("q", { jobs: [{ id: "job-2", key: "fine" }, { id: "job-3", key: key as string }], now: T }));
      expect(many).toBeInstanceOf(InvalidArgument);
      expect((many as InvalidArgument).message).toBe(`jobs[1].key ${says}`);
      expect(await snapshot()).toEqual(before);
    });

    test("jobs without a key go as before in a queue that limits its keys: every due job claimed in claim order, no turn, none held back", async () => {
      const { store, snapshot } = await freshStore();
      await store.queues.set("q", { maxLeasedPerKey: 1, keyRatePerSecond: 1, keyBurst: 1, orderedByKey: true, fairByKey: true, now: T });
      const ids = await enqueueKeyed(store, "q", null, 5);
      await store.enqueue("urgent", { queue: "q", priority: 5, now: T + 1 });
      expect(Object.values(await snapshot()).map((row) => [row.held_back, row.turn])).toEqual(Array(6).fill([0, null]));
      expect(idsOf(await store.claimNext("q", { owner: "A", ttlMs: TTL, limit: 1, now: T + 1 }))).toEqual(["urgent"]);
      expect(idsOf(await store.claimNext("q", { owner: "A", ttlMs: TTL, limit: 10, now: T + 1 }))).toEqual(ids);
    });
  });

  describe("per-key settings", () => {
    test("queues.set stores the five per-key settings with the others, all at once, and get and list answer them", async () => {
      const { store } = await freshStore();
      const all = { maxLeasedPerKey: 2, keyRatePerSecond: 0.5, keyBurst: 3, orderedByKey: true, fairByKey: true };
      const settings = { queue: "q", paused: false, maxLeased: 10, ratePerSecond: null, burst: null, ...all };
      expect(await store.queues.set("q", { maxLeased: 10, ...all, now: T })).toEqual(settings);
      expect(await store.queues.get("q")).toEqual(settings);
      expect(await store.queues.list()).toEqual([settings]);
      expect(await store.queues.set("q", { maxLeasedPerKey: 1000, keyRatePerSecond: 2.5, now: T })).toEqual({ ...settings, ...NO_KEY_LIMITS, maxLeased: null, maxLeasedPerKey: 1000, keyRatePerSecond: 2.5, keyBurst: 3 }); // keyBurst: max(1, ceil(2.5))
      expect(await store.queues.set("q", { keyRatePerSecond: 0.25, now: T })).toMatchObject({ keyRatePerSecond: 0.25, keyBurst: 1 });
      expect(await store.queues.set("q", { now: T })).toEqual({ queue: "q", paused: false, maxLeased: null, ratePerSecond: null, burst: null, ...NO_KEY_LIMITS });
      expect(await store.queues.get("never-set")).toEqual({ queue: "never-set", paused: false, maxLeased: null, ratePerSecond: null, burst: null, ...NO_KEY_LIMITS });
    });

    test("bad per-key settings are InvalidArgument naming the setting, and change neither the settings nor a job", async () => {
      const { store, snapshot } = await freshStore();
      const kept = { maxLeasedPerKey: 2, keyRatePerSecond: 1, keyBurst: 2, orderedByKey: false, fairByKey: true };
      await store.queues.set("q", { ...kept, now: T });
      await enqueueKeyed(store, "q", "A", 4);
      const before = await snapshot();
      const refused: [QueueLimits, string][] = [
        [{ maxLeasedPerKey: 0 }, "maxLeasedPerKey must be a positive safe integer, got 0"],
        [{ maxLeasedPerKey: 1001 }, "maxLeasedPerKey must be at most 1000, got 1001"],
        [{ maxLeasedPerKey: 1.5 }, "maxLeasedPerKey must be a positive safe integer, got 1.5"],
        [{ maxLeasedPerKey: "2" as never }, 'maxLeasedPerKey must be a positive safe integer, got "2"'],
        [{ keyBurst: 3 }, "keyBurst needs keyRatePerSecond: a burst is the most a rate limit's bucket holds; send keyRatePerSecond too, or leave keyBurst out"],
        [{ keyRatePerSecond: 0 }, "keyRatePerSecond must be a number above 0 and at most 1000000, got 0"],
        [{ keyRatePerSecond: 1.0005 }, "keyRatePerSecond must be a multiple of 0.001 (the bucket counts thousandths of a token a second), got 1.0005"],
        [{ keyRatePerSecond: 1, keyBurst: 0 }, "keyBurst must be a positive safe integer, got 0"],
        [{ orderedByKey: "yes" as never }, 'orderedByKey must be true or false, got "yes"'],
        [{ fairByKey: 1 as never }, "fairByKey must be true or false, got 1"],
      ];
      for (const [settings, message] of refused) {
        const refusal = await refusalOf(store.queues.set("q", { maxLeasedPerKey: 1, orderedByKey: true, ...settings, now: T + 1 }));
        expect(refusal, message).toBeInstanceOf(InvalidArgument);
        expect((refusal as InvalidArgument).message).toBe(message);
      }
      expect(await store.queues.get("q")).toEqual({ queue: "q", paused: false, maxLeased: null, ratePerSecond: null, burst: null, ...kept });
      expect(await snapshot()).toEqual(before);
    });
  });

  describe("maxLeasedPerKey", () => {
    test("claim-next of 10 over keys A (5 jobs), B (3) and jobs without a key takes at most 2 of A and 2 of B; a queue without the setting takes all", async () => {
      const { store, snapshot } = await freshStore();
      await store.queues.set("q", { maxLeasedPerKey: 2, now: T });
      const a = await enqueueKeyed(store, "q", "A", 5);
      const b = await enqueueKeyed(store, "q", "B", 3);
      const free = await enqueueKeyed(store, "q", null, 4);
      const bystanders = await enqueueKeyed(store, "other", "A", 5, { prefix: "other" });
      expect(idsOf(await store.claimNext("q", { owner: "W", ttlMs: TTL, limit: 10, now: T }))).toEqual([...a.slice(0, 2), ...b.slice(0, 2), ...free].sort());
      expect(idsOf(await store.claimNext("q", { owner: "W", ttlMs: TTL, limit: 10, now: T }))).toEqual([]); // both keys full, nothing else due
      expect((await store.stats({ now: T })).find((stats) => stats.queue === "q")!.jobs).toMatchObject({ leased: 8, queued: 4 });
      const before = rowsOf(await snapshot(), "other");
      expect(Object.values(before).map((row) => row.held_back)).toEqual([0, 0, 0, 0, 0]);
      expect(idsOf(await store.claimNext("other", { owner: "W", ttlMs: TTL, limit: 10, now: T }))).toEqual(bystanders);
    });

    test("completing a job of A lets claim-next take A's next, and no job of B", async () => {
      const { store, snapshot } = await freshStore();
      await store.queues.set("q", { maxLeasedPerKey: 2, now: T });
      const a = await enqueueKeyed(store, "q", "A", 5);
      await enqueueKeyed(store, "q", "B", 3);
      const held = await store.claimNext("q", { owner: "W", ttlMs: TTL, limit: 10, now: T });
      const first = held.find((lease) => lease.job.id === a[0])!;
      const b = rowsOf(await snapshot(), "B");
      await store.complete(first.job.id, { owner: "W", fence: first.fence, result: "ok", now: T + 1 });
      expect(idsOf(await store.claimNext("q", { owner: "W", ttlMs: TTL, limit: 10, now: T + 1 }))).toEqual([a[2]]);
      expect(rowsOf(await snapshot(), "B")).toEqual(b);
    });

    test("an expired lease frees its key's slot at its end: claim-next at until takes it over, and at until - 1 takes nothing", async () => {
      const { store } = await freshStore();
      await store.queues.set("q", { maxLeasedPerKey: 2, now: T });
      const a = await enqueueKeyed(store, "q", "A", 3);
      await store.claimNext("q", { owner: "W1", ttlMs: TTL, limit: 1, now: T });
      await store.claimNext("q", { owner: "W2", ttlMs: TTL, limit: 1, now: T + 1 });
      expect(await store.claimNext("q", { owner: "W3", ttlMs: TTL, limit: 10, now: T + TTL - 1 })).toEqual([]);
      const taken = await store.claimNext("q", { owner: "W3", ttlMs: TTL, limit: 10, now: T + TTL }); // W1's lease ends at T + TTL
      expect(taken.map((lease) => [lease.job.id, lease.fence])).toEqual([[a[0], 2]]); // taken over: A-03 still waits for its key
      expect(await store.claimNext("q", { owner: "W4", ttlMs: TTL, limit: 10, now: T + TTL })).toEqual([]);
    });

    test("a claim by id of a third job of A is NotClaimable key_full and changes nothing; B's is taken", async () => {
      const { store, snapshot } = await freshStore();
      await store.queues.set("q", { maxLeasedPerKey: 2, now: T });
      const a = await enqueueKeyed(store, "q", "A", 3);
      const b = await enqueueKeyed(store, "q", "B", 1);
      await store.claim(a[0]!, { owner: "W", ttlMs: TTL, now: T });
      await store.claim(a[1]!, { owner: "W", ttlMs: TTL, now: T });
      const before = await snapshot();
      const refused = await refusalOf(store.claim(a[2]!, { owner: "W", ttlMs: TTL, now: T }));
      expect(refused).toBeInstanceOf(NotClaimable);
      expect((refused as NotClaimable).details).toEqual({ reason: "key_full" });
      expect(await snapshot()).toEqual(before);
      expect(await store.claim(b[0]!, { owner: "W", ttlMs: TTL, now: T })).toMatchObject({ fence: 1, job: { key: "B" } });
    });

    test("held-back jobs are let in one by one as let-in jobs are completed, cancelled, failed to death or deleted", async () => {
      const { store, snapshot } = await freshStore();
      await store.queues.set("q", { maxLeasedPerKey: 2, now: T });
      await store.enqueueMany("q", { jobs: Array.from({ length: 7 }, (_, i) => ({ id: `A-0${i + 1}`, key: "A", maxAttempts: 1 })), now: T });
      await store.enqueue("B-01", { queue: "q", key: "B", now: T });
      const claim = async (now: number) => idsOf(await store.claimNext("q", { owner: "W", ttlMs: TTL, limit: 10, now }));
      const fenceOf = async (id: string) => (await store.get(id)).fence;
      expect(await claim(T)).toEqual(["A-01", "A-02", "B-01"]);
      const b = rowsOf(await snapshot(), "B");
      await store.complete("A-01", { owner: "W", fence: 1, result: "ok", now: T + 1 });
      expect(await claim(T + 1)).toEqual(["A-03"]);
      await store.cancel("A-02", { now: T + 2 });
      expect(await claim(T + 2)).toEqual(["A-04"]);
      expect(await store.fail("A-03", { owner: "W", fence: await fenceOf("A-03"), error: "boom", now: T + 3 })).toMatchObject({ job: { status: "dead" } });
      await store.fail("A-04", { owner: "W", fence: await fenceOf("A-04"), error: "boom", now: T + 3 }); // let in; nothing claims them yet
      await store.delete("A-05", { now: T + 4 });
      expect(await claim(T + 4)).toEqual(["A-06", "A-07"]); // A-07 came in for A-05
      expect(rowsOf(await snapshot(), "B")).toEqual(b);
    });

    // A job for later, or waiting for its retry, holds no place of its key
    // (orderedByKey is meant to wait so, and does).
    test("a key's due job is claimed while its earlier job waits for its time: the limit counts current leases", async () => {
      const { store } = await freshStore();
      await store.queues.set("q", { maxLeasedPerKey: 1, now: T });
      await store.enqueue("A-later", { queue: "q", key: "A", runAt: T + 3_600_000, now: T });
      await store.enqueue("A-now", { queue: "q", key: "A", now: T + 1 });
      expect(idsOf(await store.claimNext("q", { owner: "W", ttlMs: TTL, limit: 10, now: T + 2 }))).toEqual(["A-now"]);
    });

    test("a key's due job is claimed while its earlier job waits for its retry: the limit counts current leases", async () => {
      const { store } = await freshStore();
      await store.queues.set("q", { maxLeasedPerKey: 1, now: T });
      await store.enqueue("A-1", { queue: "q", key: "A", now: T });
      await store.enqueue("A-2", { queue: "q", key: "A", now: T + 1 });
      await store.claim("A-1", { owner: "W", ttlMs: TTL, now: T + 2 });
      await store.fail("A-1", { owner: "W", fence: 1, error: "boom", retryInMs: 60_000, now: T + 3 });
      expect(idsOf(await store.claimNext("q", { owner: "W", ttlMs: TTL, limit: 10, now: T + 4 }))).toEqual(["A-2"]);
    });

    // Fails: the stats read the age of the oldest due job through
    // jobs_claim_waiting, where a held-back job is not: a key's second job,
    // due at T and held back behind its first (leased), answers
    // oldestDueAgeMs 0 at T + 1000 while the stats count it queued.
    test.fails("the stats count the age of a due job held back for its key", async () => {
      const { store } = await freshStore();
      await store.queues.set("q", { maxLeasedPerKey: 1, now: T });
      await enqueueKeyed(store, "q", "A", 2);
      await store.claimNext("q", { owner: "W", ttlMs: TTL, now: T });
      expect((await store.stats({ now: T + 1_000 })).find((stats) => stats.queue === "q")).toMatchObject({ jobs: { queued: 1, leased: 1 }, oldestDueAgeMs: 1_000 });
    });

    test("queues.set that turns maxLeasedPerKey on lets in the first M jobs of each key and holds the rest back; raising it lets more in", async () => {
      const { store, snapshot } = await freshStore();
      const a = await enqueueKeyed(store, "q", "A", 4);
      const b = await enqueueKeyed(store, "q", "B", 3);
      const free = await enqueueKeyed(store, "q", null, 2);
      await enqueueKeyed(store, "other", "A", 3, { prefix: "other" });
      const others = rowsOf(await snapshot(), "other");
      await store.queues.set("q", { maxLeasedPerKey: 2, now: T });
      expect(idsOf(await store.claimNext("q", { owner: "W", ttlMs: TTL, limit: 20, now: T }))).toEqual([...a.slice(0, 2), ...b.slice(0, 2), ...free].sort());
      await store.queues.set("q", { maxLeasedPerKey: 3, now: T + 1 });
      expect(idsOf(await store.claimNext("q", { owner: "W", ttlMs: TTL, limit: 20, now: T + 1 }))).toEqual([a[2], b[2]].sort());
      expect(await store.claimNext("q", { owner: "W", ttlMs: TTL, limit: 20, now: T + 1 })).toEqual([]); // A-04 waits
      expect(rowsOf(await snapshot(), "other")).toEqual(others);
    });

    test("a lower maxLeasedPerKey holds back the jobs let in but not leased, keeps the leases held, and lets none in until the key is under it", async () => {
      const { store } = await freshStore();
      await store.queues.set("q", { maxLeasedPerKey: 3, now: T });
      const a = await enqueueKeyed(store, "q", "A", 5);
      const held = await store.claimNext("q", { owner: "W", ttlMs: TTL, limit: 2, now: T }); // A-03 let in, not leased
      await store.queues.set("q", { maxLeasedPerKey: 1, now: T + 1 });
      expect(await store.claimNext("q", { owner: "W", ttlMs: TTL, limit: 10, now: T + 1 })).toEqual([]);
      await store.complete(held[0]!.job.id, { owner: "W", fence: held[0]!.fence, result: "ok", now: T + 2 });
      expect(await store.claimNext("q", { owner: "W", ttlMs: TTL, limit: 10, now: T + 2 })).toEqual([]); // one lease: the limit
      await store.complete(held[1]!.job.id, { owner: "W", fence: held[1]!.fence, result: "ok", now: T + 3 });
      expect(idsOf(await store.claimNext("q", { owner: "W", ttlMs: TTL, limit: 10, now: T + 3 }))).toEqual([a[2]]);
    });
  });

  describe("orderedByKey", () => {
    test("a key's jobs are claimed one at a time in the order they were enqueued, while other keys go on", async () => {
      const { store } = await freshStore();
      await store.queues.set("q", { orderedByKey: true, now: T });
      for (const [i, id] of ["A-1", "B-1", "A-2", "A-3", "B-2"].entries()) await store.enqueue(id, { queue: "q", key: id.slice(0, 1), now: T + i });
      const order: string[] = [];
      for (let now = T + 10; order.length < 5; now++) {
        const leases = await store.claimNext("q", { owner: "W", ttlMs: TTL, limit: 10, now });
        expect(new Set(leases.map((lease) => lease.job.key)).size).toBe(leases.length); // never two of a key at once
        for (const lease of leases) await store.complete(lease.job.id, { owner: "W", fence: lease.fence, result: "ok", now });
        order.push(...leases.map((lease) => lease.job.id));
        expect(leases.length).toBeGreaterThan(0);
      }
      expect(order.filter((id) => id.startsWith("A"))).toEqual(["A-1", "A-2", "A-3"]);
      expect(order.filter((id) => id.startsWith("B"))).toEqual(["B-1", "B-2"]);
    });

    test("a key's order is priority first, then age: a later job of higher priority runs before an earlier one not yet claimed", async () => {
      const { store } = await freshStore();
      await store.queues.set("q", { orderedByKey: true, now: T });
      await store.enqueue("A-low", { queue: "q", key: "A", now: T });
      await store.enqueue("A-high", { queue: "q", key: "A", priority: 5, now: T + 1 });
      const [first] = await store.claimNext("q", { owner: "W", ttlMs: TTL, limit: 10, now: T + 2 });
      expect(first!.job.id).toBe("A-high");
    });

    test("the jobs of a key enqueued in one enqueueMany run in the call's order", async () => {
      const { store } = await freshStore();
      await store.queues.set("q", { orderedByKey: true, now: T });
      await store.enqueueMany("q", { jobs: ["c", "b", "a"].map((id) => ({ id, key: "K" })), now: T });
      const order: string[] = [];
      for (let now = T + 1; order.length < 3 && now < T + 10; now++) {
        for (const lease of await store.claimNext("q", { owner: "W", ttlMs: TTL, limit: 10, now })) {
          order.push(lease.job.id);
          await store.complete(lease.job.id, { owner: "W", fence: lease.fence, result: "ok", now });
        }
      }
      expect(order).toEqual(["c", "b", "a"]);
    });

    test("while the first job waits for its retry after a fail, its key's later jobs are not claimable: claim-next skips them and a claim by id is key_ordered behind it", async () => {
      const { store, snapshot } = await freshStore();
      await store.queues.set("q", { orderedByKey: true, now: T });
      for (const [i, id] of ["A-1", "A-2", "A-3"].entries()) await store.enqueue(id, { queue: "q", key: "A", now: T + i });
      await store.enqueue("B-1", { queue: "q", key: "B", now: T });
      await store.claim("A-1", { owner: "W", ttlMs: TTL, now: T + 5 });
      const whileHeld = await refusalOf(store.claim("A-2", { owner: "W", ttlMs: TTL, now: T + 5 }));
      expect((whileHeld as NotClaimable).details).toEqual({ reason: "key_ordered", behind: "A-1" });
      await store.fail("A-1", { owner: "W", fence: 1, error: "boom", retryInMs: 10_000, now: T + 6 });
      expect(idsOf(await store.claimNext("q", { owner: "W", ttlMs: TTL, limit: 10, now: T + 7 }))).toEqual(["B-1"]);
      const before = await snapshot();
      const refused = await refusalOf(store.claim("A-2", { owner: "W", ttlMs: TTL, now: T + 7 }));
      expect(refused).toBeInstanceOf(NotClaimable);
      expect((refused as NotClaimable).details).toEqual({ reason: "key_ordered", behind: "A-1" });
      expect(await snapshot()).toEqual(before);
      expect(await store.claimNext("q", { owner: "W", ttlMs: TTL, limit: 10, now: T + 6 + 10_000 - 1 })).toEqual([]);
      expect(idsOf(await store.claimNext("q", { owner: "W", ttlMs: TTL, limit: 10, now: T + 6 + 10_000 }))).toEqual(["A-1"]);
    });

    test("a first job that dies, or is cancelled while it waits for its retry, lets the next one go", async () => {
      const { store } = await freshStore();
      await store.queues.set("q", { orderedByKey: true, now: T });
      await store.enqueue("A-1", { queue: "q", key: "A", maxAttempts: 1, now: T });
      await store.enqueue("A-2", { queue: "q", key: "A", now: T + 1 });
      await store.enqueue("A-3", { queue: "q", key: "A", now: T + 2 });
      await store.claim("A-1", { owner: "W", ttlMs: TTL, now: T + 3 });
      expect(await store.fail("A-1", { owner: "W", fence: 1, error: "boom", now: T + 4 })).toMatchObject({ job: { status: "dead" } });
      expect(idsOf(await store.claimNext("q", { owner: "W", ttlMs: TTL, limit: 10, now: T + 4 }))).toEqual(["A-2"]);
      await store.fail("A-2", { owner: "W", fence: 1, error: "boom", retryInMs: 60_000, now: T + 5 });
      expect(await store.claimNext("q", { owner: "W", ttlMs: TTL, limit: 10, now: T + 5 })).toEqual([]);
      await store.cancel("A-2", { now: T + 6 });
      expect(idsOf(await store.claimNext("q", { owner: "W", ttlMs: TTL, limit: 10, now: T + 6 }))).toEqual(["A-3"]);
    });
  });

  describe("keyRatePerSecond", () => {
    test("at 1 a second with a burst of 2, a key gets 2 claims at once, then one a second by the clock; another key has its own bucket", async () => {
      const { store } = await freshStore();
      await store.queues.set("q", { keyRatePerSecond: 1, keyBurst: 2, now: T });
      const a = await enqueueKeyed(store, "q", "A", 5);
      const others = await enqueueKeyed(store, "other", "A", 3, { prefix: "other" });
      const b = await enqueueKeyed(store, "q", "B", 5, { runAt: T + 500 });
      const free = await enqueueKeyed(store, "q", null, 3);
      const claim = async (now: number) => idsOf(await store.claimNext("q", { owner: "W", ttlMs: TTL, limit: 10, now }));
      expect(await claim(T)).toEqual([...a.slice(0, 2), ...free].sort());
      expect(await claim(T)).toEqual([]);
      expect(idsOf(await store.claimNext("other", { owner: "W", ttlMs: TTL, limit: 10, now: T }))).toEqual(others); // key A of a queue without a key rate
      expect(await claim(T + 500)).toEqual(b.slice(0, 2)); // A's empty bucket does not hold B back
      expect(await claim(T + 999)).toEqual([]);
      expect(await claim(T + 1_000)).toEqual([a[2]]);
      const refused = await refusalOf(store.claim(a[3]!, { owner: "W", ttlMs: TTL, now: T + 1_000 }));
      expect((refused as NotClaimable).details).toEqual({ reason: "key_rate_limited" });
      expect(await claim(T + 1_500)).toEqual([b[2]]);
      expect(await claim(T + 1_999)).toEqual([]);
      expect(await claim(T + 2_000)).toEqual([a[3]]);
    });

    test("a claim-next that a key's empty bucket held back answers retryAfterMs: when that key's next token is due", async () => {
      const { store } = await freshStore();
      await store.queues.set("q", { keyRatePerSecond: 1, keyBurst: 1, now: T });
      await enqueueKeyed(store, "q", "A", 2);
      expect(await store.claimNext("q", { owner: "W", ttlMs: TTL, limit: 1, now: T })).toHaveLength(1);
      const none = await store.claimNext("q", { owner: "W", ttlMs: TTL, limit: 1, now: T });
      expect([...none]).toEqual([]);
      expect(none.retryAfterMs).toBe(1_000);
    });
  });

  describe("fairByKey", () => {
    /** A fair queue with key A's 1,000 jobs enqueued first, then keys B to K with 10 each: the fairness test. */
    async function crowded(store: LeaseStore): Promise<void> {
      await store.queues.set("q", { fairByKey: true, now: T });
      await enqueueKeyed(store, "q", "A", 1_000);
      const others = "BCDEFGHIJK".split("");
      await store.enqueueMany("q", { jobs: others.flatMap((key) => Array.from({ length: 10 }, (_, i) => ({ id: `${key}-${String(i + 1).padStart(2, "0")}`, key }))), now: T + 1 });
    }

    /** How many of the leases are of keys B to K. */
    const ofSmallKeys = (leases: Lease[]) => leases.filter((lease) => lease.job.key !== "A").length;

    test("claims one at a time take turns between keys: of the first 110, at least 95 are of the 10 keys with 10 jobs each", async () => {
      const { store } = await freshStore();
      await crowded(store);
      const leases: Lease[] = [];
      for (let i = 0; i < 110; i++) leases.push(...(await store.claimNext("q", { owner: "W", ttlMs: TTL, limit: 1, now: T + 2 })));
      expect(leases).toHaveLength(110);
      expect(ofSmallKeys(leases)).toBeGreaterThanOrEqual(95);
    });

    test("claims of 32 at a time take turns between keys: of the first 110, at least 95 are of the 10 keys with 10 jobs each", async () => {
      const { store } = await freshStore();
      await crowded(store);
      const leases: Lease[] = [];
      for (const limit of [32, 32, 32, 14]) leases.push(...(await store.claimNext("q", { owner: "W", ttlMs: TTL, limit, now: T + 2 })));
      expect(leases).toHaveLength(110);
      expect(ofSmallKeys(leases)).toBeGreaterThanOrEqual(95);
    });

    test("nextClaimableAt of a fair queue answers when its keyed jobs are due", async () => {
      const { store } = await freshStore();
      await store.queues.set("q", { fairByKey: true, now: T });
      await enqueueKeyed(store, "q", "A", 1, { runAt: T + 5_000 });
      expect(await store.nextClaimableAt("q", { now: T })).toBe(T + 5_000);
      await enqueueKeyed(store, "q", "B", 1);
      expect(await store.nextClaimableAt("q", { now: T })).toBe(T);
    });

    test("the stats count the age of a fair queue's oldest due keyed job", async () => {
      const { store } = await freshStore();
      await store.queues.set("q", { fairByKey: true, now: T });
      await enqueueKeyed(store, "q", "A", 1);
      expect((await store.stats({ now: T + 1_000 })).find((stats) => stats.queue === "q")).toMatchObject({ jobs: { queued: 1 }, oldestDueAgeMs: 1_000 });
    });

    test("queues.set that turns fairByKey on for a queue with jobs gives its keyed jobs turns, key by key", async () => {
      const { store } = await freshStore();
      const a = await enqueueKeyed(store, "q", "A", 20);
      const b = await enqueueKeyed(store, "q", "B", 2, { now: T + 1 });
      await store.queues.set("q", { fairByKey: true, now: T + 2 });
      expect(idsOf(await store.claimNext("q", { owner: "W", ttlMs: TTL, limit: 4, now: T + 2 }))).toEqual([...a.slice(0, 2), ...b].sort());
    });

    test("a bystander queue without fairByKey claims in plain claim order, its oldest key first", async () => {
      const { store } = await freshStore();
      const a = await enqueueKeyed(store, "plain", "A", 20);
      await enqueueKeyed(store, "plain", "B", 5, { now: T + 1 });
      expect(idsOf(await store.claimNext("plain", { owner: "W", ttlMs: TTL, limit: 20, now: T + 2 }))).toEqual(a);
    });
  });
}
