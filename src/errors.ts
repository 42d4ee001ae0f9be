// The store's refusals, as domain errors. The HTTP layer maps each to its
// status in one place (src/http/errors.ts); the store never knows about HTTP.

/** An argument that breaks the store's contract; nothing was written. */
export class InvalidArgument extends RangeError {
  readonly code = "invalid_request";
  constructor(message: string) {
    super(message);
    this.name = "InvalidArgument";
  }
}

/** No job has this id. */
export class NotFound extends Error {
  readonly code = "not_found";
  readonly id: string;
  constructor(id: string) {
    super(`no job has the id ${JSON.stringify(id)}`);
    this.id = id;
    this.name = "NotFound";
  }
}

/** Why a job cannot be claimed now: another lease holds it, it is done, or it is dead. */
export type NotClaimableReason = "leased" | "done" | "dead";

/** The job exists but cannot be claimed now. */
export class NotClaimable extends Error {
  readonly code = "not_claimable";
  readonly id: string;
  readonly reason: NotClaimableReason;
  constructor(id: string, reason: NotClaimableReason) {
    super(
      reason === "leased"
        ? `job ${JSON.stringify(id)} is leased by another worker; try again after its lease ends`
        : reason === "dead"
          ? `job ${JSON.stringify(id)} is dead (its attempts are used up); retry it first`
          : `job ${JSON.stringify(id)} is done and cannot be claimed again`,
    );
    this.name = "NotClaimable";
    this.id = id;
    this.reason = reason;
  }
}

/**
 * Why a write with a lease was refused: a newer lease exists (superseded),
 * the lease is another's or was given back (not_owner), the job is done, or
 * the lease ran out (expired).
 */
export type LeaseLostReason = "superseded" | "not_owner" | "done" | "expired";

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
}

/**
 * Whether a write that met StorageUnavailable may have been applied: `not_applied`
 * when the database refused before committing (busy, locked, not open), `unknown`
 * when the connection broke on the way and the commit may have happened.
 */
export type Outcome = "not_applied" | "unknown";

/** The database cannot be reached or is too busy to answer; the same call may work later. */
export class StorageUnavailable extends Error {
  readonly code = "unavailable";
  readonly outcome: Outcome;
  constructor(cause: unknown, outcome: Outcome) {
    super(
      outcome === "not_applied"
        ? "the database is unavailable and nothing was written; retry shortly"
        : "the database connection broke: the write may or may not have been applied; read the job before you retry",
      { cause },
    );
    this.name = "StorageUnavailable";
    this.outcome = outcome;
  }
}

/** The job is in a status that does not allow what was asked: retry a job that is not dead, delete a leased one. */
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
}
