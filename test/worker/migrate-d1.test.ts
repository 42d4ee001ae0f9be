import { applyD1Migrations, createExecutionContext, env, waitOnExecutionContext } from "cloudflare:test";
import { describe, expect, test } from "vitest";
import { d1Driver } from "../../src/drivers/d1.ts";
import type { Row } from "../../src/drivers/driver.ts";
import { LeaseStore } from "../../src/store/store.ts";
import { MIGRATIONS } from "../../src/runtime/cloudflare/migrations.ts";
import { EDITED_MIGRATIONS } from "../../src/store/migration-repairs.ts";
import worker from "../../src/worker.ts";
import { expectHistoryGoesOn, expectKeptAfter0015, type RawDatabase, writeHistoryBefore0015 } from "../contract/history-before-0015.ts";

describe("migrations on D1", () => {
  test("0015 keeps a job's history event for event, seq for seq, and the store goes on from it", async () => {
    const db = env.DB_UNMIGRATED;
    const raw: RawDatabase = {
      async exec(sql, args = []) {
        await db.prepare(sql).bind(...args).run();
      },
      async rows(sql, args = []) {
        return (await db.prepare(sql).bind(...args).all<Row>()).results;
      },
    };
    await applyD1Migrations(db, env.TEST_MIGRATIONS.filter((m) => m.name < "0015"));
    expect((await raw.rows("SELECT name FROM d1_migrations ORDER BY id")).at(-1)).toEqual({ name: "0014_schedule_fires.sql" });
    const before = await writeHistoryBefore0015(raw);

    await applyD1Migrations(db, env.TEST_MIGRATIONS);
    expect(await raw.rows("SELECT name FROM d1_migrations ORDER BY id")).toContainEqual({ name: "0015_fewer_rows_written.sql" });
    await expectKeptAfter0015(raw, before);
    await expectHistoryGoesOn(new LeaseStore(d1Driver(db)), before);
  });
});

/** One request to the Worker in D1 mode over `db`, as a new isolate would serve it (an env object of its own). */
async function firstRequest(db: D1Database, path: string, init: RequestInit = {}): Promise<Response> {
  const ctx = createExecutionContext();
  const headers = { Authorization: "Bearer worker-test-token", "Content-Type": "application/json" };
  const response = await worker.fetch(new Request(`https://fencelease.test${path}`, { ...init, headers }) as never, { ...env, DB: db, STORAGE: "d1" } as never, ctx);
  await waitOnExecutionContext(ctx);
  return response as unknown as Response;
}

/** `db` with nothing in it: every view and table dropped (their indexes and triggers with them), as a new database. */
async function emptied(db: D1Database): Promise<D1Database> {
  const { results } = await db
    .prepare("SELECT type, name FROM sqlite_master WHERE type IN ('view', 'table') AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '_cf_%' ORDER BY type = 'table'")
    .all<{ type: string; name: string }>();
  if (results.length > 0) await db.batch(results.map(({ type, name }) => db.prepare(`DROP ${type.toUpperCase()} "${name}"`)));
  return db;
}

describe("the Worker on D1 brings its schema up to date before it serves", () => {
  const names = async (db: D1Database) => (await db.prepare("SELECT name FROM d1_migrations ORDER BY id").all<{ name: string }>()).results.map((row) => row.name);

  test("a database without a table: its first request applies every migration, with the repair in its place, then is served", async () => {
    const db = await emptied(env.DB_UNMIGRATED);
    const response = await firstRequest(db, "/v1/jobs", { method: "POST", body: JSON.stringify({ id: "job-1" }) });
    expect(response.status).toBe(201);
    expect(await names(db)).toEqual([...MIGRATIONS.map((migration) => migration.name), EDITED_MIGRATIONS.name].sort());
    expect((await db.prepare("SELECT id, fence FROM jobs").all()).results).toEqual([{ id: "job-1", fence: 0 }]);
  });

  test("a database wrangler migrated: the Worker records each file's checksum and the repair, and changes no table", async () => {
    const db = await emptied(env.DB_UNMIGRATED);
    await applyD1Migrations(db, env.TEST_MIGRATIONS);
    const tables = "SELECT name, sql FROM sqlite_master WHERE name NOT IN ('migration_checksums', 'd1_migrations') ORDER BY name";
    const before = (await db.prepare(tables).all()).results;
    expect((await firstRequest(db, "/healthz")).status).toBe(200);
    expect((await db.prepare(tables).all()).results).toEqual(before);
    expect((await db.prepare("SELECT count(*) AS n FROM migration_checksums").first())!.n).toBe(MIGRATIONS.length);
    expect(await names(db)).toContain(EDITED_MIGRATIONS.name);
  });

  test("a database whose applied migration's file was edited since: 503 migration_changed naming the file, and nothing served or applied", async () => {
    const db = await emptied(env.DB_UNMIGRATED);
    expect((await firstRequest(db, "/healthz")).status).toBe(200);
    await db.prepare("UPDATE migration_checksums SET sha256 = '0123456789ab' || substr(sha256, 13) WHERE name = '0013_bucket_follows_clock.sql'").run();
    const before = await names(db);
    const response = await firstRequest(db, "/v1/jobs", { method: "POST", body: JSON.stringify({ id: "job-1" }) });
    expect(response.status).toBe(503);
    expect(response.headers.get("Retry-After")).toBe("60"); // as the OpenAPI document declares for every 503
    expect(await response.json()).toEqual({
      error: {
        code: "migration_changed",
        message: expect.stringMatching(/^migrations\/0013_bucket_follows_clock\.sql was applied to this database as a text whose SHA-256 is 0123456789ab…/),
        details: { migration: "0013_bucket_follows_clock.sql" },
      },
    });
    expect(await names(db)).toEqual(before);
    expect((await db.prepare("SELECT count(*) AS n FROM jobs").first())!.n).toBe(0);
  });
});
