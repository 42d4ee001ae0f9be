import type { Client } from "@libsql/client";
import { type Driver, type Row, type Statement, storageError } from "./driver.ts";

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
    return storageError(error, local ? "local" : "remote");
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
