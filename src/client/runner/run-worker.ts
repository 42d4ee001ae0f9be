import type { LeaseClient } from "../lease-client.ts";
import { type JobHandler, type WorkerOptions, workerSettings } from "./worker-options.ts";
import { WorkerRunner } from "./worker-runner.ts";

/** A running worker: `stop()` it, or wait for `done`. */
export type WorkerHandle = {
  /**
   * Stops taking jobs, waits for the jobs in hand to finish and their results
   * to be stored; idempotent. With `{ drain: true }`, first takes and finishes
   * every job of the queue that is due, those that become due meanwhile too,
   * and stops once the queue has none (see runWorker, "Drain"). Resolves as
   * `done` does.
   */
  stop(options?: { drain?: boolean | undefined }): Promise<void>;
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
 * - A handler's `step(name, fn)` skips a step an earlier lease of the job
 *   recorded (see StepFn); a step refused as stale loses the lease as a
 *   refused renew does: its result is dropped.
 * - A handler that throws fails its job with the error's message as lastError:
 *   due again after `retryInMs` or the server's backoff, or dead on its last attempt.
 * - `stop()` takes no new job and asks no `next` any more, waits for the
 *   handlers in hand and for their results to be stored, then resolves. A job
 *   that arrives after the stop began (a `next` already on its way) is
 *   released at once, its handler never started, its attempt given back.
 *
 * Drain, "process these, then stop": `await worker.stop({ drain: true })`
 * (right after runWorker, or at any time) takes every job of the queue that is
 * due, runs it and stores its result, and resolves once the queue has no due
 * job left and nothing is in hand; the runner has then stopped. Due means due
 * by the time the drain looks, so it also takes the jobs that become due
 * while it drains: enqueued meanwhile (by a handler too), a failed attempt
 * due again (`retryInMs` 0: each attempt, until done or dead), a lease of
 * another worker that ran out. On a queue that never runs dry it never ends:
 * a plain `stop()` then ends it early (the jobs in hand finish, no more are
 * taken). While draining:
 * - no claim long-polls: a long poll on its way is given up, and a claim
 *   that finds nothing, sent while nothing was in hand, ends the drain (a
 *   claim that finds nothing while jobs are in hand waits for them: their
 *   results ask for the next jobs, then one last claim decides);
 * - a job the queue's rate limit holds back is due: the drain waits for its
 *   token (`retryAfterMs`) and takes it;
 * - a paused queue has nothing due, nor one full of other workers' leases
 *   (its `maxLeased`): the drain ends, their jobs left where they are;
 * - a job due later (`runAt`, `delayMs`, a retry's backoff) is not waited for;
 * - a claim that fails is asked again after its backoff, as ever: with the
 *   server unreachable the drain waits (reporting to `onError`) until it
 *   answers, or until a plain `stop()`.
 *
 * Failure modes:
 * - claimNext unreachable (in-process: the database could not serve it):
 *   reported to `onError` (its line says when the next attempt goes), asked
 *   again after a backoff (100 ms doubling, capped at 5 s, with jitter).
 * - A 401 or a 403 on any call (a wrong or revoked token, or one that may not
 *   work the queue; over HTTP only, in-process has no token): reported once,
 *   and the runner stops as `stop()` does, since asking again would get the
 *   same answer.
 * - A long poll that comes back empty before its `waitMs` (the server
 *   stopping, or full) is asked again after `idleMs`, never in a tight loop.
 *   `stop()` gives up a long poll on its way: the server hands nothing to a
 *   claim given up.
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
 * Types: the jobs' payload type and the handler's result type are inferred
 * from a typed handler (`async ({ job }: HeldLease<Invoice>) => ...`) or
 * given (`runWorker<Invoice>(...)`), default unknown. They are the caller's
 * word: the server takes any JSON, and nothing checks a payload against it.
 *
 * @example
 * const worker = runWorker<{ card: string; cents: number }>(client, { queue: "invoices", owner: "worker-a", concurrency: 32, ttlMs: 30_000 },
 *   async ({ job, signal }) => {
 *     // The job's id, the same under every lease: a second lease of the job makes no second charge.
 *     await chargeCard(job.payload.card, job.payload.cents, { idempotencyKey: job.id, signal });
 *     return { charged: true };
 *   });
 * process.once("SIGTERM", () => void worker.stop());
 * await worker.done;
 *
 * @example
 * // A batch: everything due now, then exit.
 * await runWorker(client, { queue: "thumbnails", owner: "batch-1", concurrency: 8, ttlMs: 30_000 }, resize).stop({ drain: true });
 */
export function runWorker<Payload = unknown, Result = unknown>(client: LeaseClient, options: WorkerOptions, handler: JobHandler<Payload, Result>): WorkerHandle {
  if (typeof handler !== "function") throw new TypeError("runWorker: the handler must be a function");
  // The runner hands on the jobs as the server answers them: their types are the caller's word.
  const runner = new WorkerRunner(client, workerSettings(options), handler as JobHandler);
  return { stop: (options) => runner.stop(options), done: runner.done };
}
