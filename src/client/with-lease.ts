import { LeaseLostError, NotFoundError } from "./errors.ts";
import type { LeaseClient } from "./lease-client.ts";
import type { Job, Lease } from "./types.ts";
import { failureMessage } from "./failure-message.ts";
import { claimOneWithin } from "./runner/claim-pace.ts";
import { PendingProgress } from "./progress.ts";
import { type StepFn, stepsOf } from "./steps.ts";
import { startProcessSpan } from "./tracing.ts";
import { runInSpan } from "../tracing/job-span.ts";

/**
 * What `fn` is handed: the job (its payload a `Payload`, default unknown), its fence (pass it on to a system that keeps
 * the highest fence it has seen; never put it in an idempotency key, which must be the same under every lease), a signal aborted once the lease is lost (reason: the LeaseLostError,
 * `reason` "cancelled" when the job was cancelled), and `progress(value)`,
 * which reports any JSON value (at most 4096 bytes as JSON) with the next
 * renew: the latest report wins, and a report not yet sent when the lease ends
 * is dropped. It throws at once (TypeError, RangeError) for a value the server
 * would refuse. And `step(name, fn)`: runs `fn` unless a lease of the job
 * recorded step `name` already, records its result under this lease, and
 * answers the result recorded (see StepFn, and docs/client.md#effects-that-must-happen-once).
 */
export type HeldLease<Payload = unknown> = { job: Job<Payload>; fence: number; signal: AbortSignal; progress: (value: unknown) => void; step: StepFn };

/** How to hold the lease. */
export type WithLeaseOptions = {
  owner: string;
  ttlMs: number;
  /** How often to renew; default a third of the ttl. */
  renewEveryMs?: number | undefined;
  /** Abort to stop: fn's signal is aborted and the lease released (not failed). */
  signal?: AbortSignal | undefined;
  /** When fn throws, the job is due again this many ms later; default the server's backoff. */
  retryInMs?: number | undefined;
  /**
   * With `{ queue }`: while no job is due, wait up to this many ms (at most
   * 30,000) for one, on the server, and for the queue's rate limit's next
   * token if it is due within it; default 0, answer null at once.
   */
  waitMs?: number | undefined;
};

/**
 * withLease claims a job (by id, or the next due one of `{ queue }`), runs
 * `fn` while renewing the lease in the background, and completes the job with
 * what `fn` returns. If `fn` throws, the attempt is failed with the error's
 * message as the job's lastError (the job is due again after `retryInMs` or the
 * server's backoff, or dead after its last attempt) and the error rethrown;
 * after the caller's `signal` aborted, the lease is released instead, so that a
 * graceful stop does not count as a failure. If the lease is lost (a renew is
 * refused, or none succeeded before the lease would expire), `fn`'s signal is
 * aborted at once and the job is NEVER completed: withLease throws
 * LeaseLostError instead. A job cancelled while `fn` runs is such a loss
 * (reason cancelled): its next renew is refused, `fn`'s signal aborts, and the
 * job is neither completed nor failed.
 *
 * The payload's type and the result's are inferred from a typed `fn` or
 * given (`withLease<{ to: string }>(...)`), default unknown: not checked.
 *
 * Answers the done job, or null when `{ queue }` had nothing due (within
 * `waitMs`, when given: the server holds the claim until a job comes, so a
 * worker waits for work without polling; aborting `signal` gives up the wait).
 *
 * @example
 * await withLease(client, { queue: "mail" }, async ({ job, signal }) => {
 *   // The job's id, the same under every lease: a second lease of the job sends no second mail.
 *   await sendMail(job.payload, { idempotencyKey: job.id, signal });
 *   return { sent: true };
 * }, { owner: "worker-a", ttlMs: 30_000 });
 */
export async function withLease<Payload = unknown, Result = unknown>(
  client: LeaseClient,
  target: string | { queue: string },
  fn: (held: HeldLease<Payload>) => Promise<Result>,
  options: WithLeaseOptions,
): Promise<Job<Payload, Result> | null> {
  const { owner, ttlMs, retryInMs } = options;
  // Checked before the claim: a fail the server refuses would leave the job leased until its lease runs out.
  if (retryInMs !== undefined && !(Number.isSafeInteger(retryInMs) && retryInMs >= 0)) {
    throw new RangeError(`withLease: retryInMs must be a whole number of ms, 0 or more, got ${retryInMs}`);
  }
  options.signal?.throwIfAborted();
  const sentAt = Date.now();
  const claimed = await claim<Payload>(client, target, { owner, ttlMs, waitMs: options.waitMs, signal: options.signal });
  if (claimed === null) return null;
  const { lease, waitedMs } = claimed;
  const claimedAt = sentAt + waitedMs; // the lease began no earlier: the server waited this long before taking it
  const { job, fence } = lease;
  if (options.signal?.aborted) {
    // Stopped while the claim was on its way: give the job back untouched, fn never starts.
    await client.release(job.id, { owner, fence }).catch(() => undefined);
    throw options.signal.reason;
  }

  // The rest, the renews and the write that ends the lease included, in the job's span: the child of the span that enqueued it.
  const jobSpan = startProcessSpan(job, { owner, fence, attempts: job.attempts });
  const hold = () => holdLease({ client, lease, fn, options, claimedAt });
  return jobSpan === null ? hold() : runInSpan(jobSpan.span, jobSpan.context, hold);
}

/**
 * Holds a claimed lease while `fn` runs, renewing it in the background, and
 * ends it as withLease says: complete with fn's value, fail with its error,
 * release after the caller's signal; LeaseLostError once it is lost.
 */
async function holdLease<Payload, Result>(held: { client: LeaseClient; lease: Lease<Payload>; fn: (held: HeldLease<Payload>) => Promise<Result>; options: WithLeaseOptions; claimedAt: number }): Promise<Job<Payload, Result>> {
  const { client, lease, fn, options, claimedAt } = held;
  const { owner, ttlMs, retryInMs } = options;
  const { job, fence } = lease;
  const everyMs = options.renewEveryMs ?? Math.max(1, Math.floor(ttlMs / 3));
  const heartbeat = new Heartbeat({ client, id: job.id, owner, fence, ttlMs, everyMs }, claimedAt);
  const stop = () => heartbeat.abort(new Error("stopped by the caller"));
  options.signal?.addEventListener("abort", stop, { once: true });
  try {
    let value: Result;
    try {
      const step = stepsOf(client, lease, { owner, signal: heartbeat.signal, lost: (error) => heartbeat.lose(error) });
      value = await fn({ job, fence, signal: heartbeat.signal, progress: (report) => heartbeat.progress.report(report), step });
    } catch (error) {
      heartbeat.stop();
      if (heartbeat.lost) throw heartbeat.lost;
      await heartbeat.settled();
      // Either call may be refused or not get through: the lease ends by itself anyway.
      if (options.signal?.aborted) await client.release(job.id, { owner, fence }).catch(() => undefined);
      else await client.fail(job.id, { owner, fence, error: failureMessage(error), retryInMs }).catch(() => undefined);
      throw error;
    }
    heartbeat.stop();
    if (heartbeat.lost) throw heartbeat.lost;
    await heartbeat.settled();
    if (options.signal?.aborted) {
      await client.release(job.id, { owner, fence }).catch(() => undefined);
      throw options.signal.reason;
    }
    return (await client.complete(job.id, { owner, fence, result: value === undefined ? null : value })).job as Job<Payload, Result>;
  } finally {
    heartbeat.stop();
    options.signal?.removeEventListener("abort", stop);
  }
}

/** Claims the job, or the next one of the queue (waiting up to `waitMs` for it, a rate limit's next token too); with how long after the send the lease began at the earliest. */
async function claim<Payload>(client: LeaseClient, target: string | { queue: string }, how: { owner: string; ttlMs: number; waitMs?: number; signal?: AbortSignal }): Promise<{ lease: Lease<Payload>; waitedMs: number } | null> {
  const { owner, ttlMs, waitMs, signal } = how;
  if (typeof target === "string") return { lease: await client.claim<Payload>(target, { owner, ttlMs }), waitedMs: 0 };
  return claimOneWithin<Payload>(client, target.queue, { owner, ttlMs, waitMs }, signal);
}


/** The lease a heartbeat keeps alive. */
type Beat = { client: LeaseClient; id: string; owner: string; fence: number; ttlMs: number; everyMs: number };

/**
 * Renews a lease every `everyMs`, carrying the latest progress reported, and
 * aborts its signal when a renew is refused or when the lease would expire
 * before any renew got through.
 */
class Heartbeat {
  /** What the next renew reports. */
  readonly progress = new PendingProgress();
  readonly #beat: Beat;
  readonly #controller = new AbortController();
  #lost: LeaseLostError | NotFoundError | undefined;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #deadline: ReturnType<typeof setTimeout> | undefined;
  #stopped = false;
  #inFlight: Promise<unknown> | undefined;

  /** Starts beating for a lease whose claim was sent at `sentAt`. */
  constructor(beat: Beat, sentAt: number) {
    this.#beat = beat;
    this.#expireAt(sentAt + beat.ttlMs);
    this.#schedule();
  }

  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  /** Why the lease was lost, if it was. */
  get lost(): LeaseLostError | NotFoundError | undefined {
    return this.#lost;
  }

  abort(reason: unknown): void {
    this.stop();
    this.#controller.abort(reason);
  }

  stop(): void {
    this.#stopped = true;
    clearTimeout(this.#timer);
    clearTimeout(this.#deadline);
  }

  /**
   * Waits for a renew already sent, so that the write that ends the lease goes
   * after it: a renew arriving after the complete would be refused, and recorded
   * as a stale write this worker never made.
   */
  async settled(): Promise<void> {
    await this.#inFlight?.catch(() => undefined);
  }

  #schedule(): void {
    this.#timer = setTimeout(() => void this.#renew(), this.#beat.everyMs);
  }

  async #renew(): Promise<void> {
    const { client, id, owner, fence, ttlMs } = this.#beat;
    const sentAt = Date.now();
    const report = this.progress.take();
    try {
      this.#inFlight = client.renew(id, { owner, fence, ttlMs, ...report });
      await this.#inFlight;
      if (this.#stopped) return;
      // The server's until is at least sentAt + ttl: a deadline of our own clock, free of skew.
      this.#expireAt(sentAt + ttlMs);
    } catch (error) {
      if (this.#stopped) return;
      if (error instanceof LeaseLostError || error instanceof NotFoundError) return this.lose(error);
      // Unreachable or unavailable: keep trying until the deadline says the lease is gone.
      this.progress.putBack(report);
    }
    this.#schedule();
  }

  #expireAt(at: number): void {
    clearTimeout(this.#deadline);
    this.#deadline = setTimeout(() => {
      const { id, fence } = this.#beat;
      const message = `the lease on job ${JSON.stringify(id)} expired before it could be renewed`;
      this.lose(new LeaseLostError(409, "stale_lease", message, { reason: "expired", currentFence: fence }));
    }, Math.max(0, at - Date.now()));
  }

  /** The lease is lost, as a refused renew or a refused step says: its signal aborts, and `lost` says why. */
  lose(error: LeaseLostError | NotFoundError): void {
    this.#lost ??= error;
    this.abort(error);
  }
}
