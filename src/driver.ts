import type { Client, InValue } from "@libsql/client";
import { StorageUnavailable } from "./errors.ts";

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

/** Options of the libSQL driver. */
export type LibsqlDriverOptions = {
  /**
   * Run after a local statement failed with SQLITE_BUSY; default
   * `client.reconnect()` for a `file:` client. libSQL leaves a statement that
   * failed with SQLITE_BUSY "in progress" until it is garbage-collected, and
   * until then every transaction on that connection fails to commit; a new
   * connection is the sure way out.
   */
  afterBusy?: () => Promise<void>;
};

// A local libSQL statement is freed only when the event loop gets a turn
// (tursodatabase/libsql-js#153), so a caller awaiting the store in a tight loop
// would grow without bound. Every this many calls the driver yields a turn.
const YIELD_EVERY = 100;

/** One turn of the event loop. */
function yieldTurn(): Promise<void> {
  return new Promise((resolve) => (globalThis.setImmediate ?? setTimeout)(resolve));
}

/** A driver over an `@libsql/client` Client: a local file, sqld or Turso. */
export function libsqlDriver(client: Client, options: LibsqlDriverOptions = {}): Driver {
  const local = client.protocol === "file";
  const afterBusy = options.afterBusy ?? (local ? () => client.reconnect() : undefined);
  let calls = 0;
  async function failure(error: unknown): Promise<unknown> {
    if (afterBusy && /SQLITE_BUSY/.test(String((error as { code?: string })?.code))) await afterBusy();
    return storageError(error, local);
  }
  async function run(statement: Statement): Promise<Row[]> {
    if (local && ++calls % YIELD_EVERY === 0) await yieldTurn();
    try {
      return (await client.execute(statement)).rows as unknown as Row[];
    } catch (error) {
      throw await failure(error);
    }
  }
  return {
    run,
    async batch(statements) {
      // One statement is atomic on its own: no transaction to open and commit around it.
      if (statements.length === 1) return [await run(statements[0]!)];
      if (local && ++calls % YIELD_EVERY === 0) await yieldTurn();
      try {
        const results = await client.batch(statements, "write");
        return results.map((result) => result.rows as unknown as Row[]);
      } catch (error) {
        throw await failure(error);
      }
    },
    close() {
      client.close();
    },
  };
}
