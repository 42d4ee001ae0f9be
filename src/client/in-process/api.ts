import { claimedView, jobView, leaseView, outcomeView, settledView } from "../../http/views.ts";
import { answered, localWaits, type WaitingStore, type Waits } from "../../wait/long-poll.ts";
import { WaitRoom } from "../../wait/wait-room.ts";
import { wakeWith } from "../../wait/wake.ts";
import { InvalidRequestError } from "../errors.ts";
import { activeTraceContext } from "../tracing.ts";
import type {
  BulkAnswer,
  BulkRequest,
  Cancelled,
  CancelRequest,
  ClaimNextAnswer,
  ClaimNextRequest,
  ClaimRequest,
  CompleteManyAnswer,
  CompleteManyRequest,
  CompleteRequest,
  Enqueued,
  EnqueueAnswer,
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
  QueueSettings,
  ReleaseRequest,
  RenewManyAnswer,
  RenewManyRequest,
  RenewRequest,
  StepAnswer,
  StepRequest,
} from "../types.ts";
import type { EmbeddedStore } from "./embedded-store.ts";

/** The longest a call may wait (MAX_WAIT_MS of src/http/shapes.ts). */
const MAX_WAIT_MS = 30_000;

/** A signal that never aborts: a wait given none. */
const NEVER = new AbortController().signal;

/** One api per store and clock, so that every client over that store waits in one room and rings it. */
const shared = new WeakMap<EmbeddedStore, Map<() => number, InProcessApi>>();

/** What a job brings of its own trace context decides; else the active span's, as the server takes the request's headers. */
function withTraceContext<T extends { traceparent?: string | null; tracestate?: string | null }>(job: T, active: { traceparent?: string }): T {
  return active.traceparent === undefined || job.traceparent != null || job.tracestate != null ? job : { ...job, ...active };
}

/**
 * The store as the room's re-check should see it here: one that cannot tell
 * whether anyone wrote (dataVersion null), so that the re-check reads at every
 * tick while anyone waits. The server's writes all ring its room, but here the
 * app may write on the store directly (its own enqueue, the schedules
 * `maintain` fires), which rings nobody, on the very connection whose
 * data_version does not change for its own writes. One read a second, for
 * every queue and job with waiters at once.
 */
function readingEveryTick(store: EmbeddedStore): WaitingStore {
  return {
    claimNext: (queue, request) => store.claimNext(queue, request),
    release: (id, request) => store.release(id, request),
    get: (id, request) => store.get(id, request),
    nextClaimableAt: (queue, request) => store.nextClaimableAt(queue, request),
    nextClaimableAtEach: (queues, request) => store.nextClaimableAtEach(queues, request),
    finishedOf: (ids) => store.finishedOf(ids),
    dataVersion: async () => null,
  };
}

/** A result as the store keeps it: its JSON text, as the route's body would carry it. */
function resultText(result: unknown): string {
  const text = JSON.stringify(result);
  if (text === undefined) throw new InvalidRequestError(400, "invalid_request", "result is required: any JSON value");
  return text;
}

/** A waitMs as the routes take it: a whole number of ms from 0 to MAX_WAIT_MS. */
function checkedWait(waitMs: number): number {
  if (Number.isSafeInteger(waitMs) && waitMs >= 0 && waitMs <= MAX_WAIT_MS) return waitMs;
  throw new InvalidRequestError(400, "invalid_request", `waitMs must be a whole number from 0 to ${MAX_WAIT_MS}, got ${waitMs}`);
}

/**
 * InProcessApi is the HTTP API's routes of jobs and leases made in this
 * process on a store: each method does what its route's handler does (the
 * store's verb at the clock's `now`, the waiters rung once it has committed,
 * the answer in the route's shape through the same views) without HTTP, JSON
 * or zod. The store's own checks still refuse a bad argument; the server's
 * limits (body size, maxTtlMs, page sizes) and tokens do not apply.
 *
 * Waiting calls (claimNext and get with waitMs) wait in a WaitRoom of this
 * process, as the server's long polls do: a write through any client over the
 * same store rings it at once, and its re-check (every RECHECK_MS, 1 s) finds
 * every other write: of other processes, of a server on the same file, and
 * made on the store directly (see readingEveryTick).
 */
export class InProcessApi {
  /** The store every call goes to. */
  readonly store: EmbeddedStore;
  readonly #clock: () => number;
  readonly #room: WaitRoom;
  readonly #waits: Waits;
  readonly #wake: ReturnType<typeof wakeWith>;

  constructor(store: EmbeddedStore, clock: () => number) {
    this.store = store;
    this.#clock = clock;
    this.#room = new WaitRoom({ clock });
    this.#waits = localWaits(readingEveryTick(store), this.#room, clock);
    this.#wake = wakeWith(this.#waits);
  }

  /** The api of `store` on `clock` (default Date.now): the same for every client over them, so that they wait in one room. */
  static of(store: EmbeddedStore, clock: () => number = Date.now): InProcessApi {
    let byClock = shared.get(store);
    if (byClock === undefined) shared.set(store, (byClock = new Map()));
    let api = byClock.get(clock);
    if (api === undefined) byClock.set(clock, (api = new InProcessApi(store, clock)));
    return api;
  }

  /** How many calls wait now (claimNext and get with waitMs). */
  get waiting(): number {
    return this.#room.waiting;
  }

  /** The `now` a call runs at (a property, so that a call may take it apart with the store). */
  readonly now = (): number => this.#clock();

  /** Rings a queue's waiters once `opened` (a resume, new limits) has committed, and answers its settings: as many of them look again as there may be jobs for. */
  async queueOpened(opened: Promise<QueueSettings>): Promise<QueueSettings> {
    const settings = await opened;
    void this.#wake.queueOpened(settings.queue);
    return settings;
  }

  // ---- jobs (src/http/jobs.ts) ----

  async enqueue(request: EnqueueRequest): Promise<EnqueueAnswer> {
    const { id, ...job } = withTraceContext(request, activeTraceContext());
    const now = this.#clock();
    const answer = await this.store.enqueue(id, { ...job, now });
    if (!("job" in answer)) return answer;
    if (answer.created) void this.#wake.enqueued(answer.job.queue, [answer.job.runAt], now);
    if (answer.created && answer.superseded) this.#wake.finished([answer.superseded]); // whoever waits for its result reads it again
    return { ...answer, job: jobView(answer.job) as Job } as EnqueueAnswer;
  }

  async enqueueMany(queue: string, jobs: NewJobRequest[]): Promise<{ jobs: Enqueued[] }> {
    const active = activeTraceContext();
    const now = this.#clock();
    const enqueued = await this.store.enqueueMany(queue, { jobs: jobs.map((job) => withTraceContext(job, active)), now });
    const runAts = jobs.filter((_, i) => enqueued[i]!.created).map((job) => job.runAt ?? now + (job.delayMs ?? 0));
    void this.#wake.enqueued(queue, runAts, now);
    return { jobs: enqueued };
  }

  async get(id: string, options: { waitMs?: number; signal?: AbortSignal }): Promise<Job> {
    const waitMs = checkedWait(options.waitMs ?? 0);
    if (waitMs === 0) return jobView(await this.store.get(id, { now: this.#clock() })) as Job;
    const job = await this.#waits.job(id, waitMs, options.signal ?? NEVER);
    options.signal?.throwIfAborted(); // given up, as a request whose client went away
    return jobView(job) as Job;
  }

  async list(request: ListRequest): Promise<JobPage> {
    const page = await this.store.list({ ...request, now: this.#clock() });
    return { jobs: page.items.map(jobView) as Job[], nextCursor: page.next };
  }

  async bulk(request: BulkRequest): Promise<BulkAnswer> {
    const { filter = {}, ...asked } = request;
    const now = this.#clock();
    const outcome = await this.store.bulk({ ...asked, filter, now });
    void this.#wake.bulk(asked.action, outcome.changed, now);
    return { matched: outcome.matched, changed: outcome.changed.length, skipped: outcome.skipped, nextCursor: outcome.next };
  }

  async events(id: string, request: EventsRequest): Promise<EventPage> {
    const page = await this.store.events(id, request);
    return { events: page.items, nextCursor: page.next };
  }

  async retry(id: string): Promise<{ job: Job }> {
    const now = this.#clock();
    const job = await this.store.retry(id, { now });
    void this.#wake.settled(job);
    return { job: jobView(job) as Job };
  }

  async cancel(id: string, request: CancelRequest): Promise<Cancelled> {
    const { by = "api", reason } = request;
    const now = this.#clock();
    const { changed, job } = await this.store.cancel(id, { by, reason, now });
    if (changed) void this.#wake.cancelled(job, now);
    return { job: jobView(job) as Job, changed };
  }

  async delete(id: string): Promise<void> {
    await this.store.delete(id, { now: this.#clock() });
    this.#wake.finished([id]);
  }

  // ---- leases (src/http/leases.ts) ----

  async claim(id: string, { owner, ttlMs }: ClaimRequest): Promise<Lease> {
    return leaseView(await this.store.claim(id, { owner, ttlMs, now: this.#clock() })) as Lease;
  }

  async claimNext(queue: string, request: ClaimNextRequest, signal?: AbortSignal): Promise<ClaimNextAnswer> {
    const { owner, ttlMs, limit = 1 } = request;
    const waitMs = checkedWait(request.waitMs ?? 0);
    if (waitMs === 0) return claimedView(answered(await this.store.claimNext(queue, { owner, ttlMs, limit, now: this.#clock() }), 0), false) as ClaimNextAnswer;
    const claimed = await this.#waits.claimNext({ queue, owner, ttlMs, limit, waitMs }, signal ?? NEVER);
    if (claimed.leases.length === 0) signal?.throwIfAborted(); // given up: what it took was given back, as for a client that went away
    return claimedView(claimed, true) as ClaimNextAnswer;
  }

  async renew(id: string, { owner, fence, ttlMs, progress }: RenewRequest): Promise<{ until: number }> {
    return this.store.renew(id, { owner, fence, ttlMs, progress, now: this.#clock() });
  }

  async complete(id: string, { owner, fence, result, next }: CompleteRequest): Promise<{ job: Job; leases?: Lease[] }> {
    const settled = await this.store.complete(id, { owner, fence, result: resultText(result), next, now: this.#clock() });
    this.#wake.finished([settled.job.id]);
    void this.#wake.ended([settled.job.queue], owner);
    return settledView(settled, next) as { job: Job; leases?: Lease[] };
  }

  async release(id: string, { owner, fence }: ReleaseRequest): Promise<{ job: Job }> {
    const now = this.#clock();
    const job = await this.store.release(id, { owner, fence, now });
    void this.#wake.settled(job, owner);
    return { job: jobView(job) as Job };
  }

  async fail(id: string, { owner, fence, error, retryInMs, next }: FailRequest): Promise<{ job: Job; leases?: Lease[] }> {
    const now = this.#clock();
    const settled = await this.store.fail(id, { owner, fence, error, retryInMs, next, now });
    void this.#wake.settled(settled.job, owner);
    return settledView(settled, next) as { job: Job; leases?: Lease[] };
  }

  async step(id: string, name: string, { owner, fence, result }: StepRequest): Promise<StepAnswer> {
    return this.store.step(id, name, { owner, fence, result, now: this.#clock() });
  }

  async renewMany({ owner, ttlMs, leases }: RenewManyRequest): Promise<RenewManyAnswer> {
    const renewed = await this.store.renewMany({ owner, ttlMs, leases, now: this.#clock() });
    return { leases: renewed.map(outcomeView) };
  }

  async completeMany({ owner, leases, next }: CompleteManyRequest): Promise<CompleteManyAnswer> {
    const completions = leases.map(({ id, fence, result }) => ({ id, fence, result: resultText(result) }));
    const { completed, leases: taken, ended } = await this.store.completeMany({ owner, leases: completions, next, now: this.#clock() });
    this.#wake.finished(completed.flatMap((outcome) => ("done" in outcome ? [outcome.id] : [])));
    void this.#wake.ended(ended, owner);
    return { completed: completed.map(outcomeView), leases: taken.map(leaseView) as Lease[] };
  }

  async checkLease(id: string, { owner, fence }: LeaseCheckRequest): Promise<LeaseCheck> {
    return this.store.leaseCheck(id, { owner, fence, now: this.#clock() });
  }
}
