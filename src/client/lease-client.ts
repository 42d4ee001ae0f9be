import { PushCalls } from "./push.ts";
import { queuePath, QueueCalls } from "./queues.ts";
import { ScheduleCalls } from "./schedules.ts";
import { TokenCalls } from "./tokens.ts";
import { type HttpOptions, HttpTransport, queryString } from "./http-transport.ts";
import { type InProcessOptions, InProcessTransport } from "./in-process/transport.ts";
import type { CallOptions, Transport } from "./transport.ts";
import { inSendSpan } from "./tracing.ts";
import type { InProcessApi } from "./in-process/api.ts";
import type {
  BulkAnswer,
  BulkRequest,
  Cancelled,
  CancelRequest,
  ClaimedLeases,
  ClaimNextAnswer,
  ClaimNextRequest,
  ClaimRequest,
  CompleteManyAnswer,
  CompleteManyRequest,
  CompleteRequest,
  Enqueued,
  EnqueueAnswer,
  PlainEnqueueRequest,
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
  StepAnswer,
  StepRequest,
} from "./types.ts";

export type { HttpOptions } from "./http-transport.ts";
export type { EmbeddedStore } from "./in-process/embedded-store.ts";
export type { InProcessOptions } from "./in-process/transport.ts";

/** Where a LeaseClient's calls go: to a server over HTTP (`baseUrl`), or to a store in this process (`store`). */
export type LeaseClientOptions = HttpOptions | InProcessOptions;

/** The longest a server waits in one long poll (MAX_WAIT_MS in src/http/shapes.ts). */
export const MAX_WAIT_MS = 30_000;

/**
 * LeaseClient calls the fencelease API, one method per route: jobs and
 * leases on the client itself, whole queues on `client.queues`, schedules on
 * `client.schedules`, push endpoints on `client.push`, API tokens on
 * `client.tokens` (one transport, one token, one retry policy for all). Over
 * HTTP to a server (`{ baseUrl }`), or in-process to a store of this process
 * (`{ store }`): the same methods, answers and typed errors either way. A
 * refusal throws a typed error (LeaseLostError, NotClaimableError,
 * ConflictError, NotFoundError, UnauthorizedError, ForbiddenError,
 * InvalidRequestError, UnavailableError); which calls are sent again after a lost answer is
 * Repeat's rule (in transport.ts).
 *
 * What a call answers, one rule for every method:
 * - a route that answers one thing as it is (a job, a lease, a queue's
 *   settings, a schedule, a lease check): that thing;
 * - a route that wraps ONE thing in an object of one field (`{ job }`,
 *   `{ until }`, `{ jobs }`, `{ leases }`, `{ queues }`, `{ schedules }`):
 *   the thing, unwrapped;
 * - a route that answers several things (the job with `created` or
 *   `changed`, the job with the `leases` its `next` took, a page with its
 *   `nextCursor`, the completions with the leases taken): the whole object,
 *   a list the route leaves out filled in as `[]`;
 * - a route that answers only that it did it (`{ deleted: true }`, 204):
 *   nothing (`void`).
 * One call bends it for the loop that claims: claimNext answers the leases
 * as an array, with `retryAfterMs` on it when the rate limit stopped the
 * claim short; claimNextAnswer answers the route's whole object.
 *
 * The calls that hand out jobs take the payload's type (and get and waitFor
 * the result's too), default unknown: `client.claim<{ to: string }>(id, ...)`
 * answers a lease whose `job.payload` is a `{ to: string }`. It is the
 * caller's word, not checked against what the server holds.
 *
 * @example
 * const client = new LeaseClient({ baseUrl: "http://127.0.0.1:8787", token: process.env.FENCELEASE_TOKEN });
 * const { fence } = await client.claim("invoice-42", { owner: "worker-a", ttlMs: 30_000 });
 * const stats = await client.queues.stats();
 *
 * @example
 * // In-process, no server: openStore is fencelease/node's.
 * const embedded = new LeaseClient({ store: await openStore({ url: "file:./data/fencelease.db" }) });
 */
export class LeaseClient {
  /** The calls about whole queues: stats, pause, resume, and their limits (set, get, list). */
  readonly queues: QueueCalls;
  /** The calls about recurring schedules: put, get, list, delete. */
  readonly schedules: ScheduleCalls;
  /** The calls about a queue's push endpoint: set, get, list, rotate, delete. */
  readonly push: PushCalls;
  /** The calls about API tokens: create, list, revoke, and self (what the client's own token may do). */
  readonly tokens: TokenCalls;
  readonly #transport: Transport;

  /** Checks the options (RangeError for a bad timeoutMs, TypeError for a store that is not an object); sends nothing until a call. */
  constructor(options: LeaseClientOptions) {
    this.#transport = "store" in options ? new InProcessTransport(options) : new HttpTransport(options);
    this.queues = new QueueCalls(this.#transport);
    this.schedules = new ScheduleCalls(this.#transport);
    this.push = new PushCalls(this.#transport);
    this.tokens = new TokenCalls(this.#transport);
  }

  /**
   * enqueue adds a job (`POST /v1/jobs`) and answers `{ created, job }`: the
   * job as stored, and whether this call created it; an id that exists
   * answers `created: false` with the job untouched. A `key` puts it under
   * its queue's per-key settings (docs/queues.md#keys). A `dedupKey`
   * enqueues it once per key (docs/queues.md#once-per-key), and the answer
   * may then be `deduplicated`, `debounced`, or name what it `superseded`.
   * With a tracer registered, it is a producer span, "send {queue}", whose
   * traceparent the job is stored with (docs/traces.md).
   */
  enqueue(job: PlainEnqueueRequest): Promise<{ created: boolean; job: Job }>;
  enqueue(job: EnqueueRequest): Promise<EnqueueAnswer>;
  enqueue(job: EnqueueRequest): Promise<EnqueueAnswer | { created: boolean; job: Job }> {
    return inSendSpan(job.queue ?? "default", [job], () => this.#transport.call({ route: ["POST", "/v1/jobs", job], local: (api) => api.enqueue(job), repeat: "always" }));
  }

  /**
   * enqueueMany adds 1 to 1,000 jobs to a queue in one transaction
   * (`POST /v1/queues/:queue/jobs`) and answers, in order, `{ id, created }`
   * for each (an id that exists is left untouched). With a tracer
   * registered, one producer span, "send {queue}", whose traceparent every job
   * without one of its own is stored with.
   */
  async enqueueMany(queue: string, jobs: NewJobRequest[]): Promise<Enqueued[]> {
    const send = () => this.#transport.call({ route: ["POST", `${queuePath(queue)}/jobs`, { jobs }], local: (api) => api.enqueueMany(queue, jobs), repeat: "always" });
    return (await inSendSpan(queue, jobs, send)).jobs;
  }

  /**
   * get answers a job (`GET /v1/jobs/:id`); NotFoundError if there is none.
   * With `waitMs` (up to 30,000) the server answers as soon as the job is
   * done, dead or cancelled, or as it is once `waitMs` has passed.
   */
  get<Payload = unknown, Result = unknown>(id: string, options: CallOptions = {}): Promise<Job<Payload, Result>> {
    const route: [string, string] = ["GET", `${jobPath(id)}${queryString({ waitMs: options.waitMs || undefined })}`];
    return this.#transport.call({ route, local: (api) => api.get(id, options) as Promise<Job<Payload, Result>>, repeat: "always", options });
  }

  /**
   * waitFor long-polls a job (`GET /v1/jobs/:id?waitMs=`, as often as it
   * takes) until it is done, dead or cancelled, or `timeoutMs` (default 60 s)
   * has passed, and answers the job as it then is: check its `status`. Each
   * request waits at most 30 s on the server; NotFoundError if there is no such job.
   */
  async waitFor<Payload = unknown, Result = unknown>(id: string, options: { timeoutMs?: number | undefined; signal?: AbortSignal | undefined } = {}): Promise<Job<Payload, Result>> {
    const timeoutMs = options.timeoutMs ?? 60_000;
    if (!Number.isSafeInteger(timeoutMs) || timeoutMs < 0) throw new RangeError(`waitFor: timeoutMs must be a whole number of ms, 0 or more, got ${options.timeoutMs}`);
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const waitMs = Math.max(0, Math.min(MAX_WAIT_MS, deadline - Date.now()));
      const job = await this.get<Payload, Result>(id, { waitMs, signal: options.signal });
      if (job.status === "done" || job.status === "dead" || job.status === "cancelled" || Date.now() >= deadline) return job;
    }
  }

  /**
   * claim takes the lease of one job (`POST /v1/jobs/:id/claim`) and answers
   * the lease `{ fence, until, job }`; NotClaimableError (its `reason`) while
   * another holds it, once it is done, dead or cancelled, or while its queue
   * is paused, full or out of tokens; NotFoundError if there is none.
   */
  claim<Payload = unknown>(id: string, request: ClaimRequest): Promise<Lease<Payload>> {
    return this.#transport.call({ route: ["POST", `${jobPath(id)}/claim`, request], local: (api) => api.claim(id, request) as Promise<Lease<Payload>>, repeat: "if-unsent" });
  }

  /**
   * claimNext takes the leases of up to `limit` due jobs of a queue
   * (`POST /v1/queues/:queue/claim`) and answers them as an array, empty when
   * none is due. With `waitMs` (up to 30,000) the server waits that long for
   * a job while none is due (a long poll); this attempt then waits
   * `timeoutMs` more for the answer. Aborting `signal` gives up the wait: the
   * server takes nothing for a client that has gone. When the queue's rate
   * limit stopped it short, the array's `retryAfterMs` says in how many ms the
   * next token is due: ask again then, not before.
   */
  async claimNext<Payload = unknown>(queue: string, request: ClaimNextRequest, options: { signal?: AbortSignal | undefined } = {}): Promise<ClaimedLeases<Payload>> {
    const { leases, retryAfterMs } = await this.claimNextAnswer<Payload>(queue, request, options);
    return retryAfterMs === undefined ? leases : Object.assign(leases, { retryAfterMs });
  }

  /**
   * claimNextAnswer is claimNext answering the route's whole object
   * `{ leases, waitedMs?, retryAfterMs? }`: with `waitMs`, `waitedMs` says how
   * long the server waited before the claim that took the leases. They began
   * no earlier than this call's send time plus `waitedMs`, on this process's
   * clock: where a lease's deadline starts.
   */
  claimNextAnswer<Payload = unknown>(queue: string, request: ClaimNextRequest, options: { signal?: AbortSignal | undefined } = {}): Promise<ClaimNextAnswer<Payload>> {
    const local = (api: InProcessApi) => api.claimNext(queue, request, options.signal) as Promise<ClaimNextAnswer<Payload>>;
    return this.#transport.call({ route: ["POST", `${queuePath(queue)}/claim`, request], local, repeat: "if-unsent", options: { waitMs: request.waitMs, signal: options.signal } });
  }

  /**
   * renew extends the current lease (`POST /v1/jobs/:id/renew`) and answers
   * its new end, `until` (ms since the epoch), storing `progress` (any JSON
   * value, at most 4096 bytes as JSON) on the job if given; LeaseLostError if
   * the lease is not current (reason cancelled once the job is), and then
   * nothing is stored.
   */
  async renew(id: string, request: RenewRequest): Promise<number> {
    return (await this.#transport.call({ route: ["POST", `${jobPath(id)}/renew`, request], local: (api) => api.renew(id, request), repeat: "always" })).until;
  }

  /**
   * complete stores the result of the current lease
   * (`POST /v1/jobs/:id/complete`) and answers `{ job, leases }`: the done
   * job, and with `next` the leases of the queue's next due jobs, taken in the
   * same transaction (`[]` without). LeaseLostError if the lease is not
   * current; the same completion sent again answers the job again.
   */
  async complete(id: string, request: CompleteRequest): Promise<Settled> {
    // With next it also claims, and a claim is not safe to send twice.
    const answer = await this.#transport.call({ route: ["POST", `${jobPath(id)}/complete`, request], local: (api) => api.complete(id, request), repeat: request.next ? "if-unsent" : "always" });
    return { job: answer.job, leases: answer.leases ?? [] };
  }

  /**
   * release gives the lease back (`POST /v1/jobs/:id/release`) and answers
   * the job, claimable at once: given back in time, the attempt is not
   * counted; after the lease's end, it counts as the expiry it was.
   * LeaseLostError if another lease is current, or the job is done.
   */
  async release(id: string, request: ReleaseRequest): Promise<Job> {
    return (await this.#transport.call({ route: ["POST", `${jobPath(id)}/release`, request], local: (api) => api.release(id, request), repeat: "if-unsent" })).job;
  }

  /**
   * fail ends the current lease as a failed attempt (`POST /v1/jobs/:id/fail`),
   * keeping `error` as the job's lastError, and answers `{ job, leases }` as
   * complete does: the job due again after `retryInMs` or the server's
   * backoff (status scheduled), or dead after its last attempt, and the
   * leases `next` took. LeaseLostError if the lease is not current.
   */
  async fail(id: string, request: FailRequest): Promise<Settled> {
    const answer = await this.#transport.call({ route: ["POST", `${jobPath(id)}/fail`, request], local: (api) => api.fail(id, request), repeat: "if-unsent" });
    return { job: answer.job, leases: answer.leases ?? [] };
  }

  /**
   * step records the result of step `name` of a job under the current lease
   * (`POST /v1/jobs/:id/steps/:name`) and answers `{ recorded, step }`: the
   * step as recorded, `recorded: true` for this call's, `false` for one
   * recorded before (by this lease or an earlier one: its result, not the one
   * sent). LeaseLostError if the lease is not current, and then nothing is
   * stored; InvalidRequestError (code too_many_steps or steps_too_large) past
   * the job's 64 steps or 65,536 bytes of results. A handler of withLease or
   * runWorker calls its `step` instead, which skips a step recorded already.
   */
  step(id: string, name: string, request: StepRequest): Promise<StepAnswer> {
    return this.#transport.call({ route: ["POST", `${jobPath(id)}/steps/${encodeURIComponent(name)}`, request], local: (api) => api.step(id, name, request), repeat: "always" });
  }

  /**
   * renewMany extends 1 to 1,000 leases of one owner in one call
   * (`POST /v1/leases/renew`), each decided alone: one heartbeat for every
   * lease a worker holds. Answers the array of outcomes, in order: each
   * lease's `{ id, until }`, or `{ id, error }` with the code, message and
   * details a single renew would have thrown.
   */
  async renewMany(request: RenewManyRequest): Promise<RenewManyAnswer["leases"]> {
    return (await this.#transport.call({ route: ["POST", "/v1/leases/renew", request], local: (api) => api.renewMany(request), repeat: "always" })).leases;
  }

  /**
   * completeMany stores the results of 1 to 1,000 leases of one owner in one
   * call (`POST /v1/leases/complete`), each decided alone; with `next`, it
   * also takes up to `next.limit` due jobs of `next.queue` in the same
   * transaction. Answers `{ completed, leases }`: each completion, in order,
   * `done: true` or its `error`, and the leases taken.
   */
  completeMany(request: CompleteManyRequest): Promise<CompleteManyAnswer> {
    return this.#transport.call({ route: ["POST", "/v1/leases/complete", request], local: (api) => api.completeMany(request), repeat: request.next ? "if-unsent" : "always" });
  }

  /**
   * retry puts a dead job back in its queue (`POST /v1/jobs/:id/retry`), due
   * at once with its attempts reset, and answers the job; ConflictError if it
   * is not dead, NotFoundError if there is none.
   */
  async retry(id: string): Promise<Job> {
    return (await this.#transport.call({ route: ["POST", `${jobPath(id)}/retry`], local: (api) => api.retry(id), repeat: "if-unsent" })).job;
  }

  /**
   * cancel makes a queued, scheduled or leased job cancelled, a final status
   * (`POST /v1/jobs/:id/cancel`), recording who (`by`, default "api") and
   * why; its holder's next renew, complete, fail or release is refused with
   * LeaseLostError reason cancelled. Answers `{ job, changed }`: the
   * cancelled job, and whether this call cancelled it (a job already
   * cancelled is answered as it is, `changed: false`). ConflictError once it
   * is done or dead, NotFoundError if there is none.
   */
  cancel(id: string, request: CancelRequest = {}): Promise<Cancelled> {
    return this.#transport.call({ route: ["POST", `${jobPath(id)}/cancel`, request], local: (api) => api.cancel(id, request), repeat: "always" });
  }

  /**
   * delete removes a job that is not leased (`DELETE /v1/jobs/:id`) and
   * answers nothing; ConflictError while it is leased, NotFoundError if there
   * is none.
   */
  async delete(id: string): Promise<void> {
    await this.#transport.call({ route: ["DELETE", jobPath(id)], local: (api) => api.delete(id), repeat: "if-unsent" });
  }

  /**
   * list answers a page of jobs `{ jobs, nextCursor }` (`GET /v1/jobs`) in id
   * order, those that match every filter given (queue, status or statuses,
   * key, idPrefix, error, created and finished ranges; limit 1 to 100, default
   * 50); pass `nextCursor` back as `cursor` for the next page, until it is
   * null. A page looks at 20,000 jobs at most, so it may come short, or
   * empty, with a nextCursor.
   */
  list(request: ListRequest = {}): Promise<JobPage> {
    return this.#transport.call({ route: ["GET", `/v1/jobs${queryString(request)}`], local: (api) => api.list(request), repeat: "always" });
  }

  /**
   * bulk retries (dead and cancelled jobs), cancels (queued, scheduled and
   * leased ones) or deletes (finished ones) up to `limit` jobs (default
   * 1,000, at most 10,000) that match `filter` (`POST /v1/jobs/bulk`), and
   * answers `{ matched, changed, skipped, nextCursor }`: pass `nextCursor`
   * back as `cursor` to go on, until it is null. `dryRun` only counts.
   */
  bulk(request: BulkRequest): Promise<BulkAnswer> {
    // Sent again, a bulk action finds what it did done, and counts it as skipped: an answer that misleads, so only when unsent.
    return this.#transport.call({ route: ["POST", "/v1/jobs/bulk", request], local: (api) => api.bulk(request), repeat: request.dryRun === true ? "always" : "if-unsent" });
  }

  /**
   * events answers a page of a job's history `{ events, nextCursor }`
   * (`GET /v1/jobs/:id/events`), oldest first (limit 1 to 1000, default 100);
   * an unknown id has none.
   */
  events(id: string, request: EventsRequest = {}): Promise<EventPage> {
    return this.#transport.call({ route: ["GET", `${jobPath(id)}/events${queryString(request)}`], local: (api) => api.events(id, request), repeat: "always" });
  }

  /**
   * checkLease answers `{ current, fence, until }` (`GET /v1/jobs/:id/lease`):
   * whether (owner, fence) is the job's current lease, with the job's fence
   * and lease end, what a downstream system asks before it accepts a side
   * effect. NotFoundError if there is no such job.
   */
  checkLease(id: string, request: LeaseCheckRequest): Promise<LeaseCheck> {
    return this.#transport.call({ route: ["GET", `${jobPath(id)}/lease${queryString(request)}`], local: (api) => api.checkLease(id, request), repeat: "always" });
  }
}

/** The path of a job, its id encoded. */
function jobPath(id: string): string {
  return `/v1/jobs/${encodeURIComponent(id)}`;
}
