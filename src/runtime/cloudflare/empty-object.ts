import type { ObjectStorage } from "../../drivers/durable-object-sql.ts";

// When a queue's object holds nothing, so that it can let its storage go and
// cost nothing to keep (src/runtime/cloudflare/queue-object.ts).

/**
 * The tables that say nothing of a queue once the others are empty: which
 * migrations ran (and their checksums) and which queue this is (built again with the storage), the
 * counts derived from the jobs, the series of what its jobs did
 * (migrations/0037: a queue let go lets its series go with it, docs/operations.md#series),
 * and the fence floor, which the directory's shards keep for every id once
 * its unbind is sent (an id bound here again starts above its shard's floor: directory.ts).
 */
const BOOKKEEPING = new Set(["d1_migrations", "migration_checksums", "queue_object", "queue_counts", "queue_series", "fence_floor"]);

/** Whether an object's SQLite has been built (the migrations' record is there): an object let go, or never written, has none. */
export function hasStorage(storage: ObjectStorage): boolean {
  return storage.sql.exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'd1_migrations'").toArray().length > 0;
}

/**
 * Whether a queue's object holds nothing: every table but the bookkeeping is
 * empty, jobs, their history, settings, schedules, push settings and counts,
 * refusal counts and pending unbinds among them. A table a later migration
 * adds counts as holding something until it is named here, so nothing is
 * ever let go by mistake. One read of each table's first row.
 */
export function holdsNothing(storage: ObjectStorage): boolean {
  const tables = storage.sql
    .exec("SELECT name FROM sqlite_master WHERE type = 'table' AND substr(name, 1, 7) <> 'sqlite_' AND substr(name, 1, 4) <> '_cf_'")
    .toArray()
    .map((row) => row.name as string)
    .filter((name) => !BOOKKEEPING.has(name));
  if (tables.length === 0) return true;
  const [row] = storage.sql.exec(`SELECT ${tables.map((name) => `NOT EXISTS (SELECT 1 FROM "${name}")`).join(" AND ")} AS empty`).toArray();
  return row!.empty === 1;
}
