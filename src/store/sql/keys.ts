import type { Statement } from "../../drivers/driver.ts";
import { followsBack } from "../step-back.ts";
import { type BucketColumns, refilled, TOKEN } from "./bucket.ts";

// Flow control by key (migrations/0034): the rules a queue's per-key settings
// add to its claims, as SQL expressions that the statements of
// src/store/sql/lease.ts, many.ts and claim-next.ts take in.
//
// - Let in, or held back. In a queue with max_leased_per_key M (or
//   ordered_by_key, where M is 1), a key's first M open jobs in its order
//   (priority first, then age) are let in, and the others wait with
//   held_back = 1, out of the claim indexes. An enqueue holds its job back
//   when the key has M open jobs already (`heldBack`); the trigger
//   jobs_let_in_next lets the next one in when one leaves. So a key never puts
//   more than M jobs in the claims' way, however many it has.
// - Room. A claim takes a keyed job only while its key has room (`keyRoom`):
//   fewer than M current leases, and a whole token in its bucket. Counted in
//   the statement that claims, never before it.
// - Turns. In a fair_by_key queue each keyed job has a turn (`turnOf`), and
//   claim-next takes jobs turn by turn (jobs_turn_waiting), so a key with
//   100,000 jobs and a key with 3 take turns.

/** The most jobs of a key a queue may let in at once: maxLeasedPerKey's bound, and how far an enqueue counts a key's open jobs. */
export const MAX_LEASED_PER_KEY = 1000;

/** How many of a key's open jobs the queue's row `s` lets in (an SQL expression): 1 when ordered, else max_leased_per_key; NULL: all. */
export function letIn(s: string): string {
  return `CASE WHEN ${s}.ordered_by_key = 1 THEN 1 ELSE ${s}.max_leased_per_key END`;
}

/**
 * The open jobs of key `key` in `queue` (SQL expressions) that take a place
 * among those its queue lets in, counted up to MAX_LEASED_PER_KEY: a range of
 * jobs_key_open. In an ordered queue, all of them; elsewhere not a job
 * enqueued for later that was never claimed, which waits for its time out of
 * the key's way.
 */
export function openOfKey(queue: string, key: string): string {
  return `(SELECT count(*) FROM (SELECT 1 FROM jobs o WHERE o.queue = ${queue} AND o.key = ${key} AND o.done = 0
                                  AND (s.ordered_by_key = 1 OR o.held_back = 1 OR o.claimed_seq IS NOT NULL OR o.run_at <= o.created_at)
                                LIMIT ${MAX_LEASED_PER_KEY}))`;
}

/**
 * Whether a job of `key` enqueued in `queue` at `now` to run at `runAt`, the
 * `nth` of its key in its statement to take a place (1 for an enqueue of
 * one), waits for its key's turn: its queue (`s`) lets in M jobs of a key,
 * and the key has M in their places already, or jobs held back (its last job
 * in order is: one seek, whatever the key holds). 0 for a job without a key,
 * in a queue without a per-key limit, and, in a queue that is not ordered,
 * for a job enqueued for later (see `openOfKey`).
 */
export function heldBack(queue: string, key: string, runAt: string, now: string, nth = "1"): string {
  const last = `(SELECT o.held_back FROM jobs o WHERE o.queue = ${queue} AND o.key = ${key} AND o.done = 0
                 ORDER BY o.priority, o.created_at DESC, o.place DESC, o.id DESC LIMIT 1)`;
  return `coalesce((SELECT CASE WHEN s.ordered_by_key = 0 AND ${runAt} > ${now} THEN 0 WHEN ${last} = 1 THEN 1 ELSE ${openOfKey(queue, key)} + ${nth} > ${letIn("s")} END
                    FROM queues s WHERE s.queue = ${queue} AND ${key} IS NOT NULL AND ${letIn("s")} IS NOT NULL), 0)`;
}

/**
 * The turn of a job of `key` enqueued in `queue` now, the `nth` of its key in
 * its statement: in a fair_by_key queue, one after the key's last open job's
 * turn, and not before the turn the queue is at (its first waiting turn) so
 * that a key that comes back joins the round in progress; NULL for a job
 * without a key, or in a queue that is not fair.
 */
export function turnOf(queue: string, key: string, nth = "1"): string {
  const last = `(SELECT o.turn FROM jobs o WHERE o.queue = ${queue} AND o.key = ${key} AND o.done = 0 ORDER BY o.priority, o.created_at DESC, o.place DESC, o.id DESC LIMIT 1)`;
  const round = `(SELECT o.turn FROM jobs o WHERE ${turnWaiting("o.", queue)} ORDER BY o.priority DESC, o.turn LIMIT 1)`;
  return `(SELECT max(coalesce(${last} + 1, 0), coalesce(${round}, 0)) + ${nth} - 1 FROM queues s
           WHERE s.queue = ${queue} AND s.fair_by_key = 1 AND ${key} IS NOT NULL)`;
}

/** The columns of a key's bucket: the rate and burst of the queue's row `s`, the count of the key's row `b` of key_buckets. */
export function keyBucket(s: string, b: string): BucketColumns {
  return { rate: `${s}.key_refill_per_ms`, cap: `(${s}.key_burst * ${TOKEN})`, tokens: `${b}.micro_tokens`, at: `${b}.tokens_at`, by: `${b}.tokens_clock` };
}

/** The waiting jobs of `queue` in the claim index of turns (jobs_turn_waiting), `row` a table prefix such as "o." (or ""). */
export function turnWaiting(row: string, queue: string): string {
  return `${row}queue = ${queue} AND ${row}done = 0 AND ${row}owner IS NULL AND ${row}held_back = 0 AND ${row}turn IS NOT NULL`;
}

/** The current leases of key `key` in `queue` at `now`: a range of jobs_held_by_until (queue, until, owner, key), the queue's current leases. */
export function leasesOfKey(queue: string, key: string, now: string): string {
  return `(SELECT count(*) FROM jobs h WHERE h.queue = ${queue} AND h.done = 0 AND h.owner IS NOT NULL AND h.until > ${now} AND h.key = ${key})`;
}

/**
 * The common table expressions that `keyRoom` reads, for the claims of
 * `queue` at `now` (SQL expressions), to put in the claim statement's WITH:
 * `key_settings`, the queue's row if it limits its keys (else none), with
 * `let_in`; and `key_leases`, the current leases of each of its keys, counted
 * once for the statement in jobs_held_by_until (none unless it limits them).
 */
export function keyTables(queue: string, now: string): string {
  return `key_settings AS MATERIALIZED (
            SELECT s.*, ${letIn("s")} AS let_in FROM queues s
            WHERE s.queue = ${queue} AND (s.max_leased_per_key IS NOT NULL OR s.ordered_by_key = 1 OR s.key_refill_per_ms IS NOT NULL)),
          key_leases(key, n) AS MATERIALIZED (
            SELECT h.key, count(*) FROM jobs h INDEXED BY jobs_held_by_until
            WHERE h.queue = ${queue} AND h.done = 0 AND h.owner IS NOT NULL AND h.until > ${now} AND h.key IS NOT NULL
              AND EXISTS (SELECT 1 FROM key_settings)
            GROUP BY h.key)`;
}

/**
 * How many leases a claim may hand out to the key `key` (an SQL expression)
 * of a job in the queue of `keyTables`, at `now`: its let_in (maxLeasedPerKey,
 * or 1 when ordered) less its current leases, and the whole tokens of its
 * bucket (a key without a row holds a full bucket); `big` for a job without
 * a key, or in a queue that does not limit its keys. Never below 0.
 */
export function keyRoom(queue: string, key: string, now: string, big: string): string {
  const bucket = keyBucket("s", "b");
  const tokens = `coalesce((SELECT max(0, ${refilled(bucket, now)} / ${TOKEN}) FROM key_buckets b WHERE b.queue = ${queue} AND b.key = ${key}), s.key_burst)`;
  const leases = `coalesce((SELECT l.n FROM key_leases l WHERE l.key = ${key}), 0)`;
  return `CASE WHEN ${key} IS NULL THEN ${big}
               ELSE coalesce((SELECT max(0, min(CASE WHEN s.let_in IS NULL THEN ${big} ELSE s.let_in - ${leases} END,
                                                CASE WHEN s.key_refill_per_ms IS NULL THEN ${big} ELSE ${tokens} END))
                              FROM key_settings s), ${big}) END`;
}

/**
 * After a claim of `queue` refused or stopped short at `now` read from
 * `clock`: each key bucket whose count is followed back to that clock counts
 * on from `now`, as followClock (src/store/sql/bucket.ts) does the queue's.
 */
export function followKeyClocks(queue: string, now: number, clock: string): Statement {
  return {
    sql: `UPDATE key_buckets SET tokens_at = CAST(?2 AS INTEGER), tokens_clock = ?3
          WHERE queue = ?1 AND ${followsBack("tokens_at", "tokens_clock", "CAST(?2 AS INTEGER)", "?3")}`,
    args: [queue, now, clock],
  };
}

