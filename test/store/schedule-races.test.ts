import { describe, expect, test } from "vitest";
import type { Driver } from "../../src/drivers/driver.ts";
import { libsqlFileDriver } from "../../src/drivers/libsql-file.ts";
import { LeaseStore } from "../../src/store/store.ts";
import { freshStore } from "../fresh-db.ts";

// A runner's fire is decided in its write's transaction, not by what it read
// before: each test lets something happen between a runner's read of the due
// schedules and its write, exactly there, and checks that the write then
// enqueues nothing. (The contract suites fire two runners at once, on libSQL
// and D1, without choosing where they interleave.)

const T = Date.UTC(2026, 10, 30, 2, 59, 30);
const AT_3 = Date.UTC(2026, 10, 30, 3, 0, 0);

/** `driver`, with `meanwhile` run once, just before its first batch. */
function beforeFirstBatch(driver: Driver, meanwhile: () => Promise<void>): Driver {
  let first = true;
  return {
    run: (statement) => driver.run(statement),
    async batch(statements) {
      if (first) {
        first = false;
        await meanwhile();
      }
      return driver.batch(statements);
    },
    close: () => driver.close(),
  };
}

/** A store on a fresh database with the nightly schedule, and a runner over it whose first write waits for `meanwhile`. */
async function withRunner(meanwhile: (store: LeaseStore) => Promise<void>) {
  const fresh = await freshStore();
  await fresh.store.schedules.put("nightly", { queue: "reports", cron: "0 3 * * *", now: T });
  const runner = new LeaseStore(beforeFirstBatch(libsqlFileDriver(fresh.url.slice("file:".length)), () => meanwhile(fresh.store)));
  return { ...fresh, runner };
}

describe("a fire read before another write", () => {
  test("enqueues nothing once another runner fired it, even after that job was deleted", async () => {
    const { store, runner, snapshot } = await withRunner(async (other) => {
      expect((await other.schedules.fireDue({ now: AT_3 })).jobs).toHaveLength(1);
      await other.delete("nightly@2026-11-30T03:00:00.000Z", { now: AT_3 });
    });
    try {
      expect(await runner.schedules.fireDue({ now: AT_3 + 1 })).toEqual({ jobs: [], taken: [], skipped: [], nextFireAt: AT_3 + 24 * 3_600_000 });
      expect(await snapshot()).toEqual({}); // the id alone would have let it in again: the schedule's guard did not
      expect(await store.schedules.get("nightly")).toMatchObject({ lastFireAt: AT_3 });
    } finally {
      runner.close();
    }
  });

  test("enqueues nothing when a put changed its cron meanwhile, though it is still due: the fire it computed is not one of the new cron's", async () => {
    // The put came from a process whose clock was behind the runner's: the new cron's first fire, 03:00, is due at the runner's 03:06.
    const { store, runner, snapshot } = await withRunner(async (other) => {
      await other.schedules.put("nightly", { queue: "other", cron: "*/5 * * * *", now: T });
    });
    try {
      expect((await runner.schedules.fireDue({ now: AT_3 + 6 * 60_000 })).jobs).toEqual([]);
      expect(await snapshot()).toEqual({});
      expect(await store.schedules.get("nightly")).toMatchObject({ queue: "other", lastFireAt: null, nextFireAt: AT_3 });
      expect((await store.schedules.fireDue({ now: AT_3 + 6 * 60_000 })).jobs).toEqual([{ id: "nightly@2026-11-30T03:05:00.000Z", queue: "other" }]);
    } finally {
      runner.close();
    }
  });

  test("enqueues nothing when the schedule was deleted meanwhile", async () => {
    const { store, runner, snapshot } = await withRunner((other) => other.schedules.delete("nightly"));
    try {
      expect(await runner.schedules.fireDue({ now: AT_3 })).toEqual({ jobs: [], taken: [], skipped: [], nextFireAt: null });
      expect(await snapshot()).toEqual({});
      expect(await store.schedules.list()).toEqual([]);
    } finally {
      runner.close();
    }
  });
});
