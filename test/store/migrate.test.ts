import { type Client, createClient } from "@libsql/client";
import { describe, expect, test } from "vitest";
import { migrate } from "../../src/index.ts";
import { BUSY_TIMEOUT_MS, connect, openStore, readMigrations, reconnect } from "../../src/node.ts";
import { freshDir, freshStore, freshUrl } from "../fresh-db.ts";
import { noteVerbs } from "../../src/store/note.ts";
import { expectHistoryGoesOn, expectKeptAfter0015, type RawDatabase, writeHistoryBefore0015 } from "../contract/history-before-0015.ts";

/** A raw client as the migration tests reach a database. */
function rawDatabase(client: Client): RawDatabase {
  return {
    async exec(sql, args = []) {
      await client.execute({ sql, args: args as never });
    },
    async rows(sql, args = []) {
      return (await client.execute({ sql, args: args as never })).rows.map((row) => ({ ...row }));
    },
  };
}

const T = 1_000_000;
const TTL = 30_000;

describe("migrate", () => {
  test("applies every migration once, in name order, and records each", async () => {
    const client = createClient({ url: freshUrl() });
    try {
      const migrations = await readMigrations();
      expect(migrations.map((m) => m.name)).toEqual([...migrations.map((m) => m.name)].sort());
      expect(await migrate(client, migrations)).toEqual(migrations.map((m) => m.name));
      const recorded = await client.execute("SELECT name FROM d1_migrations ORDER BY id");
      expect(recorded.rows.map((row) => row.name)).toEqual(migrations.map((m) => m.name));
    } finally {
      client.close();
    }
  });

  test("applies migrations given out of order in name order, each after the one it builds on", async () => {
    const client = createClient({ url: freshUrl() });
    try {
      const migrations = [
        { name: "0002_first_row", sql: "INSERT INTO t (x) VALUES (2);" },
        { name: "0003_second_row", sql: "INSERT INTO t (x) VALUES (3);" },
        { name: "0001_table", sql: "CREATE TABLE t (x INTEGER);" },
      ];
      expect(await migrate(client, migrations)).toEqual(["0001_table", "0002_first_row", "0003_second_row"]);
      const recorded = await client.execute("SELECT name FROM d1_migrations ORDER BY id");
      expect(recorded.rows.map((row) => row.name)).toEqual(["0001_table", "0002_first_row", "0003_second_row"]);
      expect((await client.execute("SELECT x FROM t ORDER BY rowid")).rows.map((row) => row.x)).toEqual([2, 3]);
    } finally {
      client.close();
    }
  });

  test("applies nothing the second time and leaves the data alone", async () => {
    const { store, url, snapshot } = await freshStore();
    await store.enqueue("job-1", { now: T });
    await store.claim("job-1", { owner: "A", ttlMs: TTL, now: T });
    const before = await snapshot();
    const client = createClient({ url });
    try {
      expect(await migrate(client, await readMigrations())).toEqual([]);
    } finally {
      client.close();
    }
    expect(await snapshot()).toEqual(before);
  });

  test("rolls back a migration that fails, with its record", async () => {
    const client = createClient({ url: freshUrl() });
    try {
      const broken = [{ name: "0001_half", sql: "CREATE TABLE half (x); INSERT INTO nowhere VALUES (1);" }];
      await expect(migrate(client, broken)).rejects.toThrow(/nowhere/);
      const tables = await client.execute("SELECT name FROM sqlite_master WHERE name = 'half'");
      expect(tables.rows).toEqual([]);
      expect((await client.execute("SELECT count(*) AS n FROM d1_migrations")).rows[0]?.n).toBe(0);
    } finally {
      client.close();
    }
  });

  test("survives a restart: fences carry on from where they were", async () => {
    const url = freshUrl();
    const first = await openStore({ url });
    await first.enqueue("job-1", { now: T });
    expect(await noteVerbs(first).claim("job-1", "A", T, TTL)).toBe(1);
    first.close();

    const second = await openStore({ url });
    try {
      expect(await second.get("job-1")).toMatchObject({ owner: "A", fence: 1 });
      expect(await noteVerbs(second).claim("job-1", "B", T + TTL, TTL)).toBe(2);
      expect(await noteVerbs(second).complete("job-1", "A", 1, T + TTL + 1, "stale")).toBe(false);
    } finally {
      second.close();
    }
  });

  test("0012 rebuilds the events without AUTOINCREMENT: the history kept, seq for seq, its indexes and triggers as they were", async () => {
    const url = freshUrl();
    const before12 = (await readMigrations()).filter((m) => m.name < "0012");
    const old = await openStore({ url, migrations: before12 });
    old.close();
    const client = createClient({ url });
    try {
      const db = rawDatabase(client);
      await db.exec("INSERT INTO jobs (id, queue, created_at, updated_at) VALUES ('job-1', 'q', ?1, ?1)", [T]);
      await db.exec("UPDATE jobs SET owner = 'A', until = ?1, fence = 1, last_event = 'claimed', updated_at = ?1 WHERE id = 'job-1'", [T]);
      await db.exec("UPDATE jobs SET last_event = 'renewed', updated_at = ?1 WHERE id = 'job-1'", [T + 1]);
      await db.exec("UPDATE jobs SET last_event = 'renewed', updated_at = ?1 WHERE id = 'job-1'", [T + 2]);
      const history = await db.rows("SELECT * FROM events ORDER BY seq");
      expect(history.map((event) => [event.kind, event.count])).toEqual([["enqueued", 1], ["claimed", 1], ["renewed", 2]]);
      expect(await migrate(client, (await readMigrations()).filter((m) => m.name < "0013"))).toEqual(["0012_events_without_autoincrement.sql"]);
      expect(await db.rows("SELECT * FROM events ORDER BY seq")).toEqual(history);
      expect((await db.rows("SELECT sql FROM sqlite_master WHERE name = 'events'"))[0]!.sql).not.toMatch(/AUTOINCREMENT/i);
      await db.exec("UPDATE jobs SET last_event = 'renewed', updated_at = ?1 WHERE id = 'job-1'", [T + 3]);
      await db.exec("UPDATE jobs SET done = 1, last_event = 'completed', updated_at = ?1 WHERE id = 'job-1'", [T + 4]);
      expect((await db.rows("SELECT seq, kind, count FROM events ORDER BY seq")).slice(2)).toEqual([{ seq: 3, kind: "renewed", count: 3 }, { seq: 4, kind: "completed", count: 1 }]);
    } finally {
      client.close();
    }
  });

  test("0015 keeps a job's history event for event, seq for seq, and the store goes on from it", async () => {
    const url = freshUrl();
    (await openStore({ url, migrations: (await readMigrations()).filter((m) => m.name < "0015") })).close();
    const client = createClient({ url });
    try {
      const db = rawDatabase(client);
      const before = await writeHistoryBefore0015(db);
      expect((await migrate(client, await readMigrations()))[0]).toBe("0015_fewer_rows_written.sql"); // then any later one
      await expectKeptAfter0015(db, before);
      const store = await openStore({ url });
      try {
        await expectHistoryGoesOn(store, before);
      } finally {
        store.close();
      }
    } finally {
      client.close();
    }
  });
});

// A client of `connect` runs the migrations at open, the CLI's migrate, and a
// store given a client of one's own. A store opened on a `file:` URL runs on the
// native file driver instead, whose settings and single connection are checked
// the same way in test/drivers/libsql-file.test.ts.
describe("connection settings of a file database, on a client of connect", () => {
  /** The first column of the only row a PRAGMA answers. */
  async function pragma(client: Client, name: string): Promise<unknown> {
    return Object.values((await client.execute(`PRAGMA ${name}`)).rows[0] ?? {})[0];
  }

  test("every call runs with WAL, synchronous NORMAL and the busy timeout", async () => {
    const client = await connect(freshUrl(), { busyTimeoutMs: 1234 });
    try {
      const answers = await Promise.all(
        Array.from({ length: 20 }, async () => [
          await pragma(client, "journal_mode"),
          await pragma(client, "synchronous"),
          await pragma(client, "busy_timeout"),
        ]),
      );
      expect(answers).toEqual(Array.from({ length: 20 }, () => ["wal", 1, 1234]));
    } finally {
      client.close();
    }
  });

  test("there is only one connection, so none can miss a setting", async () => {
    const client = await connect(freshUrl());
    const tx = await client.transaction("write");
    try {
      expect(await pragma(client, "busy_timeout").catch((error: Error) => error.message)).toMatch(/open transaction/);
    } finally {
      tx.close();
      client.close();
    }
  });

  test("reconnect, used after SQLITE_BUSY, gives the new connection every setting again", async () => {
    const client = await connect(freshUrl(), { busyTimeoutMs: 1234 });
    try {
      await reconnect(client);
      expect([await pragma(client, "journal_mode"), await pragma(client, "synchronous"), await pragma(client, "busy_timeout")]).toEqual(["wal", 1, 1234]);
    } finally {
      client.close();
    }
  });

  test("the busy timeout defaults to BUSY_TIMEOUT_MS and WAL is kept in the file", async () => {
    const url = freshUrl();
    const store = await openStore({ url });
    store.close();
    const plain = createClient({ url });
    const configured = await connect(url);
    try {
      expect(await pragma(plain, "journal_mode")).toBe("wal");
      expect(await pragma(configured, "busy_timeout")).toBe(BUSY_TIMEOUT_MS);
    } finally {
      plain.close();
      configured.close();
    }
  });

  test("a database in a folder that does not exist yet gets its folder", async () => {
    const url = `file:${freshDir()}/deeper/still/fencelease.db`;
    const store = await openStore({ url });
    try {
      expect(await noteVerbs(store).enqueue("job-1", { now: T })).toBe(true);
    } finally {
      store.close();
    }
  });
});
