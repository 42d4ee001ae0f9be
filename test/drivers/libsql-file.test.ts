import { join } from "node:path";
import { createClient } from "@libsql/client";
import Database from "libsql";
import { describe, expect, onTestFinished, test, vi } from "vitest";
import type { Driver } from "../../src/drivers/driver.ts";
import { libsqlDriver } from "../../src/drivers/libsql-client.ts";
import { BUSY_TIMEOUT_MS, libsqlFileDriver, STATEMENT_CACHE_SIZE } from "../../src/drivers/libsql-file.ts";
import { LeaseStore, migrate, StorageUnavailable } from "../../src/index.ts";
import { readMigrations } from "../../src/node.ts";
import { freshDir } from "../fresh-db.ts";
import { noteVerbs } from "../../src/store/note.ts";

// src/drivers/libsql-file.ts, the driver of a store on a `file:` database: one
// native connection with the store's settings, each SQL text prepared once.

const T = 1_000_000;

/** A fresh database file, its URL for a second connection, and a driver over it closed when the test ends. */
function fresh(options: { busyTimeoutMs?: number } = {}): { driver: Driver; path: string; url: string } {
  const path = join(freshDir(), "driver.db");
  const driver = libsqlFileDriver(path, options);
  onTestFinished(() => driver.close());
  return { driver, path, url: `file:${path}` };
}

/** A plain @libsql/client connection to the same file, closed when the test ends: it sees only what was committed. */
function outside(url: string) {
  const client = createClient({ url });
  onTestFinished(() => client.close());
  return client;
}

/** The first column of the only row a PRAGMA answers, on the driver. */
async function pragma(driver: Driver, name: string): Promise<unknown> {
  return Object.values((await driver.run({ sql: `PRAGMA ${name}`, args: [] }))[0] ?? {})[0];
}

/** Counts the statements prepared on every libSQL connection from now until the test ends. */
function countPrepares(): { readonly count: number } {
  const spy = vi.spyOn(Database.prototype, "prepare");
  onTestFinished(() => spy.mockRestore());
  return {
    get count() {
      return spy.mock.calls.length;
    },
  };
}

describe("prepared statements", () => {
  test("each SQL text is prepared once: repeating the verbs prepares nothing more", async () => {
    const { driver, url } = fresh();
    const client = outside(url);
    await migrate(libsqlDriver(client), await readMigrations());
    const store = new LeaseStore(driver);
    const cycle = async (i: number) => {
      await store.enqueue(`job-${i}`, { now: T });
      const fence = await noteVerbs(store).claim(`job-${i}`, "A", T, 1_000);
      expect(await noteVerbs(store).renew(`job-${i}`, "A", fence!, T, 2_000)).toBe(true);
      expect(await noteVerbs(store).complete(`job-${i}`, "A", fence!, T, "r")).toBe(true);
      expect(await noteVerbs(store).complete(`job-${i}`, "B", fence!, T, "stale")).toBe(false);
      expect(await store.get(`job-${i}`, { now: T })).toMatchObject({ status: "done", result: "r" });
    };
    const prepares = countPrepares();
    await cycle(0);
    const first = prepares.count;
    expect(first).toBeGreaterThan(0);
    for (let i = 1; i < 50; i++) await cycle(i);
    expect(prepares.count).toBe(first);
  });

  test(`keeps at most ${STATEMENT_CACHE_SIZE} statements, dropping the one prepared first`, async () => {
    const { driver } = fresh();
    const prepares = countPrepares();
    for (let i = 0; i <= STATEMENT_CACHE_SIZE; i++) expect(await driver.run({ sql: `SELECT ${i} AS n`, args: [] })).toEqual([{ n: i }]);
    expect(prepares.count).toBe(STATEMENT_CACHE_SIZE + 1);
    await driver.run({ sql: `SELECT ${STATEMENT_CACHE_SIZE} AS n`, args: [] }); // still kept
    expect(prepares.count).toBe(STATEMENT_CACHE_SIZE + 1);
    expect(await driver.run({ sql: "SELECT 0 AS n", args: [] })).toEqual([{ n: 0 }]); // dropped, so prepared again
    expect(prepares.count).toBe(STATEMENT_CACHE_SIZE + 2);
  });

  test("an argument left out is NULL, as on a fresh statement, not the value of the statement's last call", async () => {
    const { driver } = fresh();
    const sql = "SELECT ?1 AS a, ?2 AS b";
    expect(await driver.run({ sql, args: ["x", "y"] })).toEqual([{ a: "x", b: "y" }]);
    expect(await driver.run({ sql, args: ["z"] })).toEqual([{ a: "z", b: null }]);
  });

  test("arguments bind as @libsql/client binds them, and what libSQL cannot bind is refused without harm", async () => {
    const { driver, url } = fresh();
    const client = outside(url);
    const sql = "SELECT ?1 AS v, typeof(?1) AS t";
    const date = new Date(T);
    for (const value of [true, false, 7n, -(2n ** 40n), 1.5, 3, "s", null, date]) {
      const expected = { ...(await client.execute({ sql, args: [value] })).rows[0] };
      expect({ value, rows: await driver.run({ sql, args: [value] }) }).toEqual({ value, rows: [expected] });
    }
    const blob = await driver.run({ sql: "SELECT ?1 AS a, ?2 AS b", args: [new Uint8Array([1, 2]), new Uint8Array([3]).buffer] });
    expect(blob.map((row) => [new Uint8Array(row.a as ArrayBuffer), new Uint8Array(row.b as ArrayBuffer)])).toEqual([[new Uint8Array([1, 2]), new Uint8Array([3])]]);
    // libSQL itself would bind undefined and NaN as NULL; @libsql/client refuses them, and so does the driver.
    for (const [value, error] of [
      [undefined, TypeError],
      [Number.NaN, RangeError],
      [Number.POSITIVE_INFINITY, RangeError],
      [2n ** 63n, RangeError],
      [[1], TypeError],
      [{ a: 1 }, TypeError],
    ] as const) {
      await expect(driver.run({ sql, args: [value as never] })).rejects.toBeInstanceOf(error);
    }
    expect(await driver.run({ sql, args: [1] })).toEqual([{ v: 1, t: "real" }]);
  });
});

describe("rows", () => {
  test("INSERT, UPDATE and DELETE ... RETURNING answer their rows, alone and in a batch; other statements answer none", async () => {
    const { driver } = fresh();
    expect(await driver.run({ sql: "CREATE TABLE t (id TEXT PRIMARY KEY, n INTEGER)", args: [] })).toEqual([]);
    expect(await driver.run({ sql: "INSERT INTO t VALUES (?1, ?2) RETURNING id, n", args: ["a", 1] })).toEqual([{ id: "a", n: 1 }]);
    expect(await driver.run({ sql: "UPDATE t SET n = n + 1 WHERE id = ?1 RETURNING n", args: ["a"] })).toEqual([{ n: 2 }]);
    expect(await driver.run({ sql: "UPDATE t SET n = n + 1 WHERE id = ?1", args: ["a"] })).toEqual([]);
    expect(
      await driver.batch([
        { sql: "INSERT INTO t VALUES (?1, ?2) RETURNING id", args: ["b", 10] },
        { sql: "UPDATE t SET n = n * 2 RETURNING id, n", args: [] },
        { sql: "INSERT INTO t VALUES (?1, ?2)", args: ["c", 0] },
        { sql: "DELETE FROM t WHERE n > ?1 RETURNING id", args: [5] },
        { sql: "SELECT id, n FROM t ORDER BY id", args: [] },
      ]),
    ).toEqual([
      [{ id: "b" }],
      [{ id: "a", n: 6 }, { id: "b", n: 20 }],
      [],
      [{ id: "a" }, { id: "b" }],
      [{ id: "c", n: 0 }],
    ]);
    expect(await driver.batch([])).toEqual([]);
  });
});

describe("batches", () => {
  test("a statement that fails rolls back its whole batch; the error is passed on as it is, and later batches work", async () => {
    const { driver, url } = fresh();
    const client = outside(url);
    await driver.run({ sql: "CREATE TABLE t (n INTEGER CHECK (n < 10))", args: [] });
    const insert = (n: number) => ({ sql: "INSERT INTO t VALUES (?1) RETURNING n", args: [n] });
    const failed = driver.batch([insert(1), insert(2), insert(11), insert(3)]);
    await expect(failed).rejects.toThrow(/CHECK constraint failed/);
    await expect(failed).rejects.not.toBeInstanceOf(StorageUnavailable);
    expect((await client.execute("SELECT count(*) AS n FROM t")).rows[0]).toMatchObject({ n: 0 });
    await expect(driver.batch([insert(4), { sql: "SELECT nonsense FROM t", args: [] }])).rejects.toThrow(/no such column/);
    expect(await driver.batch([insert(5), insert(6)])).toEqual([[{ n: 5 }], [{ n: 6 }]]);
    expect((await client.execute("SELECT n FROM t ORDER BY n")).rows.map((row) => row.n)).toEqual([5, 6]);
  });
});

describe("the connection", () => {
  test("every call runs with WAL and synchronous NORMAL, WAL kept in the file, and no busy wait inside SQLite (the driver waits on a timer)", async () => {
    const { driver, url } = fresh({ busyTimeoutMs: 1234 });
    const answers = await Promise.all(
      Array.from({ length: 20 }, async () => [await pragma(driver, "journal_mode"), await pragma(driver, "synchronous"), await pragma(driver, "busy_timeout")]),
    );
    expect(answers).toEqual(Array.from({ length: 20 }, () => ["wal", 1, 0]));
    expect(Object.values((await outside(url).execute("PRAGMA journal_mode")).rows[0] ?? {})[0]).toBe("wal");
  });

  test("a write waits for a lock held elsewhere on a timer (the event loop goes on), up to BUSY_TIMEOUT_MS by default, and lands once the lock is free", async () => {
    const { driver, url } = fresh();
    const holder = outside(url);
    await driver.run({ sql: "CREATE TABLE t (n INTEGER)", args: [] });
    const lock = await holder.transaction("write");
    const started = performance.now();
    const write = driver.batch([{ sql: "INSERT INTO t VALUES (1)", args: [] }, { sql: "INSERT INTO t VALUES (2)", args: [] }]);
    const ticks: number[] = [];
    const ticking = setInterval(() => ticks.push(performance.now() - started), 50);
    await new Promise((resolve) => setTimeout(resolve, 1000));
    lock.close(); // rolls the holder's transaction back and frees the lock, 1 s in: far inside BUSY_TIMEOUT_MS
    expect(await write).toEqual([[], []]);
    clearInterval(ticking);
    expect(BUSY_TIMEOUT_MS).toBeGreaterThan(1000);
    expect(performance.now() - started).toBeGreaterThanOrEqual(990);
    expect(ticks.length).toBeGreaterThanOrEqual(10); // the timer kept firing while the write waited: nothing blocked the event loop
    expect((await holder.execute("SELECT n FROM t ORDER BY n")).rows.map((row) => row.n)).toEqual([1, 2]);
  });

  test("there is one connection: every call sees what an earlier call did in its open transaction", async () => {
    const { driver, url } = fresh();
    const client = outside(url);
    await driver.run({ sql: "CREATE TABLE t (n INTEGER)", args: [] });
    await driver.run({ sql: "BEGIN", args: [] });
    await driver.run({ sql: "INSERT INTO t VALUES (1)", args: [] });
    expect(await driver.run({ sql: "SELECT count(*) AS n FROM t", args: [] })).toEqual([{ n: 1 }]);
    expect((await client.execute("SELECT count(*) AS n FROM t")).rows[0]).toMatchObject({ n: 0 });
    await driver.run({ sql: "ROLLBACK", args: [] });
  });

  test("a file that cannot be opened fails at once", () => {
    expect(() => libsqlFileDriver(join(freshDir(), "no", "such", "folder", "x.db"))).toThrow();
  });
});

describe("a busy database", () => {
  test("a write that waited out the busy timeout is StorageUnavailable not_applied; the next write works, on a connection with every setting", async () => {
    const { driver, url } = fresh({ busyTimeoutMs: 20 });
    const holder = outside(url);
    await driver.run({ sql: "CREATE TABLE t (n INTEGER)", args: [] });
    const lock = await holder.transaction("write");
    const insert = (n: number) => ({ sql: "INSERT INTO t VALUES (?1)", args: [n] });
    // A write alone, then a batch, wait out the timeout. libSQL leaves the
    // write "in progress", and on that connection no later COMMIT (below, of
    // other SQL texts than the one that failed) would succeed.
    await expect(driver.run({ sql: "INSERT INTO t (n) VALUES (?1)", args: [1] })).rejects.toMatchObject({ name: "StorageUnavailable", outcome: "not_applied" });
    await expect(driver.batch([insert(2), insert(3)])).rejects.toMatchObject({ name: "StorageUnavailable", outcome: "not_applied" });
    lock.close();
    expect(await driver.batch([insert(4), insert(5)])).toEqual([[], []]);
    expect(await driver.run(insert(6))).toEqual([]);
    expect((await holder.execute("SELECT n FROM t ORDER BY n")).rows.map((row) => row.n)).toEqual([4, 5, 6]);
    expect([await pragma(driver, "journal_mode"), await pragma(driver, "synchronous"), await pragma(driver, "busy_timeout")]).toEqual(["wal", 1, 0]);
  });
});

describe("close", () => {
  test("every later call fails with StorageUnavailable, closing again is harmless, and what was committed stays", async () => {
    const { driver, url } = fresh();
    await driver.batch([
      { sql: "CREATE TABLE t (n INTEGER)", args: [] },
      { sql: "INSERT INTO t VALUES (1)", args: [] },
    ]);
    driver.close();
    await expect(driver.run({ sql: "SELECT 1", args: [] })).rejects.toBeInstanceOf(StorageUnavailable);
    await expect(driver.batch([{ sql: "INSERT INTO t VALUES (2)", args: [] }, { sql: "INSERT INTO t VALUES (3)", args: [] }])).rejects.toBeInstanceOf(StorageUnavailable);
    driver.close();
    expect((await outside(url).execute("SELECT n FROM t")).rows.map((row) => row.n)).toEqual([1]);
  });
});

describe.skipIf(process.env.FENCELEASE_IN_PROCESS_ONLY === "1")("a long tight loop", () => {
  test("does not grow memory without bound: libSQL frees each call's cursor only when the event loop gets a turn", async () => {
    const { driver } = fresh();
    const before = process.memoryUsage().rss;
    for (let i = 0; i < 200_000; i++) await driver.run({ sql: "SELECT ?1 AS n", args: [i] });
    // Without the driver's yield this loop grows by about 180 MB; with it, by under 10.
    expect(process.memoryUsage().rss - before).toBeLessThan(60 * 1024 * 1024);
  });
});
