import type { Driver, Row, Statement } from "../drivers/driver.ts";
import { InvalidArgument, type NotClaimableReason } from "./errors.ts";
import { type JobStatus, leasesOf } from "./job.ts";
import * as reads from "./sql/reads.ts";
import * as sqlQueues from "./sql/queues.ts";
import { followClock } from "./sql/bucket.ts";
import { type ClaimedLeases, MAX_BURST, MAX_RATE_PER_SECOND, type QueueLimits, type QueueSettings } from "./shapes.ts";
import * as check from "./validate.ts";

// The queue verbs of LeaseStore (pause, resume, setQueue, getQueue,
// listQueues), and what its claims ask of a queue's settings: in how many ms
// the rate limit lets a claim-next take more, and why a claim by id was
// refused. The settings are decided by in the claim statements themselves
// (`room` in src/store/sql/lease.ts); nothing here decides a claim.

/** A row of src/store/sql/queues.ts as a queue's settings. */
function queueFromRow(row: Row): QueueSettings {
  const refill = (row.refill_per_ms as number | null) ?? null;
  return {
    queue: row.queue as string,
    paused: row.paused === 1,
    maxLeased: (row.max_leased as number | null) ?? null,
    ratePerSecond: refill === null ? null : refill / 1000,
    burst: (row.burst as number | null) ?? null,
  };
}

function describe(value: unknown): string {
  return typeof value === "string" ? JSON.stringify(value) : String(value);
}

/**
 * A rate in tokens a second as the micro-tokens a ms adds (migrations/0009):
 * ratePerSecond x 1000, which must be a whole number.
 */
function refillPerMs(ratePerSecond: unknown): number {
  const rate = ratePerSecond as number;
  if (typeof ratePerSecond !== "number" || !Number.isFinite(rate) || rate <= 0 || rate > MAX_RATE_PER_SECOND) {
    throw new InvalidArgument(`ratePerSecond must be a number above 0 and at most ${MAX_RATE_PER_SECOND}, got ${describe(ratePerSecond)}`);
  }
  const refill = Math.round(rate * 1000);
  if (refill === 0 || Math.abs(refill - rate * 1000) > 1e-6) {
    throw new InvalidArgument(`ratePerSecond must be a multiple of 0.001 (the bucket counts thousandths of a token a second), got ${rate}`);
  }
  return refill;
}

/** A queue's limits, checked, as statements-queues stores them. */
function limitsOf(settings: QueueLimits): sqlQueues.StoredLimits {
  const maxLeased = settings.maxLeased == null ? null : check.positiveInt("maxLeased", settings.maxLeased);
  if (settings.ratePerSecond == null) {
    if (settings.burst != null) throw new InvalidArgument("burst needs ratePerSecond: a burst is the most a rate limit's bucket holds; send ratePerSecond too, or leave burst out");
    return { maxLeased, refillPerMs: null, burst: null };
  }
  const refill = refillPerMs(settings.ratePerSecond);
  const burst = settings.burst == null ? Math.max(1, Math.ceil(settings.ratePerSecond)) : check.positiveInt("burst", settings.burst);
  if (burst > MAX_BURST) throw new InvalidArgument(`burst must be at most ${MAX_BURST}, got ${burst}`);
  return { maxLeased, refillPerMs: refill, burst };
}

/**
 * Why a claim by id was refused, from the job and its queue as read in the
 * same transaction (`claimState`): a job leased, done, dead or cancelled says
 * so by its status; a job nobody holds was refused by its queue: paused, out of tokens
 * (rate_limited), or else at its maxLeased (full).
 */
export function whyNotClaimable(status: JobStatus, queueRefusal: unknown): NotClaimableReason {
  if (status === "leased" || status === "done" || status === "dead" || status === "cancelled") return status;
  return queueRefusal === "paused" || queueRefusal === "rate_limited" ? queueRefusal : "full";
}

/** Claimed leases, with the `retryAfterMs` of a row of `retryAfter` if there is one. */
function withRetryAfter(leases: ClaimedLeases, hint: Row | undefined): ClaimedLeases {
  if (hint !== undefined) leases.retryAfterMs = hint.ms as number;
  return leases;
}

/** The queue verbs over a driver; LeaseStore delegates to them. */
export class QueueVerbs {
  readonly #driver: Driver;

  constructor(driver: Driver) {
    this.#driver = driver;
  }

  /** Pauses (true) or resumes (false) a queue, keeping its other settings; answers them. */
  async pause(queue: string, paused: boolean, now: number): Promise<QueueSettings> {
    return this.#write(sqlQueues.pauseQueue(check.name("queue", queue), paused ? 1 : 0, check.instant("now", now)));
  }

  /** Sets all of a queue's limits at once (see QueueLimits), keeping whether it is paused; answers its settings. */
  async set(queue: string, settings: QueueLimits, now: number): Promise<QueueSettings> {
    return this.#write(sqlQueues.setQueue(check.name("queue", queue), limitsOf(settings), check.instant("now", now)));
  }

  /** A queue's settings; a queue never set has none. */
  async get(queue: string): Promise<QueueSettings> {
    const [row] = await this.#driver.run(sqlQueues.getQueue(check.name("queue", queue)));
    return queueFromRow(row!);
  }

  /** The settings of every queue that has settings or jobs, by name. */
  async list(): Promise<QueueSettings[]> {
    return (await this.#driver.run(sqlQueues.listQueues())).map(queueFromRow);
  }

  /**
   * Runs a claim-next's statements (`claim`, of up to `limit` jobs of `queue`
   * at `now`) and answers its leases, with `retryAfterMs` when the queue's
   * rate limit is what stopped it short. Where a batch costs one round trip
   * (a remote driver), that is read in the claim's batch; on a local file, where
   * it would make every claim a transaction, only after a claim that came back
   * short, on its own: a hint of when to ask again, never a decision.
   */
  async claimNext(claim: Statement[], queue: string, now: number, limit: number): Promise<ClaimedLeases> {
    if (this.#driver.remote) {
      const [rows = [], [hint] = []] = await this.#driver.batch([...claim, reads.retryAfter(queue, now, limit)]);
      return withRetryAfter(leasesOf(rows), await this.#followed(queue, now, hint));
    }
    const [rows = []] = await this.#driver.batch(claim);
    const leases = leasesOf(rows);
    return leases.length < limit ? withRetryAfter(leases, await this.#followed(queue, now, (await this.#driver.run(reads.retryAfter(queue, now)))[0])) : leases;
  }

  /**
   * After a claim of `queue` that its bucket refused at `now`: a bucket whose
   * count is ahead of a clock that stepped back counts on from `now` (see
   * `followClock`, which decides). Without this, with no whole token left,
   * nothing would move its count until the clock came back to it.
   */
  async followClock(queue: string, now: number): Promise<void> {
    await this.#driver.batch([followClock(queue, now)]);
  }

  /** The hint of a claim-next stopped short, after following a clock that stepped back if the hint says it did. */
  async #followed(queue: string, now: number, hint: Row | undefined): Promise<Row | undefined> {
    if (hint?.stepped_back === 1) await this.followClock(queue, now);
    return hint;
  }

  async #write(statement: Statement): Promise<QueueSettings> {
    const [[row] = []] = await this.#driver.batch([statement]);
    return queueFromRow(row!);
  }
}
