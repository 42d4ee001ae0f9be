import type { InValue } from "@libsql/client";
import type { Statement } from "../../drivers/driver.ts";
import { NEXT_SEQ, returningJob } from "./lease.ts";

// Cancel (issue 13), in the form of the rules of src/store/sql/lease.ts: one
// conditional statement decides and writes, the statement after it records.
//
// A cancelled job is done (migrations/0010), so what keeps every other verb
// off it is already written: no lease of it is current (`currentLease` asks
// done = 0), so the holder's renew, complete, fail and release are refused by
// their own statements, and no claim takes it. Its owner and fence are kept, so
// that the refusal can say why (src/store/refusal.ts: reason cancelled).

/** What a cancel writes (`now` an SQL expression): the job is done and cancelled, its owner, until and fence kept. */
export function cancelled(now: string): string {
  return `done = 1, cancelled = 1, last_event = 'cancelled', updated_at = ${now}`;
}

/**
 * Records the cancel of job `job` (an SQL expression over parameters from ?4
 * on, `more`) if the statement just before it cancelled one: who cancelled as
 * its `owner`, the job's fence, and the reason as its `error`.
 */
export function recordCancel(job: string, by: string, reason: string | null, now: number, more: InValue[]): Statement {
  return { sql: cancelEvents("?1", "?2", "?3", `id = ${job} AND changes() = 1`), args: [by, reason, now, ...more] };
}

/**
 * The INSERT that records a cancel of each job that `which` (a condition over
 * a jobs row) holds: who cancelled (`by`) as its `owner`, the job's fence, and
 * the reason (`reason`) as its `error`, at `now` (all SQL expressions).
 */
export function cancelEvents(by: string, reason: string, now: string, which: string): string {
  return `INSERT INTO history (job_id, seq, queue, at, kind, owner, fence, error)
          SELECT id, ${NEXT_SEQ}, queue, ${now}, 'cancelled', ${by}, fence, ${reason} FROM jobs
          WHERE ${which}`;
}

/**
 * Cancels a job that is not finished: queued, scheduled, leased, or whose lease
 * has expired. The job becomes done and cancelled, its owner, until and fence
 * kept. A job already done, dead or cancelled matches no row and is left as it
 * is. The event (migrations/0010 leaves cancels to this statement) records who
 * cancelled, and why.
 */
export function cancel(id: string, by: string, reason: string | null, now: number): Statement[] {
  return [
    {
      sql: `UPDATE jobs SET ${cancelled("?2")} WHERE id = ?1 AND done = 0 ${returningJob("?2")}`,
      args: [id, now],
    },
    recordCancel("?4", by, reason, now, [id]),
  ];
}
