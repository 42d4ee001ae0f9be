import type { Row } from "../../src/drivers/driver.ts";

/** How a schema test reads a database: a statement with arguments, rows out. */
export type ReadRows = (sql: string, args?: unknown[]) => Promise<Row[]>;

/** A statement's text without its comments, its white space folded: two texts that SQLite reads alike compare equal. */
function folded(sql: string): string {
  return sql
    .replace(/--[^\n]*/g, "")
    .replace(/\s+/g, " ")
    .replace(/\s*([(),;])\s*/g, "$1")
    .trim();
}

/**
 * What a database's schema is, whatever order its columns were added in:
 * each table's columns (name, type, NOT NULL, default, place in the primary
 * key) and whether it has rowids, each index and trigger as its folded SQL,
 * and the migrations recorded as applied. Two databases with the same shape
 * run the same statements the same way.
 */
export async function schemaShape(rows: ReadRows): Promise<Record<string, unknown>> {
  const objects = await rows("SELECT type, name, sql FROM sqlite_master WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '_cf_%' ORDER BY type, name");
  const shape: Record<string, unknown> = {};
  for (const { type, name, sql } of objects as { type: string; name: string; sql: string }[]) {
    if (type !== "table") {
      shape[`${type} ${name}`] = folded(sql);
      continue;
    }
    const columns = await rows("SELECT name, type, \"notnull\", dflt_value, pk FROM pragma_table_info(?1) ORDER BY name", [name]);
    shape[`table ${name}`] = { columns, withoutRowid: /WITHOUT\s+ROWID\s*$/i.test(sql) };
  }
  shape.applied = (await rows("SELECT name FROM d1_migrations ORDER BY name")).map((row) => row.name);
  return shape;
}
