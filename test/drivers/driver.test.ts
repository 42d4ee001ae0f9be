import { describe, expect, test } from "vitest";
import { storageError } from "../../src/drivers/driver.ts";
import { StorageUnavailable } from "../../src/index.ts";

// Whether a failed write may have landed decides whether a client may send a
// claim again, and whether group commit may run a group's callers again, so
// the classification is tested on its own. The errors are built as undici,
// @libsql/client and libSQL build them (test/store/remote.test.ts meets the
// real ones, from a server that cuts its answers).

/** An error named and coded as the library that throws it names and codes it. */
function named(name: string, message: string, extra: Record<string, unknown> = {}): Error {
  return Object.assign(new Error(message), { name, ...extra });
}

const sqlite = (code: string, message: string) => Object.assign(new Error(`${code}: ${message}`), { code });

/** What @libsql/client throws when the server answered a statement with an error. */
const answered = (code: string, message: string) => named("LibsqlError", `${code}: ${message}`, { code, cause: named("ResponseError", message, { code }) });

describe("storageError", () => {
  test("on a local file, SQLite's conditions are StorageUnavailable not_applied, each with its reason: the batch was rolled back", () => {
    for (const [error, reason] of [
      [sqlite("SQLITE_BUSY", "database is locked"), "busy"],
      [sqlite("SQLITE_READONLY", "attempt to write a readonly database"), "read_only"],
      [sqlite("SQLITE_CORRUPT", "database disk image is malformed"), "corrupt"],
      [sqlite("SQLITE_NOTADB", "file is not a database"), "corrupt"],
      [sqlite("SQLITE_FULL", "database or disk is full"), "full"],
      [sqlite("SQLITE_IOERR_WRITE", "disk I/O error"), "io"],
      [Object.assign(new Error("The driver is closed"), { code: "CLIENT_CLOSED" }), "closed"],
    ] as const) {
      expect(storageError(error, "local")).toMatchObject({ name: "StorageUnavailable", outcome: "not_applied", reason });
    }
  });

  test("a statement the database refused is passed on as it is, locally and remotely: its batch was rolled back", () => {
    const wrong = sqlite("SQLITE_ERROR", "no such table: jobs");
    expect(storageError(wrong, "local")).toBe(wrong);
    const trigger = answered("SQLITE_CONSTRAINT_TRIGGER", "a fence may only grow");
    expect(storageError(trigger, "remote")).toBe(trigger);
    const d1 = new Error("D1_ERROR: UNIQUE constraint failed: jobs.id: SQLITE_CONSTRAINT");
    expect(storageError(d1, "d1")).toBe(d1);
  });

  test("over a network, a refusal before anything ran applied nothing", () => {
    const notApplied = (error: unknown) => expect(storageError(error, "remote")).toMatchObject({ name: "StorageUnavailable", outcome: "not_applied" });
    notApplied(answered("SQLITE_BUSY", "database is locked"));
    notApplied(new TypeError("fetch failed", { cause: named("Error", "connect ECONNREFUSED 127.0.0.1:8080", { code: "ECONNREFUSED" }) }));
    notApplied(new TypeError("fetch failed", { cause: named("Error", "getaddrinfo ENOTFOUND db.example", { code: "ENOTFOUND" }) }));
    notApplied(named("LibsqlError", "SERVER_ERROR: Server returned HTTP status 503", { code: "SERVER_ERROR", cause: named("HttpServerError", "Server returned HTTP status 503", { status: 503 }) }));
    notApplied(named("LibsqlError", "SERVER_ERROR: Server returned HTTP status 401", { code: "SERVER_ERROR", cause: named("HttpServerError", "Server returned HTTP status 401", { status: 401 }) }));
    notApplied(answered("STREAM_EXPIRED", "The stream has expired due to inactivity"));
    notApplied(named("LibsqlError", "UNKNOWN: Client is closed", { code: "UNKNOWN", cause: named("ClosedError", "Client is closed", { cause: named("ClientError", "Client was manually closed") }) }));
  });

  test("over a network, a connection that broke on the way leaves the outcome unknown, whatever form the break takes", () => {
    const unknown = (error: unknown, reason = "connection_lost") => expect(storageError(error, "remote")).toMatchObject({ name: "StorageUnavailable", outcome: "unknown", reason });
    unknown(new TypeError("terminated", { cause: named("SocketError", "other side closed", { code: "UND_ERR_SOCKET" }) })); // cut mid-answer
    unknown(new TypeError("fetch failed", { cause: named("SocketError", "other side closed", { code: "UND_ERR_SOCKET" }) }));
    unknown(new TypeError("fetch failed", { cause: named("Error", "read ECONNRESET", { code: "ECONNRESET" }) }));
    unknown(new SyntaxError("Unexpected end of JSON input")); // a truncated body
    unknown(named("LibsqlError", "HRANA_PROTO_ERROR: Server returned unexpected number of pipeline results", { code: "HRANA_PROTO_ERROR", cause: named("ProtoError", "Server returned unexpected number of pipeline results") }));
    unknown(named("LibsqlError", "SERVER_ERROR: Server returned HTTP status 502", { code: "SERVER_ERROR", cause: named("HttpServerError", "Server returned HTTP status 502", { status: 502 }) }), "server_error");
    unknown(new DOMException("The operation was aborted due to timeout", "TimeoutError"), "timeout");
    unknown(new Error("something no one foresaw"));
    expect(storageError(new Error("D1_ERROR: Network connection lost."), "d1")).toMatchObject({ outcome: "unknown" });
  });

  test("an argument @libsql/client cannot send is passed on as it is: nothing was sent", () => {
    for (const error of [new TypeError("undefined cannot be passed as argument to the database"), new RangeError("Only finite numbers (not Infinity or NaN) can be passed as arguments")]) {
      expect(storageError(error, "remote")).toBe(error);
      expect(storageError(error, "remote")).not.toBeInstanceOf(StorageUnavailable);
    }
  });
});
