import type { Statement } from "../../drivers/driver.ts";
import { currentLease, currentLeases, EXHAUSTED, status } from "./lease.ts";
import { refilled, steppedBack, TOKEN, tokenDueAt } from "./bucket.ts";

// The reads that decide nothing: a job's lease for a system outside, pages of
// jobs and events, the numbers per queue, and when a waiting claim should look
// again. The rules themselves, and every write, are in src/store/sql/lease.ts.

/**
 * `aggregate` over the priorities of `queue`'s waiting jobs (`waiting_priority`
 * in it: one row each, highest first), as a scalar: the priorities are found
 * one seek each in jobs_claim_waiting (queue, priority, run_at), the only
 * index of the waiting jobs (migrations/0015), so that what the aggregate
 * asks by run_at is a range of each priority, never a walk over a backlog.
 */
function overWaitingPriorities(queue: string, aggregate: string): string {
  const waiting = `queue = ${queue} AND done = 0 AND owner IS NULL`;
  return `(WITH RECURSIVE waiting_priority(priority) AS (
             SELECT (SELECT priority FROM jobs WHERE ${waiting} ORDER BY priority DESC LIMIT 1)
             UNION ALL
             SELECT (SELECT priority FROM jobs WHERE ${waiting} AND priority < waiting_priority.priority ORDER BY priority DESC LIMIT 1)
             FROM waiting_priority WHERE waiting_priority.priority IS NOT NULL)
           SELECT ${aggregate} FROM waiting_priority WHERE waiting_priority.priority IS NOT NULL)`;
}

/** The waiting jobs of `queue` at one of the priorities of `overWaitingPriorities`, and `more`: a range of jobs_claim_waiting. */
function waitingAt(queue: string, more: string): string {
  return `queue = ${queue} AND done = 0 AND owner IS NULL AND priority = waiting_priority.priority ${more}`;
}

/**
 * When a job of each of `queues` next becomes claimable by `takeNext`: the
 * earliest run_at of a job nobody holds, or the earliest end of a lease that
 * is not its job's last attempt (one row per queue; `at` null when there is
 * none). What a waiting claim sleeps until, and what the wait rooms' re-check
 * reads for every queue with waiters at once; for each queue, a seek a
 * priority and a range of the lease ends. Never while the queue is paused (null: a resume rings);
 * while it has its maxLeased current leases, not before the first of them ends
 * (migrations/0008); and not before its bucket holds a whole token (migrations/0009).
 */
export function nextClaimable(queues: string[], now: number): Statement {
  const held = "queue = w.queue AND done = 0 AND owner IS NOT NULL";
  return {
    sql: `WITH w(queue) AS (SELECT DISTINCT value FROM json_each(?1)),
          n(queue, at) AS MATERIALIZED (
            SELECT queue, coalesce(min(free, ended), free, ended) FROM (
              SELECT w.queue,
                     ${overWaitingPriorities("w.queue", `min((SELECT max(run_at, until) FROM jobs WHERE ${waitingAt("w.queue", "")} ORDER BY run_at LIMIT 1))`)} AS free,
                     (SELECT max(run_at, until) FROM jobs WHERE ${held} AND NOT (${EXHAUSTED}) ORDER BY until LIMIT 1) AS ended
              FROM w))
          SELECT n.queue,
                 CASE WHEN s.paused = 1 OR n.at IS NULL THEN NULL
                      ELSE max(n.at,
                               CASE WHEN s.max_leased <= ${currentLeases("n.queue", "?2")}
                                    THEN (SELECT min(until) FROM jobs WHERE queue = n.queue AND done = 0 AND owner IS NOT NULL AND until > ?2) ELSE n.at END,
                               coalesce(${tokenDueAt("s.", "?2")}, n.at)) END AS at
          FROM n LEFT JOIN queues s ON s.queue = n.queue`,
    args: [JSON.stringify(queues), now],
  };
}

/**
 * Which of the jobs `ids` are finished (done, dead or cancelled) or gone: what
 * the wait rooms' re-check reads for every job with waiting reads at once.
 */
export function finished(ids: string[]): Statement {
  return {
    sql: `SELECT value AS id FROM json_each(?1) WHERE NOT EXISTS (SELECT 1 FROM jobs WHERE id = value AND done = 0)`,
    args: [JSON.stringify(ids)],
  };
}

/** The queue's row `s` (at ?2) has its maxLeased current leases: no token would let a claim through. */
const FULL = `(s.max_leased IS NOT NULL AND ${currentLeases("s.queue", "?2")} >= s.max_leased)`;

/**
 * In how many ms `queue`'s bucket next holds a whole token, when its rate
 * limit is what holds back a claim-next at `now`: it has a rate, is not
 * paused, not full (its maxLeased current leases), holds no whole token, and
 * a job is due; and whether its count is ahead of a clock that stepped back
 * (`stepped_back`: see `followClock`). One row, or none; a queue
 * without settings is one primary-key lookup. With `limit`, it is sent in the
 * claim's batch, just after it: it reads nothing when the claim took `limit`.
 */
export function retryAfter(queue: string, now: number, limit?: number): Statement {
  const due = `${overWaitingPriorities("?1", `max(EXISTS (SELECT 1 FROM jobs WHERE ${waitingAt("?1", "AND run_at <= ?2 AND until <= ?2")}))`)} = 1
               OR EXISTS (SELECT 1 FROM jobs WHERE queue = ?1 AND done = 0 AND owner IS NOT NULL AND until <= ?2 AND run_at <= ?2 AND NOT (${EXHAUSTED}))`;
  return {
    sql: `SELECT ${tokenDueAt("s.", "?2")} - ?2 AS ms, ${steppedBack("s.", "?2")} AS stepped_back FROM queues s
          WHERE ${limit === undefined ? "" : "changes() < ?3 AND"} s.queue = ?1 AND s.refill_per_ms IS NOT NULL AND s.paused = 0 AND NOT ${FULL}
            AND ${refilled("s.", "?2")} < ${TOKEN} AND (${due})`,
    args: limit === undefined ? [queue, now] : [queue, now, limit],
  };
}

/**
 * A job as `state` reads it, and what of its queue refuses a claim now
 * (`queue_refusal`: paused, else null when it has its maxLeased current leases
 * (full), else rate_limited when its bucket holds no whole token, else null):
 * why a claim by id was refused.
 */
export function claimState(id: string, now: number): Statement {
  return {
    sql: `SELECT *, ${status("?2")} AS status,
                 (SELECT CASE WHEN s.paused = 1 THEN 'paused' WHEN ${FULL} THEN NULL WHEN ${refilled("s.", "?2")} < ${TOKEN} THEN 'rate_limited' END
                  FROM queues s WHERE s.queue = jobs.queue) AS queue_refusal
          FROM jobs WHERE id = ?1`,
    args: [id, now],
  };
}

/** Whether (owner, fence) holds the current lease of a job, for systems outside to check a token; with the job's holder and status, which say why not. */
export function leaseCheck(id: string, owner: string, fence: number, now: number): Statement {
  return {
    sql: `SELECT fence, until, owner, ${status("?4")} AS status, (${currentLease("?2", "?3", "?4")}) AS current FROM jobs WHERE id = ?1`,
    args: [id, owner, fence, now],
  };
}

/** A page of jobs in id order after `after`, optionally of one queue and one status. */
export function list(filter: { queue: string | null; status: string | null; after: string | null; limit: number; now: number }): Statement {
  return {
    sql: `SELECT * FROM (SELECT *, ${status("?5")} AS status FROM jobs
                         WHERE (?1 IS NULL OR queue = ?1) AND id > coalesce(?3, ''))
          WHERE ?2 IS NULL OR status = ?2
          ORDER BY id LIMIT ?4`,
    args: [filter.queue, filter.status, filter.after, filter.limit, filter.now],
  };
}

/** A page of one job's events, oldest first, after sequence number `after`. */
export function events(id: string, after: number, limit: number): Statement {
  return { sql: "SELECT * FROM events WHERE job_id = ?1 AND seq > ?2 ORDER BY seq LIMIT ?3", args: [id, after, limit] };
}

/** The refusals of "the last hour" at `now` are those from the start of this minute (`at / 60000`) on: now's minute and the 59 before it. */
function firstMinuteOfHour(now: number): number {
  return Math.floor(now / 60_000) - 59;
}

/** The queues that have a job (their counts are not all 0): the queues the counts list. */
export const QUEUES_WITH_JOBS = "SELECT queue FROM queue_counts WHERE open <> 0 OR done <> 0 OR dead <> 0 OR cancelled <> 0";

/**
 * Per queue: the jobs by stored state (migrations/0015's `queue_counts`: open,
 * done, dead, cancelled; of the open ones, those held are a range of
 * jobs_held_by_until), what of them depends on `now` (index ranges of that
 * queue: waiting jobs due later, priority by priority, leases expired and not
 * yet ended, and the earliest run_at of each), its refusals in the last hour
 * and ever, and whether it is paused (migrations/0008). A queue is listed
 * while it has a job, has ever had a refusal, or has settings (paused or
 * limited before its first job: zero counts). Reads a few rows per queue and
 * priority, and the leases it holds: its cost grows with the queues, their
 * priorities, the leases held and the jobs scheduled for later, never with
 * the backlog or the history.
 */
export function stats(now: number): Statement {
  const expired = "jobs.queue = q.queue AND done = 0 AND owner IS NOT NULL AND until <= ?1";
  return {
    sql: `SELECT q.queue, coalesce(c.open, 0) AS open,
                 (SELECT count(*) FROM jobs WHERE jobs.queue = q.queue AND done = 0 AND owner IS NOT NULL) AS held, coalesce(c.done, 0) AS done, coalesce(c.dead, 0) AS dead, coalesce(c.cancelled, 0) AS cancelled,
                 coalesce(${overWaitingPriorities("q.queue", `sum((SELECT count(*) FROM jobs WHERE ${waitingAt("q.queue", "AND run_at > ?1")}))`)}, 0) AS waiting_later,
                 ${overWaitingPriorities("q.queue", `min((SELECT run_at FROM jobs WHERE ${waitingAt("q.queue", "")} ORDER BY run_at LIMIT 1))`)} AS waiting_first_run_at,
                 (SELECT count(*) FROM jobs WHERE ${expired}) AS expired,
                 (SELECT count(*) FROM jobs WHERE ${expired} AND run_at > ?1) AS expired_later,
                 (SELECT min(run_at) FROM jobs WHERE ${expired}) AS expired_first_run_at,
                 (SELECT coalesce(sum(refusals), 0) FROM refusal_minutes m WHERE m.queue = q.queue AND minute >= ?2) AS refused_recent,
                 coalesce(r.total, 0) AS refused_total, coalesce(s.paused, 0) AS paused
          FROM (${QUEUES_WITH_JOBS} UNION SELECT queue FROM refusal_counts UNION SELECT queue FROM queues) q
          LEFT JOIN queue_counts c ON c.queue = q.queue
          LEFT JOIN refusal_counts r ON r.queue = q.queue
          LEFT JOIN queues s ON s.queue = q.queue
          ORDER BY q.queue`,
    args: [now, firstMinuteOfHour(now)],
  };
}
