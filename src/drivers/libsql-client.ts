import type { Client } from "@libsql/client";
import { type Driver, type Row, type Statement, storageError, YIELD_EVERY, yieldTurn } from "./driver.ts";

/** How long a call to a remote database may take by default before it fails: long enough for any batch of the store, short enough that a caller hears back. */
export const STATEMENT_TIMEOUT_MS = 5000;

/** Options of the libSQL driver. */
export type LibsqlDriverOptions = {
  /**
   * On a remote database, how long a call may take before it fails with
   * StorageUnavailable, outcome `unknown`, reason `timeout` (the request may
   * have reached the database); default STATEMENT_TIMEOUT_MS; Infinity for
   * none (the migrations, one of which may take long). A local file has its
   * busy timeout instead.
   */
  statementTimeoutMs?: number | undefined;
  /**
   * Run after a local statement failed with SQLITE_BUSY; default
   * `client.reconnect()` for a `file:` client. libSQL leaves a statement that
   * failed with SQLITE_BUSY "in progress" until it is garbage-collected, and
   * until then every transaction on that connection fails to commit; a new
   * connection is the sure way out.
   */
  afterBusy?: (() => Promise<void>) | undefined;
};

/** The error of a call that got no answer in time; storageError reads its name as a timeout. */
class StatementTimeout extends Error {
  constructor(ms: number) {
    super(`the database did not answer within ${ms} ms`);
    this.name = "TimeoutError";
  }
}

/**
 * A driver over an `@libsql/client` Client: a local file, sqld or Turso.
 *
 * On a remote database every call races the statement timeout: past it, the
 * caller gets StorageUnavailable (`unknown`, `timeout`) while the request may
 * still be on its way. A client made by `connect` with the same
 * `statementTimeoutMs` also aborts the request itself, which frees its place
 * among the client's concurrent requests.
 */
export function libsqlDriver(client: Client, options: LibsqlDriverOptions = {}): Driver {
  const local = client.protocol === "file";
  const afterBusy = options.afterBusy ?? (local ? () => client.reconnect() : undefined);
  const given = options.statementTimeoutMs ?? STATEMENT_TIMEOUT_MS;
  const timeoutMs = local || given === Number.POSITIVE_INFINITY ? undefined : given;
  if (timeoutMs !== undefined && (!Number.isSafeInteger(timeoutMs) || timeoutMs < 1)) throw new RangeError(`statementTimeoutMs must be a positive integer, got ${timeoutMs}`);
  let calls = 0;
  async function failure(error: unknown): Promise<unknown> {
    if (afterBusy && /SQLITE_BUSY/.test(String((error as { code?: string })?.code))) await afterBusy();
    return storageError(error, local ? "local" : "remote");
  }
  /** The call, or a StatementTimeout once timeoutMs has passed without its answer. */
  function bounded<T>(call: Promise<T>): Promise<T> {
    if (timeoutMs === undefined) return call;
    call.catch(() => {}); // a call given up on may still fail later: nobody waits for it
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new StatementTimeout(timeoutMs)), timeoutMs)));
    return Promise.race([call, timeout]).finally(() => clearTimeout(timer));
  }
  async function run(statement: Statement): Promise<Row[]> {
    if (local && ++calls % YIELD_EVERY === 0) await yieldTurn();
    try {
      return (await bounded(client.execute(statement))).rows as unknown as Row[];
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
        const results = await bounded(client.batch(statements, "write"));
        return results.map((result) => result.rows as unknown as Row[]);
      } catch (error) {
        throw await failure(error);
      }
    },
    close() {
      client.close();
    },
    remote: !local,
  };
}
