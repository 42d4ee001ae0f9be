import type { Statement } from "../../drivers/driver.ts";
import { followsBack } from "../step-back.ts";
import { ADD_ENQUEUED, ENQUEUED_COLUMNS, FENCE_FLOOR, firstSeq } from "./lease.ts";
import { minuteOf } from "./series.ts";
import { heldBack, turnOf } from "./keys.ts";
import { unpacked } from "./many.ts";

// The recurring schedules of migrations/0011. Only the fire decides anything:
// a due schedule's job is enqueued and its next fire stored by one batch (one
// transaction), both under the same condition, so neither happens without the
// other. When the fires fall is schedule arithmetic, done in JavaScript
// (src/store/schedule-times.ts) and handed in; whether a fire is still due, and
// still the one that was read, is decided here.
//
// A schedule is due when its next fire has come, or when the `now` its next
// fire was planned at (planned_at, migrations/0014) is followed back to the
// clock (src/store/step-back.ts): that clock stepped back behind a time it
// read itself, or is far behind another's. Then the next fire is planned again
// from it. A clock a little behind another's planned_at waits.

/**
 * A schedule `s` is due at ?1 read from the clock `clock` (a parameter): its
 * next fire has come, or its planned_at is followed back to ?1 (`followsBack`).
 */
const DUE = (s: string, clock: string) => `(${s}.next_fire_at <= ?1 OR ${followsBack(`${s}.planned_at`, `${s}.planned_clock`, "?1", clock)})`;

/** A schedule's settings as stored: cron or everyMs (the other null), payload as JSON text, its jobs' key or null. */
export type StoredSpec = {
  queue: string;
  cron: string | null;
  everyMs: number | null;
  timezone: string | null;
  payload: string | null;
  priority: number;
  maxAttempts: number;
  key: string | null;
};

/** In a put's ON CONFLICT: the replace fires when the stored schedule does (the same cron, everyMs and time zone). */
const SAME_TIMING = "cron IS excluded.cron AND every_ms IS excluded.every_ms AND timezone IS excluded.timezone";

/**
 * Whether a schedule of that name exists, then creates or replaces it and
 * answers its row. A replace keeps created_at (an everyMs schedule's anchor)
 * and last_fire_at, and, when it keeps the timing, the next fire too (and when
 * it was planned), so a fire due and not yet enqueued still is (a deploy that
 * puts its schedules again after downtime loses nothing). Otherwise the next
 * fire is the first one after `now`, planned at `now`: `cronNext` for a cron,
 * or created_at + k * every_ms for an everyMs schedule. `clock` is the clock
 * `now` was read from. With `replacing` (not undefined), it replaces only a
 * schedule of that queue (null: none, so it only creates), and a schedule of
 * another queue is left as it is: no row answered.
 */
export function putSchedule(name: string, spec: StoredSpec, cronNext: number | null, now: number, clock: string, replacing?: string | null): Statement[] {
  // Whole intervals since the anchor: an integer division (a number may be bound as a REAL).
  const everyNext = (anchor: string) => `${anchor} + (CAST(?10 AS INTEGER) - ${anchor}) / CAST(?4 AS INTEGER) * ?4 + ?4`;
  return [
    { sql: "SELECT count(*) AS existed FROM schedules WHERE name = ?1", args: [name] },
    {
      sql: `INSERT INTO schedules (name, queue, cron, every_ms, timezone, payload, priority, max_attempts, key, next_fire_at, planned_at, planned_clock, created_at, updated_at)
            VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?14, CASE WHEN ?4 IS NULL THEN ?9 ELSE ${everyNext("?10")} END, ?10, ?11, ?10, ?10)
            ON CONFLICT (name) DO UPDATE SET
              queue = excluded.queue, cron = excluded.cron, every_ms = excluded.every_ms, timezone = excluded.timezone,
              payload = excluded.payload, priority = excluded.priority, max_attempts = excluded.max_attempts, key = excluded.key,
              next_fire_at = CASE WHEN ${SAME_TIMING} THEN next_fire_at WHEN ?4 IS NULL THEN ?9 ELSE ${everyNext("created_at")} END,
              planned_at = CASE WHEN ${SAME_TIMING} THEN planned_at ELSE excluded.planned_at END,
              planned_clock = CASE WHEN ${SAME_TIMING} THEN planned_clock ELSE excluded.planned_clock END,
              updated_at = excluded.updated_at
            WHERE ?12 = 0 OR schedules.queue IS ?13
            RETURNING *`,
      args: [name, spec.queue, spec.cron, spec.everyMs, spec.timezone, spec.payload, spec.priority, spec.maxAttempts, cronNext, now, clock, replacing === undefined ? 0 : 1, replacing ?? null, spec.key],
    },
  ];
}

/** One schedule. */
export function getSchedule(name: string): Statement {
  return { sql: "SELECT * FROM schedules WHERE name = ?1", args: [name] };
}

/** Every schedule, by name. */
export function listSchedules(): Statement {
  return { sql: "SELECT * FROM schedules ORDER BY name", args: [] };
}

/** Deletes a schedule; answers its name if there was one. Jobs it enqueued stay. */
export function deleteSchedule(name: string): Statement {
  return { sql: "DELETE FROM schedules WHERE name = ?1 RETURNING name", args: [name] };
}

/** Up to `limit` schedules due at `now` read from `clock` (see DUE), earliest first: what `fireDue` needs of each. */
export function dueSchedules(now: number, limit: number, skipped: string[], clock: string): Statement {
  return {
    sql: `SELECT name, cron, every_ms, timezone, next_fire_at, created_at FROM schedules
          WHERE ${DUE("schedules", "?4")} AND name NOT IN (SELECT value FROM json_each(?3)) ORDER BY next_fire_at, name LIMIT ?2`,
    args: [now, limit, JSON.stringify(skipped), clock],
  };
}

/** When the earliest schedule but the `skipped` fires next (one row; `at` null when none will). */
export function nextFire(skipped: string[]): Statement {
  return {
    sql: `SELECT next_fire_at AS at FROM schedules
          WHERE next_fire_at IS NOT NULL AND name NOT IN (SELECT value FROM json_each(?1)) ORDER BY next_fire_at LIMIT 1`,
    args: [JSON.stringify(skipped)],
  };
}

/**
 * One fire of a due schedule, as read by `dueSchedules`: its name, what the
 * fire was computed from (the next_fire_at read, and its cron, every_ms,
 * timezone and created_at), the fire to enqueue (the latest due at `now`)
 * with its job's id, and the fire after it. A schedule whose plan is followed
 * back to the clock (see DUE) and not due by it has no fire to enqueue
 * (fireAt and jobId null): only its next fire is planned again.
 */
export type Fire = [
  name: string,
  readNext: number | null,
  cron: string | null,
  everyMs: number | null,
  timezone: string | null,
  createdAt: number,
  fireAt: number | null,
  jobId: string | null,
  nextFireAt: number | null,
];

/**
 * Fires the given schedules, in one batch: for each that is, in this
 * transaction, still due and still as it was read (the same next_fire_at:
 * no other runner fired it; the same cron, everyMs, timezone and created_at:
 * no put or delete changed when it fires, so the fire computed is one of its
 * own), enqueues its job (at the fence floor, due at its fire time, unless
 * the id exists; a keyed job held back and given a turn as `enqueueMany`
 * does, counted after the fires of its key that come before it by name), in
 * the order of their fires, and stores the fire and the next one, planned at
 * `now`, and whether the fire found its id taken; `now` read from `clock`, which
 * planned_clock keeps. The INSERT and the UPDATE test the same
 * condition against the same rows (the INSERT writes only jobs), so a job is
 * enqueued exactly when its schedule moves on. The statement before them counts
 * the jobs about to be enqueued, per queue, by the same condition. Answers,
 * second, the jobs enqueued (id, queue), then the schedules moved on (name,
 * last_fire_at, last_fire_taken).
 */
export function fireDue(fires: Fire[], now: number, clock: string): Statement[] {
  const fired = unpacked("?2", ["fire_name", "read_next", "read_cron", "read_every", "read_timezone", "read_created", "fire_at", "job_id", "fire_next"]);
  const stillDue = (s: string) =>
    `${s}.name = fire_name AND ${s}.next_fire_at IS read_next AND ${DUE(s, "?3")}
     AND ${s}.cron IS read_cron AND ${s}.every_ms IS read_every AND ${s}.timezone IS read_timezone AND ${s}.created_at = read_created`;
  // The job the INSERT just enqueued, told from one that was there before by
  // its times: only a job made in the same ms by another hand could pass for it.
  const enqueuedNow = "EXISTS (SELECT 1 FROM jobs WHERE id = job_id AND created_at = ?1 AND updated_at = ?1)";
  const args = [now, JSON.stringify(fires), clock];
  return [
    {
      sql: `INSERT INTO queue_counts (${ENQUEUED_COLUMNS})
            SELECT s.queue, count(*), ?1, ${minuteOf("?1")}, count(*) FROM ${fired} JOIN schedules s
            WHERE job_id IS NOT NULL AND ${stillDue("s")} AND NOT EXISTS (SELECT 1 FROM jobs WHERE id = job_id)
            GROUP BY s.queue
            ${ADD_ENQUEUED}`,
      args,
    },
    {
      sql: `INSERT INTO jobs (id, queue, key, held_back, turn, payload, priority, run_at, max_attempts, fence, created_at, updated_at, enqueued_seq, seq)
            SELECT job_id, f.queue, f.key, ${heldBack("f.queue", "f.key", "fire_at", "?1", "f.nth")}, ${turnOf("f.queue", "f.key", "f.nth")},
                   f.payload, f.priority, fire_at, f.max_attempts, ${FENCE_FLOOR}, ?1, ?1, ${firstSeq("job_id")}, ${firstSeq("job_id")}
            FROM (SELECT job_id, fire_at, s.queue, s.key, s.payload, s.priority, s.max_attempts,
                         row_number() OVER (PARTITION BY s.queue, s.key ORDER BY s.name) AS nth
                  FROM ${fired} JOIN schedules s
                  WHERE job_id IS NOT NULL AND ${stillDue("s")} AND NOT EXISTS (SELECT 1 FROM jobs WHERE id = job_id)) f
            WHERE true ORDER BY fire_at, job_id
            ON CONFLICT (id) DO NOTHING
            RETURNING id, queue`,
      args,
    },
    {
      sql: `UPDATE schedules SET last_fire_at = coalesce(fire_at, last_fire_at), next_fire_at = fire_next, planned_at = ?1, planned_clock = ?3,
                                 last_fire_taken = CASE WHEN job_id IS NULL THEN last_fire_taken ELSE NOT ${enqueuedNow} END
            FROM ${fired} WHERE ${stillDue("schedules")}
            RETURNING name, last_fire_at, last_fire_taken`,
      args,
    },
  ];
}
