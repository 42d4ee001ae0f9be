import { describe, expect, test } from "vitest";
import { InvalidArgument, LeaseLost, type LeaseLostReason, NotClaimable, type NotClaimableReason, NotFound, type Outcome, StorageUnavailable, type StorageReason, WrongStatus } from "../../src/index.ts";

// The store's refusals as their callers meet them: each one's name, code,
// fields and message. The messages are API: the HTTP layer sends them as they
// are (src/http/errors.ts), so each row spells one out as a person reads it.

/** What a caller reads of a refusal. */
function seen(error: Error & { code: string }, fields: string[] = []): Record<string, unknown> {
  return { name: error.name, code: error.code, message: error.message, ...Object.fromEntries(fields.map((field) => [field, (error as never)[field]])) };
}

describe("InvalidArgument", () => {
  test("is a RangeError, code invalid_request, with the message it was given", () => {
    const error = new InvalidArgument("ttlMs must be a positive safe integer, got 0");
    expect(error).toBeInstanceOf(RangeError);
    expect(seen(error)).toEqual({ name: "InvalidArgument", code: "invalid_request", message: "ttlMs must be a positive safe integer, got 0" });
  });
});

describe("NotFound", () => {
  test("names the job's id, quoted, when nothing else is said", () => {
    expect(seen(new NotFound("job-1"), ["id"])).toEqual({ name: "NotFound", code: "not_found", id: "job-1", message: 'no job has the id "job-1"' });
  });

  test("says what was not found when told (a schedule), and keeps the name as its id", () => {
    const error = new NotFound("nightly", 'no schedule has the name "nightly"');
    expect(seen(error, ["id"])).toEqual({ name: "NotFound", code: "not_found", id: "nightly", message: 'no schedule has the name "nightly"' });
  });
});

describe("NotClaimable", () => {
  const cases: [NotClaimableReason, string][] = [
    ["leased", 'job "job-1" is leased by another worker; try again after its lease ends'],
    ["done", 'job "job-1" is done and cannot be claimed again'],
    ["dead", 'job "job-1" is dead (its attempts are used up); retry it first'],
    ["cancelled", 'job "job-1" is cancelled and cannot be claimed'],
    ["paused", 'the queue of job "job-1" is paused; try again after it is resumed'],
    ["rate_limited", 'the queue of job "job-1" has used up its rate limit; try again once its next token is due'],
    ["full", 'the queue of job "job-1" has its maxLeased current leases; try again after one ends'],
  ];

  test.each(cases)("%s: %s", (reason, message) => {
    expect(seen(new NotClaimable("job-1", reason), ["id", "reason"])).toEqual({ name: "NotClaimable", code: "not_claimable", id: "job-1", reason, message });
  });

  test("quotes the id as JSON, so an id with spaces or quotes reads as one", () => {
    expect(new NotClaimable('nightly "big" report', "done").message).toBe('job "nightly \\"big\\" report" is done and cannot be claimed again');
  });
});

describe("LeaseLost", () => {
  const cases: [LeaseLostReason, number, string][] = [
    ["superseded", 3, 'the lease on job "job-1" is no longer yours (superseded); the current fence is 3'],
    ["not_owner", 2, 'the lease on job "job-1" is no longer yours (not_owner); the current fence is 2'],
    ["done", 1, 'the lease on job "job-1" is no longer yours (done); the current fence is 1'],
    ["cancelled", 4, 'the lease on job "job-1" is no longer yours (cancelled); the current fence is 4'],
    ["expired", 7, 'the lease on job "job-1" is no longer yours (expired); the current fence is 7'],
  ];

  test.each(cases)("%s, current fence %i: %s", (reason, currentFence, message) => {
    const error = new LeaseLost("job-1", reason, currentFence);
    expect(seen(error, ["id", "reason", "currentFence"])).toEqual({ name: "LeaseLost", code: "stale_lease", id: "job-1", reason, currentFence, message });
  });
});

describe("WrongStatus", () => {
  test("is code conflict, with the job's id, its status and the message it was given", () => {
    const error = new WrongStatus("job-1", "queued", 'only a dead job can be retried; job "job-1" is queued');
    expect(seen(error, ["id", "status"])).toEqual({ name: "WrongStatus", code: "conflict", id: "job-1", status: "queued", message: 'only a dead job can be retried; job "job-1" is queued' });
  });
});

describe("StorageUnavailable", () => {
  // Each reason with the outcome the drivers give it (docs/operations.md): a
  // refusal before the commit says nothing was written, and to retry shortly
  // when waiting can help; a broken connection says to read before retrying.
  const cases: [StorageReason, Outcome, string][] = [
    ["busy", "not_applied", "the database is busy (another writer holds its lock); nothing was written; retry shortly"],
    ["unreachable", "not_applied", "the database cannot be reached; nothing was written; retry shortly"],
    ["refused", "not_applied", "the database refused the request; nothing was written; retry shortly"],
    [
      "read_only",
      "not_applied",
      "the database is read-only: check the permissions of its file and folder, and the disk's mount (a file that was read-only when the server opened it stays so until a restart); nothing was written",
    ],
    ["corrupt", "not_applied", "the database file is corrupt (SQLITE_CORRUPT): restore it from a backup, or rebuild it with the sqlite3 shell's .recover; nothing was written"],
    ["full", "not_applied", "the database's disk is full, or the database reached its size limit: free some space; nothing was written"],
    ["io", "not_applied", "the database file cannot be read or written (an I/O error): check its disk; nothing was written"],
    ["closed", "not_applied", "the database connection is closed; nothing was written"],
    ["connection_lost", "unknown", "the database connection broke: the write may or may not have been applied; read the job before you retry"],
    ["timeout", "unknown", "the database did not answer in time: the write may or may not have been applied; read the job before you retry"],
    ["server_error", "unknown", "the database answered with a server error: the write may or may not have been applied; read the job before you retry"],
  ];

  test.each(cases)("%s, %s: %s", (reason, outcome, message) => {
    const cause = new Error("SQLITE_BUSY: database is locked");
    const error = new StorageUnavailable(cause, outcome, reason);
    expect(seen(error, ["reason", "outcome"])).toEqual({ name: "StorageUnavailable", code: "unavailable", reason, outcome, message });
    expect(error.cause).toBe(cause);
  });

  test("with no reason given: connection_lost when the outcome is unknown, busy when nothing was applied", () => {
    expect(seen(new StorageUnavailable(new Error("socket hang up"), "unknown"), ["reason", "outcome"])).toEqual({
      name: "StorageUnavailable",
      code: "unavailable",
      reason: "connection_lost",
      outcome: "unknown",
      message: "the database connection broke: the write may or may not have been applied; read the job before you retry",
    });
    expect(seen(new StorageUnavailable(new Error("SQLITE_BUSY"), "not_applied"), ["reason", "outcome"])).toEqual({
      name: "StorageUnavailable",
      code: "unavailable",
      reason: "busy",
      outcome: "not_applied",
      message: "the database is busy (another writer holds its lock); nothing was written; retry shortly",
    });
  });
});
