// The guard a downstream service puts in front of its own table, so that a
// worker whose lease was taken over cannot overwrite a newer worker's write:
// the fence check and the write are one statement, with nothing in between.

/** A value a column can take, as libSQL binds it. */
export type FencedValue = string | number | bigint | boolean | null | Uint8Array;

/** Anything that runs one statement the way libSQL's `Client` and `Transaction` do. */
export type FencedDatabase = {
  execute(statement: { sql: string; args: FencedValue[] }): Promise<{ rowsAffected: number }>;
};

/** What to write: the row's key, the fence of the lease it is written under, and the other columns. */
export type FencedWrite = {
  /** The table: a plain identifier (letters, digits, underscores), with columns `key` and `fence`. */
  table: string;
  key: string;
  /** The fence of the lease the write is made under: a positive whole number. */
  fence: number;
  /** The other columns to store, by name; each name a plain identifier, and not `key` or `fence`. */
  values: Record<string, FencedValue>;
};

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** The name, quoted, if it is a plain identifier; anything else is refused, so no name can carry SQL. */
function identifier(what: string, name: string): string {
  if (typeof name !== "string" || !IDENTIFIER.test(name)) {
    throw new RangeError(`fencedWrite: ${what} must be a plain identifier (letters, digits and _, not starting with a digit), got ${JSON.stringify(name)}`);
  }
  return `"${name}"`;
}

/**
 * fencedStatement builds the one statement of a fenced write, and its
 * arguments, for a database without libSQL's `execute`: with D1,
 * `db.prepare(sql).bind(...args).run()`, stored when `meta.changes` is 1.
 * Throws RangeError for a bad write.
 */
export function fencedStatement(write: FencedWrite): { sql: string; args: FencedValue[] } {
  const table = identifier("table", write.table);
  if (typeof write.key !== "string") throw new RangeError(`fencedWrite: key must be a string, got ${typeof write.key}`);
  if (!Number.isSafeInteger(write.fence) || write.fence < 1) throw new RangeError(`fencedWrite: fence must be a positive whole number, got ${write.fence}`);
  const names = Object.keys(write.values);
  for (const name of names) {
    if (name === "key" || name === "fence") throw new RangeError(`fencedWrite: values must not set ${JSON.stringify(name)}; it is written from the argument of that name`);
    if (write.values[name] === undefined) throw new RangeError(`fencedWrite: values.${name} is undefined; give null to store NULL`);
  }
  const columns = ['"key"', '"fence"', ...names.map((name) => identifier("a column name in values", name))];
  const updates = columns.slice(1).map((column) => `${column} = excluded.${column}`);
  return {
    sql: `INSERT INTO ${table} (${columns.join(", ")}) VALUES (${columns.map(() => "?").join(", ")})
          ON CONFLICT ("key") DO UPDATE SET ${updates.join(", ")}
          WHERE excluded."fence" > ${table}."fence"`,
    args: [write.key, write.fence, ...names.map((name) => write.values[name]!)],
  };
}

/**
 * fencedWrite stores a row under the fence of the lease it is written with, in
 * ONE statement that keeps the highest fence seen per key and refuses lower
 * ones: it answers true if the row was stored (a new key, or a fence higher
 * than the stored one), and false, with the row untouched, if a write with an
 * equal or higher fence got there first. A repeat of the same write is
 * refused too (its fence is equal): after a lost answer, read the row back to
 * see whether it holds your fence. Table and column names must be plain
 * identifiers; anything else throws RangeError before a statement is sent.
 *
 * The table needs a `key` primary key and an integer `fence` column:
 *
 * ```sql
 * CREATE TABLE invoices (
 *   key    TEXT    PRIMARY KEY,  -- what the job writes, e.g. the job id
 *   fence  INTEGER NOT NULL,     -- the highest fence that wrote this row
 *   status TEXT    NOT NULL,
 *   amount INTEGER NOT NULL
 * );
 * ```
 *
 * @example
 * import { createClient } from "@libsql/client";
 * const db = createClient({ url: "file:billing.db" });
 * await withLease(client, "invoice-42", async ({ job, fence }) => {
 *   const stored = await fencedWrite(db, { table: "invoices", key: job.id, fence, values: { status: "paid", amount: 120 } });
 *   if (!stored) throw new Error("a newer lease wrote this invoice first");
 * }, { owner: "worker-a", ttlMs: 30_000 });
 */
export async function fencedWrite(db: FencedDatabase, write: FencedWrite): Promise<boolean> {
  const { rowsAffected } = await db.execute(fencedStatement(write));
  return rowsAffected > 0;
}
