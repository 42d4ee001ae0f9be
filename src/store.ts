import type { Driver } from "./driver.ts";
import { type Job, jobFromRow } from "./job.ts";
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

/** A lease taken by claim-next: the job as it is now held, with its fence and expiry. */
export type Lease = { job: Job; fence: number; until: number };

/** Claim order: highest priority first, then the job that has been due longest. */
function claimOrder(a: Job, b: Job): number {
  return b.priority - a.priority || a.runAt - b.runAt || a.createdAt - b.createdAt || (a.id < b.id ? -1 : 1);
}

/**
 * The lease store: the eight verbs of the fencing contract over a Driver.
 * Each verb checks its arguments, runs one statement, and reads the answer.
 */
export class LeaseStore {
  readonly #driver: Driver;

  constructor(driver: Driver) {
    this.#driver = driver;
  }

  /** enqueue adds a job and answers true, or answers false and changes nothing if the id exists. */
  async enqueue(id: string, options: EnqueueOptions = {}): Promise<boolean> {
    const now = check.instant("now", options.now ?? Date.now());
    const statement = sql.enqueue({
      id: check.name("id", id),
      queue: check.name("queue", options.queue ?? "default"),
      payload: check.json("payload", options.payload),
      priority: check.integer("priority", options.priority ?? 0),
      runAt: check.instant("runAt", options.runAt ?? now),
      maxAttempts: check.positiveInt("maxAttempts", options.maxAttempts ?? 25),
      now,
    });
    return (await this.#driver.run(statement)).length === 1;
  }

  /** state reads the job as stored, or null if there is none. */
  async state(id: string): Promise<Job | null> {
    const [row] = await this.#driver.run(sql.state(check.name("id", id)));
    return row ? jobFromRow(row) : null;
  }

  /** claim takes the lease of a job that nobody holds and answers its new fence, else null. */
  async claim(id: string, owner: string, now: number, ttlMs: number): Promise<number | null> {
    const statement = sql.claim(
      check.name("id", id),
      check.name("owner", owner),
      check.instant("now", now),
      check.positiveInt("ttlMs", ttlMs),
    );
    const [row] = await this.#driver.run(statement);
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
    const statement = sql.renew(
      check.name("id", id),
      check.name("owner", owner),
      check.positiveInt("fence", fence),
      check.instant("now", now),
      check.positiveInt("ttlMs", ttlMs),
    );
    return (await this.#driver.run(statement)).length === 1;
  }

  /** complete stores the result of the current lease; false, and the stored result stays, if it is not current. */
  async complete(id: string, owner: string, fence: number, now: number, result: string): Promise<boolean> {
    const statement = sql.complete(
      check.name("id", id),
      check.name("owner", owner),
      check.positiveInt("fence", fence),
      check.instant("now", now),
      check.text("result", result),
    );
    return (await this.#driver.run(statement)).length === 1;
  }

  /** release gives back a lease that is held and not done, keeping its fence; false otherwise. */
  async release(id: string, owner: string, fence: number, now = Date.now()): Promise<boolean> {
    const statement = sql.release(
      check.name("id", id),
      check.name("owner", owner),
      check.positiveInt("fence", fence),
      check.instant("now", now),
    );
    return (await this.#driver.run(statement)).length === 1;
  }

  /** close gives back the database connection. */
  close(): void {
    this.#driver.close();
  }
}
