import type { Statement } from "../../drivers/driver.ts";
import { heldBack, turnOf } from "./keys.ts";
import { END_LEASE, NEXT_SEQ, returningJob } from "./lease.ts";

// What the cron and an operator do to jobs outside any lease: end the leases
// that ran out, bring a dead job back, delete a job, purge old ones. Each is
// decided by its own statement, as the lease rules of src/store/sql/lease.ts are,
// and none of them touches a current lease.

/**
 * Ends up to `limit` expired leases, as `expire` does: the cron's chunk. Each
 * queue that holds leases (found in the index of lease ends, one seek a
 * queue) is searched for its ended ones in that index, so the leases still
 * held cost nothing.
 */
export function expireSome(now: number, limit: number): Statement {
  const held = "done = 0 AND owner IS NOT NULL";
  return {
    sql: `UPDATE jobs
          SET ${END_LEASE}
          WHERE id IN (
            WITH RECURSIVE holding(queue) AS (
              SELECT (SELECT min(queue) FROM jobs WHERE ${held})
              UNION ALL
              SELECT (SELECT min(queue) FROM jobs WHERE ${held} AND queue > holding.queue) FROM holding WHERE holding.queue IS NOT NULL)
            SELECT id FROM jobs
            WHERE queue IN (SELECT queue FROM holding) AND ${held} AND until <= ?1
            LIMIT ?2)
          RETURNING id, queue, dead`,
    args: [now, limit],
  };
}

/** Puts a dead job back in its queue, due at once, with its attempts reset, and records it; the fence goes on growing. */
export function retry(id: string, now: number): Statement[] {
  return [
    {
      sql: `UPDATE jobs
            SET dead = 0, done = 0, attempts = 0, run_at = ?2, last_event = 'retried', updated_at = ?2,
                held_back = ${heldBack("jobs.queue", "jobs.key", "?2", "?2")}, turn = ${turnOf("jobs.queue", "jobs.key")}
            WHERE id = ?1 AND dead = 1
            ${returningJob("?2")}`,
      args: [id, now],
    },
    {
      sql: `INSERT INTO history (job_id, seq, queue, at, kind, owner, fence)
            SELECT id, ${NEXT_SEQ}, queue, ?2, 'retried', owner, fence FROM jobs WHERE id = ?1 AND changes() = 1`,
      args: [id, now],
    },
  ];
}

/** The columns of an event, as the history stores them and the views `events` and `row_events` (migrations/0015) tell them. */
const EVENT = "job_id, seq, queue, at, kind, action, owner, fence, current_owner, current_fence, error, count, last_at, progress";

/**
 * Deletes a job that nobody holds a current lease on, recording it: what its
 * row told of its history is stored first, then its deletion (which the
 * counts see, migrations/0015); its fence raises the fence floor (migrations/0003).
 */
export function remove(id: string, now: number): Statement[] {
  const [record, removal] = removals("id = ?1 AND NOT (done = 0 AND owner IS NOT NULL AND until > ?2)", "?2", "job_id = ?1");
  return [
    { sql: record, args: [id, now] },
    { sql: `${removal} RETURNING id`, args: [id, now] },
  ];
}

/**
 * The two statements of a deletion of the jobs that `which` (a condition over
 * a jobs row) holds at `now` (an SQL expression), `remove`'s and the bulk
 * delete's: what their rows told of their history is stored, then their
 * deletions; then the DELETE, for a RETURNING to end. `rowsOf` narrows the
 * view of what rows tell (a condition over its `job_id`) before `which` is
 * asked of each.
 */
export function removals(which: string, now: string, rowsOf: string): [record: string, removal: string] {
  return [
    `INSERT INTO history (${EVENT})
     SELECT ${EVENT} FROM row_events WHERE ${rowsOf} AND EXISTS (SELECT 1 FROM jobs WHERE jobs.id = row_events.job_id AND ${which})
     UNION ALL
     SELECT id, ${NEXT_SEQ}, queue, ${now}, 'deleted', NULL, NULL, fence, NULL, NULL, NULL, 1, NULL, NULL FROM jobs WHERE ${which}`,
    `DELETE FROM jobs WHERE ${which}`,
  ];
}

/**
 * One purge chunk: up to `limit` done, dead and cancelled jobs last changed at or before
 * `cutoff`, those finished first, with their stored history (later refusals too);
 * and the histories of up to `limit` jobs deleted at or before `cutoff`, each
 * up to its `deleted` event (a job enqueued again under that id keeps its
 * own). The chunk's jobs are the first of jobs_finished, so every statement
 * finds the same ones: the first takes them off their queues' counts, one
 * write a queue. Answers, third, the jobs purged and, fourth, the history
 * rows, whose `deleted` ones count the histories. Last, up to `limit` dedup
 * windows that ended by `now` (migrations/0035) let their keys go.
 */
export function purge(cutoff: number, limit: number, now: number): Statement[] {
  const finished = "SELECT id FROM jobs WHERE done = 1 AND updated_at <= ?1 ORDER BY updated_at, id LIMIT ?2";
  const deletions = "SELECT job_id AS deleted_id, seq AS deleted_seq FROM history WHERE kind = 'deleted' AND at <= ?1 ORDER BY at LIMIT ?2";
  return [
    {
      sql: `UPDATE queue_counts SET done = done - purged_done, dead = dead - purged_dead, cancelled = cancelled - purged_cancelled
            FROM (SELECT queue AS purged_queue, sum(dead = 0 AND cancelled = 0) AS purged_done, sum(dead) AS purged_dead, sum(cancelled) AS purged_cancelled
                  FROM jobs WHERE id IN (${finished}) GROUP BY queue)
            WHERE queue_counts.queue = purged_queue`,
      args: [cutoff, limit],
    },
    { sql: `DELETE FROM history WHERE job_id IN (${finished})`, args: [cutoff, limit] },
    { sql: `DELETE FROM jobs WHERE id IN (${finished}) RETURNING id`, args: [cutoff, limit] },
    {
      sql: `DELETE FROM history WHERE (job_id, seq) IN (SELECT job_id, seq FROM (${deletions}) JOIN history ON job_id = deleted_id AND seq <= deleted_seq)
            RETURNING kind`,
      args: [cutoff, limit],
    },
    {
      sql: `DELETE FROM dedup_keys WHERE (queue, dedup_key) IN (SELECT queue, dedup_key FROM dedup_keys WHERE until <= ?1 LIMIT ?2) RETURNING until`,
      args: [now, limit],
    },
  ];
}
