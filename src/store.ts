import type { Driver, Row, Statement } from "./driver.ts";
import { NotClaimable, NotFound } from "./errors.ts";
import { type Job, jobFromRow } from "./job.ts";
import { refusal } from "./refusal.ts";
import * as sql from "./statements.ts";
import * as check from "./validate.ts";

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
  /** Recorded for retries and dead letters; default 25. */
  maxAttempts?: number;
  /** The time of the enqueue, for `createdAt`; default `Date.now()`. */
  now?: number;
};

/** A lease taken by a claim: the job as it is now held, with its fence and expiry. */
export type Lease = { job: Job; fence: number; until: number };

// Each verb's arguments are checked here, before its statement is built, so a
// bad call never reaches the database.
const checked = {
  enqueue: (id: string, options: EnqueueOptions) => {
    const now = check.instant("now", options.now ?? Date.now());
    return sql.enqueue({
      id: check.name("id", id),
      queue: check.name("queue", options.queue ?? "default"),
      payload: check.json("payload", options.payload),
      priority: check.integer("priority", options.priority ?? 0),
      runAt: check.instant("runAt", options.runAt ?? now),
      maxAttempts: check.positiveInt("maxAttempts", options.maxAttempts ?? 25),
      now,
    });
  },
  claim: (id: string, owner: string, now: number, ttlMs: number) =>
    sql.claim(check.name("id", id), check.name("owner", owner), check.instant("now", now), check.positiveInt("ttlMs", ttlMs)),
  renew: (id: string, owner: string, fence: number, now: number, ttlMs: number) =>
    sql.renew(check.name("id", id), check.name("owner", owner), check.positiveInt("fence", fence), check.instant("now", now), check.positiveInt("ttlMs", ttlMs)),
  complete: (id: string, owner: string, fence: number, now: number, result: string) =>
    sql.complete(check.name("id", id), check.name("owner", owner), check.positiveInt("fence", fence), check.instant("now", now), check.text("result", result)),
  release: (id: string, owner: string, fence: number, now: number) =>
    sql.release(check.name("id", id), check.name("owner", owner), check.positiveInt("fence", fence), check.instant("now", now)),
};

/** Claim order: highest priority first, then the job that has been due longest. */
function claimOrder(a: Job, b: Job): number {
  return b.priority - a.priority || a.runAt - b.runAt || a.createdAt - b.createdAt || (a.id < b.id ? -1 : 1);
}

/**
 * The lease store: the verbs of the fencing contract over a Driver.
 *
 * The design note's verbs (`enqueue`, `claim`, `renew`, `complete`, `release`)
 * answer true/false or null, each with one statement. Their `...Job`/`...Lease`
 * twins run the same statement and read the job in the same batch, so they can
 * answer the job, or throw a domain error that says why the write was refused.
 */
export class LeaseStore {
  readonly #driver: Driver;

  constructor(driver: Driver) {
    this.#driver = driver;
  }

  /** enqueue adds a job and answers true, or answers false and changes nothing if the id exists. */
  async enqueue(id: string, options: EnqueueOptions = {}): Promise<boolean> {
    return (await this.#driver.run(checked.enqueue(id, options))).length === 1;
  }

  /** state reads the job as stored, or null if there is none. */
  async state(id: string): Promise<Job | null> {
    const [row] = await this.#driver.run(sql.state(check.name("id", id)));
    return row ? jobFromRow(row) : null;
  }

  /** claim takes the lease of a job that nobody holds and answers its new fence, else null. */
  async claim(id: string, owner: string, now: number, ttlMs: number): Promise<number | null> {
    const [row] = await this.#driver.run(checked.claim(id, owner, now, ttlMs));
    return row ? (row.fence as number) : null;
  }

  /** claimNext takes up to `limit` due jobs of a queue, in claim order; none due gives []. */
  async claimNext(queue: string, owner: string, now: number, ttlMs: number, limit = 1): Promise<Lease[]> {
    const statement = sql.claimNext(
      check.name("queue", queue),
      check.name("owner", owner),
      check.instant("now", now),
      check.positiveInt("ttlMs", ttlMs),
      check.positiveInt("limit", limit),
    );
    const jobs = (await this.#driver.run(statement)).map(jobFromRow).sort(claimOrder);
    return jobs.map((job) => ({ job, fence: job.fence, until: job.until }));
  }

  /** renew extends the current lease to `now + ttlMs`; false if the lease is not current. */
  async renew(id: string, owner: string, fence: number, now: number, ttlMs: number): Promise<boolean> {
    return (await this.#driver.run(checked.renew(id, owner, fence, now, ttlMs))).length === 1;
  }

  /** complete stores the result of the current lease; false, and the stored result stays, if it is not current. */
  async complete(id: string, owner: string, fence: number, now: number, result: string): Promise<boolean> {
    return (await this.#driver.run(checked.complete(id, owner, fence, now, result))).length === 1;
  }

  /** release gives back a lease that is held and not done, keeping its fence; false otherwise. */
  async release(id: string, owner: string, fence: number, now = Date.now()): Promise<boolean> {
    return (await this.#driver.run(checked.release(id, owner, fence, now))).length === 1;
  }

  /** enqueueJob is enqueue that answers the job as stored, new or not. */
  async enqueueJob(id: string, options: EnqueueOptions = {}): Promise<{ created: boolean; job: Job }> {
    const { written, current } = await this.#decide(checked.enqueue(id, options), id);
    return { created: written !== undefined, job: current! };
  }

  /** getJob is state that throws NotFound for an unknown id. */
  async getJob(id: string): Promise<Job> {
    const job = await this.state(id);
    if (job === null) throw new NotFound(id);
    return job;
  }

  /** claimJob is claim that answers the lease, or throws NotFound or NotClaimable. */
  async claimJob(id: string, owner: string, now: number, ttlMs: number): Promise<Lease> {
    const { written, current } = await this.#decide(checked.claim(id, owner, now, ttlMs), id);
    if (current === null) throw new NotFound(id);
    if (written === undefined) throw new NotClaimable(id, current.done ? "done" : "leased");
    return { job: current, fence: current.fence, until: current.until };
  }

  /** renewLease is renew that answers the new `until`, or throws NotFound or LeaseLost. */
  async renewLease(id: string, owner: string, fence: number, now: number, ttlMs: number): Promise<number> {
    const { written, current } = await this.#decide(checked.renew(id, owner, fence, now, ttlMs), id);
    if (written === undefined) throw refusal(id, current, owner, fence);
    return current!.until;
  }

  /**
   * completeJob is complete that answers the done job, or throws NotFound or
   * LeaseLost. The same completion sent again (same owner, fence and result)
   * answers the job again, so a retry after a lost response is not a failure.
   */
  async completeJob(id: string, owner: string, fence: number, now: number, result: string): Promise<Job> {
    const { written, current } = await this.#decide(checked.complete(id, owner, fence, now, result), id);
    const repeated = current?.done && current.owner === owner && current.fence === fence && current.result === result;
    if (written === undefined && !repeated) throw refusal(id, current, owner, fence);
    return current!;
  }

  /** releaseLease is release that answers the released job, or throws NotFound or LeaseLost. */
  async releaseLease(id: string, owner: string, fence: number, now: number): Promise<Job> {
    const { written, current } = await this.#decide(checked.release(id, owner, fence, now), id);
    if (written === undefined) throw refusal(id, current, owner, fence);
    return current!;
  }

  /** reclaimExpired clears the owner of every expired lease, fences kept; answers how many. */
  async reclaimExpired(now: number): Promise<number> {
    return (await this.#driver.run(sql.reclaimExpired(check.instant("now", now)))).length;
  }

  /** ping answers when the database does; it throws when the database cannot be reached. */
  async ping(): Promise<void> {
    await this.#driver.run({ sql: "SELECT 1", args: [] });
  }

  /** close gives back the database connection. */
  close(): void {
    this.#driver.close();
  }

  /** Runs a write and reads its job in one atomic batch: what it wrote, and the job as it is now. */
  async #decide(write: Statement, id: string): Promise<{ written: Row | undefined; current: Job | null }> {
    const [written, read] = (await this.#driver.batch([write, sql.state(id)])) as [Row[], Row[]];
    return { written: written[0], current: read[0] ? jobFromRow(read[0]) : null };
  }
}
