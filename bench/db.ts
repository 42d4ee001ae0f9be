// Databases for the benchmarks: a fresh file with the schema of migrations/,
// filled with queued jobs in one statement, and a bare @libsql/client client
// with exactly the settings `connect` gives the store (one connection, WAL,
// synchronous = NORMAL, the same busy timeout), for the raw baseline.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Client, createClient } from "@libsql/client";
import { BUSY_TIMEOUT_MS, openStore } from "../src/runtime/node/open.ts";

/** The bench clock: every job is due at T, every cycle runs at T. */
export const T = 1_000_000;

const dirs: string[] = [];
process.on("exit", () => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** A new database file in a temp dir (removed when the process exits), with the schema, and `jobs` queued jobs `job-0`... */
export async function freshDatabase(jobs: number, queue = "bench"): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), "fencelease-bench-"));
  dirs.push(dir);
  const url = `file:${join(dir, "bench.db")}`;
  (await openStore({ url })).close(); // the migrations, as the server would run them
  const client = createClient({ url });
  try {
    await fill(client, queue, 0, jobs);
  } finally {
    client.close();
  }
  return url;
}

/** Adds queued jobs `job-<from>` ... `job-<from + count - 1>`, in one statement per million. */
export async function fill(client: Client, queue: string, from: number, count: number): Promise<void> {
  for (let start = from; start < from + count; start += 1_000_000) {
    const end = Math.min(from + count, start + 1_000_000) - 1;
    await client.execute(`WITH RECURSIVE n(i) AS (SELECT ${start} UNION ALL SELECT i + 1 FROM n WHERE i < ${end})
      INSERT INTO jobs (id, queue, run_at, created_at, updated_at) SELECT 'job-' || i, '${queue}', ${T}, ${T} + i, ${T} FROM n`);
  }
}

/** A bare client with the store's connection settings (see src/runtime/node/open.ts `connect`), and no fencelease code. */
export async function rawClient(url: string): Promise<Client> {
  const client = createClient({ url, concurrency: 1, timeout: BUSY_TIMEOUT_MS });
  await client.execute("PRAGMA journal_mode = WAL");
  await client.execute("PRAGMA synchronous = NORMAL");
  return client;
}

/**
 * The same SQL on the driver @libsql/client runs underneath (the `libsql`
 * package), with every statement prepared once and kept: what a statement
 * cache would save. Informational; nothing in fencelease runs this way.
 */
export async function cachedStatements(url: string) {
  const { default: Database } = await import("libsql");
  const db = new Database(url.replace(/^file:/, ""), { timeout: BUSY_TIMEOUT_MS });
  db.exec("PRAGMA journal_mode = WAL");
  db.exec("PRAGMA synchronous = NORMAL");
  const cache = new Map<string, ReturnType<typeof db.prepare>>();
  const prepared = (sql: string) => {
    let statement = cache.get(sql);
    if (!statement) cache.set(sql, (statement = db.prepare(sql)));
    return statement;
  };
  return {
    /** Runs the statements in one write transaction, as `client.batch(statements, "write")` does. */
    batch(statements: { sql: string; args: unknown[] }[]): unknown[][] {
      prepared("BEGIN IMMEDIATE").run([]);
      try {
        const results = statements.map(({ sql, args }) => {
          const statement = prepared(sql);
          return statement.reader ? statement.all(args) : (statement.run(args), []);
        });
        prepared("COMMIT").run([]);
        return results;
      } catch (error) {
        if (db.inTransaction) db.exec("ROLLBACK");
        throw error;
      }
    },
    close: () => db.close(),
  };
}
