import type { Statement } from "./driver.ts";

// The lease rules, all of them. Each verb is one conditional statement that
// decides and writes together, so no other writer can slip in between a check
// and its write. A refused write matches no row and so changes nothing.
//
// A lease is current when the owner and fence match, the job is not done and
// `until > now`; at `now == until` it has expired and the job is claimable.

/** Inserts a job unless its id exists. A re-used id starts at its retired fence. */
export function enqueue(job: {
  id: string;
  queue: string;
  payload: string | null;
  priority: number;
  runAt: number;
  maxAttempts: number;
  now: number;
}): Statement {
  return {
    sql: `INSERT INTO jobs (id, queue, payload, priority, run_at, max_attempts, fence, created_at, updated_at)
          VALUES (?1, ?2, ?3, ?4, ?5, ?6, coalesce((SELECT fence FROM retired_fences WHERE id = ?1), 0), ?7, ?7)
          ON CONFLICT (id) DO NOTHING
          RETURNING id`,
    args: [job.id, job.queue, job.payload, job.priority, job.runAt, job.maxAttempts, job.now],
  };
}

/** Reads one job. */
export function state(id: string): Statement {
  return { sql: "SELECT * FROM jobs WHERE id = ?1", args: [id] };
}

/** Takes the lease of one job if nobody holds it: a new owner and the next fence. */
export function claim(id: string, owner: string, now: number, ttlMs: number): Statement {
  return {
    sql: `UPDATE jobs
          SET owner = ?2, until = ?3 + ?4, fence = fence + 1, attempts = attempts + 1, updated_at = ?3
          WHERE id = ?1 AND done = 0 AND until <= ?3
          RETURNING fence, until`,
    args: [id, owner, now, ttlMs],
  };
}

/** Takes the leases of the next due jobs of a queue, in claim order, as one statement. */
export function claimNext(queue: string, owner: string, now: number, ttlMs: number, limit: number): Statement {
  return {
    sql: `UPDATE jobs
          SET owner = ?2, until = ?3 + ?4, fence = fence + 1, attempts = attempts + 1, updated_at = ?3
          WHERE id IN (
            SELECT id FROM jobs
            WHERE queue = ?1 AND done = 0 AND until <= ?3 AND run_at <= ?3
            ORDER BY priority DESC, run_at, created_at, id
            LIMIT ?5)
          RETURNING *`,
    args: [queue, owner, now, ttlMs, limit],
  };
}

/** Extends the current lease; an expired one stays expired. */
export function renew(id: string, owner: string, fence: number, now: number, ttlMs: number): Statement {
  return {
    sql: `UPDATE jobs
          SET until = ?4 + ?5, updated_at = ?4
          WHERE id = ?1 AND owner = ?2 AND fence = ?3 AND done = 0 AND until > ?4
          RETURNING until`,
    args: [id, owner, fence, now, ttlMs],
  };
}

/** Stores the result of the current lease and marks the job done. */
export function complete(id: string, owner: string, fence: number, now: number, result: string): Statement {
  return {
    sql: `UPDATE jobs
          SET result = ?5, done = 1, updated_at = ?4
          WHERE id = ?1 AND owner = ?2 AND fence = ?3 AND done = 0 AND until > ?4
          RETURNING fence`,
    args: [id, owner, fence, now, result],
  };
}

/** Gives the lease back: nobody holds it and it is claimable at once. The fence stays. */
export function release(id: string, owner: string, fence: number, now: number): Statement {
  return {
    sql: `UPDATE jobs
          SET owner = NULL, until = 0, updated_at = ?4
          WHERE id = ?1 AND owner = ?2 AND fence = ?3 AND done = 0
          RETURNING fence`,
    args: [id, owner, fence, now],
  };
}

/** Clears every lease that has expired, so the state shows nobody holding it. The fence stays. */
export function reclaimExpired(now: number): Statement {
  return {
    sql: `UPDATE jobs
          SET owner = NULL, until = 0, updated_at = ?1
          WHERE done = 0 AND owner IS NOT NULL AND until <= ?1
          RETURNING id`,
    args: [now],
  };
}
