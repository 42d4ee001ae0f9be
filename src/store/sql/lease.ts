import type { InValue } from "@libsql/client";
import type { Statement } from "../../drivers/driver.ts";
import { heldBack, turnOf } from "./keys.ts";
import { addTallies, COMPLETED_TALLIES, completedBuckets, completedTallies, minuteOf } from "./series.ts";

// The lease rules. Each write is one conditional statement that decides and
// writes together, so no other writer can slip in between a check and its
// write; a refused write matches no row and so changes nothing. Each verb is
// one batch (one transaction): its write, then what it records. An accepted
// write answers the job as it left it (RETURNING), so the store reads nothing
// more; a refused one answers no row. The claims, and what decides one (a
// queue's settings, due, priority), are in src/store/sql/claim-next.ts.
//
// A job's history is kept where its row cannot tell it (migrations/0015): the
// row tells its enqueue and its current lease (the claim, the renews, the
// completion), each write setting its place in the job's history (`*_seq`,
// from NEXT_SEQ) in the row it writes anyway. A write that ends a lease
// otherwise (release, fail, expiry, a claim taking an expired lease over)
// names the end in `last_event` and reserves its place, and a trigger stores
// that lease as one history row. A refused write with a lease is recorded by
// the statement after it, which sees `changes() = 0`.
//
// The counts per queue change once per statement (migrations/0015): an
// enqueue and a completion count what they wrote in the statement after them.

/** The statuses a job can have; named once, here and in `status` below. */
export const STATUSES = ["queued", "scheduled", "leased", "done", "dead", "cancelled"] as const;

/**
 * A job is due at `now` (an SQL expression over a jobs row) once its run_at
 * has come by the clock, or if its run_at had come when it was enqueued (no
 * delay, or a runAt already past: `run_at <= created_at`), whatever the clock
 * read since: a job enqueued while the clock was ahead stays due after the
 * clock steps back. A delay, and a retry's backoff, wait for their time on
 * the clock: a fail's run_at is the failing `now` plus the backoff, so the job
 * it leaves waiting (`last_event` 'failed' until its next claim) is never due
 * by the second rule, not even when a clock stepped back put that time before
 * the enqueue's. Written as two conditions, the first over columns of
 * jobs_claim_waiting only, so that a job due later is turned down without
 * reading its row.
 */
export function due(now: string): string {
  return `(run_at <= ${now} OR run_at <= created_at) AND (run_at <= ${now} OR last_event IS NOT 'failed')`;
}

/** A job's status at the time in parameter `now` (an SQL expression over a jobs row): one nobody holds is queued when `due`, else scheduled. */
export function status(now: string): string {
  return `CASE WHEN dead = 1 THEN 'dead' WHEN cancelled = 1 THEN 'cancelled' WHEN done = 1 THEN 'done'
               WHEN owner IS NOT NULL AND until > ${now} THEN 'leased'
               WHEN ${due(now)} THEN 'queued' ELSE 'scheduled' END`;
}

/**
 * The lease (owner, fence) is the current one at `now`: owner and fence match,
 * the job is not done (nor dead, nor cancelled: both are done too), and
 * `until > now`. At `now == until` it has expired.
 */
export function currentLease(owner: string, fence: string, now: string): string {
  return `owner = ${owner} AND fence = ${fence} AND done = 0 AND until > ${now}`;
}

/** A job whose lease expired on its last attempt dies instead of being claimed again. */
export const EXHAUSTED = "attempts >= max_attempts";

/**
 * A new job's fence: the floor, the highest fence of any job ever removed
 * (migrations/0003), so that a re-used id starts above every fence it had.
 */
export const FENCE_FLOOR = "(SELECT fence FROM fence_floor)";

/**
 * The next place in a job's history, for a statement over a jobs row: above
 * the places its row tells (`seq`) and those of its stored history.
 */
export const NEXT_SEQ = "(max(jobs.seq, coalesce((SELECT max(h.seq) FROM history h WHERE h.job_id = jobs.id), 0)) + 1)";

/** The place of a new job's enqueue (`id` an SQL expression): after the history of a job once enqueued under that id. */
export function firstSeq(id: string): string {
  return `(coalesce((SELECT max(h.seq) FROM history h WHERE h.job_id = ${id}), 0) + 1)`;
}

/**
 * How an enqueue's count meets its queue's row of counts: the jobs it added
 * join the open ones, and the row keeps the highest `now` an enqueue of the
 * queue has read (`enqueued_at`, migrations/0033), how far along run_at the
 * claims look for jobs that were due when they were enqueued (`dueUpTo`, in
 * src/store/sql/claim-next.ts), and adds them to its current minute's
 * enqueued (src/store/sql/series.ts). The same row as the count: no row more.
 */
export const ADD_ENQUEUED = `ON CONFLICT (queue) DO UPDATE SET
  open = open + excluded.open, enqueued_at = coalesce(max(enqueued_at, excluded.enqueued_at), excluded.enqueued_at),
  ${addTallies("excluded.minute", ["enqueued"], () => "excluded.minute_enqueued")}`;

/** The columns of an enqueue's row of counts, for ADD_ENQUEUED: the jobs it added, its time, and its minute's tally (migrations/0037). */
export const ENQUEUED_COLUMNS = "queue, open, enqueued_at, minute, minute_enqueued";

/**
 * Adds `count` (an SQL expression, 0 adds nothing) jobs enqueued at `now` (an
 * SQL expression) to the open jobs of `queue`: what an enqueue writes after
 * its INSERT, once for all its jobs.
 */
export function countEnqueued(queue: string, count: string, now: string, args: InValue[]): Statement {
  return {
    sql: `INSERT INTO queue_counts (${ENQUEUED_COLUMNS}) SELECT ${queue}, ${count}, ${now}, ${minuteOf(now)}, ${count} WHERE ${count} > 0
          ${ADD_ENQUEUED}`,
    args,
  };
}

/**
 * The steps a job recorded (migrations/0036), for a statement over its row
 * `jobs`: a JSON object of each step's name to its result (as its JSON text),
 * fence and time; NULL for a job that recorded none, whose steps are not read
 * at all, so that a claim of a job without steps reads no row more.
 */
export const STEPS = `CASE WHEN jobs.step_count > 0 THEN (SELECT json_group_object(s.name, json_object('result', s.result, 'fence', s.fence, 'at', s.at))
                                                     FROM steps s WHERE s.job_id = jobs.id) END`;

/**
 * The columns a Job is read from (src/store/job.ts, jobFromRow). An accepted
 * write answers these and no more: its row has as many again that only the
 * history reads, and handing each to JavaScript is most of what a claim of
 * many jobs costs beyond its writes.
 */
export const JOB_COLUMNS = `id, queue, key, payload, priority, run_at, owner, until, fence, result, done, dead, cancelled,
  attempts, max_attempts, last_error, progress, traceparent, tracestate, created_at, updated_at, dedup_key, dedup_until, superseded_by, ${STEPS} AS steps`;

/** What an accepted write answers: the job as it left it, with its status at `now` (the parameter that holds it). */
export function returningJob(now: string): string {
  return `RETURNING ${JOB_COLUMNS}, ${status(now)} AS status`;
}

/**
 * Inserts a job unless its id exists, at the fence floor, with the trace
 * context it was enqueued with (migrations/0032: written here only), and
 * counts it. A keyed job waits for its key's turn when its queue's per-key
 * limit is reached (`heldBack`), and takes a turn in a fair queue (`turnOf`).
 * A job with a dedup key stores how it holds it (`dedup`, migrations/0035),
 * and is inserted only if `onlyIf` holds: an SQL condition over ?2 (the
 * queue), ?7 (now) and ?11 (the dedup key), from src/store/sql/dedup.ts.
 */
export function enqueue(job: {
  id: string;
  queue: string;
  key: string | null;
  payload: string | null;
  priority: number;
  runAt: number;
  maxAttempts: number;
  traceparent: string | null;
  tracestate: string | null;
  now: number;
  dedup?: { key: string; until: number | null; debounceUntil: number | null; onlyIf: string } | null | undefined;
}): Statement[] {
  const { dedup } = job;
  return [
    {
      sql: `INSERT INTO jobs (id, queue, key, held_back, turn, payload, priority, run_at, max_attempts, traceparent, tracestate, fence, created_at, updated_at, enqueued_seq, seq,
                              dedup_key, dedup_until, debounce_until)
            ${dedup ? "SELECT" : "VALUES ("} ?1, ?2, ?10, ${heldBack("?2", "?10", "?5", "?7")}, ${turnOf("?2", "?10")}, ?3, ?4, ?5, ?6, ?8, ?9, ${FENCE_FLOOR}, ?7, ?7, ${firstSeq("?1")}, ${firstSeq("?1")},
                   ?11, ?12, ?13 ${dedup ? `WHERE ${dedup.onlyIf}` : ")"}
            ON CONFLICT (id) DO NOTHING
            ${returningJob("?7")}`,
      args: [job.id, job.queue, job.payload, job.priority, job.runAt, job.maxAttempts, job.now, job.traceparent, job.tracestate, job.key,
        dedup?.key ?? null, dedup?.until ?? null, dedup?.debounceUntil ?? null],
    },
    countEnqueued("?1", "changes()", "?2", [job.queue, job.now]),
  ];
}

/** Reads one job, with its status at `now` and its steps. */
export function state(id: string, now: number): Statement {
  return { sql: `SELECT *, ${status("?2")} AS status, ${STEPS} AS steps FROM jobs WHERE id = ?1`, args: [id, now] };
}

/**
 * What ending an expired lease writes: nobody holds it, the fence stays, and
 * it counts as a failed attempt (the last one makes the job dead); the lease
 * is stored at its end's place.
 */
export const END_LEASE = `owner = NULL, until = 0, last_error = 'the lease of ' || owner || ' expired',
              dead = (${EXHAUSTED}), done = (${EXHAUSTED}),
              last_event = CASE WHEN ${EXHAUSTED} THEN 'dead' ELSE 'expired' END, updated_at = ?1, seq = ${NEXT_SEQ}`;

/**
 * What a claim writes (?2 owner, ?3 now, `ttl` the lease's length as an SQL
 * expression): a new owner and the next fence, an attempt, and the lease's
 * claim told by the row, with no renew yet. A claim that takes an expired
 * lease over leaves the place before its own to that lease's end
 * (jobs_record_ended_lease stores it). The claims
 * (src/store/sql/claim-next.ts) add `claim_clock`, the clock that read `now`.
 */
export function claimed(ttl: string): string {
  return `owner = ?2, until = ?3 + ${ttl}, fence = fence + 1, attempts = attempts + 1, last_event = NULL, updated_at = ?3,
              claimed_seq = ${NEXT_SEQ} + (owner IS NOT NULL), claimed_at = ?3, seq = ${NEXT_SEQ} + (owner IS NOT NULL),
              renewed_seq = NULL, renewed_at = NULL, renewed_last_at = NULL, renews = 0`;
}

/** What a claim writes, its lease lasting ?4 ms. */
export const CLAIM = claimed("?4");

/**
 * Ends the expired lease of job `id`, if it has one: nobody holds it any more,
 * the fence stays, and the expiry counts as a failed attempt (the last one
 * makes the job dead). The cron ends them in chunks (`expireSome`).
 */
export function expire(now: number, id: string): Statement {
  return {
    sql: `UPDATE jobs SET ${END_LEASE} WHERE done = 0 AND owner IS NOT NULL AND until <= ?1 AND id = ?2`,
    args: [now, id],
  };
}

/**
 * The place of a refusal of the jobs row `jobs` (`action`, `owner` and
 * `fence` SQL expressions): that of the same stale lease refused before for
 * the same action, against the same current fence, whose event it then
 * counts on (migrations/0005), so a zombie that loops adds nothing; else the
 * next place. FOLD_REFUSAL ends the INSERT that uses it.
 */
export function refusalSeq(action: string, owner: string, fence: string): string {
  return `coalesce((SELECT h.seq FROM history h
                    WHERE h.job_id = jobs.id AND h.kind = 'refused' AND h.action = ${action} AND h.owner = ${owner}
                      AND h.fence = ${fence} AND h.current_fence = jobs.fence), ${NEXT_SEQ})`;
}

/** The end of an INSERT of refusals at `refusalSeq`: one refused before counts once more instead of adding an event. */
export const FOLD_REFUSAL = `ON CONFLICT (job_id, seq)
  DO UPDATE SET count = count + 1, at = min(at, excluded.at), last_at = max(coalesce(last_at, at), excluded.at)`;

/**
 * Records a refused write with a lease, if the statement just before it
 * changed nothing; or, given `wasRefused`, if that condition holds of the row,
 * over the arguments `more` from ?6 on.
 */
export function refused(action: string, id: string, owner: string, fence: number, now: number, wasRefused = "changes() = 0", ...more: InValue[]): Statement {
  return {
    sql: `INSERT INTO history (job_id, seq, queue, at, kind, action, owner, fence, current_owner, current_fence)
          SELECT id, ${refusalSeq("?5", "?2", "?3")}, queue, ?4, 'refused', ?5, ?2, ?3, owner, fence FROM jobs
          WHERE id = ?1 AND ${wasRefused}
          ${FOLD_REFUSAL}`,
    args: [id, owner, fence, now, action, ...more],
  };
}

/**
 * What a renew writes (`now`, `ttl` and `progress` SQL expressions): the
 * lease's new end and the progress reported (null keeps what is stored), and
 * its renews told by the row: how many, the first (its place taken then) and
 * the last.
 */
export function renewed(now: string, ttl: string, progress: string): string {
  return `until = ${now} + ${ttl}, progress = coalesce(${progress}, progress), updated_at = ${now}, renews = renews + 1,
          renewed_at = min(coalesce(renewed_at, ${now}), ${now}), renewed_last_at = max(coalesce(renewed_last_at, ${now}), ${now}),
          renewed_seq = coalesce(renewed_seq, ${NEXT_SEQ}), seq = iif(renewed_seq IS NULL, ${NEXT_SEQ}, seq)`;
}

/**
 * Extends the current lease, and stores the `progress` it reports (JSON text;
 * null keeps what is stored); an expired one stays expired, and stores nothing.
 */
export function renew(id: string, owner: string, fence: number, now: number, ttlMs: number, progress: string | null = null): Statement[] {
  return [
    {
      sql: `UPDATE jobs
            SET ${renewed("?4", "?5", "?6")}
            WHERE id = ?1 AND ${currentLease("?2", "?3", "?4")}
            RETURNING until`,
      args: [id, owner, fence, now, ttlMs, progress],
    },
    refused("renew", id, owner, fence, now),
  ];
}

/** A job completed, neither dead nor cancelled (both are done too): a condition over a jobs row. */
export const COMPLETED = "done = 1 AND dead = 0 AND cancelled = 0";

/**
 * What a completion adds to its queue's counts, once the UPDATE before it
 * completed job ?1 at ?2 (nothing when it did not: `changes()`): one job from
 * open to done, and its minute's tallies (migrations/0037), its buckets
 * worked out once (MATERIALIZED, as in completeMany). Built once: its text
 * is the same for every completion.
 */
const COUNT_COMPLETED = `WITH completed AS MATERIALIZED (SELECT jobs.queue, ${completedBuckets("?2")} FROM jobs WHERE jobs.id = ?1 AND changes() = 1)
  INSERT INTO queue_counts (queue, open, done, minute, ${COMPLETED_TALLIES.map((tally) => `minute_${tally}`).join(", ")})
  SELECT queue, -1, 1, ${minuteOf("?2")}, ${completedTallies("1", "").join(", ")} FROM completed
  WHERE true -- so that ON CONFLICT is not read as a join's ON
  ON CONFLICT (queue) DO UPDATE SET open = open - 1, done = done + 1,
    ${addTallies("excluded.minute", COMPLETED_TALLIES, (tally) => `excluded.minute_${tally}`)}`;

/** What a completion writes (`result` and `now` SQL expressions): the result, done, and the completion's place. */
export function completion(result: string, now: string): string {
  return `result = ${result}, done = 1, updated_at = ${now}, seq = ${NEXT_SEQ}`;
}

/**
 * Stores the result of the current lease and marks the job done; the
 * statement after it moves the job from open to done in its queue's counts
 * (always a write when the completion was, so the refusal record after it
 * still sees `changes() = 0` exactly when the completion wrote nothing). The
 * same completion sent again is not a refusal.
 */
export function complete(id: string, owner: string, fence: number, now: number, result: string, next?: Statement): Statement[] {
  return [
    {
      sql: `UPDATE jobs
            SET ${completion("?5", "?4")}
            WHERE id = ?1 AND ${currentLease("?2", "?3", "?4")}
            ${returningJob("?4")}`,
      args: [id, owner, fence, now, result],
    },
    { sql: COUNT_COMPLETED, args: [id, now] },
    // The claim of `next` goes here, right after the count, which changed a row
    // exactly when this completion was accepted: the same completion sent again
    // (done already, by this owner, fence and result) changes nothing, so it
    // takes nothing either.
    ...(next ? [next] : []),
    // Refused unless the job is done by this very lease with this result: this
    // call's completion, or the same one sent again. Told by the row, since the
    // statement before may be the claim.
    refused("complete", id, owner, fence, now, `NOT (${COMPLETED} AND owner = ?2 AND fence = ?3 AND result = ?6)`, result),
  ];
}

/**
 * Gives the lease back: nobody holds it and it is claimable at once; the fence
 * stays. Given back in time, the attempt is returned too (a graceful stop is
 * not a failure); given back after its end, it counts as the expiry it was.
 */
export function release(id: string, owner: string, fence: number, now: number): Statement[] {
  const late = `until <= ?4`;
  return [
    {
      sql: `UPDATE jobs
            SET owner = NULL, until = 0,
                attempts = CASE WHEN ${late} THEN attempts ELSE attempts - 1 END,
                last_error = CASE WHEN ${late} THEN 'the lease of ' || owner || ' expired' ELSE last_error END,
                dead = (${late} AND ${EXHAUSTED}), done = (${late} AND ${EXHAUSTED}),
                last_event = CASE WHEN NOT ${late} THEN 'released' WHEN ${EXHAUSTED} THEN 'dead' ELSE 'expired' END,
                updated_at = ?4, seq = ${NEXT_SEQ}
            WHERE id = ?1 AND owner = ?2 AND fence = ?3 AND done = 0
            ${returningJob("?4")}`,
      args: [id, owner, fence, now],
    },
    refused("release", id, owner, fence, now),
  ];
}

/**
 * Ends the current lease as a failure: the job goes back to its queue, due
 * after `retryInMs`, or else after the backoff (1 s doubling per attempt,
 * capped at 1 hour, times `jitter` in [0.5, 1)); on its last attempt it dies.
 */
export function fail(failure: {
  id: string;
  owner: string;
  fence: number;
  now: number;
  error: string;
  retryInMs: number | null;
  jitter: number;
}): Statement[] {
  const { id, owner, fence, now, error, retryInMs, jitter } = failure;
  return [
    {
      sql: `UPDATE jobs
            SET owner = NULL, until = 0, last_error = ?5,
                dead = (${EXHAUSTED}), done = (${EXHAUSTED}),
                run_at = CASE WHEN ${EXHAUSTED} THEN run_at
                              ELSE ?4 + coalesce(?6, CAST(min(3600000, 1000 * (1 << min(attempts - 1, 12))) * ?7 AS INTEGER)) END,
                last_event = CASE WHEN ${EXHAUSTED} THEN 'dead' ELSE 'failed' END, updated_at = ?4, seq = ${NEXT_SEQ}
            WHERE id = ?1 AND ${currentLease("?2", "?3", "?4")}
            ${returningJob("?4")}`,
      args: [id, owner, fence, now, error, retryInMs, jitter],
    },
    refused("fail", id, owner, fence, now),
  ];
}
