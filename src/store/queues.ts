import type { Driver, Row, Statement } from "../drivers/driver.ts";
import { InvalidArgument } from "./errors.ts";
import * as sqlQueues from "./sql/queues.ts";
import { MAX_BURST, MAX_RATE_PER_SECOND, type QueueLimits, type QueueLimitsRequest, type QueueSettings, timeOf } from "./shapes.ts";
import * as check from "./validate.ts";
import { MAX_LEASED_PER_KEY } from "./sql/keys.ts";
import { keysOf } from "./sql/key-reads.ts";
import { pointsOf, type Series, seriesRange, type SeriesRequest } from "./series.ts";
import { seriesOf } from "./sql/series.ts";
import { keyFromRow, type KeysPage, keysLimit, type KeysRequest } from "./key-stats.ts";

// The queue verbs of LeaseStore (`store.queues`): pause, resume, set, get and
// list a queue's settings, and page through its keys. The claims decide by these settings in the claim
// statements themselves (`room` in src/store/sql/claim-next.ts); nothing here
// decides a claim.

/** A row of src/store/sql/queues.ts as a queue's settings. */
function queueFromRow(row: Row): QueueSettings {
  const refill = (row.refill_per_ms as number | null) ?? null;
  const keyRefill = (row.key_refill_per_ms as number | null) ?? null;
  return {
    queue: row.queue as string,
    paused: row.paused === 1,
    maxLeased: (row.max_leased as number | null) ?? null,
    ratePerSecond: refill === null ? null : refill / 1000,
    burst: (row.burst as number | null) ?? null,
    maxLeasedPerKey: (row.max_leased_per_key as number | null) ?? null,
    keyRatePerSecond: keyRefill === null ? null : keyRefill / 1000,
    keyBurst: (row.key_burst as number | null) ?? null,
    orderedByKey: row.ordered_by_key === 1,
    fairByKey: row.fair_by_key === 1,
  };
}

/**
 * A rate in tokens a second as the micro-tokens a ms adds (migrations/0009):
 * ratePerSecond x 1000, which must be a whole number.
 */
function refillPerMs(what: string, ratePerSecond: unknown): number {
  const rate = ratePerSecond as number;
  // Number.isFinite is false for anything that is not a number: no typeof needed.
  if (!Number.isFinite(rate) || rate <= 0 || rate > MAX_RATE_PER_SECOND) {
    throw new InvalidArgument(`${what} must be a number above 0 and at most ${MAX_RATE_PER_SECOND}, got ${check.describe(ratePerSecond)}`);
  }
  const refill = Math.round(rate * 1000);
  // The tolerance forgives a float's noise (12.345 x 1000 is 12345.000000000002);
  // refill 0 catches a rate so small (1e-10) that the tolerance alone would let it through.
  if (refill === 0 || Math.abs(refill - rate * 1000) > 1e-6) {
    throw new InvalidArgument(`${what} must be a multiple of 0.001 (the bucket counts thousandths of a token a second), got ${rate}`);
  }
  return refill;
}

/** A token bucket's rate and burst, checked (`names`: how the request calls them): none without a rate; a burst of max(1, ceil(rate)) when not given. */
function bucketOf(rate: number | null | undefined, burst: number | null | undefined, names: { rate: string; burst: string }): { refill: number | null; burst: number | null } {
  if (rate == null) {
    if (burst != null) throw new InvalidArgument(`${names.burst} needs ${names.rate}: a burst is the most a rate limit's bucket holds; send ${names.rate} too, or leave ${names.burst} out`);
    return { refill: null, burst: null };
  }
  const refill = refillPerMs(names.rate, rate);
  const checked = burst == null ? Math.max(1, Math.ceil(rate)) : check.positiveInt(names.burst, burst);
  if (checked > MAX_BURST) throw new InvalidArgument(`${names.burst} must be at most ${MAX_BURST}, got ${checked}`);
  return { refill, burst: checked };
}

/** true or false as 1 or 0, absent or null as 0; anything else is refused. */
function flag(what: string, value: unknown): 0 | 1 {
  if (value == null || value === false) return 0;
  if (value === true) return 1;
  throw new InvalidArgument(`${what} must be true or false, got ${check.describe(value)}`);
}

/** A queue's limits, checked, as src/store/sql/queues.ts stores them. */
function limitsOf(settings: QueueLimits): sqlQueues.StoredLimits {
  const maxLeased = settings.maxLeased == null ? null : check.positiveInt("maxLeased", settings.maxLeased);
  const bucket = bucketOf(settings.ratePerSecond, settings.burst, { rate: "ratePerSecond", burst: "burst" });
  const keyBucket = bucketOf(settings.keyRatePerSecond, settings.keyBurst, { rate: "keyRatePerSecond", burst: "keyBurst" });
  const maxLeasedPerKey = settings.maxLeasedPerKey == null ? null : check.positiveInt("maxLeasedPerKey", settings.maxLeasedPerKey);
  if (maxLeasedPerKey !== null && maxLeasedPerKey > MAX_LEASED_PER_KEY) {
    throw new InvalidArgument(`maxLeasedPerKey must be at most ${MAX_LEASED_PER_KEY}, got ${maxLeasedPerKey}`);
  }
  return {
    maxLeased,
    refillPerMs: bucket.refill,
    burst: bucket.burst,
    maxLeasedPerKey,
    keyRefillPerMs: keyBucket.refill,
    keyBurst: keyBucket.burst,
    orderedByKey: flag("orderedByKey", settings.orderedByKey),
    fairByKey: flag("fairByKey", settings.fairByKey),
  };
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
    return this.#write(...sqlQueues.setQueue(check.name("queue", queue), limitsOf(request), check.instant("now", now), this.#clock));
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

  /**
   * keys pages through the keys of a queue that have open jobs, in key order
   * after `cursor` (the last key of the page before), `limit` keys a page (1
   * to 1000, default 100): each with its waiting jobs, its current leases at
   * `now`, and why it holds jobs back (KeyStats).
   */
  async keys(queue: string, request: KeysRequest = {}): Promise<KeysPage> {
    const limit = keysLimit(request.limit);
    const after = check.key("cursor", request.cursor);
    const rows = await this.#driver.run(keysOf(check.name("queue", queue), after, limit + 1, check.instant("now", timeOf(request))));
    const keys = rows.slice(0, limit).map(keyFromRow);
    return { keys, next: rows.length > limit ? keys.at(-1)!.key : null };
  }

  /**
   * series answers what a queue did, step by step (SeriesPoint): from the
   * minutes it kept (24 hours), or from its hours (30 days) when `step` is a
   * whole number of hours. A queue that did nothing answers zeros.
   */
  async series(queue: string, request: SeriesRequest = {}): Promise<Series> {
    const name = check.name("queue", queue);
    const range = seriesRange(request, check.instant("now", timeOf(request)));
    const rows = await this.#driver.run(seriesOf(name, range.span, range.first, range.last));
    const { step, from, to, keptFrom } = range;
    return { queue: name, step, from, to, keptFrom, points: pointsOf(rows, range) };
  }

  async #write(...statements: Statement[]): Promise<QueueSettings> {
    const [rows] = await this.#driver.batch(statements);
    return queueFromRow(rows![0]!);
  }
}
