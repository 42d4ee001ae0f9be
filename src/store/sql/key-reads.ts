import type { Statement } from "../../drivers/driver.ts";
import { refilled, TOKEN } from "./bucket.ts";
import { keyBucket, leasesOfKey, MAX_LEASED_PER_KEY } from "./keys.ts";
import { status } from "./lease.ts";

// The reads of keys (issue 29): which keys a queue has now, how many jobs each
// has waiting and leased, and why a key holds jobs back. They decide nothing;
// the rules they report are those of src/store/sql/keys.ts, decided by the
// claims.
//
// A queue's keys are never listed anywhere: they are walked in the index
// jobs_key_open (queue, key, priority DESC, created_at, id), which holds an
// entry for each open keyed job, with a skip scan: each key is the least one
// after the one before, one seek each, however many jobs a key has. So the
// cost of a page grows with its keys and what is counted of each, never with
// the queue's backlog nor its history.

/** The most open jobs of a key that a page of keys counts; a key with more reads as this many open. */
export const MAX_COUNTED_OPEN = 100_000;

/** The most keys of a queue whose jobs the stats count, in key order; the top keys are of these. */
export const TOP_KEYS_SCANNED = 1000;

/** The most top keys the stats give a queue. */
export const TOP_KEYS = 10;

/** The least key of `queue` after `after` that has an open job (SQL expressions): one seek in jobs_key_open; NULL when none. */
function keyAfter(queue: string, after: string): string {
  return `(SELECT k.key FROM jobs k INDEXED BY jobs_key_open WHERE k.queue = ${queue} AND k.done = 0 AND k.key > ${after} ORDER BY k.key LIMIT 1)`;
}

/** The open jobs of key `key` in `queue`, counted up to `most`: a range of jobs_key_open, which holds them all. */
function openCounted(queue: string, key: string, most: number): string {
  return `(SELECT count(*) FROM (SELECT 1 FROM jobs o INDEXED BY jobs_key_open WHERE o.queue = ${queue} AND o.key = ${key} AND o.done = 0 LIMIT ${most}))`;
}

/**
 * Why key `key` of `queue`, with `waiting` jobs and `leased` current leases
 * at `now`, holds jobs back (the queue's row `s`; SQL expressions), as a
 * claim by id would be refused (claimState in src/store/sql/claim-next.ts):
 * - key_ordered: an ordered queue, and the job of the key let in is held or
 *   waits for its retry or its run time (it keeps its place), while later
 *   ones wait behind it;
 * - key_full: the key has maxLeasedPerKey current leases;
 * - key_rate_limited: its bucket holds no whole token (a key without a
 *   bucket row holds a full one).
 * NULL while nothing of the key waits, or nothing holds it back.
 */
function heldBackWhy(queue: string, key: string, waiting: string, leased: string, now: string): string {
  const ofKey = `f.queue = ${queue} AND f.key = ${key} AND f.done = 0`;
  const laterWait = `EXISTS (SELECT 1 FROM jobs f INDEXED BY jobs_key_open WHERE ${ofKey} AND f.held_back = 1)`;
  const firstNotDue = `EXISTS (SELECT 1 FROM jobs f INDEXED BY jobs_key_open WHERE ${ofKey} AND f.held_back = 0 AND ${status(now)} IN ('leased', 'scheduled'))`;
  const noToken = `coalesce((SELECT ${refilled(keyBucket("s", "b"), now)} FROM key_buckets b WHERE b.queue = ${queue} AND b.key = ${key}), ${TOKEN}) < ${TOKEN}`;
  return `CASE WHEN ${waiting} = 0 THEN NULL
               WHEN s.ordered_by_key = 1 AND ${laterWait} AND ${firstNotDue} THEN 'key_ordered'
               WHEN s.max_leased_per_key <= ${leased} THEN 'key_full'
               WHEN s.key_refill_per_ms IS NOT NULL AND ${noToken} THEN 'key_rate_limited' END`;
}

/**
 * A page of the keys of `queue` that have open jobs, in key order after
 * `after` (null: from the first), at most `limit` (ask one more than the page
 * to know whether another follows): each with its `waiting` jobs (open and not
 * currently leased: queued or scheduled, let in or held back; counted up to
 * MAX_COUNTED_OPEN open jobs), its current `leased` ones, and `held_back`
 * (see heldBackWhy). The keys are walked in jobs_key_open (a skip scan);
 * each key's jobs are counted in that index, its leases in
 * jobs_held_by_until.
 */
export function keysOf(queue: string, after: string | null, limit: number, now: number): Statement {
  return {
    sql: `WITH RECURSIVE walk(key, n) AS (
            SELECT ${keyAfter("?1", "?2")}, 1
            UNION ALL
            SELECT ${keyAfter("?1", "w.key")}, w.n + 1 FROM walk w WHERE w.key IS NOT NULL AND w.n < ?3),
          counted AS MATERIALIZED (
            SELECT w.key, ${openCounted("?1", "w.key", MAX_COUNTED_OPEN)} AS open, ${leasesOfKey("?1", "w.key", "?4")} AS leased FROM walk w WHERE w.key IS NOT NULL)
          SELECT c.key, max(0, c.open - c.leased) AS waiting, c.leased,
                 ${heldBackWhy("?1", "c.key", "max(0, c.open - c.leased)", "c.leased", "?4")} AS held_back
          FROM counted c LEFT JOIN queues s ON s.queue = ?1
          ORDER BY c.key`,
    args: [queue, after ?? "", limit, now],
  };
}

/**
 * The common table expressions of the top keys of every queue at `now` (an
 * SQL expression), to put in the WITH RECURSIVE of the stats: `top_keys`
 * (queue, key, waiting, place), of each queue's first TOP_KEYS_SCANNED keys
 * with open jobs (in key order), the TOP_KEYS with the most waiting jobs
 * (open and not currently leased; each key's open jobs counted up to
 * MAX_LEASED_PER_KEY), place 1 the most, then by key.
 * Keys with nothing waiting are left out.
 *
 * The walk goes queue by queue through jobs_key_open: a row with a key is a
 * key, a row without one steps to the next queue (its first key), so each
 * step is one or two seeks. Its cost grows with the queues that have keys, at
 * most TOP_KEYS_SCANNED keys each counted up to MAX_LEASED_PER_KEY, and their
 * current leases (an index range a queue); never with the backlog: what
 * /v1/stats and /metrics can afford at every scrape.
 */
export function topKeysTables(now: string): string {
  const queueAfter = `(SELECT k.queue FROM jobs k INDEXED BY jobs_key_open WHERE k.queue > w.queue AND k.done = 0 AND k.key IS NOT NULL ORDER BY k.queue LIMIT 1)`;
  // The walk starts before the first queue ('', less than every name), without a key: its first step is to the first queue.
  return `key_walk(queue, key, n) AS (
            SELECT '', NULL, 0
            UNION ALL
            SELECT CASE WHEN w.key IS NULL THEN ${queueAfter} ELSE w.queue END,
                   CASE WHEN w.key IS NULL THEN ${keyAfter(queueAfter, "''")} WHEN w.n < ${TOP_KEYS_SCANNED} THEN ${keyAfter("w.queue", "w.key")} END,
                   CASE WHEN w.key IS NULL THEN 1 ELSE w.n + 1 END
            FROM key_walk w WHERE w.queue IS NOT NULL),
          key_list AS MATERIALIZED (SELECT queue, key FROM key_walk WHERE key IS NOT NULL),
          key_leases_now(queue, key, n) AS MATERIALIZED (
            SELECT h.queue, h.key, count(*) FROM (SELECT DISTINCT queue FROM key_list) kq
            JOIN jobs h INDEXED BY jobs_held_by_until ON h.queue = kq.queue AND h.until > ${now}
            WHERE h.done = 0 AND h.owner IS NOT NULL AND h.key IS NOT NULL GROUP BY h.queue, h.key),
          key_waiting AS MATERIALIZED (
            SELECT w.queue, w.key, max(0, ${openCounted("w.queue", "w.key", MAX_LEASED_PER_KEY)} - coalesce((SELECT l.n FROM key_leases_now l WHERE l.queue = w.queue AND l.key = w.key), 0)) AS waiting
            FROM key_list w),
          top_keys AS MATERIALIZED (
            SELECT * FROM (SELECT *, row_number() OVER (PARTITION BY queue ORDER BY waiting DESC, key) AS place FROM key_waiting WHERE waiting > 0)
            WHERE place <= ${TOP_KEYS})`;
}

/** The top keys of `queue` (an SQL expression) in `top_keys` of topKeysTables, as a JSON array of { key, waiting, place }. */
export function topKeysOf(queue: string): string {
  return `(SELECT json_group_array(json_object('key', t.key, 'waiting', t.waiting, 'place', t.place)) FROM top_keys t WHERE t.queue = ${queue})`;
}
