import type { InValue } from "@libsql/client";
import Database from "libsql";
import { type Driver, type Row, type Statement, storageError, YIELD_EVERY, yieldTurn } from "./driver.ts";

/** The default busy timeout: long enough for any lease write to wait its turn. */
export const BUSY_TIMEOUT_MS = 5000;

/** The most prepared statements a driver keeps; past it, the one prepared first is dropped. */
export const STATEMENT_CACHE_SIZE = 256;

/** Options of `libsqlFileDriver`; every one has a default. */
export type LibsqlFileDriverOptions = {
  /** How long a write waits for another connection's lock before failing; default BUSY_TIMEOUT_MS. */
  busyTimeoutMs?: number | undefined;
};

/** A statement prepared on the current connection, how many arguments it binds, and whether it answers rows. */
type Prepared = { statement: Database.Statement; parameters: number; answersRows: boolean };

// libSQL frees the native side of what a call creates only when the event loop
// gets a turn (tursodatabase/libsql-js#153), and a caller awaiting the store in
// a tight loop never gives it one. The cache takes away the statements that
// @libsql/client prepares on every call, but not the row cursor each call
// that answers rows opens. Measured on the loop of "a long tight loop" in
// test/store/store.test.ts (enqueue, claim, complete): without the yield below it
// grows by about 25 MB in 4,000 cycles and 100 MB in 20,000 (about 5 KB a
// cycle, without bound); with it, by 6 to 8 MB either way (@libsql/client
// without its yield: 450 to 700 MB in 4,000). So the cache makes the leak far
// smaller but does not end it, and the yield stays: every YIELD_EVERY calls
// (src/drivers/driver.ts) the driver yields a turn.
const NO_ARGS: unknown[] = [];
const MIN_INTEGER = -9223372036854775808n;
const MAX_INTEGER = 9223372036854775807n;

/**
 * An argument as libSQL binds it, converted as `@libsql/client` converts it:
 * a boolean is 1 or 0 (libSQL's native binding aborts the whole process on a
 * boolean), a Date its milliseconds, an ArrayBuffer a blob. undefined, NaN,
 * Infinity and a bigint out of 64 bits are refused as @libsql/client refuses
 * them (libSQL would bind the first two as NULL), and any other value as a
 * TypeError.
 */
function bindable(value: unknown): unknown {
  switch (typeof value) {
    case "number":
      if (!Number.isFinite(value)) throw new RangeError("Only finite numbers (not Infinity or NaN) can be passed as arguments");
      return value;
    case "bigint":
      if (value < MIN_INTEGER || value > MAX_INTEGER) throw new RangeError("bigint is too large to be represented as a 64-bit integer and passed as argument");
      return value;
    case "boolean":
      return value ? 1 : 0;
    case "string":
      return value;
    case "undefined":
      throw new TypeError("undefined cannot be passed as argument to the database");
  }
  if (value === null || value instanceof Uint8Array) return value;
  if (value instanceof ArrayBuffer) return new Uint8Array(value);
  if (value instanceof Date) return value.valueOf();
  throw new TypeError(`${Object.prototype.toString.call(value)} cannot be passed as argument to the database`);
}

/**
 * The arguments of one call: as given when every one is a string, a finite
 * number or null (the statements of src/store/sql/lease.ts), else converted; padded
 * with nulls to the statement's parameters. A prepared statement keeps the
 * values bound by its last call, so an argument left out would silently be the
 * last call's; on a fresh statement (as @libsql/client prepares) it is NULL.
 */
function bindings(args: readonly InValue[], parameters: number): unknown[] {
  let out: unknown[] | undefined;
  for (let i = 0; i < args.length; i++) {
    const value = args[i];
    if (typeof value === "string" || value === null || (typeof value === "number" && Number.isFinite(value))) continue;
    out ??= [...args];
    out[i] = bindable(value);
  }
  if (args.length >= parameters) return out ?? (args as unknown[]);
  out ??= [...args];
  while (out.length < parameters) out.push(null);
  return out;
}

/**
 * An upper bound on the parameters a statement binds: the highest `?NNN`, plus
 * one for each `?`, `:name`, `@name` or `$name`. Too high costs nothing (extra
 * arguments are ignored); too low would let a value of the last call through.
 */
function parameterCount(sql: string): number {
  let highest = 0;
  let others = 0;
  for (const [, number] of sql.matchAll(/\?(\d*)|[:@$][A-Za-z_]/g)) {
    if (number) highest = Math.max(highest, Number(number));
    else others++;
  }
  return highest + others;
}

/**
 * How long a call that found the write lock taken waits before it tries again,
 * in ms, attempt after attempt (the last one repeats): the delays of SQLite's
 * own busy handler, which this driver replaces so that the wait is a timer,
 * not a block of the event loop.
 */
const BUSY_DELAYS_MS = [1, 2, 5, 10, 15, 20, 25, 25, 25, 50, 50, 100];

/** A SQLITE_BUSY error, plain or extended (SQLITE_BUSY_SNAPSHOT, ...). */
function isBusy(error: unknown): boolean {
  const { code, rawCode } = (error ?? {}) as { code?: unknown; rawCode?: unknown };
  return (typeof rawCode === "number" && (rawCode & 0xff) === 5) || (typeof code === "string" && code.startsWith("SQLITE_BUSY"));
}

/**
 * Opens the file with every setting the store relies on. Its own busy timeout
 * is zero: a call that finds the lock taken fails at once, and the driver
 * waits on a timer and tries again (see `patiently`).
 */
function openDatabase(path: string): Database.Database {
  const db = new Database(path, { timeout: 0 });
  try {
    // WAL lets readers run beside the writer and is kept in the file itself.
    db.exec("PRAGMA journal_mode = WAL");
    // NORMAL under WAL: a commit survives a process crash; only a power cut can
    // lose the last few, and never corrupts the file.
    db.exec("PRAGMA synchronous = NORMAL");
  } catch (error) {
    db.close();
    throw error;
  }
  return db;
}

/**
 * libsqlFileDriver makes a Driver over one native libSQL connection (the
 * `libsql` package that @libsql/client runs on) to the database file at
 * `path`, in WAL mode with `synchronous = NORMAL` and a busy timeout. Each SQL
 * text is prepared once and kept (up to STATEMENT_CACHE_SIZE, the oldest
 * dropped first), where @libsql/client prepares every statement on every call.
 *
 * `run` runs one statement on its own (autocommit); `batch` runs its
 * statements in one `BEGIN IMMEDIATE` ... `COMMIT` transaction (one statement
 * alone runs without one), so either all of them are committed or none. Both
 * answer every statement's rows, RETURNING rows included, as objects by column
 * name (of two columns with one name, the last wins); an integer reads as a
 * number, so one beyond 2^53 would lose precision where @libsql/client throws.
 *
 * Waiting for the lock: a call that finds the write lock taken by another
 * connection (SQLITE_BUSY: nothing of it was applied) waits on a timer and
 * tries again, with the delays of SQLite's own busy handler, until
 * `busyTimeoutMs` has passed since it began. SQLite's handler would sleep
 * inside the call, so a write waiting for another process's lock would stop
 * the whole event loop (every request, read and timer of the server) for up
 * to the busy timeout; on a timer, only that call waits.
 *
 * Failures: a statement that fails (a trigger refusing, a constraint, a bad
 * argument) rolls back its whole batch and is passed on as it is; the
 * connection stays usable. An error that a retry may cure (busy past the busy
 * timeout, I/O, disk full, a file that cannot be opened) becomes
 * StorageUnavailable with outcome `not_applied`, since a local batch that
 * failed was rolled back. A call that met SQLITE_BUSY tries again on the same
 * connection, running the same statement first, which resets it: so a
 * transaction the caller opened with `run("BEGIN")` holds across the wait, and
 * SQLite's `data_version` (which the wait room reads, per connection) keeps
 * counting. Once a call gives up (past the busy timeout), the driver drops its
 * statements and its connection, and the next call opens a new one with the
 * same settings: libSQL leaves the failed statement "in progress", and every
 * later commit on that connection would fail. If that reopening fails, that
 * call fails with it and the call after tries again. After `close`, every call
 * fails with StorageUnavailable (`CLIENT_CLOSED`), as @libsql/client's does.
 *
 * @example
 * const store = new LeaseStore(libsqlFileDriver("./data/fencelease.db"));
 */
export function libsqlFileDriver(path: string, options: LibsqlFileDriverOptions = {}): Driver {
  const busyTimeoutMs = options.busyTimeoutMs ?? BUSY_TIMEOUT_MS;
  let db: Database.Database | undefined = openDatabase(path);
  let cache = new Map<string, Prepared>();
  let closed = false;
  let calls = 0;

  /** The open connection: the one there is, or a new one after SQLITE_BUSY dropped the last. */
  function connection(): Database.Database {
    if (closed) throw Object.assign(new Error("The driver is closed"), { code: "CLIENT_CLOSED" });
    return (db ??= openDatabase(path));
  }

  function prepared(connection: Database.Database, sql: string): Prepared {
    let entry = cache.get(sql);
    if (entry === undefined) {
      const statement = connection.prepare(sql);
      // A statement answers rows when it has result columns: a SELECT, a
      // PRAGMA that answers, and `INSERT/UPDATE/DELETE ... RETURNING`. libSQL's
      // `reader` says the same today (true for UPDATE ... RETURNING), but the
      // columns are what it means, whatever `reader` may come to mean.
      entry = { statement, parameters: parameterCount(sql), answersRows: statement.columns().length > 0 };
      if (cache.size >= STATEMENT_CACHE_SIZE) cache.delete(cache.keys().next().value!);
      cache.set(sql, entry);
    }
    return entry;
  }

  function execute(connection: Database.Database, { sql, args }: Statement): Row[] {
    const { statement, parameters, answersRows } = prepared(connection, sql);
    if (answersRows) return statement.all(bindings(args, parameters)) as Row[];
    // `all` would run it too, and answer [], but opens a row cursor to free.
    statement.run(bindings(args, parameters));
    return [];
  }

  /** Drops the connection and every statement prepared on it; the next call opens a new one. */
  function dropConnection(): void {
    const old = db;
    db = undefined;
    cache = new Map();
    try {
      old?.close(); // libSQL closes it for good when its last statement is garbage-collected
    } catch {
      // nothing more to give back
    }
  }

  /** Leaves no transaction open; a connection that cannot roll back is dropped. */
  function rollBack(connection: Database.Database): void {
    try {
      if (connection.inTransaction) prepared(connection, "ROLLBACK").statement.run(NO_ARGS);
    } catch {
      dropConnection();
    }
  }

  function failure(error: unknown): unknown {
    if (isBusy(error)) dropConnection();
    return storageError(error, "local");
  }

  /**
   * Runs `call` (all of one driver call, synchronous), again on a timer while
   * the lock is taken, until the busy timeout. A busy call applied nothing: a
   * BEGIN IMMEDIATE that did not get the lock began nothing, a statement alone
   * wrote nothing, and a batch whose COMMIT was refused was rolled back.
   */
  async function patiently<T>(call: () => T): Promise<T> {
    if (++calls % YIELD_EVERY === 0) await yieldTurn();
    const started = performance.now();
    for (let attempt = 0; ; attempt++) {
      try {
        return call();
      } catch (error) {
        const left = busyTimeoutMs - (performance.now() - started);
        if (!isBusy(error) || left <= 0) throw failure(error);
        const delay = Math.min(BUSY_DELAYS_MS[Math.min(attempt, BUSY_DELAYS_MS.length - 1)]!, left);
        await new Promise((resolve) => setTimeout(resolve, delay));
      }
    }
  }

  function runOne(statement: Statement): Row[] {
    return execute(connection(), statement);
  }

  /** One transaction: BEGIN IMMEDIATE takes the write lock (or fails with SQLITE_BUSY, nothing begun). */
  function runAll(statements: Statement[]): Row[][] {
    const current = connection();
    prepared(current, "BEGIN IMMEDIATE").statement.run(NO_ARGS);
    try {
      const results: Row[][] = [];
      for (const statement of statements) results.push(execute(current, statement));
      prepared(current, "COMMIT").statement.run(NO_ARGS);
      return results;
    } catch (error) {
      rollBack(current);
      throw error;
    }
  }

  return {
    run: (statement) => patiently(() => runOne(statement)),
    async batch(statements) {
      if (statements.length === 0) return patiently(() => (connection(), [])); // a closed driver says so, even for nothing
      // One statement is atomic on its own: no transaction to open and commit around it.
      if (statements.length === 1) return [await patiently(() => runOne(statements[0]!))];
      return patiently(() => runAll(statements));
    },
    close() {
      if (closed) return;
      closed = true;
      dropConnection();
    },
  };
}
