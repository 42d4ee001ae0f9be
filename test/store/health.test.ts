import { join } from "node:path";
import { describe, expect, onTestFinished, test } from "vitest";
import type { Driver } from "../../src/drivers/driver.ts";
import { libsqlFileDriver } from "../../src/drivers/libsql-file.ts";
import { LeaseStore } from "../../src/index.ts";
import { NotFound, StorageUnavailable } from "../../src/store/errors.ts";
import { WriteHealth } from "../../src/store/health.ts";
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

/**
 * A store over a real migrated file whose calls fail, while `fault` is set,
 * with that error before they reach the database (reads too if `reads`).
 */
async function faultyStore(options: { holdMs?: number } = {}) {
  const { driver } = await migratedFile();
  const state = { fault: undefined as StorageUnavailable | undefined, reads: false };
  const faulty: Driver = {
    run: async (statement) => {
      if (state.fault && state.reads) throw state.fault;
      return driver.run(statement);
    },
    batch: async (statements) => {
      if (state.fault) throw state.fault;
      return driver.batch(statements);
    },
    close: () => driver.close(),
  };
  const clock = { now: 0 };
  const lines: string[] = [];
  const store = new LeaseStore(faulty, { health: { holdMs: options.holdMs ?? 1_000, clock: () => clock.now, log: (line) => lines.push(line) } });
  return { store, state, clock, lines };
}

const full = () => new StorageUnavailable({ code: "SQLITE_FULL", message: "database or disk is full" }, "not_applied", "full");

describe("health after a failed call", () => {
  test("a failed write is told for holdMs with its reason, message and outcome, logged once; then a probe that succeeds makes it ok", async () => {
    const { store, state, clock, lines } = await faultyStore({ holdMs: 1_000 });
    state.fault = full();
    await expect(store.enqueue("job-1", { now: T })).rejects.toBe(state.fault);
    await expect(store.enqueue("job-2", { now: T })).rejects.toBe(state.fault);
    const told = { ok: false, reason: "full", message: state.fault.message, outcome: "not_applied" };
    expect(await store.health()).toEqual(told);
    state.fault = undefined;
    clock.now = 999;
    expect(await store.health()).toEqual(told);
    clock.now = 1_000;
    expect(await store.health()).toEqual({ ok: true });
    expect(lines).toEqual([
      `fencelease: writes are failing (full): ${full().message} (SQLITE_FULL: database or disk is full)`,
      "fencelease: writes succeed again (they were failing: full)",
    ]);
    await expect(store.get("job-1", { now: T })).rejects.toBeInstanceOf(NotFound); // the failed write wrote nothing
  });

  test("a write that succeeds clears a failure at once", async () => {
    const { store, state, lines } = await faultyStore();
    state.fault = full();
    await expect(store.enqueue("job-1", { now: T })).rejects.toBe(state.fault);
    state.fault = undefined;
    expect((await store.enqueue("job-1", { now: T })).created).toBe(true);
    expect(await store.health()).toEqual({ ok: true });
    expect(lines).toHaveLength(2);
  });

  test("a read that fails is held as a write's failure would be; a read that succeeds clears nothing", async () => {
    const { store, state, lines } = await faultyStore();
    await store.enqueue("job-1", { now: T });
    state.fault = full();
    state.reads = true;
    await expect(store.get("job-1", { now: T })).rejects.toBe(state.fault);
    state.fault = undefined;
    expect(await store.get("job-1", { now: T })).toMatchObject({ id: "job-1" });
    expect(await store.health()).toMatchObject({ ok: false, reason: "full" });
    expect(lines).toEqual([expect.stringMatching(/^fencelease: writes are failing \(full\)/)]);
  });

  test("a corrupt database is told from then on, even after writes succeed and holdMs has passed", async () => {
    const { store, state, clock, lines } = await faultyStore({ holdMs: 1_000 });
    const corrupt = new StorageUnavailable({ code: "SQLITE_CORRUPT", message: "database disk image is malformed" }, "not_applied", "corrupt");
    state.fault = corrupt;
    await expect(store.enqueue("job-1", { now: T })).rejects.toBe(corrupt);
    state.fault = undefined;
    expect((await store.enqueue("job-1", { now: T })).created).toBe(true);
    clock.now = 60_000;
    expect(await store.health()).toEqual({ ok: false, reason: "corrupt", message: corrupt.message, outcome: "not_applied" });
    expect(lines).toEqual([`fencelease: writes are failing (corrupt): ${corrupt.message} (SQLITE_CORRUPT: database disk image is malformed)`]);
  });

  test("a closed connection is told, but not logged: closing is the store's owner's doing", async () => {
    const { store, state, lines } = await faultyStore();
    state.fault = new StorageUnavailable(new Error("closed"), "not_applied", "closed");
    await expect(store.enqueue("job-1", { now: T })).rejects.toBe(state.fault);
    expect(await store.health()).toMatchObject({ ok: false, reason: "closed" });
    expect(lines).toEqual([]);
  });

  test.each([
    [{ stuckAfterMs: 0 }, "stuckAfterMs must be a positive number of milliseconds, got 0"],
    [{ stuckAfterMs: Number.NaN }, "stuckAfterMs must be a positive number of milliseconds, got NaN"],
    [{ holdMs: 0.5 }, "holdMs must be a positive number of milliseconds, got 0.5"],
    [{ holdMs: Number.POSITIVE_INFINITY }, "holdMs must be a positive number of milliseconds, got Infinity"],
  ])("refuses %o with a RangeError that names it", (options, message) => {
    expect(() => new WriteHealth(options)).toThrow(new RangeError(message));
  });

  test("a stuckAfterMs and holdMs of 1 ms are taken", () => {
    expect(new WriteHealth({ stuckAfterMs: 1, holdMs: 1 })).toBeInstanceOf(WriteHealth);
  });
});
