import { errorFromResponse, FenceleaseError, ForbiddenError, LeaseLostError, NotFoundError, UnauthorizedError, UnavailableError } from "../errors.ts";
import type { LeaseClient } from "../lease-client.ts";
import { expiredError, LeaseKeeper, type LostLease } from "../lease-keeper.ts";
import type { ClaimNextAnswer, CompleteManyAnswer, Lease } from "../types.ts";
import { failureMessage } from "../failure-message.ts";
import { inJobContext, inSettleSpan, startProcessSpan } from "../tracing.ts";
import { endSpan } from "../../tracing/job-span.ts";
import { ClaimPace } from "./claim-pace.ts";
import { stepsOf } from "../steps.ts";
import { backoffMs, type Slot } from "./worker-slot.ts";
import { type JobHandler, MAX_MANY, type Settings } from "./worker-options.ts";

/** The most jobs one claim takes (the server's limit). */
const MAX_CLAIM = 100;
/**
 * How many completeMany calls may be on their way at once. A second lets a
 * result that finishes while one call is on its way go without waiting for it;
 * past two, results wait and go together, which is what keeps the requests far
 * fewer than the jobs (the server's cost is mostly per request: see README).
 */
export const MAX_COMPLETING = 2;
/**
 * The moving parts of runWorker (whose comment states what they guarantee):
 * the claim loop, the handlers, the completions sent as a group, the drain
 * and the stop.
 */
export class WorkerRunner {
  readonly done: Promise<void>;
  readonly #client: LeaseClient;
  readonly #settings: Settings;
  readonly #handler: JobHandler;
  readonly #keeper: LeaseKeeper;
  /** Every job in hand; its size is what `concurrency` bounds. */
  readonly #slots = new Set<Slot>();
  /** The slots whose lease is still held, by job id. */
  readonly #held = new Map<string, Slot>();
  /** Results waiting for the completion in flight. */
  #queued: Slot[] = [];
  /** Slots promised to jobs that a claim or a `next` on its way may bring. */
  #reserved = 0;
  /** Requests on their way that end a lease or may bring one: stop() waits for them. */
  #busy = 0;
  #claiming = false;
  /** completeMany calls on their way, and the slots their answers end. */
  #completing = 0;
  #ending = 0;
  #flushSoon = false;
  #claimFailures = 0;
  #completeFailures = 0;
  /** Set while the claim loop waits: the queue was empty, or a claim failed. */
  #waiting: ReturnType<typeof setTimeout> | undefined;
  /** The next claim waits on the server for a job (the queue was empty). */
  #longPoll = false;
  /** How the next claim goes after a short one: see ClaimPace (a rate limit's next token, a long poll, idleMs). */
  readonly #pace = new ClaimPace();
  /** Aborted by stop(): gives up a long poll on its way. */
  readonly #giveUp = new AbortController();
  /** The long poll on its way, if one is: a drain gives it up, to ask again without waiting. */
  #longPollOnItsWay: AbortController | undefined;
  /** Set by stop({ drain: true }): take every due job, without long polls, and stop once the queue has none. */
  #draining = false;
  /** Draining, a claim or a `next` came back short: no claim until nothing is in hand, then one last look. */
  #dry = false;
  /** Set while completions wait out a backoff after a completeMany that failed. */
  #completeBackoff: ReturnType<typeof setTimeout> | undefined;
  #stopping = false;
  #stopped = false;
  /** Set once a 401 or a 403 stopped the runner: the same refusal of the calls still on their way is not told again. */
  #hopeless = false;
  #resolveDone!: () => void;
  readonly #onAbort = () => void this.stop();

  constructor(client: LeaseClient, settings: Settings, handler: JobHandler) {
    this.#client = client;
    this.#settings = settings;
    this.#handler = handler;
    this.done = new Promise((resolve) => (this.#resolveDone = resolve));
    this.#keeper = new LeaseKeeper({
      client,
      owner: settings.owner,
      ttlMs: settings.ttlMs,
      everyMs: settings.renewEveryMs,
      onLost: (id, fence, error) => this.#lost(id, fence, error),
      onSettled: () => this.#scheduleFlush(),
      onError: (error) => this.#report(error),
    });
    if (settings.signal?.aborted) void this.stop();
    else {
      settings.signal?.addEventListener("abort", this.#onAbort, { once: true });
      this.#pump();
    }
  }

  stop(options: { drain?: boolean } = {}): Promise<void> {
    if (options.drain) {
      this.#drain();
      return this.done;
    }
    if (!this.#stopping) {
      this.#stopping = true;
      clearTimeout(this.#waiting);
      this.#waiting = undefined;
      this.#giveUp.abort(new Error("the worker runner stopped"));
      this.#settleIfStopped();
    }
    return this.done;
  }

  /** Starts a drain (see WorkerHandle.stop): no more long polls, and no waiting out the queue's emptiness. */
  #drain(): void {
    if (this.#stopping || this.#draining) return;
    this.#draining = true;
    clearTimeout(this.#waiting); // an idle pause, or a rate limit's (asked again at once, and told again)
    this.#waiting = undefined;
    this.#longPollOnItsWay?.abort(new Error("the worker runner drains"));
    this.#pump();
  }

  /** Free slots: neither in hand (but for those a completion on its way ends) nor promised to a claim on its way. */
  #free(): number {
    return this.#settings.concurrency - (this.#slots.size - this.#ending) - this.#reserved;
  }

  /**
   * How many jobs a write that ends `ending` leases may take with `next`: the
   * slots free once they are gone. The slots of another write on its way count
   * as taken until it is answered (its `next` already holds them), so this never
   * promises a slot twice, at the cost of a claim now and then when two overlap.
   */
  #freeAfter(ending: number): number {
    return Math.max(0, Math.min(MAX_CLAIM, this.#free() + ending));
  }

  /** Claims jobs for the free slots, unless a claim is on its way or the loop waits. */
  #pump(): void {
    if (this.#stopping || this.#claiming || this.#waiting !== undefined) return;
    // Draining a dry queue: the results in hand ask for what comes next; with none in hand, one last claim decides.
    if (this.#dry && (this.#slots.size > 0 || this.#busy > 0)) return;
    const limit = Math.min(this.#free(), MAX_CLAIM);
    if (limit > 0) void this.#claim(limit);
  }

  async #claim(limit: number): Promise<void> {
    const { queue, owner, ttlMs } = this.#settings;
    const waitMs = this.#longPoll && !this.#draining ? this.#settings.waitMs : 0;
    this.#longPoll = false;
    this.#claiming = true;
    this.#reserved += limit;
    this.#busy++;
    // Sent with nothing in hand: its answer alone tells whether the queue has a due job (see #waitForJobs).
    const lastLook = this.#slots.size === 0 && this.#busy === 1;
    const longPoll = waitMs > 0 ? new AbortController() : undefined;
    this.#longPollOnItsWay = longPoll;
    const sentAt = Date.now();
    let answer: ClaimNextAnswer | undefined;
    let failure: { error: unknown } | undefined;
    try {
      const signal = longPoll ? AbortSignal.any([this.#giveUp.signal, longPoll.signal]) : this.#giveUp.signal;
      answer = await this.#client.claimNextAnswer(queue, { owner, ttlMs, limit, waitMs: waitMs || undefined }, { signal });
    } catch (error) {
      if (!this.#giveUp.signal.aborted && !longPoll?.signal.aborted) failure = { error }; // given up by stop() or a drain: not an error
    }
    this.#longPollOnItsWay = undefined;
    this.#claiming = false;
    this.#reserved -= limit;
    this.#busy--;
    if (answer === undefined) {
      if (!longPoll?.signal.aborted) {
        // A drain asks again at once; anything else after a backoff, which the report tells.
        const backoff = backoffMs(this.#claimFailures++);
        if (failure) this.#report(failure.error, backoff);
        this.#wait(backoff);
      }
    } else {
      this.#claimFailures = 0;
      this.#pace.answered(answer, waitMs);
      // The leases began no earlier than the send plus the server's wait: their deadlines count from there.
      this.#took(answer.leases, limit, sentAt + (answer.waitedMs ?? 0), lastLook);
    }
    this.#afterChange();
  }

  /**
   * The queue had no due job: the next claim goes as ClaimPace says (a long
   * poll at once; or after idleMs, or a rate limit's next token). Draining,
   * a job the rate limit holds back is due all the same, so the drain waits
   * for its token; otherwise the queue is dry, and `drained` ends the drain:
   * a claim sent with nothing in hand took nothing, and said no token is
   * awaited. (A `next` never ends it: its answer says nothing of tokens.)
   */
  #waitForJobs(drained: boolean): void {
    const { longPoll, afterMs, tokenDue } = this.#pace.next(this.#settings);
    if (this.#draining) {
      this.#dry = !tokenDue;
      if (tokenDue) this.#wait(afterMs);
      else if (drained) void this.stop();
      return;
    }
    this.#longPoll = longPoll;
    if (afterMs > 0) this.#wait(afterMs);
  }

  #wait(ms: number): void {
    if (this.#stopping || this.#waiting !== undefined) return;
    this.#waiting = setTimeout(() => {
      this.#waiting = undefined;
      this.#pump();
    }, ms);
  }

  /**
   * Takes the leases a claim or a `next` of `limit` brought: fewer than asked
   * means the queue is empty for now. `lastLook`: a claim sent with nothing
   * else in hand.
   */
  #took(leases: Lease[], limit: number, sentAt: number, lastLook: boolean): void {
    for (const lease of leases) {
      if (this.#stopping) void this.#release(lease);
      else this.#start(lease, sentAt);
    }
    if (leases.length < limit) this.#waitForJobs(lastLook && leases.length === 0);
    else if (!this.#stopping) {
      // The server answered in full: there may be more, and whatever the loop waited out is over.
      this.#dry = false;
      clearTimeout(this.#waiting);
      this.#waiting = undefined;
    }
  }

  #start(lease: Lease, sentAt: number): void {
    const span = startProcessSpan(lease.job, { owner: this.#settings.owner, fence: lease.fence, attempts: lease.job.attempts });
    const slot: Slot = { lease, controller: new AbortController(), span };
    this.#slots.add(slot);
    this.#held.set(lease.job.id, slot);
    this.#keeper.keep(lease.job.id, lease.fence, sentAt);
    void this.#run(slot);
  }

  async #run(slot: Slot): Promise<void> {
    const { job, fence } = slot.lease;
    let failure: string | undefined;
    try {
      // Only the handler runs in the job's span: the runner's own calls (claims, the renews of all) stay out of it.
      const { signal } = slot.controller;
      const step = stepsOf(this.#client, slot.lease, { owner: this.#settings.owner, signal, lost: (error) => this.#lose(slot, error) });
      const value = await inJobContext(slot.span, () => this.#handler({ job, fence, signal, progress: (report) => this.#keeper.progress(job.id, fence, report), step }));
      slot.result = value === undefined ? null : value;
    } catch (error) {
      failure = failureMessage(error);
      slot.failed = error;
    }
    if (slot.lost) this.#finish(slot); // its result, or its failure, is dropped
    else if (failure === undefined) {
      this.#queued.push(slot);
      this.#scheduleFlush();
      return;
    } else await this.#fail(slot, failure);
    this.#afterChange();
  }

  /** Flushes once the handlers that return in this same turn have queued their results too. */
  #scheduleFlush(): void {
    if (this.#flushSoon) return;
    this.#flushSoon = true;
    queueMicrotask(() => {
      this.#flushSoon = false;
      this.#flush();
    });
  }

  /** Sends the queued results in completeMany calls while fewer than MAX_COMPLETING are on their way. */
  #flush(): void {
    while (this.#completing < MAX_COMPLETING && this.#completeBackoff === undefined && this.#queued.length > 0) {
      if (!this.#flushOne()) return;
    }
  }

  /** Sends one batch of the queued results; false if none is ready to go. */
  #flushOne(): boolean {
    for (const slot of this.#queued.filter((slot) => this.#keeper.overdue(slot.lease.job.id, slot.lease.fence))) {
      this.#lost(slot.lease.job.id, slot.lease.fence, expiredError(slot.lease.job.id, slot.lease.fence)); // no retry past the deadline
    }
    // A result whose lease the renew in flight carries waits for it: see LeaseKeeper.
    const ready = this.#queued.filter((slot) => !this.#keeper.renewing(slot.lease.job.id));
    const alone = ready.find((slot) => slot.alone);
    const batch = alone ? [alone] : ready.slice(0, MAX_MANY);
    if (batch.length === 0) return false;
    const sending = new Set(batch);
    this.#queued = this.#queued.filter((slot) => !sending.has(slot));
    void this.#complete(batch);
    return true;
  }

  async #complete(batch: Slot[]): Promise<void> {
    const { queue, owner, ttlMs } = this.#settings;
    this.#completing++;
    this.#busy++;
    for (const slot of batch) this.#keeper.settling(slot.lease.job.id, slot.lease.fence, true);
    // The slots free once these results are stored, if this call may take jobs.
    const limit = this.#stopping || batch.some((slot) => slot.noNext) ? 0 : this.#freeAfter(batch.length);
    this.#reserved += limit;
    this.#ending += batch.length;
    const sentAt = Date.now();
    let answer: CompleteManyAnswer | undefined;
    let failure: unknown;
    try {
      const leases = batch.map(({ lease, result }) => ({ id: lease.job.id, fence: lease.fence, result }));
      answer = await inSettleSpan(queue, batch.map((slot) => slot.span), () => this.#client.completeMany({ owner, leases, next: limit > 0 ? { queue, limit, ttlMs } : undefined }));
    } catch (error) {
      failure = error;
    }
    this.#completing--;
    this.#ending -= batch.length;
    this.#reserved -= limit;
    this.#busy--;
    if (answer === undefined) this.#retryCompletions(batch, failure);
    else {
      this.#completeFailures = 0;
      answer.completed.forEach((outcome, i) => {
        const slot = batch[i]!;
        if ("error" in outcome) this.#lose(slot, errorFromResponse(outcome.error.code === "not_found" ? 404 : 409, { error: outcome.error }) as LostLease);
        this.#finish(slot);
      });
      if (limit > 0) this.#took(answer.leases, limit, sentAt, false);
    }
    this.#afterChange();
  }

  /** After a completeMany that failed: the same results again without `next` after a backoff, or each alone. */
  #retryCompletions(batch: Slot[], error: unknown): void {
    if (error instanceof UnavailableError) {
      // It may have landed. So it is sent again without `next`, and its leases are not renewed meanwhile (a
      // renew that came after it would be refused): it is retried until their deadlines (see #flush).
      const backoff = backoffMs(this.#completeFailures++);
      this.#report(error, backoff);
      for (const slot of batch) slot.noNext = true;
      this.#queued.unshift(...batch);
      this.#completeBackoff = setTimeout(() => {
        this.#completeBackoff = undefined;
        this.#flush();
      }, backoff);
      return;
    }
    this.#report(error);
    // Refused as a whole, so nothing was applied: the leases are kept and renewed as before.
    for (const slot of batch) this.#keeper.settling(slot.lease.job.id, slot.lease.fence, false);
    if (batch.length > 1) {
      for (const slot of batch) slot.alone = slot.noNext = true;
      this.#queued.unshift(...batch);
    } else void this.#fail(batch[0]!, `the result could not be stored: ${failureMessage(error)}`).then(() => this.#afterChange());
  }

  /** Fails the attempt with the handler's message, taking the next jobs for the freed slot. */
  async #fail(slot: Slot, message: string): Promise<void> {
    const { owner, ttlMs, retryInMs } = this.#settings;
    const { job, fence } = slot.lease;
    this.#busy++;
    try {
      if (this.#keeper.renewing(job.id)) await this.#keeper.settled(); // as for a result: see LeaseKeeper
      if (slot.lost) return;
      this.#keeper.settling(job.id, fence, true);
      const limit = this.#stopping ? 0 : this.#freeAfter(1);
      this.#reserved += limit;
      const sentAt = Date.now();
      let leases: Lease[] | undefined;
      try {
        ({ leases } = await inJobContext(slot.span, () => this.#client.fail(job.id, { owner, fence, error: message, retryInMs, next: limit > 0 ? { limit, ttlMs } : undefined })));
      } catch (error) {
        if (error instanceof LeaseLostError || error instanceof NotFoundError) this.#lose(slot, error);
        else this.#report(error); // the lease runs out by itself, counted as a failed attempt
      }
      this.#reserved -= limit;
      this.#finish(slot);
      if (limit > 0 && leases !== undefined) this.#took(leases, limit, sentAt, false);
    } finally {
      this.#finish(slot);
      this.#busy--;
    }
  }

  async #release(lease: Lease): Promise<void> {
    this.#busy++;
    try {
      await this.#client.release(lease.job.id, { owner: this.#settings.owner, fence: lease.fence });
    } catch (error) {
      this.#report(error); // the lease runs out by itself
    } finally {
      this.#busy--;
      this.#settleIfStopped();
    }
  }

  /** The keeper lost a lease: abort its handler, and drop its result if it was waiting to be sent. */
  #lost(id: string, fence: number, error: LostLease): void {
    const slot = this.#held.get(id);
    if (slot?.lease.fence !== fence) return;
    this.#lose(slot, error);
    const queued = this.#queued.indexOf(slot);
    if (queued === -1) return; // its handler runs, or its fail waits for the renew: they see `lost`
    this.#queued.splice(queued, 1);
    this.#finish(slot);
    this.#afterChange();
  }

  #lose(slot: Slot, error: LostLease): void {
    if (slot.lost) return;
    slot.lost = error;
    if (this.#held.get(slot.lease.job.id) === slot) this.#held.delete(slot.lease.job.id);
    this.#keeper.drop(slot.lease.job.id, slot.lease.fence);
    slot.controller.abort(error);
    this.#report(error);
  }

  /** The slot's job is no longer in hand: its lease ended, or was lost, and its handler returned. */
  #finish(slot: Slot): void {
    if (slot.span) endSpan(slot.span.span, slot.lost ?? slot.failed);
    slot.span = null;
    this.#slots.delete(slot);
    if (this.#held.get(slot.lease.job.id) === slot) this.#held.delete(slot.lease.job.id);
    this.#keeper.drop(slot.lease.job.id, slot.lease.fence);
  }

  #afterChange(): void {
    this.#pump();
    this.#scheduleFlush();
    this.#settleIfStopped();
  }

  #settleIfStopped(): void {
    if (!this.#stopping || this.#stopped || this.#slots.size > 0 || this.#busy > 0) return;
    this.#stopped = true;
    clearTimeout(this.#completeBackoff);
    this.#settings.signal?.removeEventListener("abort", this.#onAbort);
    void this.#keeper.stop().then(() => this.#resolveDone());
  }

  /**
   * Tells onError of an error, with its one line: what failed, and what the
   * runner does next (`retryInMs`: the same call again after that long). A 401
   * or a 403 stops the runner: the token will not do, and asking again will
   * not change that; it is told once.
   */
  #report(error: unknown, retryInMs?: number): void {
    const hopeless = error instanceof UnauthorizedError || error instanceof ForbiddenError;
    if (hopeless && this.#hopeless) return;
    let next = "";
    if (hopeless) {
      this.#hopeless = true;
      next = `; stopped, since a ${error.status} does not heal by asking again`;
      void this.stop();
    } else if (retryInMs !== undefined) next = `; next attempt in ${(retryInMs / 1000).toFixed(1)} s, at ${new Date(Date.now() + retryInMs).toISOString()}`;
    const { owner, queue } = this.#settings;
    try {
      this.#settings.onError(error, `${owner} on queue ${queue}: ${oneLine(error)}${next}`);
    } catch {
      // An onError that throws must not break the runner.
    }
  }
}

/** An error in one line: a refusal's code and message, or any other error's message. */
function oneLine(error: unknown): string {
  if (error instanceof FenceleaseError) return `${error.code}: ${error.message}`;
  return (error instanceof Error ? error.message : String(error)).split("\n", 1)[0]!;
}
