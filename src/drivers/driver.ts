import type { InValue } from "@libsql/client";
import { StorageUnavailable } from "../errors.ts";

/** One SQL statement with its positional (`?1`, `?2` ...) arguments. */
export type Statement = { sql: string; args: InValue[] };

/** A result row, read by column name. */
export type Row = Record<string, unknown>;

/**
 * The seam between the lease rules and a database: every store verb is one
 * statement or one atomic batch, so this is all a storage has to offer.
 */
export interface Driver {
  /** Runs one statement on its own (autocommit) and returns its rows. */
  run(statement: Statement): Promise<Row[]>;
  /** Runs the statements in one write transaction: all of them, or none. */
  batch(statements: Statement[]): Promise<Row[][]>;
  /** Gives the connection back; the driver is unusable afterwards. */
  close(): void;
}

// Errors that say the database is out of reach or overloaded rather than that
// the statement is wrong: a caller may retry these. Of those, the ones in
// REFUSED come before anything is committed; the others (a connection that
// broke mid-request) leave the outcome unknown.
const TRANSIENT = /SQLITE_BUSY|SQLITE_LOCKED|SQLITE_IOERR|SQLITE_CANTOPEN|SQLITE_FULL|CLIENT_CLOSED|HRANA_|SERVER_ERROR|fetch failed|network|connection|timed? ?out|overloaded|unavailable/i;
const REFUSED = /SQLITE_BUSY|SQLITE_LOCKED|database is locked|SQLITE_CANTOPEN|SQLITE_FULL|CLIENT_CLOSED|ECONNREFUSED/i;

/**
 * Rethrows an error of the database as StorageUnavailable when a retry may
 * succeed. On a local file every failed batch is rolled back, so nothing was
 * applied; over a network that is known only when the database said so.
 */
export function storageError(error: unknown, local = false): unknown {
  const described = `${(error as { code?: string })?.code ?? ""} ${(error as Error)?.message ?? ""} ${String((error as { cause?: unknown })?.cause ?? "")}`;
  if (!TRANSIENT.test(described)) return error;
  return new StorageUnavailable(error, local || REFUSED.test(described) ? "not_applied" : "unknown");
}
