import { applyD1Migrations, env } from "cloudflare:test";
import { describe, expect, test } from "vitest";
import { d1Driver } from "../../src/drivers/d1.ts";
import type { Row } from "../../src/drivers/driver.ts";
import { LeaseStore } from "../../src/store/store.ts";
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
