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
// the statement is wrong: a caller may retry these.
const TRANSIENT = /SQLITE_BUSY|SQLITE_LOCKED|SQLITE_IOERR|SQLITE_CANTOPEN|SQLITE_FULL|CLIENT_CLOSED|HRANA_|SERVER_ERROR|fetch failed|network|connection|timed? ?out|overloaded|unavailable/i;

/** Rethrows an error of the database as StorageUnavailable when a retry may succeed. */
export function storageError(error: unknown): unknown {
  const described = `${(error as { code?: string })?.code ?? ""} ${(error as Error)?.message ?? ""}`;
  return TRANSIENT.test(described) ? new StorageUnavailable(error) : error;
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

/** A driver over an `@libsql/client` Client: a local file, sqld or Turso. */
export function libsqlDriver(client: Client, options: LibsqlDriverOptions = {}): Driver {
  const afterBusy = options.afterBusy ?? (client.protocol === "file" ? () => client.reconnect() : undefined);
  async function failure(error: unknown): Promise<unknown> {
    if (afterBusy && /SQLITE_BUSY/.test(String((error as { code?: string })?.code))) await afterBusy();
    return storageError(error);
  }
  return {
    async run(statement) {
      try {
        return (await client.execute(statement)).rows as unknown as Row[];
      } catch (error) {
        throw await failure(error);
      }
    },
    async batch(statements) {
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
