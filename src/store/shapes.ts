import type { Job, Lease } from "./job.ts";

// What the store's verbs take and answer, beside the Job itself (src/store/job.ts).

/** Options of `enqueue`; every one has a default. */
export type EnqueueOptions = {
  /** The queue that claim-next takes the job from; default `"default"`. */
  queue?: string;
  /** Any JSON value, handed to the worker that claims the job; default null. */
  payload?: unknown;
  /** Higher is claimed first; default 0. */
  priority?: number;
  /** Claim-next leaves the job alone before this time; default `now`. */
  runAt?: number;
  /** How many claims may end in failure or expiry before the job is dead; default 25. */
  maxAttempts?: number;
  /** The W3C traceparent of the producer's span, handed back with every lease of the job (docs/traces.md); default none. */
  traceparent?: string | null;
  /** The W3C tracestate that goes with `traceparent`; default none. */
  tracestate?: string | null;
  /** The time of the enqueue, for `createdAt`; default `Date.now()`. */
  now?: number;
};

/** What a complete or fail may take in the same transaction: up to `limit` due jobs of the same queue, each leased for `ttlMs`. */
export type NextClaim = { limit: number; ttlMs: number };

/** A lease ended by complete or fail, and the leases of the next jobs taken with it (empty unless `next` was asked). */
export type Settled = { job: Job; leases: Lease[] };

/** One job of `enqueueMany`: its id and the options of `enqueue`, less the queue and the time, which are the call's. */
export type NewJob = { id: string } & Omit<EnqueueOptions, "queue" | "now">;

/** How many rows one housekeeping transaction (a chunk of purge or reclaimExpired) takes at most, by default. */
export const HOUSEKEEPING_CHUNK = 500;

/**
 * How purge and reclaimExpired work through a backlog: in chunks of at most
 * `chunkSize` rows (default HOUSEKEEPING_CHUNK), each its own transaction, the
 * event loop given a turn between two, until a chunk is not full, `maxChunks`
 * chunks have run (default: no limit), or `signal` aborts.
 */
export type HousekeepingOptions = { chunkSize?: number; maxChunks?: number; signal?: AbortSignal };

/** A page of a listing, and the cursor of the next page (null on the last). */
export type Page<T> = { items: T[]; next: string | null };

/**
 * A queue's settings (migrations/0008, 0009): whether it is paused, at most
 * how many current leases it may have, and its rate limit, tokens a second
 * with the most its bucket holds (null: no limit).
 */
export type QueueSettings = { queue: string; paused: boolean; maxLeased: number | null; ratePerSecond: number | null; burst: number | null };

/**
 * What `setQueue` sets, all three at once (absent or null: none). `burst`
 * needs `ratePerSecond`; without it, max(1, ceil(ratePerSecond)).
 */
export type QueueLimits = { maxLeased?: number | null; ratePerSecond?: number | null; burst?: number | null };

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
