import type { Statement } from "../../drivers/driver.ts";
import { noWindow } from "./dedup.ts";
import { heldBack, turnOf } from "./keys.ts";
import { COMPLETED, completion, countEnqueued, currentLease, FENCE_FLOOR, firstSeq, FOLD_REFUSAL, refusalSeq, renewed, status } from "./lease.ts";
import { addTallies, COMPLETED_TALLIES, completedBuckets, completedTallies, minuteOf } from "./series.ts";

// The rules of src/store/sql/lease.ts applied to many jobs at once, each job still
// decided alone by the same conditions. The jobs travel as ONE JSON array
// parameter, unpacked by `json_each`, so that a call of 1,000 jobs is a
// handful of statements whatever its size: cheap on a file, and within D1's
// limits on bound parameters and statements per batch.

/** The rows of a JSON array parameter `?N` of arrays, as columns `names[0]`, `names[1]` ... */
export function unpacked(parameter: string, names: string[]): string {
  const columns = names.map((name, i) => `json_extract(value, '$[${i}]') AS ${name}`).join(", ");
  return `(SELECT ${columns} FROM json_each(${parameter}))`;
}

/**
 * The presented leases `?3` for the statements that follow the UPDATE (the
 * read of the refused, then their record): none when the UPDATE changed one
 * row for each of the `?4` presented, as then every one was accepted and
 * nothing was refused, so neither joins the jobs again. The UPDATE changes a
 * row at most once, so a call with an id twice, a completion sent again or
 * any lease refused changes fewer and is read in full. `changes()` is the
 * UPDATE's only while no other write runs in between: the read of the
 * refused comes before their record for that reason.
 */
const UNLESS_ALL_CHANGED = "iif(changes() = ?4, '[]', ?3)";

/** One job to enqueue: id, payload (JSON text or null), priority, runAt, maxAttempts, its trace context (or nulls), its key (or null), and its dedup key with the end of its window (or nulls). */
export type NewJob = [
  id: string,
  payload: string | null,
  priority: number,
  runAt: number,
  maxAttempts: number,
  traceparent: string | null,
  tracestate: string | null,
  key: string | null,
  dedupKey: string | null,
  dedupUntil: number | null,
];

const COLUMNS = ["new_id", "new_payload", "new_priority", "new_run_at", "new_max_attempts", "new_traceparent", "new_tracestate", "new_key", "new_dedup_key", "new_dedup_until"];

/**
 * The jobs of the call `?3` that an enqueue of many takes up: all of them, or,
 * when some have dedup keys (`deduped`), those without one and, of each dedup
 * key, the first job of the call that would be created (its id new, and not
 * earlier in the call), while no window of that key lasts at `?2` (`noWindow`,
 * src/store/sql/dedup.ts); each with its place in the call, `new_at`.
 */
function takenUp(deduped: boolean): string {
  const all = `SELECT ${COLUMNS.map((name, i) => `json_extract(value, '$[${i}]') AS ${name}`).join(", ")}, key AS new_at FROM json_each(?3)`;
  if (!deduped) return all;
  const wouldBeCreated = `new_id_nth = 1 AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.id = new_id)`;
  return `SELECT * FROM (SELECT *, row_number() OVER (PARTITION BY new_dedup_key ORDER BY new_at) AS new_dedup_nth
                         FROM (SELECT *, row_number() OVER (PARTITION BY new_id ORDER BY new_at) AS new_id_nth FROM (${all}))
                         WHERE new_dedup_key IS NULL OR (${wouldBeCreated}))
          WHERE new_dedup_key IS NULL OR (new_dedup_nth = 1 AND ${noWindow("?1", "new_dedup_key", "?2")})`;
}

/**
 * Inserts every job whose id does not exist yet, in one statement, and counts
 * them in the next; answers, first, the ids it inserted. An existing id is
 * left untouched, and every new row starts at the fence floor, as `enqueue`
 * does. The keyed jobs are held back and given turns as `enqueue` does one,
 * each counted after the jobs of its key that come before it in the call
 * (`nth`): the statement reads the table as it was before it, so the jobs it
 * inserts count only through `nth`, which counts only those it inserts. A job
 * with a dedup key is taken up as `takenUp` says, and the last statement reads,
 * for the answer, who holds each dedup key of the call in a window that
 * lasts, and which ids of the call's jobs with a dedup key exist (`dedup_key`
 * NULL): one that does was not turned away by its key.
 */
export function enqueueMany(queue: string, jobs: NewJob[], now: number): Statement[] {
  // A call without keys reads its jobs as they come, and holds none back.
  const keyed = jobs.some((job) => job[7] !== null);
  const dedupKeys = [...new Set(jobs.flatMap((job) => (job[8] === null ? [] : [job[8]])))];
  const taken = takenUp(dedupKeys.length > 0);
  // Counted apart from the others of its key: a job for later in a queue that is not ordered, which takes no place (`heldBack`).
  const takesNoPlace = "new_run_at > ?2 AND coalesce((SELECT ordered_by_key FROM queues WHERE queue = ?1), 0) = 0";
  const fresh = `new_key IS NULL OR (NOT EXISTS (SELECT 1 FROM jobs j WHERE j.id = new_id) AND new_first = 1)`;
  const source = keyed
    ? `(SELECT *, row_number() OVER (PARTITION BY new_key, ${takesNoPlace} ORDER BY new_priority DESC, new_at) AS new_nth,
               row_number() OVER (PARTITION BY new_key ORDER BY new_priority DESC, new_at) AS new_turn_nth
        FROM (SELECT *, row_number() OVER (PARTITION BY new_id ORDER BY new_at) AS new_first FROM (${taken}))
        WHERE ${fresh})`
    : `(${taken})`;
  return [
    {
      sql: `INSERT INTO jobs (id, queue, key, held_back, turn, place, payload, priority, run_at, max_attempts, traceparent, tracestate, fence, created_at, updated_at, enqueued_seq, seq,
                          dedup_key, dedup_until)
            SELECT new_id, ?1, new_key, ${keyed ? heldBack("?1", "new_key", "new_run_at", "?2", "new_nth") : "0"}, ${keyed ? turnOf("?1", "new_key", "new_turn_nth") : "NULL"}, ${keyed ? "new_at" : "0"},
                   new_payload, new_priority, new_run_at, new_max_attempts, new_traceparent, new_tracestate,
                   ${FENCE_FLOOR}, ?2, ?2, ${firstSeq("new_id")}, ${firstSeq("new_id")}, new_dedup_key, new_dedup_until
            FROM ${source}
            WHERE true
            ON CONFLICT (id) DO NOTHING
            RETURNING id`,
      args: [queue, now, JSON.stringify(jobs)],
    },
    countEnqueued("?1", "changes()", "?2", [queue, now]),
    ...(dedupKeys.length === 0
      ? []
      : [
          {
            sql: `SELECT dedup_key, job_id FROM dedup_keys WHERE queue = ?1 AND until > ?2 AND dedup_key IN (SELECT value FROM json_each(?3))
                  UNION ALL
                  SELECT NULL, value FROM json_each(?4) WHERE EXISTS (SELECT 1 FROM jobs WHERE id = value)`,
            args: [queue, now, JSON.stringify(dedupKeys), JSON.stringify(jobs.flatMap((job) => (job[8] === null ? [] : [job[0]])))],
          },
        ]),
  ];
}

/** One lease presented: the job's id, the fence the caller holds, and the progress it reports (JSON text, or null: none). */
export type HeldLease = [id: string, fence: number, progress: string | null];

/**
 * Extends every presented lease that is current (the one rule, `currentLease`)
 * and stores the progress it reports, as `renew` does one; records a refusal
 * for each that is not, and reads the jobs of those refused so the caller can
 * say why. Answers, in order: the renewed `(id, until)`, the refused leases
 * (see `readRefused`), and the refusals inserted.
 */
export function renewMany(owner: string, leases: HeldLease[], now: number, ttlMs: number): Statement[] {
  const names = ["lease_id", "lease_fence", "lease_progress"];
  const held = unpacked("?3", names);
  const heldUnlessAllChanged = unpacked(UNLESS_ALL_CHANGED, names);
  const presented = JSON.stringify(leases);
  const afterArgs = [owner, now, presented, leases.length];
  const current = currentLease("?1", "lease_fence", "?2");
  return [
    {
      sql: `UPDATE jobs SET ${renewed("?2", "?4", "lease_progress")}
            FROM ${held} WHERE id = lease_id AND ${current}
            RETURNING id, until`,
      args: [owner, now, presented, ttlMs],
    },
    readRefused(heldUnlessAllChanged, `NOT (${current})`, afterArgs),
    refusedMany("renew", heldUnlessAllChanged, `NOT (${current})`, afterArgs),
  ];
}

/** One completion: the job's id, the fence the caller holds, and the result as JSON text. */
export type Completion = [id: string, fence: number, result: string];

/**
 * Stores the result of every presented lease that is current and marks its job
 * done, as `complete` does one; the same completion sent again is not a
 * refusal. The statement before the UPDATE counts, per queue, the jobs it is
 * about to complete, by the same condition in the same transaction: one write
 * a queue, not one a job. Answers, in order: the counts' update, the
 * completed ids with their queues, the refused leases (see `readRefused`),
 * and the refusals inserted.
 */
export function completeMany(owner: string, completions: Completion[], now: number): Statement[] {
  const names = ["lease_id", "lease_fence", "lease_result"];
  const held = unpacked("?3", names);
  const heldUnlessAllChanged = unpacked(UNLESS_ALL_CHANGED, names);
  const args = [owner, now, JSON.stringify(completions)];
  const afterArgs = [...args, completions.length];
  const doneByThisLease = `${COMPLETED} AND owner = ?1 AND fence = lease_fence AND result = lease_result`;
  const current = currentLease("?1", "lease_fence", "?2");
  return [
    {
      // Each job's buckets worked out once (MATERIALIZED: flattened into the
      // sums, SQLite would work out each bucket once a sum, 34 times a job).
      sql: `WITH completing AS MATERIALIZED (SELECT jobs.queue, ${completedBuckets("?2")} FROM ${held} JOIN jobs ON id = lease_id WHERE ${current})
            UPDATE queue_counts SET open = open - completing_completed, done = done + completing_completed,
              ${addTallies("completing_minute", COMPLETED_TALLIES, (tally) => `completing_${tally}`)}
            FROM (SELECT queue AS completing_queue, ${minuteOf("?2")} AS completing_minute,
                         ${completedTallies("count(*)", "sum").map((sum, i) => `${sum} AS completing_${COMPLETED_TALLIES[i]}`).join(", ")}
                  FROM completing GROUP BY queue)
            WHERE queue_counts.queue = completing_queue`,
      args,
    },
    {
      sql: `UPDATE jobs SET ${completion("lease_result", "?2")}
            FROM ${held} WHERE id = lease_id AND ${current}
            RETURNING id, queue`,
      args,
    },
    readRefused(heldUnlessAllChanged, `NOT (${doneByThisLease})`, afterArgs),
    refusedMany("complete", heldUnlessAllChanged, `NOT (${doneByThisLease})`, afterArgs),
  ];
}

/** Records a refusal for each presented lease (?1 owner, ?2 now) whose job exists and matches `refused`, folded as `refused` folds one. */
function refusedMany(action: string, held: string, refused: string, args: Statement["args"]): Statement {
  return {
    sql: `INSERT INTO history (job_id, seq, queue, at, kind, action, owner, fence, current_owner, current_fence)
          SELECT id, ${refusalSeq(`'${action}'`, "?1", "lease_fence")}, queue, ?2, 'refused', '${action}', ?1, lease_fence, owner, fence
          FROM ${held} JOIN jobs ON id = lease_id WHERE ${refused}
          ${FOLD_REFUSAL}`,
    args,
  };
}

/**
 * The presented leases (?2 now) that were refused: those whose job matches
 * `refused`, with what the refusal's reason is read from (owner, fence and
 * status), and those whose job does not exist (`found = 0`).
 */
function readRefused(held: string, refused: string, args: Statement["args"]): Statement {
  return {
    sql: `SELECT lease_id, id IS NOT NULL AS found, owner, fence, ${status("?2")} AS status
          FROM ${held} LEFT JOIN jobs ON id = lease_id WHERE id IS NULL OR ${refused}`,
    args,
  };
}
