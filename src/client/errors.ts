import type { ErrorBody } from "../http/errors.ts";

/** Any error the fencelease API answered, or the failure to reach it: carries the server's code and message. */
export class FenceleaseError extends Error {
  readonly status: number;
  readonly code: string;
  readonly details: Record<string, unknown> | undefined;
  constructor(status: number, code: string, message: string, details?: Record<string, unknown>, options?: ErrorOptions) {
    super(message, options);
    this.name = new.target.name;
    this.status = status;
    this.code = code;
    this.details = details;
  }
}

/** 409 stale_lease: this lease is no longer the current one; do not write its result anywhere. */
export class LeaseLostError extends FenceleaseError {
  /** superseded, not_owner, done, cancelled or expired (the server's reason). */
  get reason(): string {
    return String(this.details?.reason ?? "unknown");
  }
  /** The job's fence now; a downstream system should refuse anything below it. */
  get currentFence(): number | undefined {
    return this.details?.currentFence as number | undefined;
  }
}

/** 409 not_claimable: the job is leased by another worker, or done, or its queue or its key holds it back for now. */
export class NotClaimableError extends FenceleaseError {
  /**
   * leased, done, dead, cancelled, paused (the queue is paused), rate_limited
   * (the queue's rate limit has no token left), full (the queue has its
   * maxLeased current leases), key_full (its key has its maxLeasedPerKey
   * current leases), key_rate_limited (its key's rate limit has no token
   * left) or key_ordered (an earlier job of its key runs first: `behind`).
   */
  get reason(): string {
    return String(this.details?.reason ?? "unknown");
  }
  /** key_ordered: the id of the job of its key that runs first; else undefined. */
  get behind(): string | undefined {
    return this.details?.behind as string | undefined;
  }
}

/**
 * 409 conflict: the job's status does not allow what was asked: a retry of a
 * job that is not dead, a delete of a leased one, a cancel of one done or
 * dead. (`status` is the HTTP status, 409; the job's status is `jobStatus`.)
 */
export class ConflictError extends FenceleaseError {
  /** The job's status when it was refused: queued, scheduled, leased, done, dead or cancelled (the server's details.status). */
  get jobStatus(): string {
    return String(this.details?.status ?? "unknown");
  }
}

/** 404 not_found: no job has this id (or 404 route_not_found: the URL is wrong). */
export class NotFoundError extends FenceleaseError {}

/** 401 unauthorized: a missing or wrong token. */
export class UnauthorizedError extends FenceleaseError {}

/** 403 forbidden: the token's role or queues do not allow this call; `message` names the role and queue it needs. */
export class ForbiddenError extends FenceleaseError {}

/** 400 invalid_request, or 413 payload_too_large, too_many_steps or steps_too_large: the request breaks a rule; `message` says which. */
export class InvalidRequestError extends FenceleaseError {}

/** 503, or no answer at all: the server or its database could not be reached, after the retries allowed. */
export class UnavailableError extends FenceleaseError {}

const BY_CODE: Record<string, typeof FenceleaseError> = {
  stale_lease: LeaseLostError,
  not_claimable: NotClaimableError,
  conflict: ConflictError,
  not_found: NotFoundError,
  route_not_found: NotFoundError,
  unauthorized: UnauthorizedError,
  forbidden: ForbiddenError,
  invalid_request: InvalidRequestError,
  payload_too_large: InvalidRequestError,
  too_many_steps: InvalidRequestError,
  steps_too_large: InvalidRequestError,
  unavailable: UnavailableError,
};

/** The typed error for an error response of the API; `options` may give its cause. */
export function errorFromResponse(status: number, body: unknown, options?: ErrorOptions): FenceleaseError {
  const error = (body as Partial<ErrorBody> | undefined)?.error;
  if (!error || typeof error.code !== "string") {
    return new FenceleaseError(status, "unexpected_response", `the server answered ${status} without an error body`);
  }
  const Type = BY_CODE[error.code] ?? (status === 503 ? UnavailableError : FenceleaseError);
  return new Type(status, error.code, error.message, error.details, options);
}

/** The HTTP status of each refusal of the store, as the server answers it (src/http/errors.ts). */
const STATUS_OF: Record<string, number> = {
  invalid_request: 400,
  not_found: 404,
  not_claimable: 409,
  stale_lease: 409,
  conflict: 409,
  too_many_steps: 413,
  steps_too_large: 413,
  unavailable: 503,
};

/**
 * The typed error for a refusal of a store called in this process (a domain
 * error of src/store/errors.ts, told by its `code`): the same error, status,
 * code, message and details the server would answer for it. Anything else is
 * answered as it is.
 */
export function errorFromStore(error: unknown): unknown {
  const { code, message, details } = (error ?? {}) as { code?: unknown; message?: string; details?: Record<string, unknown> };
  if (typeof code !== "string" || !(code in STATUS_OF)) return error;
  return errorFromResponse(STATUS_OF[code]!, { error: { code, message: message ?? code, ...(details && { details }) } }, { cause: error });
}
