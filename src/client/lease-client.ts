import { errorFromResponse, UnavailableError } from "./errors.ts";
import { delayBefore, neverSent, type RetryOptions, type RetryPolicy, retryPolicy } from "./retry.ts";
import { queuePath, QueueCalls } from "./queue-calls.ts";
import type { Repeat } from "./schedule-calls.ts";
import type {
  CancelRequest,
  ClaimedLeases,
  ClaimNextAnswer,
  ClaimNextRequest,
  ClaimRequest,
  CompleteManyAnswer,
  CompleteManyRequest,
  CompleteRequest,
  Enqueued,
  EnqueueRequest,
  EventPage,
  EventsRequest,
  FailRequest,
  Job,
  JobPage,
  Lease,
  LeaseCheck,
  LeaseCheckRequest,
  ListRequest,
  NewJobRequest,
  ReleaseRequest,
  RenewManyAnswer,
  RenewManyRequest,
  RenewRequest,
  Settled,
} from "./types.ts";

/** Where the API is and how to reach it. */
export type LeaseClientOptions = {
  /** The server, e.g. `http://127.0.0.1:8787` or `https://fencelease.example.workers.dev`. */
  baseUrl: string;
  /** A bearer token from the server's FENCELEASE_TOKENS; none for a server with auth off. */
  token?: string;
  /** The fetch to use; default the global one (Workers, Node >= 20, Deno, Bun, browsers). */
  fetch?: typeof fetch;
  retry?: RetryOptions;
  /** How long one attempt may wait for its answer before it counts as a broken connection; default 30 s. */
  timeoutMs?: number;
};

/** What one call may add: how long the server may wait before answering (a long poll), and a signal to give up. */
type CallOptions = { waitMs?: number; signal?: AbortSignal };

/** The longest a server waits in one long poll (MAX_WAIT_MS in src/http/shapes.ts). */
export const MAX_WAIT_MS = 30_000;

/** The `details.outcome` of an error answer, if it has one. */
function outcomeOf(answer: unknown): unknown {
  return (answer as { error?: { details?: { outcome?: unknown } } } | undefined)?.error?.details?.outcome;
}

/**
 * LeaseClient calls the fencelease HTTP API, one method per route (those of
 * queues in QueueCalls, of schedules in ScheduleCalls). A refusal
 * throws a typed error (LeaseLostError, NotClaimableError, NotFoundError,
 * UnauthorizedError, InvalidRequestError, UnavailableError).
 *
 * @example
 * const client = new LeaseClient({ baseUrl: "http://127.0.0.1:8787", token: process.env.FENCELEASE_TOKEN });
 * const { fence } = await client.claim("invoice-42", { owner: "worker-a", ttlMs: 30_000 });
 */
export class LeaseClient extends QueueCalls {
  readonly #baseUrl: string;
  readonly #token: string | undefined;
  readonly #fetch: typeof fetch;
  readonly #retry: RetryPolicy;
  readonly #timeoutMs: number;

  constructor(options: LeaseClientOptions) {
    super();
    this.#baseUrl = options.baseUrl.replace(/\/+$/, "");
    this.#token = options.token;
    this.#fetch = options.fetch ?? ((input, init) => fetch(input, init));
    this.#retry = retryPolicy(options.retry);
    this.#timeoutMs = options.timeoutMs ?? 30_000;
    if (!Number.isSafeInteger(this.#timeoutMs) || this.#timeoutMs < 1) throw new RangeError(`timeoutMs must be a positive whole number of ms, got ${options.timeoutMs}`);
  }

  /** enqueue adds a job; an existing id answers `created: false` with the job unchanged. */
  enqueue(job: EnqueueRequest): Promise<{ created: boolean; job: Job }> {
    return this.#call("POST", "/v1/jobs", job, "always");
  }

  /**
   * enqueueMany adds 1 to 1,000 jobs to a queue in one transaction and answers,
   * in order, whether each was created (an id that exists is left untouched).
   * Safe to send again: a repeat creates nothing twice.
   */
  async enqueueMany(queue: string, jobs: NewJobRequest[]): Promise<Enqueued[]> {
    return (await this.#call<{ jobs: Enqueued[] }>("POST", `${queuePath(queue)}/jobs`, { jobs }, "always")).jobs;
  }

  /**
   * get reads a job; NotFoundError if there is none. With `waitMs` (up to
   * 30,000) the server answers as soon as the job is done, dead or cancelled,
   * or as it is once `waitMs` has passed.
   */
  get(id: string, options: CallOptions = {}): Promise<Job> {
    return this.#call("GET", `${jobPath(id)}${queryString({ waitMs: options.waitMs || undefined })}`, undefined, "always", options);
  }

  /**
   * waitFor long-polls a job until it is done, dead or cancelled, or `timeoutMs`
   * (default 60 s) has passed, and answers it as it then is: check its `status`.
   * Each request waits at most 30 s on the server; NotFoundError if there is no such job.
   */
  async waitFor(id: string, options: { timeoutMs?: number; signal?: AbortSignal } = {}): Promise<Job> {
    const timeoutMs = options.timeoutMs ?? 60_000;
    if (!Number.isSafeInteger(timeoutMs) || timeoutMs < 0) throw new RangeError(`waitFor: timeoutMs must be a whole number of ms, 0 or more, got ${options.timeoutMs}`);
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const waitMs = Math.max(0, Math.min(MAX_WAIT_MS, deadline - Date.now()));
      const job = await this.get(id, { waitMs, signal: options.signal });
      if (job.status === "done" || job.status === "dead" || job.status === "cancelled" || Date.now() >= deadline) return job;
    }
  }

  /** claim takes the lease of one job: NotClaimableError while another holds it or once it is done. */
  claim(id: string, request: ClaimRequest): Promise<Lease> {
    return this.#call("POST", `${jobPath(id)}/claim`, request, "if-unsent");
  }

  /**
   * claimNext takes the leases of up to `limit` due jobs of a queue; an empty
   * list when none is due. With `waitMs` (up to 30,000) the server waits that
   * long for a job while none is due (a long poll); this attempt then waits
   * `timeoutMs` more for the answer. Aborting `signal` gives up the wait: the
   * server takes nothing for a client that has gone. When the queue's rate
   * limit stopped it short, the list's `retryAfterMs` says in how many ms the
   * next token is due: ask again then, not before.
   */
  async claimNext(queue: string, request: ClaimNextRequest, options: { signal?: AbortSignal } = {}): Promise<ClaimedLeases> {
    const { leases, retryAfterMs } = await this.claimNextAnswer(queue, request, options);
    return retryAfterMs === undefined ? leases : Object.assign(leases, { retryAfterMs });
  }

  /**
   * claimNextAnswer is claimNext that answers the server's whole answer: with
   * `waitMs`, also `waitedMs`, how long the server waited before the claim
   * that took the leases. They began no earlier than this call's send time
   * plus `waitedMs`, on this process's clock: where a lease's deadline starts.
   */
  claimNextAnswer(queue: string, request: ClaimNextRequest, options: { signal?: AbortSignal } = {}): Promise<ClaimNextAnswer> {
    return this.#call("POST", `${queuePath(queue)}/claim`, request, "if-unsent", { waitMs: request.waitMs, signal: options.signal });
  }

  /**
   * renew extends the current lease and answers its new end, storing `progress`
   * (any JSON value, at most 4096 bytes as JSON) on the job if given;
   * LeaseLostError if the lease is not current (reason cancelled once the job
   * is), and then nothing is stored.
   */
  async renew(id: string, request: RenewRequest): Promise<number> {
    return (await this.#call<{ until: number }>("POST", `${jobPath(id)}/renew`, request, "always")).until;
  }

  /**
   * complete stores the result of the current lease and answers the done job;
   * LeaseLostError if it is not current. With `next`, it also takes the next
   * due jobs of the queue in the same transaction, answered as `leases`.
   */
  async complete(id: string, request: CompleteRequest): Promise<Settled> {
    // With next it also claims, and a claim is not safe to send twice.
    const answer = await this.#call<{ job: Job; leases?: Lease[] }>("POST", `${jobPath(id)}/complete`, request, request.next ? "if-unsent" : "always");
    return { job: answer.job, leases: answer.leases ?? [] };
  }

  /** release gives the lease back; LeaseLostError if it is not current. */
  async release(id: string, request: ReleaseRequest): Promise<Job> {
    return (await this.#call<{ job: Job }>("POST", `${jobPath(id)}/release`, request, "if-unsent")).job;
  }

  /**
   * fail ends the current lease as a failed attempt, keeping `error` as the job's
   * lastError, and answers the job: due again after `retryInMs` or the server's
   * backoff (status scheduled), or dead after its last attempt; with `next`, and
   * the leases taken as complete does. LeaseLostError if the lease is not current.
   */
  async fail(id: string, request: FailRequest): Promise<Settled> {
    const answer = await this.#call<{ job: Job; leases?: Lease[] }>("POST", `${jobPath(id)}/fail`, request, "if-unsent");
    return { job: answer.job, leases: answer.leases ?? [] };
  }

  /**
   * renewMany extends 1 to 1,000 leases of one owner in one call, each decided
   * alone: one heartbeat for every lease a worker holds. Answers each lease, in
   * order, with its new `until` or the `error` (code, message, details) a single
   * renew would have thrown.
   */
  async renewMany(request: RenewManyRequest): Promise<RenewManyAnswer["leases"]> {
    return (await this.#call<RenewManyAnswer>("POST", "/v1/leases/renew", request, "always")).leases;
  }

  /**
   * completeMany stores the results of 1 to 1,000 leases of one owner in one
   * call, each decided alone; with `next`, it also takes up to `next.limit` due
   * jobs of `next.queue` in the same transaction. Answers each completion, in
   * order, `done: true` or its `error`, and the `leases` taken.
   */
  completeMany(request: CompleteManyRequest): Promise<CompleteManyAnswer> {
    return this.#call("POST", "/v1/leases/complete", request, request.next ? "if-unsent" : "always");
  }

  /** retry puts a dead job back in its queue, due at once with its attempts reset; ConflictError if it is not dead. */
  async retry(id: string): Promise<Job> {
    return (await this.#call<{ job: Job }>("POST", `${jobPath(id)}/retry`, undefined, "if-unsent")).job;
  }

  /**
   * cancel makes a queued, scheduled or leased job cancelled, a final status,
   * recording who (`by`, default "api") and why; its holder's next renew,
   * complete, fail or release is refused with LeaseLostError reason cancelled.
   * Answers the job. A job already cancelled is answered as it is (safe to
   * send again); ConflictError once it is done or dead,
   * NotFoundError if there is none.
   */
  async cancel(id: string, request: CancelRequest = {}): Promise<Job> {
    return (await this.#call<{ job: Job }>("POST", `${jobPath(id)}/cancel`, request, "always")).job;
  }

  /** delete removes a job that is not leased; ConflictError while it is, NotFoundError if there is none. */
  async delete(id: string): Promise<void> {
    await this.#call("DELETE", jobPath(id), undefined, "if-unsent");
  }

  /**
   * list answers a page of jobs in id order, of one queue and one status if
   * given (limit 1 to 100, default 50); pass `nextCursor` back as `cursor` for
   * the next page, until it is null.
   */
  list(request: ListRequest = {}): Promise<JobPage> {
    return this.#call("GET", `/v1/jobs${queryString(request)}`, undefined, "always");
  }

  /** events answers a page of a job's history, oldest first (limit 1 to 1000, default 100); an unknown id has none. */
  events(id: string, request: EventsRequest = {}): Promise<EventPage> {
    return this.#call("GET", `${jobPath(id)}/events${queryString(request)}`, undefined, "always");
  }

  /**
   * checkLease answers whether (owner, fence) is the job's current lease, with
   * the job's fence and lease end: what a downstream system asks before it
   * accepts a side effect. NotFoundError if there is no such job.
   */
  checkLease(id: string, request: LeaseCheckRequest): Promise<LeaseCheck> {
    return this.#call("GET", `${jobPath(id)}/lease${queryString(request)}`, undefined, "always");
  }

  /** The transport of QueueCalls and ScheduleCalls: #call. */
  protected send<T>(method: string, path: string, body: unknown, repeat: Repeat): Promise<T> {
    return this.#call(method, path, body, repeat);
  }

  /** Sends one call, retrying what may be retried, and answers its JSON or throws its typed error. */
  async #call<T>(method: string, path: string, body: unknown, repeat: Repeat, options: CallOptions = {}): Promise<T> {
    const headers: Record<string, string> = {};
    if (this.#token) headers.Authorization = `Bearer ${this.#token}`;
    if (body !== undefined) headers["Content-Type"] = "application/json";
    const init: RequestInit = { method, headers, body: body === undefined ? undefined : JSON.stringify(body) };

    for (let attempt = 0; ; attempt++) {
      const retriesLeft = attempt < this.#retry.retries;
      let response: Response;
      try {
        // A server that never answers is a broken connection: the outcome of the call is unknown.
        // A long poll may be answered only after its waitMs: it gets that much more.
        const timeout = AbortSignal.timeout(this.#timeoutMs + (options.waitMs ?? 0));
        response = await this.#fetch(`${this.#baseUrl}${path}`, { ...init, signal: options.signal ? AbortSignal.any([timeout, options.signal]) : timeout });
      } catch (error) {
        options.signal?.throwIfAborted(); // given up by the caller: not a failure to retry
        if (retriesLeft && (repeat === "always" || neverSent(error))) {
          await this.#retry.sleep(delayBefore(attempt, this.#retry, null));
          continue;
        }
        throw new UnavailableError(0, "unreachable", `could not reach ${this.#baseUrl}: ${(error as Error).message}`, undefined, { cause: error });
      }
      const answer = await response.json().catch(() => undefined);
      // A 503 whose details say "not_applied" wrote nothing, so any call may be sent again; one whose
      // outcome is unknown (the database's connection broke) only a call that is safe to repeat.
      if (response.status === 503 && retriesLeft && (repeat === "always" || outcomeOf(answer) === "not_applied")) {
        await this.#retry.sleep(delayBefore(attempt, this.#retry, response.headers.get("Retry-After")));
        continue;
      }
      if (!response.ok) throw errorFromResponse(response.status, answer);
      return answer as T;
    }
  }
}


/** The path of a job, its id encoded. */
function jobPath(id: string): string {
  return `/v1/jobs/${encodeURIComponent(id)}`;
}

/** `?name=value&...` of the parameters given, or "" when none is. */
function queryString(parameters: Record<string, string | number | undefined>): string {
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(parameters)) if (value !== undefined) query.set(name, String(value));
  const text = query.toString();
  return text === "" ? "" : `?${text}`;
}
