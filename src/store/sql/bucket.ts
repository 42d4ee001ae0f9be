import type { Statement } from "../../drivers/driver.ts";
import { followsBack } from "../step-back.ts";

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
// A clock behind the last count (`tokens_at`) adds nothing. The bucket keeps
// which clock counted (`tokens_clock`), and src/store/step-back.ts says when a
// clock behind is followed: behind its own count (it stepped back), or far
// behind another's. Then the bucket keeps its tokens and counts on from that
// clock (`countedFrom`), moved there by the next claim that spends
// (migrations/0013's trigger) or is refused for want of a token (`followClock`).
// Else the count stays where it is and that clock waits for it, so two servers
// never count the same ms twice.

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

/** A bucket as SQL expressions: its rate (micro-tokens a ms), its cap, what it held at its last count, when, and by which clock. */
export type BucketColumns = { rate: string; cap: string; tokens: string; at: string; by: string };

/**
 * The bucket's columns: those of a `queues` row under a table prefix such as
 * "s." (or ""), or, given as columns, any bucket (a key's, src/store/sql/keys.ts).
 */
function columns(row: string | BucketColumns): BucketColumns {
  if (typeof row !== "string") return row;
  return { rate: `${row}refill_per_ms`, cap: `(${row}burst * ${TOKEN})`, tokens: `${row}micro_tokens`, at: `${row}tokens_at`, by: `${row}tokens_clock` };
}


/**
 * Whether the bucket's last count is followed back to `now` read from
 * `clock` (SQL expressions, 1 or 0; NULL without a rate): see `followsBack`.
 */
export function followedBack(row: string | BucketColumns, now: string, clock: string): string {
  const { at, by } = columns(row);
  return followsBack(at, by, ms(now), clock);
}

/**
 * When the bucket's count runs from, seen at `now` read from `clock` (SQL
 * expressions): its last count, or `now` if later; `now` itself when the
 * count is followed back (`followedBack`). What a spend stores as its new
 * `tokens_at`, and what the next token is counted from.
 */
export function countedFrom(row: string | BucketColumns, now: string, clock: string): string {
  const { at } = columns(row);
  return `CASE WHEN ${followedBack(row, now, clock)} THEN ${ms(now)} ELSE max(${at}, ${ms(now)}) END`;
}

/**
 * Which clock made the count that `countedFrom` answers: `clock`, unless the
 * count stays ahead of it (it waits for another clock's count, which keeps
 * its writer).
 */
export function countedBy(row: string | BucketColumns, now: string, clock: string): string {
  const { at, by } = columns(row);
  return `CASE WHEN ${at} > ${ms(now)} AND NOT ${followedBack(row, now, clock)} THEN ${by} ELSE ${clock} END`;
}

/**
 * The bucket's micro-tokens at `now` (an SQL expression): those at its last
 * count plus `refill_per_ms` a ms since, at most the burst. A `now` before the
 * last count (another server's clock behind, or a clock stepped back) adds
 * nothing. The elapsed time is first cut to what fills an empty bucket, so the
 * product stays a small integer.
 */
export function refilled(row: string | BucketColumns, now: string): string {
  const { rate, cap, tokens, at } = columns(row);
  return `min(${cap}, ${tokens} + min(max(0, ${ms(now)} - ${at}), ${cap} / ${rate} + 1) * ${rate})`;
}

/** The whole tokens the bucket holds at `now`: how many leases a claim may hand out by the rate limit. */
export function wholeTokens(row: string | BucketColumns, now: string): string {
  return `max(0, ${refilled(row, now)} / ${TOKEN})`;
}

/**
 * When the bucket next holds a whole token, seen at `now` read from `clock`:
 * `now` if it holds one; else the first ms at which the refill reaches one,
 * counted from `countedFrom`. NULL without a rate.
 */
export function tokenDueAt(row: string | BucketColumns, now: string, clock: string): string {
  const { rate } = columns(row);
  const short = `(${TOKEN} - ${refilled(row, now)})`;
  return `CASE WHEN ${rate} IS NULL THEN NULL WHEN ${short} <= 0 THEN ${ms(now)}
               ELSE ${countedFrom(row, now, clock)} + (${short} + ${rate} - 1) / ${rate} END`;
}

/**
 * After a claim of `queue` refused for want of a token, at `now` read from
 * `clock`: a bucket whose count is followed back to `now` (`followedBack`)
 * keeps its tokens and counts on from `now`, as `clock`'s; any other row is
 * left as it is. Without it, a bucket with no whole token would wait for the
 * clock to come back to its last count, however far ahead that is: nothing
 * but a spend moves the count, and nothing could be spent.
 */
export function followClock(queue: string, now: number, clock: string): Statement {
  return {
    sql: `UPDATE queues SET tokens_at = ${ms("?2")}, tokens_clock = ?3 WHERE queue = ?1 AND refill_per_ms IS NOT NULL AND ${followedBack("", "?2", "?3")}`,
    args: [queue, now, clock],
  };
}

/**
 * The bucket that setQueue keeps when it sets the rate `newRate` and burst
 * `newBurst` (SQL expressions; `row` the stored settings) at `now`: none
 * without a rate; full when the queue had no rate before; otherwise what it
 * holds at `now` under the old rate, at most the new burst (a new rate gives
 * no tokens and takes none away). Answers the new micro_tokens, tokens_at and
 * tokens_clock; `clock` is the clock `now` was read from.
 */
export function keptBucket(row: string, newRate: string, newBurst: string, now: string, clock: string): { tokens: string; at: string; by: string } {
  const { rate } = columns(row);
  return {
    tokens: `CASE WHEN ${newRate} IS NULL THEN NULL WHEN ${rate} IS NULL THEN ${newBurst} * ${TOKEN}
                  ELSE min(${newBurst} * ${TOKEN}, ${refilled(row, now)}) END`,
    at: `CASE WHEN ${newRate} IS NULL THEN NULL WHEN ${rate} IS NULL THEN ${ms(now)} ELSE ${countedFrom(row, now, clock)} END`,
    by: `CASE WHEN ${newRate} IS NULL THEN NULL WHEN ${rate} IS NULL THEN ${clock} ELSE ${countedBy(row, now, clock)} END`,
  };
}
