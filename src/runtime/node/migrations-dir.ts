import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Migration } from "../../store/migrate.ts";

/** The `migrations/` folder that ships with fencelease, also wrangler's `migrations_dir`. */
export const MIGRATIONS_DIR = fileURLToPath(new URL("../../../migrations/", import.meta.url));

// wrangler names migrations NNNN_name.sql; anything else in the folder is not one.
const MIGRATION_FILE = /^\d{4}_[\w-]+\.sql$/;

/** readMigrations reads a folder of `NNNN_name.sql` files, in name order. */
export async function readMigrations(dir = MIGRATIONS_DIR): Promise<Migration[]> {
  const names = (await readdir(dir)).filter((name) => MIGRATION_FILE.test(name)).sort();
  return Promise.all(names.map(async (name) => ({ name, sql: await readFile(join(dir, name), "utf8") })));
}
