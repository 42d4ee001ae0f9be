import { applyD1Migrations, env } from "cloudflare:test";
import { beforeAll, describe, expect, test } from "vitest";
import { d1Driver } from "../../src/drivers/d1.ts";
import type { Row } from "../../src/drivers/driver.ts";
import { MIGRATIONS } from "../../src/runtime/cloudflare/migrations.ts";
import { migrate } from "../../src/store/migrate.ts";
import { everyContract } from "../contract/every-contract.ts";
import { schemaShape } from "../contract/schema-shape.ts";
import { freshD1Store } from "./fresh-d1.ts";

// D1 databases made by `wrangler d1 migrations apply` at three earlier mains,
// whose migrations were then edited in place (issue 28): the Worker's own
// runner (which it runs before it serves) brings each to the schema of a new
// database, and the whole contract runs on it, as in test/store/earlier-mains.test.ts.

const rowsOf = (db: D1Database) => async (sql: string, args: unknown[] = []) => (await db.prepare(sql).bind(...args).all<Row>()).results;

for (const { commit, binding, migrations } of env.EARLIER_MAINS) {
  describe(`a D1 database migrated by main at ${commit}, then by the Worker`, () => {
    const db = (env as unknown as Record<string, D1Database>)[binding]!;
    beforeAll(async () => {
      await applyD1Migrations(db, migrations);
      await migrate(d1Driver(db), MIGRATIONS);
    });

    test("has today's schema: every column, index and trigger of a new database, and the same migrations recorded", async () => {
      const today = env.DB_UNMIGRATED;
      await migrate(d1Driver(today), MIGRATIONS);
      expect(await schemaShape(rowsOf(db))).toEqual(await schemaShape(rowsOf(today)));
    });

    const upgraded = () => freshD1Store(db);
    everyContract(upgraded);
  });
}
