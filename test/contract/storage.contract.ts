import { describe, expect, test } from "vitest";
import type { Row } from "../../src/drivers/driver.ts";
import type { FreshStore } from "./store.contract.ts";

// What the store keeps, and what it costs to keep (issue 10): fences of
// removed ids folded into one floor. Run on every driver like the store
// contract; these tests also read tables other than `jobs`, so their fresh
// store can run any query.

/** A fresh store, and a way to read any table of its database from outside the store. */
export type FreshStorage = FreshStore & { rows: (sql: string) => Promise<Row[]> };

const HOUR = 3_600_000;
const T = 100 * HOUR;
const TTL = 30_000;

/** Registers the storage contract for one driver. */
export function storageContract(freshStore: () => Promise<FreshStorage>): void {
  describe("the fence floor", () => {
    test("a fresh database starts every job at fence 0 and its first claim at 1, with a floor of 0", async () => {
      const { store, rows } = await freshStore();
      expect(await rows("SELECT * FROM fence_floor")).toEqual([{ one: 1, fence: 0 }]);
      await store.enqueue("job-1", { now: T });
      await store.enqueueMany("default", [{ id: "job-2" }], T);
      expect((await store.state("job-1", T))?.fence).toBe(0);
      expect((await store.state("job-2", T))?.fence).toBe(0);
      expect(await store.claim("job-1", "A", T, TTL)).toBe(1);
    });

    test("deleting and purging ids keeps one floor, the highest fence removed, and no row per id", async () => {
      const { store, rows, exec } = await freshStore();
      for (const id of ["purged", "deleted", "raw-deleted", "kept"]) await store.enqueue(id, { now: T });
      for (let fence = 1; fence <= 3; fence++) expect(await store.claim("purged", "A", T + fence * TTL, TTL)).toBe(fence);
      await store.complete("purged", "A", 3, T + 3 * TTL, "r");
      expect(await store.claim("deleted", "A", T, TTL)).toBe(1);
      await store.release("deleted", "A", 1, T + 1);
      expect(await store.claim("raw-deleted", "A", T, TTL)).toBe(1);
      expect(await store.claim("raw-deleted", "A", T + TTL, TTL)).toBe(2);
      expect(await store.claim("kept", "A", T, TTL)).toBe(1);
      const kept = await store.state("kept", T);

      await store.deleteJob("deleted", T + 2);
      expect(await rows("SELECT * FROM fence_floor")).toEqual([{ one: 1, fence: 1 }]);
      await exec("DELETE FROM jobs WHERE id = 'raw-deleted'"); // whoever deletes a row raises the floor
      expect(await rows("SELECT * FROM fence_floor")).toEqual([{ one: 1, fence: 2 }]);
      expect(await store.purge(T + 3 * TTL + HOUR, HOUR)).toBe(1);
      expect(await rows("SELECT * FROM fence_floor")).toEqual([{ one: 1, fence: 3 }]);
      expect(await rows("SELECT name FROM sqlite_master WHERE name = 'retired_fences'")).toEqual([]);
      expect(await store.state("kept", T)).toEqual(kept);

      // Every id, removed or new, starts at the floor: above every fence it ever had.
      for (const id of ["purged", "deleted", "raw-deleted", "new"]) {
        expect(await store.enqueue(id, { now: T + 2 * HOUR })).toBe(true);
        expect((await store.state(id, T + 2 * HOUR))?.fence).toBe(3);
        expect(await store.claim(id, "B", T + 2 * HOUR, TTL)).toBe(4);
      }
    });

    test("removing a row with a lower fence never lowers the floor", async () => {
      const { store, rows } = await freshStore();
      await store.enqueue("high", { now: T });
      await store.enqueue("low", { now: T });
      for (let fence = 1; fence <= 2; fence++) await store.claim("high", "A", T + fence * TTL, TTL);
      await store.release("high", "A", 2, T + 2 * TTL);
      await store.deleteJob("high", T + 3 * TTL);
      await store.deleteJob("low", T + 3 * TTL);
      expect(await rows("SELECT * FROM fence_floor")).toEqual([{ one: 1, fence: 2 }]);
    });
  });
}
