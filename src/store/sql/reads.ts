import type { Statement } from "../../drivers/driver.ts";
import { currentLease, due, status, STEPS } from "./lease.ts";
import { overWaitingPriorities, waitingAt } from "./claim-next.ts";
import { topKeysOf, topKeysTables } from "./key-reads.ts";
import { turnWaiting } from "./keys.ts";

// The reads that decide nothing: a job's lease for a system outside, pages of
// events (pages of jobs are searches, src/store/sql/search.ts), the numbers
// per queue, and which waited-on jobs are finished. The rules themselves, and
// every write, are in src/store/sql/lease.ts; when a waiting claim should look
// again, and why a claim was refused, with the claims in
// src/store/sql/claim-next.ts.

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

/**
 * The queue of each of the jobs `ids` that exists, by primary key: what a
 * token limited to some queues must know before a call on jobs by their ids.
 */
export function queuesOf(ids: string[]): Statement {
  return { sql: "SELECT id, queue FROM jobs WHERE id IN (SELECT value FROM json_each(?1))", args: [JSON.stringify(ids)] };
}

/** Whether (owner, fence) holds the current lease of a job, for systems outside to check a token; with the job's holder and status, which say why not. */
export function leaseCheck(id: string, owner: string, fence: number, now: number): Statement {
  return {
    sql: `SELECT fence, until, owner, superseded_by, ${status("?4")} AS status, (${currentLease("?2", "?3", "?4")}) AS current FROM jobs WHERE id = ?1`,
    args: [id, owner, fence, now],
  };
}

/**
 * Whether `queue` is one of a token's queues, `scope` (a JSON list of names,
 * and prefixes ending in * — inScope of src/store/tokens.ts, in SQL), or
 * `scope` is NULL (every queue). In the statement that reads the page, so
 * that a page's cursor is the last row the token may see.
 */
export function inScope(queue: string, scope: string): string {
  return `(${scope} IS NULL OR EXISTS (SELECT 1 FROM json_each(${scope}) WHERE CASE WHEN substr(value, -1) = '*'
            THEN substr(${queue}, 1, length(value) - 1) = substr(value, 1, length(value) - 1) ELSE ${queue} = value END))`;
}

/** A page of one job's events, oldest first, after sequence number `after`; only those of a token's queues (`scope`, JSON; null: all). */
export function events(id: string, after: number, limit: number, scope: string | null): Statement {
  return { sql: `SELECT * FROM events WHERE job_id = ?1 AND seq > ?2 AND ${inScope("queue", "?4")} ORDER BY seq LIMIT ?3`, args: [id, after, limit, scope] };
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
 * queue: waiting jobs with a run_at ahead, priority by priority, of which
 * those not `due`; leases expired and not yet ended; and the earliest run_at
 * of each; a fair queue's keyed jobs, in claim order by turn, are read all
 * (migrations/0034)), its refusals in the last hour and ever, whether it is
 * paused (migrations/0008), and its top keys (`topKeysTables` of
 * src/store/sql/key-reads.ts, JSON). A queue is listed
 * while it has a job, has ever had a refusal, or has settings (paused or
 * limited before its first job: zero counts). Reads a few rows per queue and
 * priority, and the leases it holds: its cost grows with the queues, their
 * priorities, the leases held, the jobs scheduled for later and the keys
 * walked (at most 1,000 a queue), never with the backlog or the history.
 */
export function stats(now: number): Statement {
  const expired = "jobs.queue = q.queue AND done = 0 AND owner IS NOT NULL AND until <= ?1";
  const later = `run_at > ?1 AND NOT (${due("?1")})`;
  return {
    sql: `WITH RECURSIVE ${topKeysTables("?1")}
          SELECT q.queue, coalesce(c.open, 0) AS open,
                 (SELECT count(*) FROM jobs WHERE jobs.queue = q.queue AND done = 0 AND owner IS NOT NULL) AS held, coalesce(c.done, 0) AS done, coalesce(c.dead, 0) AS dead, coalesce(c.cancelled, 0) AS cancelled,
                 coalesce(${overWaitingPriorities("q.queue", `sum((SELECT count(*) FROM jobs WHERE ${waitingAt("q.queue", `AND ${later}`)}))`)}, 0)
                   + (SELECT count(*) FROM jobs WHERE ${turnWaiting("", "q.queue")} AND ${later}) AS waiting_later,
                 (SELECT min(run_at) FROM (SELECT ${overWaitingPriorities("q.queue", `min((SELECT run_at FROM jobs WHERE ${waitingAt("q.queue", "")} ORDER BY run_at LIMIT 1))`)} AS run_at
                                           UNION ALL SELECT min(run_at) FROM jobs WHERE ${turnWaiting("", "q.queue")})) AS waiting_first_run_at,
                 (SELECT count(*) FROM jobs WHERE ${expired}) AS expired,
                 (SELECT count(*) FROM jobs WHERE ${expired} AND ${later}) AS expired_later,
                 (SELECT min(run_at) FROM jobs WHERE ${expired}) AS expired_first_run_at,
                 (SELECT coalesce(sum(refusals), 0) FROM refusal_minutes m WHERE m.queue = q.queue AND minute >= ?2) AS refused_recent,
                 coalesce(r.total, 0) AS refused_total, coalesce(s.paused, 0) AS paused, ${topKeysOf("q.queue")} AS top_keys
          FROM (${QUEUES_WITH_JOBS} UNION SELECT queue FROM refusal_counts UNION SELECT queue FROM queues) q
          LEFT JOIN queue_counts c ON c.queue = q.queue
          LEFT JOIN refusal_counts r ON r.queue = q.queue
          LEFT JOIN queues s ON s.queue = q.queue
          ORDER BY q.queue`,
    args: [now, firstMinuteOfHour(now)],
  };
}
