import type { Driver, Row, Statement } from "../drivers/driver.ts";
import { InvalidArgument } from "./errors.ts";
import * as sqlQueues from "./sql/queues.ts";
import { MAX_BURST, MAX_RATE_PER_SECOND, type QueueLimits, type QueueLimitsRequest, type QueueSettings, timeOf } from "./shapes.ts";
import * as check from "./validate.ts";

// The queue verbs of LeaseStore (`store.queues`): pause, resume, set, get and
// list a queue's settings. The claims decide by these settings in the claim
// statements themselves (`room` in src/store/sql/claim-next.ts); nothing here
// decides a claim.

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

/**
 * A rate in tokens a second as the micro-tokens a ms adds (migrations/0009):
 * ratePerSecond x 1000, which must be a whole number.
 */
function refillPerMs(ratePerSecond: unknown): number {
  const rate = ratePerSecond as number;
  // Number.isFinite is false for anything that is not a number: no typeof needed.
  if (!Number.isFinite(rate) || rate <= 0 || rate > MAX_RATE_PER_SECOND) {
    throw new InvalidArgument(`ratePerSecond must be a number above 0 and at most ${MAX_RATE_PER_SECOND}, got ${check.describe(ratePerSecond)}`);
  }
  const refill = Math.round(rate * 1000);
  // The tolerance forgives a float's noise (12.345 x 1000 is 12345.000000000002);
  // refill 0 catches a rate so small (1e-10) that the tolerance alone would let it through.
  if (refill === 0 || Math.abs(refill - rate * 1000) > 1e-6) {
    throw new InvalidArgument(`ratePerSecond must be a multiple of 0.001 (the bucket counts thousandths of a token a second), got ${rate}`);
  }
  return refill;
}

/** A queue's limits, checked, as src/store/sql/queues.ts stores them. */
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

/** A queue's settings (`store.queues`): whether it is paused, its maxLeased, and its rate limit. */
export class Queues {
  readonly #driver: Driver;
  readonly #clock: string;

  /** `clock`: the store's clock id (src/store/step-back.ts), which its bucket writes carry. */
  constructor(driver: Driver, clock: string) {
    this.#driver = driver;
    this.#clock = clock;
  }

  /** pause pauses a queue: claims hand out none of its jobs until resume; leases already held go on. Answers its settings. */
  async pause(queue: string, request: { now?: number | undefined } = {}): Promise<QueueSettings> {
    return this.#write(sqlQueues.pauseQueue(check.name("queue", queue), 1, check.instant("now", timeOf(request))));
  }

  /** resume lets claims take the jobs of a paused queue again; answers its settings. */
  async resume(queue: string, request: { now?: number | undefined } = {}): Promise<QueueSettings> {
    return this.#write(sqlQueues.pauseQueue(check.name("queue", queue), 0, check.instant("now", timeOf(request))));
  }

  /**
   * set sets all of a queue's limits at once, keeping whether it is paused:
   * maxLeased, at most how many current leases it may have, and ratePerSecond
   * with burst, its token bucket (absent or null: none; see QueueLimits);
   * answers its settings. Leases already held above a new limit go on; a new
   * rate starts with a full bucket, a changed one keeps the tokens it holds.
   */
  async set(queue: string, request: QueueLimitsRequest): Promise<QueueSettings> {
    const now = timeOf(request);
    return this.#write(sqlQueues.setQueue(check.name("queue", queue), limitsOf(request), check.instant("now", now), this.#clock));
  }

  /** get answers a queue's settings; a queue never set is not paused and has no limit. */
  async get(queue: string): Promise<QueueSettings> {
    const [row] = await this.#driver.run(sqlQueues.getQueue(check.name("queue", queue)));
    return queueFromRow(row!);
  }

  /** list answers the settings of every queue that has settings or jobs, by name. */
  async list(): Promise<QueueSettings[]> {
    return (await this.#driver.run(sqlQueues.listQueues())).map(queueFromRow);
  }

  async #write(statement: Statement): Promise<QueueSettings> {
    const [rows] = await this.#driver.batch([statement]);
    return queueFromRow(rows![0]!);
  }
}
