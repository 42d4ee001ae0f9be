import type { Statement } from "../../drivers/driver.ts";
import { currentLease, refused, status } from "./lease.ts";

// Fenced steps (issue 30, migrations/0036), in the form of the lease rules of
// src/store/sql/lease.ts: one conditional UPDATE of the job's row decides
// everything (the current lease, the step not yet recorded, the limits) and
// counts the step in the row, the INSERT after it stores the step only if it
// did, and the statement after that records a stale lease's refusal. Two rows
// written a step, none for a refusal but the refusal's own.

/** The most steps one job may record. */
export const MAX_STEPS = 64;

/** The most bytes of UTF-8 the results of one job's steps may take together, as JSON text. */
export const MAX_STEP_BYTES = 65_536;

/** A step to record: its job and name, the lease it is recorded under, its result as JSON text and that text's bytes of UTF-8. */
export type NewStep = { id: string; name: string; owner: string; fence: number; now: number; result: string; bytes: number };

/**
 * Records a step of job `id` under the current lease (owner, fence) at `now`,
 * unless that job has a step of that name already or it would go over
 * MAX_STEPS or MAX_STEP_BYTES. The INSERT answers the step stored; no row
 * when it was not, and then `readStep` tells why. A lease that is not the
 * current one is recorded as a refusal (action 'step'); a step recorded
 * already, or over a limit, under the current lease is not one.
 */
export function recordStep(step: NewStep): Statement[] {
  const { id, name, owner, fence, now, result, bytes } = step;
  const args = [id, name, owner, fence, now, result, bytes];
  return [
    {
      sql: `UPDATE jobs SET step_count = step_count + 1, step_bytes = step_bytes + ?7
            WHERE id = ?1 AND ${currentLease("?3", "?4", "?5")}
              AND step_count < ${MAX_STEPS} AND step_bytes + ?7 <= ${MAX_STEP_BYTES}
              AND NOT EXISTS (SELECT 1 FROM steps WHERE job_id = ?1 AND name = ?2)`,
      args,
    },
    {
      sql: `INSERT INTO steps (job_id, name, result, fence, at) SELECT ?1, ?2, ?6, ?4, ?5 WHERE changes() = 1
            RETURNING name, result, fence, at`,
      args: args.slice(0, 6), // D1 refuses an argument no placeholder reads
    },
    refused("step", id, owner, fence, now, `NOT (${currentLease("?2", "?3", "?4")})`),
  ];
}

/**
 * Job `id`'s holder, its status at `now` and its counts of steps and bytes,
 * and its step `name` if it has one (JSON text of name, result, fence, at):
 * why a step was not recorded, read only after it was not.
 */
export function readStep(id: string, name: string, now: number): Statement {
  return {
    sql: `SELECT owner, fence, step_count, step_bytes, ${status("?3")} AS status,
                 (SELECT json_object('name', s.name, 'result', s.result, 'fence', s.fence, 'at', s.at) FROM steps s WHERE s.job_id = ?1 AND s.name = ?2) AS step
          FROM jobs WHERE id = ?1`,
    args: [id, name, now],
  };
}
