import type { InValue } from "@libsql/client";
import { StorageUnavailable, type StorageReason } from "../store/errors.ts";

/** One SQL statement with its positional (`?1`, `?2` ...) arguments. */
export type Statement = { sql: string; args: InValue[] };

/** A result row, read by column name. */
export type Row = Record<string, unknown>;

/**
 * The seam between the lease rules and a database: every store verb is one
 * statement or one atomic batch, so this is all a storage has to offer.
 *
 * Failures: a driver throws StorageUnavailable (see storageError) when the
 * database cannot serve the call, saying whether the call may have been
 * applied (`outcome`). Any other error means the database refused a
 * statement and rolled its whole batch back: nothing of it was applied, so it
 * may be run again (group commit relies on this).
 */
export interface Driver {
  /** Runs one statement on its own (autocommit) and returns its rows. */
  run(statement: Statement): Promise<Row[]>;
  /** Runs the statements in one write transaction: all of them, or none. */
  batch(statements: Statement[]): Promise<Row[][]>;
  /** Gives the connection back; the driver is unusable afterwards. */
  close(): void;
  /**
   * Each call is a round trip to a database elsewhere (D1, a libSQL server),
   * so statements sent in one batch cost about what one alone does; absent or
   * false on a local file, where a batch of two costs a transaction.
   */
  readonly remote?: boolean | undefined;
}

/**
 * Where a driver's database is, which decides what a failure says about the
 * outcome: a `local` file (libSQL in this process: a failed batch was rolled
 * back), a `remote` libSQL server over Hrana (sqld, Turso, through
 * @libsql/client), or `d1`.
 */
export type Reach = "local" | "remote" | "d1";

// SQLite's answers that say the database cannot take the call now, whatever
// the statement; matched on the codes and messages of the error and its causes.
const CONDITIONS: [RegExp, StorageReason][] = [
  [/SQLITE_BUSY|SQLITE_LOCKED|database is locked/i, "busy"],
  [/SQLITE_READONLY|readonly database/i, "read_only"],
  [/SQLITE_CORRUPT|SQLITE_NOTADB|database disk image is malformed|file is not a database/i, "corrupt"],
  [/SQLITE_FULL|database or disk is full/i, "full"],
  [/SQLITE_IOERR|SQLITE_CANTOPEN|disk I\/O error|unable to open database/i, "io"],
];

// A remote call that never left: no connection was made, so nothing was sent.
const NOT_CONNECTED = /^(ECONNREFUSED|ENOTFOUND|EAI_AGAIN|UND_ERR_CONNECT_TIMEOUT)$/;

// Errors @libsql/client raises on an argument it cannot send, before any request.
const BAD_ARGUMENT = /passed as argument|Unsupported type of value|too large to be represented/;

// D1's own words for an error that is not the statement's (its statement errors pass through).
const D1_TRANSIENT = /network|connection|timed? ?out|overloaded|unavailable|reset|internal error|fetch failed/i;
const D1_REFUSED = /overloaded|ECONNREFUSED/i;

/** The error and its causes, outermost first (at most 5 deep). */
function chain(error: unknown): { name?: string; code?: unknown; message?: string; status?: unknown }[] {
  const links = [];
  for (let at = error, depth = 0; at !== undefined && at !== null && depth < 5; at = (at as { cause?: unknown }).cause, depth++) {
    links.push(typeof at === "object" ? (at as { name?: string }) : { message: String(at) });
  }
  return links;
}

/**
 * storageError turns an error of the database into what the store's callers
 * need to know, and is where every driver decides it:
 *
 * - SQLite saying it cannot take the call (busy or locked, read-only, corrupt,
 *   full, an I/O error) is StorageUnavailable with that `reason`, outcome
 *   `not_applied`: SQLite rolled the batch back (locally, or on the server that
 *   answered so).
 * - A statement the database refused (a constraint, a trigger, bad SQL) is
 *   passed on as it is; its batch was rolled back.
 * - On a remote database, anything else whose outcome the client cannot know
 *   is StorageUnavailable, outcome `unknown`: a connection cut or reset
 *   mid-answer (undici's `terminated`, `UND_ERR_SOCKET`, ECONNRESET), an answer
 *   that is not valid JSON or not valid Hrana, a timeout, an HTTP 5xx other
 *   than 503. Only what surely applied nothing is `not_applied`: no connection
 *   made (ECONNREFUSED, a name not found), an HTTP 4xx or 503, a Hrana error
 *   answered by the server, a client closed before the call.
 * - On D1 (which says less), its network and overload errors are
 *   StorageUnavailable, unknown unless D1 refused at once.
 */
export function storageError(error: unknown, reach: Reach): unknown {
  const links = chain(error);
  const described = links.map((link) => `${String(link.code ?? "")} ${link.message ?? ""}`).join(" ");
  const reason = CONDITIONS.find(([pattern]) => pattern.test(described))?.[1];
  if (reason) return new StorageUnavailable(error, "not_applied", reason);
  if (/CLIENT_CLOSED/.test(described) || links.some((link) => link.name === "ClientError" && /manually closed/.test(link.message ?? ""))) {
    return new StorageUnavailable(error, "not_applied", "closed");
  }
  if (reach === "local") return error;
  if (reach === "d1") {
    if (!D1_TRANSIENT.test(described)) return error;
    return D1_REFUSED.test(described) ? new StorageUnavailable(error, "not_applied", "refused") : new StorageUnavailable(error, "unknown", "connection_lost");
  }
  // The server answered with a Hrana error: a statement's (SQLite's words) or the stream's.
  const answered = links.find((link) => link.name === "ResponseError");
  if (answered) return /^(SQLITE_|SQL_|ARGS_)/.test(String(answered.code ?? "")) ? error : new StorageUnavailable(error, "not_applied", "refused");
  const status = links.find((link) => link.name === "HttpServerError")?.status;
  if (typeof status === "number") {
    return status === 503 || (status >= 400 && status < 500) ? new StorageUnavailable(error, "not_applied", "refused") : new StorageUnavailable(error, "unknown", "server_error");
  }
  if (links.some((link) => NOT_CONNECTED.test(String(link.code)))) return new StorageUnavailable(error, "not_applied", "unreachable");
  if (links[0]?.name === "RangeError" || BAD_ARGUMENT.test(links[0]?.message ?? "")) return error;
  if (links.some((link) => link.name === "TimeoutError" || link.name === "AbortError")) return new StorageUnavailable(error, "unknown", "timeout");
  return new StorageUnavailable(error, "unknown", "connection_lost");
}

/**
 * Whether a statement only reads: it needs no write transaction, and its
 * success says nothing about writes. A SELECT, or a WITH whose text names no
 * write (the reads that gather their parts in common table expressions: the
 * stats, a page of keys, why a claim was refused).
 */
export function readsOnly(statement: Statement): boolean {
  return /^\s*SELECT\b/i.test(statement.sql) || (/^\s*WITH\b/i.test(statement.sql) && !/\b(INSERT|UPDATE|DELETE|REPLACE)\b/i.test(statement.sql));
}

/**
 * A local libSQL statement is freed only when the event loop gets a turn
 * (tursodatabase/libsql-js#153), so a caller awaiting the store in a tight
 * loop would grow without bound: the local drivers yield a turn every this many calls.
 */
export const YIELD_EVERY = 100;

/** One turn of the event loop. */
export function yieldTurn(): Promise<void> {
  return new Promise((resolve) => (globalThis.setImmediate ?? setTimeout)(resolve));
}
