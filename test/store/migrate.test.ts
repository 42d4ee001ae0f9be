import { type Client, createClient } from "@libsql/client";
import { describe, expect, onTestFinished, test } from "vitest";
import { libsqlDriver } from "../../src/drivers/libsql-client.ts";
import { migrate } from "../../src/index.ts";
import { checksumOf, type Migration, MigrationChanged } from "../../src/store/migrate.ts";
import { EDITED_MIGRATIONS } from "../../src/store/migration-repairs.ts";
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
  test("applies every migration once, in name order, with the repair of the edited ones in its place, and records each with its text's checksum", async () => {
    const client = createClient({ url: freshUrl() });
    try {
      const migrations = await readMigrations();
      expect(migrations.map((m) => m.name)).toEqual([...migrations.map((m) => m.name)].sort());
      const steps = [...migrations.map((m) => m.name), EDITED_MIGRATIONS.name].sort();
      expect(steps.indexOf(EDITED_MIGRATIONS.name)).toBe(steps.indexOf("0015_fewer_rows_written.sql") - 1);
      expect(await migrate(libsqlDriver(client), migrations)).toEqual(steps);
      const recorded = await client.execute("SELECT name FROM d1_migrations ORDER BY id");
      expect(recorded.rows.map((row) => row.name)).toEqual(steps);
      const checksums = await client.execute("SELECT name, sha256 FROM migration_checksums ORDER BY name");
      expect(checksums.rows.map((row) => ({ ...row }))).toEqual(await Promise.all(migrations.map(async (m) => ({ name: m.name, sha256: await checksumOf(m.sql) }))));
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
      expect(await migrate(libsqlDriver(client), migrations)).toEqual(["0001_table", "0002_first_row", "0003_second_row"]);
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
      expect(await migrate(libsqlDriver(client), await readMigrations())).toEqual([]);
    } finally {
      client.close();
    }
    expect(await snapshot()).toEqual(before);
  });

  test("rolls back a migration that fails, with its record, names it, and tries none after it", async () => {
    const client = createClient({ url: freshUrl() });
    try {
      const broken = [
        { name: "0001_half", sql: "CREATE TABLE half (x); INSERT INTO nowhere VALUES (1);" },
        { name: "0002_after", sql: "CREATE TABLE after_half (x);" },
      ];
      await expect(migrate(libsqlDriver(client), broken)).rejects.toThrow(/^migration 0001_half failed, and nothing of it was applied: .*nowhere/);
      const tables = await client.execute("SELECT name FROM sqlite_master WHERE name IN ('half', 'after_half')");
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
      expect(await migrate(libsqlDriver(client), (await readMigrations()).filter((m) => m.name < "0013"))).toEqual(["0012_events_without_autoincrement.sql"]);
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
      expect((await migrate(libsqlDriver(client), await readMigrations()))[0]).toBe("0015_fewer_rows_written.sql"); // then any later one
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

/** A database file migrated by `files`, and a raw client on it. */
async function migratedFile(files: Migration[]): Promise<{ url: string; client: Client }> {
  const url = freshUrl();
  const client = createClient({ url });
  onTestFinished(() => client.close());
  await migrate(libsqlDriver(client), files);
  return { url, client };
}

/** What a test compares to see that nothing changed: every object of the schema and every record of the runner. */
async function everything(client: Client): Promise<unknown> {
  const read = async (sql: string) => (await client.execute(sql)).rows.map((row) => ({ ...row }));
  return { schema: await read("SELECT type, name, sql FROM sqlite_master ORDER BY name"), applied: await read("SELECT * FROM d1_migrations ORDER BY id"), checksums: await read("SELECT * FROM migration_checksums ORDER BY name") };
}

describe("migrations are append-only, checked by their text", () => {
  const files = [
    { name: "0001_table", sql: "CREATE TABLE t (x INTEGER);" },
    { name: "0002_row", sql: "INSERT INTO t (x) VALUES (2);" },
  ];
  const edited = [files[0]!, { name: "0002_row", sql: "INSERT INTO t (x) VALUES (3);" }, { name: "0003_more", sql: "CREATE TABLE u (y);" }];

  test("refuses a database on which an applied migration's file was edited since, naming the file, and applies nothing", async () => {
    const { client } = await migratedFile(files);
    const before = await everything(client);
    const refused = await migrate(libsqlDriver(client), edited).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(MigrationChanged);
    expect(refused).toMatchObject({ code: "migration_changed", migration: "0002_row" });
    expect((refused as Error).message).toMatch(/^migrations\/0002_row was applied to this database as a text whose SHA-256 is [0-9a-f]{12}…, and the file now reads otherwise \([0-9a-f]{12}…\)\. A migration that has been applied is never edited/);
    expect(await everything(client)).toEqual(before); // 0003_more not applied either
  });

  test("openStore refuses to open such a database, with the same message", async () => {
    const { url } = await migratedFile(files);
    await expect(openStore({ url, migrations: edited })).rejects.toThrow(/^migrations\/0002_row was applied/);
  });

  test("a file whose lines end in CRLF (a Windows checkout) reads as the same text", async () => {
    const { client } = await migratedFile(files);
    const crlf = files.map((file) => ({ ...file, sql: `-- a comment\n${file.sql}\n`.replace(/\n/g, "\r\n") }));
    const lf = files.map((file) => ({ ...file, sql: `-- a comment\n${file.sql}\n` }));
    const { client: other } = await migratedFile(lf);
    expect(await migrate(libsqlDriver(other), crlf)).toEqual([]);
    await expect(migrate(libsqlDriver(client), crlf)).rejects.toBeInstanceOf(MigrationChanged); // a comment is part of the text
  });

  test("takes migrations recorded without a checksum (by wrangler, or before checksums) as their files read now, records them, and refuses a later edit", async () => {
    const { client } = await migratedFile(files);
    await client.execute("DELETE FROM migration_checksums");
    expect(await migrate(libsqlDriver(client), files)).toEqual([]);
    expect((await client.execute("SELECT name FROM migration_checksums ORDER BY name")).rows.map((row) => row.name)).toEqual(["0001_table", "0002_row"]);
    await expect(migrate(libsqlDriver(client), edited)).rejects.toThrow(/^migrations\/0002_row was applied/);
  });

  test("a repair waits until the migrations it amends are applied: a shorter list leaves it for later", async () => {
    const { client } = await migratedFile((await readMigrations()).filter((m) => m.name < "0013"));
    const names = async () => (await client.execute("SELECT name FROM d1_migrations ORDER BY id")).rows.map((row) => row.name);
    expect(await names()).not.toContain(EDITED_MIGRATIONS.name);
    expect(await migrate(libsqlDriver(client), await readMigrations())).toContain(EDITED_MIGRATIONS.name);
    expect((await names()).indexOf(EDITED_MIGRATIONS.name)).toBe((await names()).indexOf("0014_schedule_fires.sql") + 1);
  });

  test("two stores opening a new database at once apply each migration once, and both serve", async () => {
    const url = freshUrl();
    const stores = await Promise.all([openStore({ url }), openStore({ url })]);
    onTestFinished(() => stores.forEach((store) => store.close()));
    const client = createClient({ url });
    onTestFinished(() => client.close());
    const recorded = (await client.execute("SELECT name, count(*) AS n FROM d1_migrations GROUP BY name")).rows;
    expect(recorded.length).toBe((await readMigrations()).length + 1);
    expect(recorded.every((row) => row.n === 1)).toBe(true);
    await stores[0]!.enqueue("job-1", { now: T });
    expect(await noteVerbs(stores[1]!).claim("job-1", "A", T, TTL)).toBe(1);
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
