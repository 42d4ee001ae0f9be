import { describe, expect, test } from "vitest";
import { MAX_JSON_DEPTH } from "../../src/json/depth.ts";
import type { FreshStorage } from "./storage.contract.ts";

// How deep the JSON values the store keeps may nest (src/json/depth.ts),
// on every backend: a value at the limit is kept and read back as it was;
// one stored deeper before the limit was checked is read as its text, so
// that every answer holding it can still be written. Run on a libSQL file,
// D1 and a queue's Durable Object: in the Workers runtime, JSON.stringify
// writes a deep array on a fast path until the same answer holds an object
// with a numeric key, then overflows the stack.

const T = 1_000_000;
const TTL = 30_000;

/** Arrays nested `depth` levels around 1, as a value. */
function nested(depth: number): unknown {
  let value: unknown = 1;
  for (let i = 0; i < depth; i++) value = [value];
  return value;
}

/** Arrays nested `depth` levels around 1, as JSON text. */
const nestedText = (depth: number) => `${"[".repeat(depth)}1${"]".repeat(depth)}`;

/** Registers the JSON depth contract for one driver. */
export function jsonDepthContract(freshStore: () => Promise<FreshStorage>): void {
  describe("JSON values and their depth", () => {
    test(`a payload, progress, result and schedule payload nested ${MAX_JSON_DEPTH} levels are kept and read back as they were`, async () => {
      const { store } = await freshStore();
      const deepest = nested(MAX_JSON_DEPTH);
      await store.enqueue("job-1", { payload: deepest, now: T });
      const { fence } = await store.claim("job-1", { owner: "A", ttlMs: TTL, now: T });
      await store.renew("job-1", { owner: "A", fence, ttlMs: TTL, progress: deepest, now: T });
      await store.complete("job-1", { owner: "A", fence, result: JSON.stringify(deepest), now: T });
      await store.schedules.put("nightly", { queue: "q", everyMs: 60_000, payload: deepest, now: T });

      const job = await store.get("job-1", { now: T });
      expect(job).toMatchObject({ payload: deepest, progress: deepest, result: nestedText(MAX_JSON_DEPTH), status: "done" });
      expect((await store.schedules.get("nightly")).payload).toEqual(deepest);
    });

    test("a result that is not JSON is any text, however many brackets it holds", async () => {
      const { store } = await freshStore();
      await store.enqueue("job-1", { now: T });
      const { fence } = await store.claim("job-1", { owner: "A", ttlMs: TTL, now: T });
      const text = `${"[".repeat(1_000)} not JSON`;
      await store.complete("job-1", { owner: "A", fence, result: text, now: T });
      expect((await store.get("job-1", { now: T })).result).toBe(text);
    });

    test("values stored deeper before the limit was checked are read as their text by every read, beside a numeric key, and every answer holding them can be written", async () => {
      const { store, rows } = await freshStore();
      const deep = nestedText(100_000);
      await store.enqueue("deep", { payload: 1, now: T });
      await store.enqueue("numeric-key", { payload: { 1: "one" }, now: T });
      const { fence } = await store.claim("deep", { owner: "A", ttlMs: TTL, now: T });
      await store.renew("deep", { owner: "A", fence, ttlMs: TTL, progress: 1, now: T });
      await store.release("deep", { owner: "A", fence, now: T });
      await store.schedules.put("nightly", { queue: "q", everyMs: 60_000, payload: 1, now: T });
      // As an earlier version, which checked no depth, stored them.
      await rows("UPDATE jobs SET payload = ?1, progress = ?1 WHERE id = 'deep'", [deep]);
      await rows("UPDATE schedules SET payload = ?1 WHERE name = 'nightly'", [deep]);

      const job = await store.get("deep", { now: T });
      expect(job).toMatchObject({ payload: deep, progress: deep });
      const page = await store.list({ now: T });
      expect(page.items.map((item) => [item.id, item.payload])).toEqual([["deep", deep], ["numeric-key", { 1: "one" }]]);
      const leases = await store.claimNext("default", { owner: "B", ttlMs: TTL, limit: 2, now: T });
      expect(leases.map((lease) => lease.job.id).sort()).toEqual(["deep", "numeric-key"]);
      const schedule = await store.schedules.get("nightly");
      expect(schedule.payload).toBe(deep);
      const fired = await store.schedules.fireDue({ now: T + 60_000 });
      expect(fired.jobs).toHaveLength(1);
      expect((await store.get(fired.jobs[0]!.id, { now: T + 60_000 })).payload).toBe(deep);
      for (const answer of [job, page, leases, schedule]) expect(() => JSON.stringify(answer)).not.toThrow();
    });
  });
}
