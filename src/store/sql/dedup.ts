import type { Statement } from "../../drivers/driver.ts";
import { cancelled, recordCancel } from "./cancel.ts";
import { returningJob, status, STEPS } from "./lease.ts";

// Once per key (issue 30, migrations/0035): what a dedup key adds to an
// enqueue, as statements that run in the enqueue's own batch (one
// transaction), before or around its INSERT (`enqueue` in
// src/store/sql/lease.ts), so that concurrent enqueues of one key are decided
// one after the other:
// - a window: the INSERT adds the job only while no window of the key lasts
//   (`noWindow`); the read after it (`holder`) answers the job that holds it;
// - a debounce: the key's job that still waits for its first claim is moved
//   (`debounce`), and the INSERT adds a job only if there is none (`noWaiting`);
// - a supersede: the key's job that is not finished is cancelled
//   (`supersede`), then the INSERT adds the new one.
// The job created takes the key (the trigger jobs_take_dedup_key).

/** How a job holds its dedup key: the end of its window, how late a debounce may move it, or neither (a supersede). */
export type Dedup = { key: string; until: number | null; debounceUntil: number | null };

/** The job that holds dedup key `key` (SQL expressions) of `queue`, or NULL: one seek of dedup_keys' primary key. */
function holderId(queue: string, key: string): string {
  return `(SELECT job_id FROM dedup_keys WHERE queue = ${queue} AND dedup_key = ${key})`;
}

/** No window of dedup key `key` of `queue` lasts at `now` (SQL expressions): the condition of a window's INSERT. */
export function noWindow(queue: string, key: string, now: string): string {
  return `NOT EXISTS (SELECT 1 FROM dedup_keys WHERE queue = ${queue} AND dedup_key = ${key} AND until > ${now})`;
}

/** A debounced job that has not been claimed yet: one that an enqueue of its key moves instead of adding one. */
const WAITING = "done = 0 AND owner IS NULL AND claimed_at IS NULL AND debounce_until IS NOT NULL";

/** The key's job still waits for its first claim (SQL expressions): the condition of a debounce's INSERT, true after `debounce` moved it. */
export function noWaiting(queue: string, key: string): string {
  return `NOT EXISTS (SELECT 1 FROM jobs WHERE id = ${holderId(queue, key)} AND ${WAITING})`;
}

/**
 * Moves the debounced job of dedup key `key` in `queue` that waits for its
 * first claim, if there is one: the new payload and priority, and due
 * `debounceMs` after `now`, but never after its debounce_until; unless the
 * enqueue's own id `id` exists, as then the enqueue changes nothing. Answers
 * the job as moved.
 */
export function debounce(move: { id: string; queue: string; key: string; payload: string | null; priority: number; debounceMs: number; now: number }): Statement {
  return {
    sql: `UPDATE jobs SET payload = ?3, priority = ?4, run_at = min(?6 + ?5, debounce_until), updated_at = ?6
          WHERE id = ${holderId("?1", "?2")} AND ${WAITING} AND NOT EXISTS (SELECT 1 FROM jobs WHERE id = ?7)
          ${returningJob("?6")}`,
    args: [move.queue, move.key, move.payload, move.priority, move.debounceMs, move.now, move.id],
  };
}

/**
 * Cancels the job that holds dedup key `key` of `queue`, if it is not
 * finished, for job `by`, which is about to take the key; unless `by`
 * exists already, as then the enqueue adds nothing. A cancel as
 * src/store/sql/cancel.ts writes one: its holder's writes are refused from now
 * on (reason cancelled), and the job names `by` as what superseded it.
 * Answers the id it cancelled.
 */
export function supersede(queue: string, key: string, by: string, now: number): Statement[] {
  return [
    {
      sql: `UPDATE jobs SET ${cancelled("?4")}, superseded_by = ?3
            WHERE id = ${holderId("?1", "?2")} AND done = 0 AND NOT EXISTS (SELECT 1 FROM jobs WHERE id = ?3)
            RETURNING id`,
      args: [queue, key, by, now],
    },
    recordCancel(holderId("?4", "?5"), "enqueue", `superseded by job ${JSON.stringify(by)}`, now, [queue, key]),
  ];
}

/**
 * Reads the holder of dedup key `key` of `queue`: its id, the end of its
 * window, its job as of `now` with its steps if it is not purged, and whether
 * the enqueue's own id `id` is taken (then the enqueue answers that job).
 */
export function holder(queue: string, key: string, now: number, id: string): Statement {
  return {
    sql: `SELECT holder, window_until, EXISTS (SELECT 1 FROM jobs WHERE id = ?4) AS id_taken, jobs.*, ${status("?3")} AS status, ${STEPS} AS steps
          FROM (SELECT job_id AS holder, until AS window_until FROM dedup_keys WHERE queue = ?1 AND dedup_key = ?2) LEFT JOIN jobs ON jobs.id = holder`,
    args: [queue, key, now, id],
  };
}
