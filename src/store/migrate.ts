import type { Client } from "@libsql/client";

/** One schema change: a file of `migrations/`, applied once, in name order. */
export type Migration = { name: string; sql: string };

/**
 * The table of applied migrations, the same that `wrangler d1 migrations apply`
 * keeps, so a database can be migrated by either tool and both agree on what is applied.
 */
export const BOOKKEEPING = `CREATE TABLE IF NOT EXISTS d1_migrations (
  id         INTEGER PRIMARY KEY AUTOINCREMENT,
  name       TEXT UNIQUE,
  applied_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP NOT NULL
)`;

/**
 * migrate applies the migrations not yet applied, in name order, each in its
 * own write transaction with the record of it; answers the names it applied.
 * Running it again applies nothing. Safe when several processes start at once:
 * each migration is checked and applied under the write lock.
 */
export async function migrate(client: Client, migrations: Migration[]): Promise<string[]> {
  await client.execute(BOOKKEEPING);
  const applied: string[] = [];
  for (const migration of [...migrations].sort((a, b) => (a.name < b.name ? -1 : 1))) {
    const tx = await client.transaction("write");
    try {
      const done = await tx.execute({ sql: "SELECT 1 FROM d1_migrations WHERE name = ?", args: [migration.name] });
      if (done.rows.length > 0) continue;
      await tx.executeMultiple(migration.sql);
      await tx.execute({ sql: "INSERT INTO d1_migrations (name) VALUES (?)", args: [migration.name] });
      await tx.commit();
      applied.push(migration.name);
    } finally {
      tx.close();
    }
  }
  return applied;
}
