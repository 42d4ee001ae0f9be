import { env } from "cloudflare:test";
import { d1Driver } from "../../src/drivers/d1.ts";
import type { Row } from "../../src/drivers/driver.ts";
import { LeaseStore } from "../../src/store/store.ts";
import type { FreshStorage } from "../contract/storage.contract.ts";

/** A store over a D1 binding (the Worker's DB unless told), on empty tables, with the binding itself to look at the rows. */
export async function freshD1Store(db: D1Database = env.DB): Promise<FreshStorage> {
  // Deleting jobs raises the fence floor and records nothing else; the tables they feed are emptied after them:
  // every table of the schema but the migrations' records, so that a table a migration adds is emptied too.
  const { results } = await db
    .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '_cf_%' AND name NOT IN ('jobs', 'fence_floor', 'd1_migrations', 'migration_checksums')")
    .all<{ name: string }>();
  const tables = ["jobs", ...results.map(({ name }) => name)];
  await db.batch([...tables.map((table) => db.prepare(`DELETE FROM "${table}"`)), db.prepare("UPDATE fence_floor SET fence = 0")]);
  return {
    store: new LeaseStore(d1Driver(db)),
    async snapshot() {
      const { results } = await db.prepare("SELECT * FROM jobs ORDER BY id").all<Row>();
      return Object.fromEntries(results.map((row) => [row.id as string, row]));
    },
    async reopen(options = {}) {
      return new LeaseStore(d1Driver(db), options);
    },
    async exec(sql) {
      await db.prepare(sql).run();
    },
    async rows(sql, args = []) {
      return (await db.prepare(sql).bind(...args).all<Row>()).results;
    },
  };
}
