import type { Driver, Statement } from "../drivers/driver.ts";
import { StorageUnavailable } from "./errors.ts";
import { REPAIRS, type Repair } from "./migration-repairs.ts";
import { splitStatements } from "./sql-script.ts";

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

// The text each applied file had, as its SHA-256, beside wrangler's table (which
// has no room for it): what every later start compares the files with.
const CHECKSUMS = "CREATE TABLE IF NOT EXISTS migration_checksums (name TEXT PRIMARY KEY, sha256 TEXT NOT NULL) WITHOUT ROWID";

/** A migration recorded as applied whose file now reads otherwise: a migration that had landed was edited. Nothing was applied. */
export class MigrationChanged extends Error {
  readonly code = "migration_changed";
  readonly migration: string;
  constructor(migration: string, applied: string, now: string) {
    super(
      `migrations/${migration} was applied to this database as a text whose SHA-256 is ${applied.slice(0, 12)}…, and the file now reads otherwise (${now.slice(0, 12)}…). ` +
        "A migration that has been applied is never edited: restore the file as it was, and put the change in a new migration.",
    );
    this.name = "MigrationChanged";
    this.migration = migration;
  }
}

/** A migration the database refused; nothing of it was applied, and the ones after it were not tried. */
export class MigrationFailed extends Error {
  readonly migration: string;
  constructor(migration: string, cause: unknown) {
    super(`migration ${migration} failed, and nothing of it was applied: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
    this.name = "MigrationFailed";
    this.migration = migration;
  }
}

/** The SHA-256 of a migration's text, in hex; line ends count as `\n`, so a checkout with CRLF reads the same. */
export async function checksumOf(sql: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(sql.replace(/\r\n/g, "\n")));
  return Array.from(new Uint8Array(digest), (byte) => byte.toString(16).padStart(2, "0")).join("");
}

type Step = (Migration & { sha256: string }) | Repair;
type Recorded = { names: Set<string>; checksums: Map<string, string> };

async function recorded(driver: Driver): Promise<Recorded> {
  const [names, checksums] = await Promise.all([
    driver.run({ sql: "SELECT name FROM d1_migrations", args: [] }),
    driver.run({ sql: "SELECT name, sha256 FROM migration_checksums", args: [] }),
  ]);
  return { names: new Set(names.map((row) => row.name as string)), checksums: new Map(checksums.map((row) => [row.name as string, row.sha256 as string])) };
}

const recordChecksum = (name: string, sha256: string): Statement => ({
  sql: "INSERT INTO migration_checksums (name, sha256) VALUES (?1, ?2) ON CONFLICT (name) DO NOTHING",
  args: [name, sha256],
});

/**
 * applyStep applies one step in one atomic batch with its record, the record
 * first: a step another process applied meanwhile fails on wrangler's unique
 * name before anything of it runs. Answers whether this call applied it.
 */
async function applyStep(driver: Driver, step: Step, files: readonly Migration[]): Promise<boolean> {
  const statements = "sql" in step ? splitStatements(step.sql) : await step.statements(driver, files);
  try {
    await driver.batch([
      { sql: "INSERT INTO d1_migrations (name) VALUES (?1)", args: [step.name] },
      ...statements.map((sql) => ({ sql, args: [] })),
      ...("sha256" in step ? [recordChecksum(step.name, step.sha256)] : []),
    ]);
    return true;
  } catch (error) {
    if (error instanceof StorageUnavailable) throw error; // the database, not the migration: nothing was refused
    if ((await recorded(driver)).names.has(step.name)) return false;
    throw new MigrationFailed(step.name, error);
  }
}

/** Throws MigrationChanged for the first file whose recorded checksum is not its text's. */
function expectUnchanged(files: readonly (Migration & { sha256: string })[], checksums: Map<string, string>): void {
  for (const file of files) {
    const applied = checksums.get(file.name);
    if (applied !== undefined && applied !== file.sha256) throw new MigrationChanged(file.name, applied, file.sha256);
  }
}

/**
 * migrate brings a database's schema up to date, on any driver; answers the
 * names it applied. First it compares every applied file with the text it was
 * applied as, and throws MigrationChanged, changing nothing, when one was
 * edited (migrations are append-only). Then it applies the migrations not
 * yet applied, in name order, each in one atomic batch with its record and
 * checksum, and among them each repair (src/store/migration-repairs.ts) once
 * the migrations it amends are applied. A migration applied before checksums were kept (by
 * wrangler, or by an earlier fencelease) is taken as its file reads now, and
 * its checksum recorded. Running it again applies nothing. Safe when several
 * processes (or Worker isolates) start at once: the record decides which one
 * applies a step.
 */
export async function migrate(driver: Driver, migrations: readonly Migration[]): Promise<string[]> {
  await driver.batch([
    { sql: BOOKKEEPING, args: [] },
    { sql: CHECKSUMS, args: [] },
  ]);
  const files = await Promise.all(migrations.map(async (migration) => ({ ...migration, sha256: await checksumOf(migration.sql) })));
  const before = await recorded(driver);
  expectUnchanged(files, before.checksums);
  const applied: string[] = [];
  const done = new Set(before.names);
  let raced = false; // another process applied a step this one was about to
  for (const step of [...files, ...REPAIRS].sort((a, b) => (a.name < b.name ? -1 : 1))) {
    if (done.has(step.name) || ("after" in step && !step.after.every((name) => done.has(name)))) continue;
    if (await applyStep(driver, step, files)) applied.push(step.name);
    else raced = true;
    done.add(step.name);
  }
  if (raced) expectUnchanged(files, (await recorded(driver)).checksums);
  const unchecked = files.filter((file) => before.names.has(file.name) && !before.checksums.has(file.name));
  if (unchecked.length > 0) await driver.batch(unchecked.map((file) => recordChecksum(file.name, file.sha256)));
  return applied;
}
