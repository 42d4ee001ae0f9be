import { type LeaseClient, MAX_WAIT_MS } from "../lease-client.ts";
import type { HeldLease } from "../with-lease.ts";
import { MAX_MANY, WorkerRunner } from "./worker-runner.ts";

/** The work done for one job: its value is stored as the job's result (undefined as null). */
export type JobHandler = (held: HeldLease) => Promise<unknown>;

/** What a worker runner takes jobs from, and how; checked once, when the runner is built. */
export type WorkerOptions = {
  /** The queue to take jobs from. */
  queue: string;
  /** Who holds the leases; one name per runner. */
  owner: string;
  /** How many jobs are in hand at most (1 to 1,000): handlers running, and results on their way. */
  concurrency: number;
  /** How long each lease lasts, in ms. */
  ttlMs: number;
  /** How often to renew all the leases in hand, in one call; default a third of the ttl. */
  renewEveryMs?: number;
  /**
   * While the queue has no due job, a claim waits up to this many ms on the
   * server for one (a long poll; 0 to 30,000); default 30 s, so an idle
   * runner sends about 2 requests a minute. 0: ask again after `idleMs` instead.
   */
  waitMs?: number;
  /** With `waitMs` 0, how long to wait before asking again when the queue had no due job; also the pause after a long poll the server cut short (stopping, or full). Default 1 s. */
  idleMs?: number;
  /** When a handler throws, the job is due again this many ms later; default the server's backoff. */
  retryInMs?: number;
  /** Abort to stop, as `stop()` does. */
  signal?: AbortSignal;
  /** Where the runner's own errors go (unreachable server, lost leases); default console.error. */
  onError?: (error: unknown) => void;
};

/** A running worker: `stop()` it, or wait for `done`. */
export type WorkerHandle = {
  /** Stops taking jobs, waits for the jobs in hand to finish and their results to be stored; idempotent. */
  stop(): Promise<void>;
  /** Resolves once the runner has stopped (by `stop()` or the signal); never rejects. */
  readonly done: Promise<void>;
};

/**
 * runWorker keeps up to `concurrency` jobs of `queue` in hand, runs `handler`
 * on each while holding its lease, and stores what the handler returns as the
 * job's result. It answers at once; the work goes on until `stop()`.
 *
 * Round trips: jobs are taken with claimNext (as many as there are free slots,
 * at most 100 a call) and, above all, by the completions themselves. While
 * the queue is empty, one claimNext waits on the server (`waitMs`) and answers
 * as soon as a job comes: no polling. A result
 * is sent as soon as its handler returns, unless two completions are already
 * on their way: then it waits, and the results that finished meanwhile go
 * together in one completeMany (a group commit on the client side, no wait when
 * alone), which also asks for the next jobs (`next`, as many as it frees
 * slots) in the same transaction. Under load that is far less than one
 * request per job. All the leases in hand are renewed by ONE renewMany every
 * `renewEveryMs` (see LeaseKeeper).
 *
 * Guarantees:
 * - At most `concurrency` handlers run at once: a job's slot is freed only once
 *   its handler has returned AND its lease has ended (its result stored, its
 *   failure recorded, or the lease lost).
 * - A lease lost (a renew refused, or no renew got through before it would
 *   expire, on this process's clock from when the claim or the renew was sent)
 *   aborts that handler's `signal` at once, and its result is dropped: a job
 *   is never completed, nor failed, with a lease that was lost. A job
 *   cancelled meanwhile is such a loss (LeaseLostError, reason cancelled,
 *   the signal's reason): whatever its handler then returns or throws, the job
 *   is neither completed nor failed, and the slot takes the next job.
 * - A handler's `progress(value)` goes with the next renewMany (the latest
 *   report per lease); one not yet sent when the lease ends is dropped.
 * - A handler that throws fails its job with the error's message as lastError:
 *   due again after `retryInMs` or the server's backoff, or dead on its last attempt.
 * - `stop()` takes no new job and asks no `next` any more, waits for the
 *   handlers in hand and for their results to be stored, then resolves. A job
 *   that arrives after the stop began (a `next` already on its way) is
 *   released at once, its handler never started, its attempt given back.
 *
 * Failure modes:
 * - claimNext unreachable: reported to `onError`, asked again after a backoff
 *   (100 ms doubling, capped at 5 s, with jitter). A long poll that comes
 *   back empty before its `waitMs` (the server stopping, or full) is asked
 *   again after `idleMs`, never in a tight loop. `stop()` gives up a long poll
 *   on its way: the server hands nothing to a claim given up.
 * - The queue's rate limit stops a claim short: the next claim is sent once
 *   its next token is due (the answer's `retryAfterMs`, at most 30 s), never
 *   before, so a rate-limited queue is not hammered.
 * - completeMany unreachable: a call with `next` may have landed, so it is
 *   never sent twice as it was. The same results are sent again WITHOUT
 *   `next` (the server answers a completion it already stored as done), after
 *   a backoff, until they are stored or their leases' deadlines pass; those
 *   leases are not renewed meanwhile (a renew that came after a completion that
 *   landed would be refused). Jobs a lost `next` took are not known here: their
 *   leases run out and they are claimed again, with an attempt counted.
 * - completeMany refused as a whole (a result the server will not take, such
 *   as one over its body limit): each result is sent alone, and the one refused
 *   alone fails its job with the server's message.
 * - A fail that does not get through is reported; the lease then runs out and
 *   counts as a failed attempt anyway, without the handler's message.
 * - A release after stop that does not get through is reported; that lease runs out.
 * - `done` never rejects: every error goes to `onError`, which itself may not break the runner.
 * - With the server unreachable, `stop()` resolves once the results in hand
 *   are stored or their leases have run out. A handler that never returns
 *   keeps `stop()` waiting: handlers should honour their `signal`.
 *
 * @example
 * const worker = runWorker(client, { queue: "invoices", owner: "worker-a", concurrency: 32, ttlMs: 30_000 },
 *   async ({ job, fence, signal }) => {
 *     await chargeCard(job.payload, { idempotencyKey: `${job.id}:${fence}`, signal });
 *     return { charged: true };
 *   });
 * process.once("SIGTERM", () => void worker.stop());
 * await worker.done;
 */
export function runWorker(client: LeaseClient, options: WorkerOptions, handler: JobHandler): WorkerHandle {
  if (typeof handler !== "function") throw new TypeError("runWorker: the handler must be a function");
  const runner = new WorkerRunner(client, checked(options), handler);
  return { stop: () => runner.stop(), done: runner.done };
}


/** The longest retryInMs the server takes: a year (FailBody in src/http/leases.ts). */
const MAX_RETRY_IN_MS = 365 * 24 * 60 * 60 * 1000;

/** The options with every default filled in. */
export type Settings = Required<Omit<WorkerOptions, "signal" | "retryInMs">> & Pick<WorkerOptions, "signal" | "retryInMs">;

/** Checks the options once, with a message that says what is wrong, and fills in the defaults. */
function checked(options: WorkerOptions): Settings {
  const wholeMs = (name: string, value: unknown, min: number, max = Number.MAX_SAFE_INTEGER) => {
    if (!Number.isSafeInteger(value) || (value as number) < min || (value as number) > max) {
      throw new RangeError(`runWorker: ${name} must be a whole number from ${min} to ${max}, got ${String(value)}`);
    }
  };
  if (typeof options !== "object" || options === null) throw new TypeError("runWorker: options must be an object");
  for (const name of ["queue", "owner"] as const) {
    if (typeof options[name] !== "string" || options[name] === "") throw new RangeError(`runWorker: ${name} must be a non-empty string, got ${JSON.stringify(options[name])}`);
  }
  wholeMs("concurrency", options.concurrency, 1, MAX_MANY);
  wholeMs("ttlMs", options.ttlMs, 1);
  const renewEveryMs = options.renewEveryMs ?? Math.max(1, Math.floor(options.ttlMs / 3));
  wholeMs("renewEveryMs", renewEveryMs, 1, options.ttlMs - 1 || 1);
  const idleMs = options.idleMs ?? 1_000;
  wholeMs("idleMs", idleMs, 1);
  const waitMs = options.waitMs ?? MAX_WAIT_MS;
  wholeMs("waitMs", waitMs, 0, MAX_WAIT_MS);
  if (options.retryInMs !== undefined) wholeMs("retryInMs", options.retryInMs, 0, MAX_RETRY_IN_MS);
  if (options.onError !== undefined && typeof options.onError !== "function") throw new TypeError("runWorker: onError must be a function");
  return { ...options, renewEveryMs, idleMs, waitMs, onError: options.onError ?? ((error) => console.error(error)) };
}

