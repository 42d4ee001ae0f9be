import type { Driver } from "../drivers/driver.ts";
import { splitStatements } from "./sql-script.ts";

/** A file of migrations/ as the runner reads it (src/store/migrate.ts's Migration). */
type File = { name: string; sql: string };

/**
 * A step of the schema that no file can take: what it does depends on the
 * database it finds. The runner applies it in name order among the files and
 * records it as it records them, once.
 */
export type Repair = {
  name: string;
  /** The migrations it amends: it waits until they are applied (a shorter list given to the runner leaves it for later). */
  after: readonly string[];
  /** The statements that bring this database forward, read from its schema and today's files; none when it needs nothing. */
  statements(driver: Driver, files: readonly File[]): Promise<string[]>;
};

/** The statement of today's `file` that begins with `start`: what the repair makes again as the file makes it. */
function statementOf(files: readonly File[], file: string, start: string): string {
  const sql = files.find((migration) => migration.name === file)?.sql;
  const statement = sql === undefined ? undefined : splitStatements(sql).find((text) => text.replace(/^(--[^\n]*\n|\s)*/, "").startsWith(start));
  if (statement === undefined) throw new Error(`the repair needs the statement "${start}" of migrations/${file}, which the runner was not given`);
  return statement;
}

// The clock columns that 0013 and 0014 gained after they had landed.
const CLOCK_COLUMNS = [
  ["queues", "tokens_clock"],
  ["jobs", "claim_clock"],
  ["schedules", "planned_clock"],
] as const;

/** The schema's objects by name, with the SQL that made each. */
async function schemaOf(driver: Driver): Promise<Map<string, string>> {
  const rows = await driver.run({ sql: "SELECT name, sql FROM sqlite_master WHERE sql IS NOT NULL", args: [] });
  return new Map(rows.map((row) => [row.name as string, row.sql as string]));
}

async function hasColumn(driver: Driver, table: string, column: string): Promise<boolean> {
  const rows = await driver.run({ sql: "SELECT 1 FROM pragma_table_info(?1) WHERE name = ?2", args: [table, column] });
  return rows.length > 0;
}

/**
 * Migrations 0013, 0014, 0015 and 0031 were edited after they had landed on
 * main (issue 28), and the runner of that time knew a migration by its name
 * alone: a database migrated by their first texts kept them. It lacks the
 * clock columns (every claim on it failed with "no such column:
 * claim_clock"), has the spend trigger without clocks, and, where 0031's first
 * text ran, a push_counts with rowids and a trigger that counted each
 * delivery a second time. This step adds each missing column, makes the
 * trigger again as today's files make it, drops the second count and makes
 * push_counts again as today's 0031 does, its rows kept; on a database made by
 * today's files it finds nothing to do. Its name sorts it before 0015, which
 * copies claim_clock: a database that never ran 0015 gets the column first;
 * one that ran it gets this step last, after every file.
 */
export const EDITED_MIGRATIONS: Repair = {
  name: "0015_catch_up_edited_migrations",
  after: ["0013_bucket_follows_clock.sql", "0014_schedule_fires.sql"],
  async statements(driver, files) {
    const schema = await schemaOf(driver);
    const statements: string[] = [];
    for (const [table, column] of CLOCK_COLUMNS) {
      if (schema.has(table) && !(await hasColumn(driver, table, column))) statements.push(`ALTER TABLE ${table} ADD COLUMN ${column} TEXT;`);
    }
    const trigger = schema.get("queues_spend_token");
    if (trigger !== undefined && !trigger.includes("claim_clock")) {
      // As the last file that made it makes it today: 0015 when it ran (its history table is there), else 0013.
      const file = schema.has("history") ? "0015_fewer_rows_written.sql" : "0013_bucket_follows_clock.sql";
      statements.push("DROP TRIGGER queues_spend_token;", statementOf(files, file, "CREATE TRIGGER queues_spend_token"));
    }
    // 0031's first text counted a delivery by a trigger on events as well; the statement counts it now.
    if (schema.has("events_count_push")) statements.push("DROP TRIGGER events_count_push;");
    const pushCounts = schema.get("push_counts");
    if (pushCounts !== undefined && !/WITHOUT ROWID/i.test(pushCounts)) {
      statements.push(
        "ALTER TABLE push_counts RENAME TO push_counts_first;",
        statementOf(files, "0031_push.sql", "CREATE TABLE push_counts"),
        "INSERT INTO push_counts (queue, outcome, deliveries, duration_ms) SELECT queue, outcome, deliveries, duration_ms FROM push_counts_first;",
        "DROP TABLE push_counts_first;",
      );
    }
    return statements;
  },
};

/** Every repair, applied among the files in name order. */
export const REPAIRS: readonly Repair[] = [EDITED_MIGRATIONS];
