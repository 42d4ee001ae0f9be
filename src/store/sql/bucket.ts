import type { Statement } from "../../drivers/driver.ts";
import { STEP_BACK_MS } from "../step-back.ts";

// The token bucket of a rate-limited queue (migrations/0009), as SQL
// expressions over its `queues` row: what the claims decide by (`room` in
// src/store/sql/claim-next.ts), what the reads say (when the next token is due), and
// what setQueue keeps of a bucket whose rate changes. The trigger of
// migrations/0009 spends tokens with the same `refilled` expression.
//
// All in integers: a token is 1,000,000 micro-tokens and a ms adds
// `refill_per_ms` of them, so a refill is exact to the millisecond. A queue
// without a rate has NULL in these columns, and every expression here is NULL.
//
// A clock behind the last count (`tokens_at`) adds nothing. Up to
// STEP_BACK_MS behind (src/store/step-back.ts), it is taken for another
// server's clock a little behind: the count stays where it is and that clock
// waits for it, so two servers never count the same ms twice. Further behind,
// the clock stepped back: the bucket keeps its tokens and counts on from the
// corrected clock (`countedFrom`), moved there by the next claim that spends
// (migrations/0013's trigger) or is refused for want of a token (`followClock`).

/** Micro-tokens in one token: what one lease costs. */
export const TOKEN = 1_000_000;

/**
 * `now` as an integer: a parameter bound from JavaScript may arrive as a
 * REAL, and the arithmetic below must stay in integers (whole micro-tokens,
 * integer division).
 */
function ms(now: string): string {
  return `CAST(${now} AS INTEGER)`;
}

/** The bucket's columns of a `queues` row, under a table prefix such as "s." (or ""). */
function columns(row: string) {
  return { rate: `${row}refill_per_ms`, cap: `(${row}burst * ${TOKEN})`, tokens: `${row}micro_tokens`, at: `${row}tokens_at` };
}

/**
 * When the bucket's count runs from, seen at `now` (an SQL expression): its
 * last count, or `now` if later; `now` itself when `now` is more than
 * STEP_BACK_MS behind it (a clock stepped back). What a spend stores as its
 * new `tokens_at`, and what the next token is counted from.
 */
export function countedFrom(row: string, now: string): string {
  const { at } = columns(row);
  return `CASE WHEN ${at} - ${ms(now)} > ${STEP_BACK_MS} THEN ${ms(now)} ELSE max(${at}, ${ms(now)}) END`;
}

/**
 * The bucket's micro-tokens at `now` (an SQL expression): those at its last
 * count plus `refill_per_ms` a ms since, at most the burst. A `now` before the
 * last count (another server's clock behind, or a clock stepped back) adds
 * nothing. The elapsed time is first cut to what fills an empty bucket, so the
 * product stays a small integer.
 */
export function refilled(row: string, now: string): string {
  const { rate, cap, tokens, at } = columns(row);
  return `min(${cap}, ${tokens} + min(max(0, ${ms(now)} - ${at}), ${cap} / ${rate} + 1) * ${rate})`;
}

/** The whole tokens the bucket holds at `now`: how many leases a claim may hand out by the rate limit. */
export function wholeTokens(row: string, now: string): string {
  return `max(0, ${refilled(row, now)} / ${TOKEN})`;
}

/**
 * When the bucket next holds a whole token, seen at `now`: `now` if it holds
 * one; else the first ms at which the refill reaches one, counted from
 * `countedFrom`. NULL without a rate.
 */
export function tokenDueAt(row: string, now: string): string {
  const { rate } = columns(row);
  const short = `(${TOKEN} - ${refilled(row, now)})`;
  return `CASE WHEN ${rate} IS NULL THEN NULL WHEN ${short} <= 0 THEN ${ms(now)}
               ELSE ${countedFrom(row, now)} + (${short} + ${rate} - 1) / ${rate} END`;
}

/**
 * Whether the bucket's last count is more than STEP_BACK_MS ahead of `now`
 * (an SQL expression, 1 or 0; NULL without a rate): a clock stepped back,
 * which a claim refused for want of a token follows with `followClock`.
 */
export function steppedBack(row: string, now: string): string {
  const { at } = columns(row);
  return `(${at} - ${ms(now)} > ${STEP_BACK_MS})`;
}

/**
 * After a claim of `queue` refused for want of a token: a bucket whose last
 * count is more than STEP_BACK_MS ahead of `now` (the clock stepped back)
 * keeps its tokens and counts on from `now`; any other row is left as it is.
 * Without it, a bucket with no whole token would wait for the clock to come
 * back to its last count, however far ahead that is: nothing but a spend
 * moves the count, and nothing could be spent.
 */
export function followClock(queue: string, now: number): Statement {
  return {
    sql: `UPDATE queues SET tokens_at = ${ms("?2")} WHERE queue = ?1 AND refill_per_ms IS NOT NULL AND ${steppedBack("", "?2")}`,
    args: [queue, now],
  };
}

/**
 * The bucket that setQueue keeps when it sets the rate `newRate` and burst
 * `newBurst` (SQL expressions; `row` the stored settings) at `now`: none
 * without a rate; full when the queue had no rate before; otherwise what it
 * holds at `now` under the old rate, at most the new burst (a new rate gives
 * no tokens and takes none away). Answers the new micro_tokens and tokens_at.
 */
export function keptBucket(row: string, newRate: string, newBurst: string, now: string): { tokens: string; at: string } {
  const { rate } = columns(row);
  return {
    tokens: `CASE WHEN ${newRate} IS NULL THEN NULL WHEN ${rate} IS NULL THEN ${newBurst} * ${TOKEN}
                  ELSE min(${newBurst} * ${TOKEN}, ${refilled(row, now)}) END`,
    at: `CASE WHEN ${newRate} IS NULL THEN NULL WHEN ${rate} IS NULL THEN ${ms(now)} ELSE ${countedFrom(row, now)} END`,
  };
}
