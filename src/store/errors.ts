// The store's refusals, as domain errors. The HTTP layer maps each to its
// status in one place (src/http/errors.ts); the store never knows about HTTP.
// Each carries its `code` and, where it has them, the `details` an answer
// shows, so that whoever maps it (the HTTP layer, the client in the same
// process) reads them from the error rather than from its class.

/** An argument that breaks the store's contract; nothing was written. */
export class InvalidArgument extends RangeError {
  readonly code = "invalid_request";
  constructor(message: string) {
    super(message);
    this.name = "InvalidArgument";
  }
}

/** No job has this id (or, as `message` says, nothing else of that name: a schedule). */
export class NotFound extends Error {
  readonly code = "not_found";
  readonly id: string;
  constructor(id: string, message = `no job has the id ${JSON.stringify(id)}`) {
    super(message);
    this.id = id;
    this.name = "NotFound";
  }
}

/**
 * Why a job cannot be claimed now: another lease holds it, it is done, it is
 * dead, it is cancelled, its queue is paused, its queue's rate limit has no
 * token left (rate_limited), or its queue has its maxLeased current leases
 * (full); or its key has its maxLeasedPerKey current leases (key_full), no
 * token left in its bucket (key_rate_limited), or, in a queue ordered by key,
 * an earlier job to run first (key_ordered).
 */
export type NotClaimableReason = "leased" | "done" | "dead" | "cancelled" | "paused" | "rate_limited" | "full" | "key_full" | "key_rate_limited" | "key_ordered";

/**
 * What NotClaimable says for each reason. Built per call, as a refusal is
 * rare: a table made once at load could not be mutated by the mutation runs.
 */
function notClaimable(id: string, reason: NotClaimableReason): string {
  const says: Record<NotClaimableReason, string> = {
    leased: `job ${id} is leased by another worker; try again after its lease ends`,
    dead: `job ${id} is dead (its attempts are used up); retry it first`,
    done: `job ${id} is done and cannot be claimed again`,
    cancelled: `job ${id} is cancelled and cannot be claimed`,
    paused: `the queue of job ${id} is paused; try again after it is resumed`,
    rate_limited: `the queue of job ${id} has used up its rate limit; try again once its next token is due`,
    full: `the queue of job ${id} has its maxLeased current leases; try again after one ends`,
    key_full: `the key of job ${id} has its maxLeasedPerKey current leases; try again after one ends`,
    key_rate_limited: `the key of job ${id} has used up its rate limit; try again once its next token is due`,
    key_ordered: `job ${id} waits for the earlier jobs of its key (its queue is ordered by key); they run first`,
  };
  return says[reason];
}

/** The job exists but cannot be claimed now. */
export class NotClaimable extends Error {
  readonly code = "not_claimable";
  readonly id: string;
  readonly reason: NotClaimableReason;
  /** key_ordered: the job of its key that runs first (held, or waiting for its retry or its time). */
  readonly behind: string | undefined;
  constructor(id: string, reason: NotClaimableReason, behind?: string) {
    super(notClaimable(JSON.stringify(id), reason) + (behind === undefined ? "" : ` (job ${JSON.stringify(behind)} first)`));
    this.name = "NotClaimable";
    this.id = id;
    this.reason = reason;
    this.behind = behind;
  }

  /** What an answer shows of it: the reason, and for key_ordered the job it waits behind. */
  get details(): { reason: NotClaimableReason; behind?: string } {
    return this.behind === undefined ? { reason: this.reason } : { reason: this.reason, behind: this.behind };
  }
}

/**
 * Why a write with a lease was refused: a newer lease exists (superseded),
 * the lease is another's or was given back (not_owner), the job is done, the
 * job was cancelled while this lease held it (cancelled), or the lease ran out
 * (expired).
 */
export type LeaseLostReason = "superseded" | "not_owner" | "done" | "cancelled" | "expired";

/** A renew, complete or release from a lease that is not the current one; nothing was written. */
export class LeaseLost extends Error {
  readonly code = "stale_lease";
  readonly id: string;
  readonly reason: LeaseLostReason;
  readonly currentFence: number;
  constructor(id: string, reason: LeaseLostReason, currentFence: number) {
    super(`the lease on job ${JSON.stringify(id)} is no longer yours (${reason}); the current fence is ${currentFence}`);
    this.name = "LeaseLost";
    this.id = id;
    this.reason = reason;
    this.currentFence = currentFence;
  }

  /** What an answer shows of it: the reason, and the job's fence now. */
  get details(): { reason: LeaseLostReason; currentFence: number } {
    return { reason: this.reason, currentFence: this.currentFence };
  }
}

/** Which of a job's limits on steps a step would go over: how many it may record, or how many bytes their results may take. */
export type StepLimitCode = "too_many_steps" | "steps_too_large";

/** A step that would take its job over its limit of steps (MAX_STEPS) or of their results' bytes (MAX_STEP_BYTES); nothing was written. */
export class StepLimit extends Error {
  readonly code: StepLimitCode;
  readonly id: string;
  readonly limit: number;
  constructor(id: string, code: StepLimitCode, limit: number, message: string) {
    super(message);
    this.name = "StepLimit";
    this.code = code;
    this.id = id;
    this.limit = limit;
  }

  /** What an answer shows of it: the limit it would go over. */
  get details(): { limit: number } {
    return { limit: this.limit };
  }
}

/**
 * Whether a write that met StorageUnavailable may have been applied: `not_applied`
 * when the database refused before committing (busy, locked, not open), `unknown`
 * when the connection broke on the way and the commit may have happened.
 */
export type Outcome = "not_applied" | "unknown";

/**
 * Why the database could not serve a call. On the database itself: `busy`
 * (another writer held the lock past the busy timeout), `read_only`,
 * `corrupt`, `full` (the disk, or the database's size limit), `io` (the file
 * cannot be read, written or opened), `closed` (the store was closed). On the
 * way to a remote one: `unreachable` (no connection could be made), `refused`
 * (it answered with an error before running anything: an HTTP 4xx or 503, a
 * stream error), `timeout` (no answer within the statement timeout),
 * `connection_lost` (the connection broke, or the answer was cut or
 * malformed), `server_error` (an HTTP 5xx other than 503).
 */
export type StorageReason = "busy" | "read_only" | "corrupt" | "full" | "io" | "closed" | "unreachable" | "refused" | "timeout" | "connection_lost" | "server_error";

/** What happened, in words a person can act on (built per call, as notClaimable's table is). */
function whatHappened(reason: StorageReason): string {
  const says: Record<StorageReason, string> = {
    busy: "the database is busy (another writer holds its lock)",
    read_only: "the database is read-only: check the permissions of its file and folder, and the disk's mount (a file that was read-only when the server opened it stays so until a restart)",
    corrupt: "the database file is corrupt (SQLITE_CORRUPT): restore it from a backup, or rebuild it with the sqlite3 shell's .recover",
    full: "the database's disk is full, or the database reached its size limit: free some space",
    io: "the database file cannot be read or written (an I/O error): check its disk",
    closed: "the database connection is closed",
    unreachable: "the database cannot be reached",
    refused: "the database refused the request",
    timeout: "the database did not answer in time",
    connection_lost: "the database connection broke",
    server_error: "the database answered with a server error",
  };
  return says[reason];
}

/** The database cannot serve the call now: `reason` says why, `outcome` whether a write may have been applied. */
export class StorageUnavailable extends Error {
  readonly code = "unavailable";
  readonly outcome: Outcome;
  readonly reason: StorageReason;
  constructor(cause: unknown, outcome: Outcome, reason: StorageReason = outcome === "unknown" ? "connection_lost" : "busy") {
    super(
      outcome === "not_applied"
        ? `${whatHappened(reason)}; nothing was written${reason === "busy" || reason === "unreachable" || reason === "refused" ? "; retry shortly" : ""}`
        : `${whatHappened(reason)}: the write may or may not have been applied; read the job before you retry`,
      { cause },
    );
    this.name = "StorageUnavailable";
    this.outcome = outcome;
    this.reason = reason;
  }

  /** What an answer shows of it: whether a write may have been applied, and why it could not be served. */
  get details(): { outcome: Outcome; reason: StorageReason } {
    return { outcome: this.outcome, reason: this.reason };
  }
}

/**
 * The job is in a status that does not allow what was asked: retry a job that
 * is not dead, delete a leased one, cancel one that is done or dead.
 */
export class WrongStatus extends Error {
  readonly code = "conflict";
  readonly id: string;
  readonly status: string;
  constructor(id: string, status: string, message: string) {
    super(message);
    this.name = "WrongStatus";
    this.id = id;
    this.status = status;
  }

  /** What an answer shows of it: the job's status. */
  get details(): { status: string } {
    return { status: this.status };
  }
}

/**
 * A put of a schedule whose name another call took since the put read who
 * held it: the queue holding the name is no longer the one it may replace.
 * Nothing was written; read it again and send the put again.
 */
export class ScheduleNameTaken extends Error {
  readonly code = "conflict";
  constructor(name: string) {
    super(`the schedule name ${JSON.stringify(name)} was taken by another call meanwhile; nothing changed: read it and send the put again`);
    this.name = "ScheduleNameTaken";
  }
}
