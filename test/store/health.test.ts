import { join } from "node:path";
import { describe, expect, onTestFinished, test } from "vitest";
import type { Driver } from "../../src/drivers/driver.ts";
import { libsqlFileDriver } from "../../src/drivers/libsql-file.ts";
import { LeaseStore } from "../../src/index.ts";
import { openStore } from "../../src/node.ts";
import { freshDir } from "../fresh-db.ts";

// src/store/health.ts: what /healthz says, from the writes themselves and from a
// probe, on a real file database. The remote cases (a database that stops
// answering) are in test/store/remote.test.ts.

const T = 1_000_000;

/** A migrated database file, and a driver over it closed when the test ends. */
async function migratedFile(): Promise<{ path: string; driver: Driver }> {
  const path = join(freshDir(), "health.db");
  (await openStore({ url: `file:${path}` })).close();
  const driver = libsqlFileDriver(path);
  onTestFinished(() => driver.close());
  return { path, driver };
}

describe("health", () => {
  test("is ok on a database that takes writes, by a probe that writes nothing", async () => {
    const { driver } = await migratedFile();
    const store = new LeaseStore(driver);
    await store.enqueue("job-1", { now: T });
    expect(await store.health()).toEqual({ ok: true });
    expect(await store.get("job-1", { now: T })).toMatchObject({ id: "job-1", fence: 0, owner: null });
  });

  test("a write that has waited longer than stuckAfterMs makes it stuck, until that write ends", async () => {
    const { driver } = await migratedFile();
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    let held = true;
    const gated: Driver = {
      run: (statement) => driver.run(statement),
      batch: async (statements) => {
        if (held) await gate;
        return driver.batch(statements);
      },
      close: () => driver.close(),
    };
    const clock = { now: 0 };
    const lines: string[] = [];
    const store = new LeaseStore(gated, { health: { stuckAfterMs: 100, clock: () => clock.now, log: (line) => lines.push(line) } });
    const pending = store.enqueue("job-1", { now: T });
    clock.now = 100;
    expect(await store.health()).toEqual({ ok: true }); // 100 ms is not more than 100
    clock.now = 101;
    expect(await store.health()).toMatchObject({ ok: false, reason: "stuck", message: expect.stringMatching(/waited 101 ms/) });
    expect(await store.health()).toMatchObject({ ok: false, reason: "stuck" });
    held = false;
    open();
    expect((await pending).created).toBe(true);
    expect(await store.health()).toEqual({ ok: true });
    expect(lines).toEqual([expect.stringMatching(/writes are failing \(stuck\)/), expect.stringMatching(/writes succeed again/)]); // once each
  });
});
