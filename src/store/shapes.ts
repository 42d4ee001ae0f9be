import type { LeaseLostReason } from "./errors.ts";
import type { Job, JobStatus, Lease } from "./job.ts";

// What the store's verbs take and answer, beside the Job itself (src/store/job.ts).
// Each verb takes the id (or queue) and one request shaped like the body of
// its HTTP route; every request may carry `now`.

/** The time a verb runs at, in ms since the epoch; default `Date.now()`. Tests and replays fix it. */
type At = { now?: number | undefined };

/** What `enqueue` takes (POST /v1/jobs, less the id); every field has a default. */
export type EnqueueRequest = At & {
  /** The queue that claim-next takes the job from; default `"default"`. */
  queue?: string | undefined;
  /** Any JSON value, handed to the worker that claims the job; default null. */
  payload?: unknown;
  /** Higher is claimed first; default 0. */
  priority?: number | undefined;
  /** Claim-next leaves the job alone before this time; default `now`. */
  runAt?: number | undefined;
  /** Or: due this many ms after `now`; not with runAt. */
  delayMs?: number | undefined;
  /** How many claims may end in failure or expiry before the job is dead; default 25. */
  maxAttempts?: number | undefined;
  /** The W3C traceparent of the producer's span, handed back with every lease of the job (docs/traces.md); default none. */
  traceparent?: string | null | undefined;
  /** The W3C tracestate that goes with `traceparent`; default none. */
  tracestate?: string | null | undefined;
  /** What the queue's per-key settings limit the job by (a tenant, a user): 1 to 255 bytes of printable text; default none (docs/queues.md#keys). */
  key?: string | null | undefined;
  /** Enqueue at most once per this key of the queue, in the way one of dedupTtlMs, debounceMs or supersede says: 1 to 255 bytes of printable text (docs/queues.md#once-per-key). */
  dedupKey?: string | null | undefined;
  /** With dedupKey: for this many ms after the job's enqueue (1 ms to 30 days), an enqueue of the key creates nothing and answers this job. */
  dedupTtlMs?: number | undefined;
  /** With dedupKey: the job runs this many ms after the latest enqueue of its key (1 ms to 30 days); each enqueue before its first claim replaces its payload and priority and moves it. Not with runAt or delayMs. */
  debounceMs?: number | undefined;
  /** With debounceMs: the most the job may be moved past its first enqueue, in ms (debounceMs to 30 days); default 30 days. */
  debounceMaxMs?: number | undefined;
  /** With dedupKey: the job replaces the key's job that is not finished, cancelling it, held or not. */
  supersede?: boolean | undefined;
};

/** What an enqueue of one job answers: created (and, with supersede, the job it cancelled, or null); or not, with the job the id or the dedup key stands for; or the id of a job that held the key and is purged. */
export type Enqueued =
  | { created: true; job: Job; superseded?: string | null }
  | { created: false; job: Job; deduplicated?: true; debounced?: true }
  | { created: false; deduplicated: true; id: string };

/** What `enqueueMany` answers of each job: whether it was created; a job that was not for its dedup key names the job that holds the key. */
export type EnqueuedOfMany = { id: string; created: boolean; deduplicated?: true; duplicateOf?: string };

/** The enqueue of one job without a dedup key: it always answers a job. */
export type PlainEnqueueRequest = EnqueueRequest & { dedupKey?: null | undefined };

/** One job of `enqueueMany`: its id and what `enqueue` takes, less the queue and the time, which are the call's. */
export type NewJob = { id: string } & Omit<EnqueueRequest, "queue" | "now">;

/** What `enqueueMany` takes (POST /v1/queues/:queue/jobs). */
export type EnqueueManyRequest = At & { jobs: NewJob[] };

/** What `claim` takes (POST /v1/jobs/:id/claim): who takes the lease, and for how long. */
export type ClaimRequest = At & { owner: string; ttlMs: number };

/** What `claimNext` takes (POST /v1/queues/:queue/claim, less waitMs): as `claim`, and up to how many jobs (default 1). */
export type ClaimNextRequest = ClaimRequest & { limit?: number | undefined };

/** A lease as its holder presents it: `release` (POST /v1/jobs/:id/release) and `leaseCheck` (GET /v1/jobs/:id/lease) take it. */
export type HeldLease = At & { owner: string; fence: number };

/** What `renew` takes (POST /v1/jobs/:id/renew): the lease, its new ttl, and any JSON value of at most 4 KB to store as the job's progress. */
export type RenewRequest = HeldLease & { ttlMs: number; progress?: unknown };

/** What a complete or fail may take in the same transaction: up to `limit` due jobs of the same queue, each leased for `ttlMs`. */
export type NextClaim = { limit: number; ttlMs: number };

/** What `complete` takes (POST /v1/jobs/:id/complete): the lease, the result as stored text, and the next jobs to take with it. */
export type CompleteRequest = HeldLease & { result: string; next?: NextClaim | undefined };

/** What `fail` takes (POST /v1/jobs/:id/fail): the lease, why it failed, when to try again (default: the backoff), and the next jobs to take with it. */
export type FailRequest = HeldLease & { error: string; retryInMs?: number | undefined; next?: NextClaim | undefined };

/** What `step` takes (POST /v1/jobs/:id/steps/:name): the lease it is recorded under, and its result, any JSON value. */
export type StepRequest = HeldLease & { result: unknown };

/** What `renewMany` takes (POST /v1/leases/renew): one owner's leases, each renewed for `ttlMs`, with the progress each reports. */
export type RenewManyRequest = At & { owner: string; ttlMs: number; leases: { id: string; fence: number; progress?: unknown }[] };

/** What `completeMany` takes (POST /v1/leases/complete): one owner's completions, and the next jobs of `next.queue` to take with them. */
export type CompleteManyRequest = At & { owner: string; leases: { id: string; fence: number; result: string }[]; next?: NextClaim & { queue: string } | undefined };

/** What `cancel` takes (POST /v1/jobs/:id/cancel): who cancels (default `"api"`), and why, both recorded in the cancelled event. */
export type CancelRequest = At & { by?: string | undefined; reason?: string | null | undefined };

/**
 * What a search matches (GET /v1/jobs, POST /v1/jobs/bulk): every filter given
 * holds. `status` is one status or several (any of them), at `now`; `error`
 * is text that lastError contains (case counts); the times are inclusive, and
 * finishedFrom/finishedTo match only finished jobs (done, dead or cancelled),
 * by when they finished. None given matches every job.
 */
export type JobFilter = {
  queue?: string | undefined;
  status?: JobStatus | readonly JobStatus[] | undefined;
  key?: string | undefined;
  idPrefix?: string | undefined;
  error?: string | undefined;
  createdFrom?: number | undefined;
  createdTo?: number | undefined;
  finishedFrom?: number | undefined;
  finishedTo?: number | undefined;
};

/**
 * What `list` takes (GET /v1/jobs): a filter, the cursor of the page before, a
 * page size (default 50), the queues of the caller's token (names and
 * prefixes ending in *; default every queue), and how many jobs a page looks
 * at, at most (`scan`: SEARCH_SCAN, the default, or fewer; for tests).
 */
export type ListRequest = At & JobFilter & { cursor?: string | undefined; limit?: number | undefined; queues?: readonly string[] | undefined; scan?: number | undefined };

/** The bulk actions (POST /v1/jobs/bulk). */
export const BULK_ACTIONS = ["retry", "cancel", "delete"] as const;

/**
 * What `bulk` takes (POST /v1/jobs/bulk): the action, the jobs it is asked of
 * (`filter`, from `cursor` on), how many at most (default 1,000, at most
 * 10,000), `dryRun` to count them and change nothing, a cancel's `by`
 * (default "api") and `reason`, the queues of the caller's token, and `scan`
 * as `list` takes it.
 */
export type BulkRequest = At & {
  action: (typeof BULK_ACTIONS)[number];
  filter?: JobFilter | undefined;
  limit?: number | undefined;
  cursor?: string | undefined;
  dryRun?: boolean | undefined;
  by?: string | undefined;
  reason?: string | null | undefined;
  queues?: readonly string[] | undefined;
  scan?: number | undefined;
};

/** A job a bulk action changed, as the action left it (a deleted one as it was): what wakes its waiters. */
export type ChangedJob = Pick<Job, "id" | "queue" | "owner" | "until" | "status">;

/**
 * What `bulk` did: how many jobs matched, those it changed, how many it left
 * as they were by reason, and where the next call goes on (null: the
 * filter's range is done).
 */
export type BulkOutcome = { matched: number; changed: ChangedJob[]; skipped: Record<string, number>; next: string | null };

/** What `events` takes (GET /v1/jobs/:id/events): the cursor of the page before, a page size (default 100), and the queues of the caller's token (default every queue). */
export type EventsRequest = { cursor?: string | undefined; limit?: number | undefined; queues?: readonly string[] | undefined };

/** A lease ended by complete or fail, the leases of the next jobs taken with it (empty unless `next` was asked), and whether this call wrote it (false: the same completion sent again). */
export type Settled = { job: Job; leases: Lease[]; changed: boolean };

/** Whether (owner, fence) is the job's current lease, with the job's fence and until, and when it is not, why (the reason a write with it would be refused for). */
export type LeaseCheck = { current: boolean; fence: number; until: number; reason?: LeaseLostReason; supersededBy?: string };

/** How many rows one housekeeping transaction (a chunk of purge or expire) takes at most, by default. */
export const HOUSEKEEPING_CHUNK = 500;

/**
 * How purge and expire work through a backlog: in chunks of at most
 * `chunkSize` rows (default HOUSEKEEPING_CHUNK), each its own transaction, the
 * event loop given a turn between two, until a chunk is not full, `maxChunks`
 * chunks have run (default: no limit), or `signal` aborts.
 */
export type HousekeepingOptions = { chunkSize?: number | undefined; maxChunks?: number | undefined; signal?: AbortSignal | undefined };

/** What `expire` takes: the time, and how to work through the expired leases. */
export type ExpireRequest = At & HousekeepingOptions;

/** What `purge` takes: how long finished jobs are kept, the time, and how to work through them. */
export type PurgeRequest = At & HousekeepingOptions & { retentionMs: number };

/** A page of a listing, and the cursor of the next page (null on the last). */
export type Page<T> = { items: T[]; next: string | null };

/**
 * A queue's settings (migrations/0008, 0009, 0034): whether it is paused, at
 * most how many current leases it may have, and its rate limit, tokens a
 * second with the most its bucket holds (null: no limit); and the same of
 * each key of its jobs, whether a key's jobs run one at a time in order, and
 * whether claim-next takes turns between keys (docs/queues.md#keys).
 */
export type QueueSettings = {
  queue: string;
  paused: boolean;
  maxLeased: number | null;
  ratePerSecond: number | null;
  burst: number | null;
  maxLeasedPerKey: number | null;
  keyRatePerSecond: number | null;
  keyBurst: number | null;
  orderedByKey: boolean;
  fairByKey: boolean;
};

/**
 * What `queues.set` sets, all at once (absent or null: none, false). `burst`
 * needs `ratePerSecond`; without it, max(1, ceil(ratePerSecond)); `keyBurst`
 * and `keyRatePerSecond` the same.
 */
export type QueueLimits = {
  maxLeased?: number | null | undefined;
  ratePerSecond?: number | null | undefined;
  burst?: number | null | undefined;
  maxLeasedPerKey?: number | null | undefined;
  keyRatePerSecond?: number | null | undefined;
  keyBurst?: number | null | undefined;
  orderedByKey?: boolean | null | undefined;
  fairByKey?: boolean | null | undefined;
};

/** What `queues.set` takes (PUT /v1/queues/:queue): the limits, and the time. */
export type QueueLimitsRequest = At & QueueLimits;

/** The highest rate a queue may have, in tokens a second; a rate is kept in steps of 0.001. */
export const MAX_RATE_PER_SECOND = 1_000_000;
/** The largest burst a queue's bucket may hold, in tokens. */
export const MAX_BURST = 1_000_000_000;

/**
 * What claimNext answers: the leases taken, in claim order; and, when the
 * queue's rate limit is what stopped it short (its bucket holds no whole token
 * while a job is due), `retryAfterMs`: in how many ms the next token is due.
 */
export type ClaimedLeases = Lease[] & { retryAfterMs?: number };

/** The time of a request: its `now`, or the clock's. Checked by the verb, in the order it checks its arguments. */
export function timeOf(request: At): number {
  return request.now ?? Date.now();
}
