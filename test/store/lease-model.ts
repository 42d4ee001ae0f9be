// The lease contract as a plain in-memory model, for the property tests in
// test/store/property.test.ts. It is written from the contract (README "The store
// API" and issue 2), not from src/store/sql/lease.ts, so that the store and the
// model can disagree. It keeps no history, takes no shortcuts and never
// touches a database: one Map of jobs and the rules, clause by clause.

/** A job as the model keeps it: the same fields the store's `state` answers. */
export type ModelJob = {
  id: string;
  queue: string;
  payload: unknown;
  priority: number;
  runAt: number;
  owner: string | null;
  until: number;
  fence: number;
  result: string | null;
  /** Completed: a cancelled job is not done (the store's `done`). */
  done: boolean;
  /** Cancelled (issue 13): final, its owner and fence kept. */
  cancelled: boolean;
  /** What the last accepted renew that carried one reported, or null. */
  progress: unknown;
  attempts: number;
  maxAttempts: number;
  createdAt: number;
  updatedAt: number;
};

/** What a verb answered: a value, or the refusal it threw (its name, and the reason and fence it gave). */
export type Outcome =
  | { ok: unknown }
  | { error: "InvalidArgument" | "NotFound" }
  | { error: "NotClaimable"; reason: "leased" | "done" | "cancelled" }
  | { error: "LeaseLost"; reason: "superseded" | "not_owner" | "done" | "cancelled" | "expired"; currentFence: number }
  | { error: "WrongStatus"; status: string };

type EnqueueOptions = { queue?: string; priority?: number; runAt?: number; maxAttempts?: number; now: number };

const isPositiveInt = (value: number) => Number.isSafeInteger(value) && value > 0;
const isInstant = (value: number) => Number.isSafeInteger(value) && value >= 0;

/** The contract of the lease store, kept in memory. */
export class LeaseModel {
  readonly jobs = new Map<string, ModelJob>();

  enqueue(id: string, options: EnqueueOptions): Outcome {
    if (this.jobs.has(id)) return { ok: false }; // an existing id, and its lease, is never touched
    const { now } = options;
    this.jobs.set(id, {
      id, queue: options.queue ?? "default", payload: null, priority: options.priority ?? 0, runAt: options.runAt ?? now,
      owner: null, until: 0, fence: 0, result: null, done: false, cancelled: false, progress: null, attempts: 0, maxAttempts: options.maxAttempts ?? 25, createdAt: now, updatedAt: now,
    });
    return { ok: true };
  }

  state(id: string): ModelJob | null {
    const job = this.jobs.get(id);
    return job ? { ...job } : null;
  }

  /** A lease is current when owner and fence match, the job is neither done nor cancelled, and it has not expired (`until > now`). */
  #current(job: ModelJob, owner: string, fence: number, now: number): boolean {
    return job.owner === owner && job.fence === fence && !job.done && !job.cancelled && job.until > now;
  }

  /** Claimable: neither done nor cancelled, and no lease in force (at `now == until` the old one has expired). */
  #claimable(job: ModelJob, now: number): boolean {
    return !job.done && !job.cancelled && job.until <= now;
  }

  #take(job: ModelJob, owner: string, now: number, ttlMs: number): void {
    job.owner = owner;
    job.until = now + ttlMs;
    job.fence += 1;
    job.attempts += 1;
    job.updatedAt = now;
  }

  claim(id: string, owner: string, now: number, ttlMs: number): Outcome {
    if (!isPositiveInt(ttlMs) || !isInstant(now)) return { error: "InvalidArgument" };
    const job = this.jobs.get(id);
    if (!job || !this.#claimable(job, now)) return { ok: null };
    this.#take(job, owner, now, ttlMs);
    return { ok: job.fence };
  }

  /** claimNext: the due jobs (run_at <= now) of a queue, highest priority first, then due longest, then oldest, then id. */
  claimNext(queue: string, owner: string, now: number, ttlMs: number, limit: number): Outcome {
    if (!isPositiveInt(ttlMs) || !isInstant(now) || !isPositiveInt(limit)) return { error: "InvalidArgument" };
    const due = [...this.jobs.values()]
      .filter((job) => job.queue === queue && this.#claimable(job, now) && job.runAt <= now)
      .sort((a, b) => b.priority - a.priority || a.runAt - b.runAt || a.createdAt - b.createdAt || (a.id < b.id ? -1 : 1))
      .slice(0, limit);
    for (const job of due) this.#take(job, owner, now, ttlMs);
    return { ok: due.map((job) => ({ job: { ...job }, fence: job.fence, until: job.until })) };
  }

  /** renew: the current lease only; it stores the progress it carries (undefined: none), and a refused one stores nothing. */
  renew(id: string, owner: string, fence: number, now: number, ttlMs: number, progress?: unknown): Outcome {
    if (!isPositiveInt(ttlMs) || !isPositiveInt(fence) || !isInstant(now)) return { error: "InvalidArgument" };
    const job = this.jobs.get(id);
    if (!job || !this.#current(job, owner, fence, now)) return { ok: false };
    job.until = now + ttlMs;
    job.updatedAt = now;
    if (progress !== undefined) job.progress = progress;
    return { ok: true };
  }

  /** cancelJob: a job neither done nor cancelled becomes cancelled, its lease (owner, until, fence) kept; cancelled again changes nothing; done is refused. */
  cancelJob(id: string, now: number): Outcome {
    const job = this.jobs.get(id);
    if (!job) return { error: "NotFound" };
    if (job.done) return { error: "WrongStatus", status: "done" };
    const changed = !job.cancelled;
    if (changed) {
      job.cancelled = true;
      job.updatedAt = now;
    }
    return { ok: { changed, job: { ...job } } };
  }

  complete(id: string, owner: string, fence: number, now: number, result: string): Outcome {
    if (!isPositiveInt(fence) || !isInstant(now)) return { error: "InvalidArgument" };
    const job = this.jobs.get(id);
    if (!job || !this.#current(job, owner, fence, now)) return { ok: false };
    job.result = result;
    job.done = true;
    job.updatedAt = now;
    return { ok: true };
  }

  /**
   * release: owner and fence match and not done (expiry does not matter): nobody holds it, fence kept.
   * In time (`until > now`) the attempt is given back; late, it counts as the expiry it was (dead
   * letters are not modelled: the property tests give every job far more attempts than they use).
   */
  release(id: string, owner: string, fence: number, now: number): Outcome {
    if (!isPositiveInt(fence) || !isInstant(now)) return { error: "InvalidArgument" };
    const job = this.jobs.get(id);
    if (!job || job.owner !== owner || job.fence !== fence || job.done || job.cancelled) return { ok: false };
    if (job.until > now) job.attempts -= 1;
    job.owner = null;
    job.until = 0;
    job.updatedAt = now;
    return { ok: true };
  }

  // The store's verbs with their rich answers (the methods above answer as the design note's
  // operations do): the same rule, and on a refusal the reason read from the job as it is now.

  enqueueJob(id: string, options: EnqueueOptions): Outcome {
    const created = (this.enqueue(id, options) as { ok: boolean }).ok;
    return { ok: { created, job: this.state(id) } };
  }

  claimJob(id: string, owner: string, now: number, ttlMs: number): Outcome {
    const answer = this.claim(id, owner, now, ttlMs);
    if (!("ok" in answer)) return answer;
    const job = this.jobs.get(id);
    if (!job) return { error: "NotFound" };
    if (answer.ok === null) return { error: "NotClaimable", reason: job.done ? "done" : job.cancelled ? "cancelled" : "leased" };
    return { ok: { job: { ...job }, fence: job.fence, until: job.until } };
  }

  renewLease(id: string, owner: string, fence: number, now: number, ttlMs: number, progress?: unknown): Outcome {
    const answer = this.renew(id, owner, fence, now, ttlMs, progress);
    if (!("ok" in answer)) return answer;
    return answer.ok ? { ok: this.jobs.get(id)!.until } : this.#refusal(id, owner, fence);
  }

  /** completeJob: the same completion sent again (owner, fence and result) answers the job again. */
  completeJob(id: string, owner: string, fence: number, now: number, result: string): Outcome {
    const answer = this.complete(id, owner, fence, now, result);
    if (!("ok" in answer)) return answer;
    const job = this.jobs.get(id);
    const repeated = job?.done && job.owner === owner && job.fence === fence && job.result === result;
    return answer.ok || repeated ? { ok: { ...job } } : this.#refusal(id, owner, fence);
  }

  releaseLease(id: string, owner: string, fence: number, now: number): Outcome {
    const answer = this.release(id, owner, fence, now);
    if (!("ok" in answer)) return answer;
    return answer.ok ? { ok: { ...this.jobs.get(id) } } : this.#refusal(id, owner, fence);
  }

  /**
   * Why a write with (owner, fence) was refused: superseded when a newer lease
   * exists; not_owner when the lease is another's or was given back; done;
   * cancelled; or else it expired.
   */
  #refusal(id: string, owner: string, fence: number): Outcome {
    const job = this.jobs.get(id);
    if (!job) return { error: "NotFound" };
    const currentFence = job.fence;
    if (fence < job.fence) return { error: "LeaseLost", reason: "superseded", currentFence };
    if (fence !== job.fence || owner !== job.owner) return { error: "LeaseLost", reason: "not_owner", currentFence };
    if (job.done) return { error: "LeaseLost", reason: "done", currentFence };
    if (job.cancelled) return { error: "LeaseLost", reason: "cancelled", currentFence };
    return { error: "LeaseLost", reason: "expired", currentFence };
  }
}
