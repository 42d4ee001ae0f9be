import type { Statement } from "../../drivers/driver.ts";
import { END_LEASE, returningJob } from "./lease.ts";

// What the cron and an operator do to jobs outside any lease: end the leases
// that ran out, bring a dead job back, delete a job, purge old ones. Each is
// decided by its own statement, as the lease rules of src/store/sql/lease.ts are,
// and none of them touches a current lease.

/**
 * Ends up to `limit` expired leases, as `expire` does: the cron's chunk. Each
 * queue that holds leases (migrations/0004's counts) is searched for its ended
 * ones in the index of lease ends, so the leases still held cost nothing.
 */
export function expireSome(now: number, limit: number): Statement {
  return {
    sql: `UPDATE jobs
          SET ${END_LEASE}
          WHERE id IN (
            SELECT id FROM jobs
            WHERE queue IN (SELECT queue FROM queue_counts WHERE held > 0) AND done = 0 AND owner IS NOT NULL AND until <= ?1
            LIMIT ?2)
          RETURNING id, queue, dead`,
    args: [now, limit],
  };
}

/** Puts a dead job back in its queue, due at once, with its attempts reset; the fence goes on growing. */
export function retry(id: string, now: number): Statement[] {
  return [
    {
      sql: `UPDATE jobs
            SET dead = 0, done = 0, attempts = 0, run_at = ?2, last_event = 'retried', updated_at = ?2
            WHERE id = ?1 AND dead = 1
            ${returningJob("?2")}`,
      args: [id, now],
    },
  ];
}

/** Deletes a job that nobody holds a current lease on, recording it; its fence raises the fence floor (migrations/0003). */
export function remove(id: string, now: number): Statement[] {
  const notLeased = "id = ?1 AND NOT (done = 0 AND owner IS NOT NULL AND until > ?2)";
  return [
    { sql: `INSERT INTO events (job_id, queue, at, kind, fence) SELECT id, queue, ?2, 'deleted', fence FROM jobs WHERE ${notLeased}`, args: [id, now] },
    { sql: `DELETE FROM jobs WHERE ${notLeased} RETURNING id`, args: [id, now] },
  ];
}

/**
 * One purge chunk: up to `limit` done, dead and cancelled jobs last changed at or before
 * `cutoff`, those finished first, with all their events (later refusals too);
 * and the histories of up to `limit` jobs deleted at or before `cutoff`, each
 * up to its `deleted` event (a job enqueued again under that id keeps its
 * own). Answers, second, the jobs purged and, third, the events, whose
 * `deleted` ones count the histories.
 */
export function purge(cutoff: number, limit: number): Statement[] {
  const finished = "SELECT id FROM jobs WHERE done = 1 AND updated_at <= ?1 ORDER BY updated_at LIMIT ?2";
  const deletions = "SELECT job_id AS deleted_id, seq AS deleted_seq FROM events WHERE kind = 'deleted' AND at <= ?1 ORDER BY at LIMIT ?2";
  return [
    { sql: `DELETE FROM events WHERE job_id IN (${finished})`, args: [cutoff, limit] },
    { sql: `DELETE FROM jobs WHERE id IN (${finished}) RETURNING id`, args: [cutoff, limit] },
    {
      sql: `DELETE FROM events WHERE seq IN (SELECT seq FROM (${deletions}) JOIN events ON job_id = deleted_id AND seq <= deleted_seq)
            RETURNING kind`,
      args: [cutoff, limit],
    },
  ];
}
