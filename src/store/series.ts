import type { Row } from "../drivers/driver.ts";
import { InvalidArgument } from "./errors.ts";
import { BUCKET_EDGES_MS, histogramColumns } from "./sql/series.ts";
import * as check from "./validate.ts";

// What a queue did over time (docs/operations.md#series): the range a caller
// asks for, checked, and the points made of the minutes and hours that
// src/store/sql/series.ts reads, with the wait and run quantiles read from
// their histograms.

const MINUTE_MS = 60_000;
const HOUR_MS = 60 * MINUTE_MS;

/** How long the minutes are kept (24 hours) and the hours (30 days), in minutes. */
export const KEPT_MINUTES = { 1: 24 * 60, 60: 30 * 24 * 60 } as const;

/** The most points a series may answer. */
export const MAX_SERIES_POINTS = 1440;

/** What `queues.series` takes: `step` (ms, whole minutes; default a minute), and `from` and `to` (ms; default the last 60 steps up to `now`). */
export type SeriesRequest = { from?: number | undefined; to?: number | undefined; step?: number | undefined; now?: number | undefined };

/** How many of a step's completed jobs a time was measured for, and its 50th, 90th and 99th percentiles in ms (null: none). */
export type Quantiles = { count: number; p50: number | null; p90: number | null; p99: number | null };

/**
 * What a queue did in one step from `at`: jobs enqueued, completed, failed
 * and expired leases it will retry, jobs that died, refused stale writes,
 * and how long its completed jobs waited (from due to the claim that
 * completed them) and ran (from that claim to their completion).
 */
export type SeriesPoint = {
  at: number;
  enqueued: number;
  completed: number;
  failed: number;
  expired: number;
  dead: number;
  refused: number;
  wait: Quantiles;
  run: Quantiles;
};

/** A queue's points, a step apart from `from` (aligned to the step) through the step holding `to` (each step whole); before `keptFrom` nothing is kept at this step. */
export type Series = { queue: string; step: number; from: number; to: number; keptFrom: number; points: SeriesPoint[] };

/** A range checked: its step, from (aligned) and to, how many points, the span of rows it reads (1: minutes, 60: hours) and their first and last minute. */
export type SeriesRange = { step: number; from: number; to: number; points: number; span: 1 | 60; first: number; last: number; keptFrom: number };

/** The range `request` asks for at `now`, checked; a bad one is an InvalidArgument naming its field. */
export function seriesRange(request: SeriesRequest, now: number): SeriesRange {
  const step = request.step === undefined ? MINUTE_MS : check.positiveInt("step", request.step);
  if (step % MINUTE_MS !== 0) throw new InvalidArgument(`step must be a whole number of minutes (a multiple of 60000 ms), got ${step}`);
  const to = request.to === undefined ? now : check.instant("to", request.to);
  const asked = request.from === undefined ? Math.max(0, to - 59 * step) : check.instant("from", request.from);
  if (asked > to) throw new InvalidArgument(`from (${asked}) must not be after to (${to}${request.to === undefined ? ", now" : ""})`);
  const from = asked - (asked % step);
  const points = Math.floor((to - from) / step) + 1;
  if (points > MAX_SERIES_POINTS) {
    throw new InvalidArgument(`from ${from} to ${to} by a step of ${step} ms is ${points} points; at most ${MAX_SERIES_POINTS}: ask for a shorter range or a longer step`);
  }
  const span = step % HOUR_MS === 0 ? 60 : 1;
  // The first minute (or hour) still kept: the trigger of migrations/0037 deletes what is older than KEPT_MINUTES.
  const keptMinute = Math.floor(now / MINUTE_MS) - KEPT_MINUTES[span];
  const keptFrom = Math.max(0, Math.ceil(keptMinute / span) * span * MINUTE_MS);
  const lastStepEnd = from + points * step - 1;
  return { step, from, to, points, span, first: from / MINUTE_MS, last: Math.floor(lastStepEnd / MINUTE_MS), keptFrom };
}

/**
 * The points of `range` from the rows of `seriesOf` (src/store/sql/series.ts):
 * each row added to the step it falls in, empty steps as zeros, and nothing
 * from before `keptFrom` (a minute of refusals outlives its minute of counts).
 */
export function pointsOf(rows: Row[], range: SeriesRange): SeriesPoint[] {
  const steps = Array.from({ length: range.points }, () => ({ counts: COUNTS.map(() => 0), wait: WAIT.map(() => 0), run: RUN.map(() => 0) }));
  for (const row of rows) {
    const at = Number(row.minute) * MINUTE_MS;
    const step = at >= range.keptFrom ? steps[Math.floor((at - range.from) / range.step)] : undefined;
    if (!step) continue;
    COUNTS.forEach((name, i) => (step.counts[i]! += Number(row[name])));
    WAIT.forEach((name, i) => (step.wait[i]! += Number(row[name])));
    RUN.forEach((name, i) => (step.run[i]! += Number(row[name])));
  }
  return steps.map(({ counts, wait, run }, i) => ({
    at: range.from + i * range.step,
    ...(Object.fromEntries(COUNTS.map((name, j) => [name, counts[j]!])) as Record<(typeof COUNTS)[number], number>),
    wait: quantiles(wait),
    run: quantiles(run),
  }));
}

const COUNTS = ["enqueued", "completed", "failed", "expired", "dead", "refused"] as const;
const WAIT = histogramColumns("wait");
const RUN = histogramColumns("run");

/** The count and quantiles of a histogram. */
function quantiles(histogram: number[]): Quantiles {
  const count = histogram.reduce((sum, n) => sum + n, 0);
  return { count, p50: quantile(histogram, count, 0.5), p90: quantile(histogram, count, 0.9), p99: quantile(histogram, count, 0.99) };
}

/**
 * The q-quantile of a histogram of `count` durations, as Prometheus's
 * histogram_quantile reads one: found in its bucket, taken as spread evenly
 * across it; in the last bucket (an hour or more), its lower edge.
 */
function quantile(histogram: number[], count: number, q: number): number | null {
  if (count === 0) return null;
  const rank = q * count;
  let below = 0;
  for (const [i, n] of histogram.entries()) {
    if (n > 0 && below + n >= rank) {
      const lower = i === 0 ? 0 : BUCKET_EDGES_MS[i - 1]!;
      const upper = BUCKET_EDGES_MS[i];
      return upper === undefined ? lower : Math.round(lower + ((upper - lower) * (rank - below)) / n);
    }
    below += n;
  }
  return BUCKET_EDGES_MS.at(-1)!;
}
