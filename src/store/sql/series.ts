import type { Statement } from "../../drivers/driver.ts";
import { SKEW_LIMIT_MS } from "../step-back.ts";

// What a queue did, minute by minute (migrations/0037): the tallies the
// statements that enqueue and complete add to their queue's row of counts,
// which they write anyway, and the read of a queue's minutes and hours. The
// failures, expiries and deaths are tallied by triggers, the refusals
// counted per minute as they were.

/**
 * The upper edges (ms) of the buckets of the wait and run histograms; one
 * bucket more takes what is an hour or longer. About 2.5 × apart, so a
 * quantile read from them (src/store/series.ts) is close enough to draw.
 */
export const BUCKET_EDGES_MS = [5, 10, 25, 50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 30_000, 60_000, 300_000, 1_800_000, 3_600_000] as const;

/** The minute (since the epoch) of `at`, an SQL expression in milliseconds. */
export function minuteOf(at: string): string {
  return `CAST(${at} AS INTEGER) / 60000`;
}

/** The bucket of BUCKET_EDGES_MS a duration falls in (`ms`, an SQL expression): the first whose edge it is below, else the last. */
function bucketOf(ms: string): string {
  return `CASE ${BUCKET_EDGES_MS.map((edge, i) => `WHEN ${ms} < ${edge} THEN ${i}`).join(" ")} ELSE ${BUCKET_EDGES_MS.length} END`;
}

/** How many buckets a histogram has: one a BUCKET_EDGES_MS, and one for an hour or more. */
export const BUCKETS = BUCKET_EDGES_MS.length + 1;

/** The columns of a histogram (`wait` or `run`), a bucket each: wait_0 to wait_16 (migrations/0037). */
export function histogramColumns(name: "wait" | "run"): string[] {
  return Array.from({ length: BUCKETS }, (_, i) => `${name}_${i}`);
}

/** Every tally of a minute, as queue_series names it (queue_counts prefixes each with `minute_`). */
export const TALLIES = ["enqueued", "completed", "failed", "expired", "dead", ...histogramColumns("wait"), ...histogramColumns("run")];

/** The tallies a completion adds to: the jobs completed, and the buckets of their wait and run. */
export const COMPLETED_TALLIES = ["completed", ...histogramColumns("wait"), ...histogramColumns("run")];

/**
 * The buckets of a completed job, as columns `wait_bucket` and `run_bucket`
 * of a statement over its row `jobs` at `now` (an SQL expression): how long
 * it waited, from when it was due (its run_at, or its enqueue if that was
 * later) to the claim that completes it, and how long it ran since.
 */
export function completedBuckets(now: string): string {
  return `${bucketOf("jobs.claimed_at - max(jobs.run_at, jobs.created_at)")} AS wait_bucket, ${bucketOf(`${now} - jobs.claimed_at`)} AS run_bucket`;
}

/**
 * What each of COMPLETED_TALLIES adds, over the rows of `completedBuckets`:
 * `count` (an SQL expression) jobs, and how many of them fall in each bucket
 * (`each`: `sum` over an aggregate's rows, or nothing for one row).
 */
export function completedTallies(count: string, each: "sum" | ""): string[] {
  const buckets = (column: string) => Array.from({ length: BUCKETS }, (_, i) => `${each}(${column} = ${i})`);
  return [count, ...buckets("wait_bucket"), ...buckets("run_bucket")];
}

/**
 * Where a write that tallies at `minute` (an SQL expression) leaves its
 * queue's minute: a later one, or one more than SKEW_LIMIT_MS earlier (a
 * clock set right rather than one behind another's, as src/store/step-back.ts
 * decides; its triggers in migrations/0037 write the same 10 minutes out);
 * otherwise the queue's minute stands, and the write adds to it. The trigger
 * of migrations/0037 ends the minute it leaves.
 */
function movedMinute(minute: string): string {
  return `CASE WHEN ${minute} > minute OR ${minute} < minute - ${SKEW_LIMIT_MS / 60_000} THEN ${minute} ELSE minute END`;
}

/** The assignments that add to each of `tallies` (names of TALLIES) the SQL expression `from` names for it, at `minute`. */
export function addTallies(minute: string, tallies: string[], from: (tally: string) => string): string {
  return [`minute = ${movedMinute(minute)}`, ...tallies.map((tally) => `minute_${tally} = minute_${tally} + ${from(tally)}`)].join(", ");
}

/**
 * A queue's minutes or hours (`span` 1 or 60) from `first` through `last`
 * (minutes since the epoch, `first` the start of a span and `last` the end
 * of one): those that ended, the current minute, still in its row of counts,
 * and the minutes' refused writes (refusal_minutes, migrations/0004), each
 * row under the start of its span. Each part seeks its primary key.
 */
export function seriesOf(queue: string, span: 1 | 60, first: number, last: number): Statement {
  return {
    sql: `SELECT minute, ${TALLIES.join(", ")}, 0 AS refused
          FROM queue_series WHERE queue = ?1 AND span = ?2 AND minute BETWEEN ?3 AND ?4
          UNION ALL
          SELECT minute - minute % ?2, ${TALLIES.map((tally) => `minute_${tally}`).join(", ")}, 0
          FROM queue_counts WHERE queue = ?1 AND minute BETWEEN ?3 AND ?4
          UNION ALL
          SELECT minute - minute % ?2, ${TALLIES.map(() => "0").join(", ")}, refusals
          FROM refusal_minutes WHERE queue = ?1 AND minute BETWEEN ?3 AND ?4`,
    args: [queue, span, first, last],
  };
}
