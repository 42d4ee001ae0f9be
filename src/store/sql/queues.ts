import type { Statement } from "../../drivers/driver.ts";
import { keptBucket } from "./bucket.ts";
import { letIn } from "./keys.ts";
import { QUEUES_WITH_JOBS } from "./reads.ts";

// The settings of a queue (migrations/0008 and 0009): whether it is paused,
// its maxLeased, and its rate limit. These statements only store and read
// them; the claims decide by them, in the claim statement itself (`room` in
// src/store/sql/claim-next.ts).

/** The per-key settings (migrations/0034), as columns of the `queues` row. */
const KEY_SETTINGS = ["max_leased_per_key", "key_refill_per_ms", "key_burst", "ordered_by_key", "fair_by_key"];

/** The settings a statement answers, as columns of the `queues` row. */
const RETURNED = `queue, paused, max_leased, refill_per_ms, burst, ${KEY_SETTINGS.join(", ")}`;

/** The columns of a queue's settings, with those of a queue without a row: not paused, no limit. */
const SETTINGS = `q.queue AS queue, coalesce(s.paused, 0) AS paused, s.max_leased AS max_leased, s.refill_per_ms AS refill_per_ms, s.burst AS burst,
  s.max_leased_per_key AS max_leased_per_key, s.key_refill_per_ms AS key_refill_per_ms, s.key_burst AS key_burst,
  coalesce(s.ordered_by_key, 0) AS ordered_by_key, coalesce(s.fair_by_key, 0) AS fair_by_key`;

/** Pauses (`paused` 1) or resumes (0) a queue, keeping its other settings; answers them. */
export function pauseQueue(queue: string, paused: 0 | 1, now: number): Statement {
  return {
    sql: `INSERT INTO queues (queue, paused, updated_at) VALUES (?1, ?2, ?3)
          ON CONFLICT (queue) DO UPDATE SET paused = excluded.paused, updated_at = excluded.updated_at
          RETURNING ${RETURNED}`,
    args: [queue, paused, now],
  };
}

/**
 * A queue's limits: maxLeased, and the rate (micro-tokens a ms, see
 * migrations/0009) with its burst; and those of its keys (migrations/0034):
 * maxLeasedPerKey, the key rate with its burst, ordered and fair (0 or 1).
 * Null for none.
 */
export type StoredLimits = {
  maxLeased: number | null;
  refillPerMs: number | null;
  burst: number | null;
  maxLeasedPerKey: number | null;
  keyRefillPerMs: number | null;
  keyBurst: number | null;
  orderedByKey: 0 | 1;
  fairByKey: 0 | 1;
};

/**
 * Sets a queue's limits, keeping whether it is paused; answers its settings.
 * Its bucket is kept as `keptBucket` says: full for a new rate, else what it
 * holds now, at most the new burst. `clock` is the clock `now` was read from.
 */
export function setQueue(queue: string, limits: StoredLimits, now: number, clock: string): Statement[] {
  // In DO UPDATE a bare column is the stored row's (excluded.* the new one's).
  const kept = keptBucket("", "excluded.refill_per_ms", "excluded.burst", "excluded.updated_at", "?6");
  return [
    {
      sql: `INSERT INTO queues (queue, max_leased, refill_per_ms, burst, micro_tokens, tokens_at, tokens_clock, updated_at, ${KEY_SETTINGS.join(", ")})
            VALUES (?1, ?2, ?3, ?4, ?4 * 1000000, CASE WHEN ?3 IS NOT NULL THEN ?5 END, CASE WHEN ?3 IS NOT NULL THEN ?6 END, ?5, ?7, ?8, ?9, ?10, ?11)
            ON CONFLICT (queue) DO UPDATE SET
              max_leased = excluded.max_leased, refill_per_ms = excluded.refill_per_ms, burst = excluded.burst,
              micro_tokens = ${kept.tokens}, tokens_at = ${kept.at}, tokens_clock = ${kept.by}, updated_at = excluded.updated_at,
              ${KEY_SETTINGS.map((column) => `${column} = excluded.${column}`).join(", ")}
            RETURNING ${RETURNED}`,
      args: [queue, limits.maxLeased, limits.refillPerMs, limits.burst, now, clock, limits.maxLeasedPerKey, limits.keyRefillPerMs, limits.keyBurst, limits.orderedByKey, limits.fairByKey],
    },
    // A queue without a key rate keeps no key buckets; one whose key rate changed keeps them (each at most its new burst).
    { sql: "DELETE FROM key_buckets WHERE queue = ?1 AND ?2 IS NULL", args: [queue, limits.keyRefillPerMs] },
    letInAgain(queue),
  ];
}

/**
 * After a queue's per-key settings changed: each key's open jobs let in and
 * held back anew (its leased ones first, then those let in before, then in
 * its order), and, in a fair queue, the jobs without a turn given one, in
 * their key's order after the turn the queue is at; none elsewhere. Writes
 * only the rows that change.
 */
function letInAgain(queue: string): Statement {
  return {
    sql: `UPDATE jobs SET held_back = ranked.back, turn = ranked.new_turn
          FROM (SELECT j.id AS ranked_id,
                       coalesce(row_number() OVER (PARTITION BY j.key ORDER BY j.owner IS NULL, j.held_back, j.priority DESC, j.created_at, j.place, j.id) > ${letIn("s")}, 0) AS back,
                       CASE WHEN s.fair_by_key = 0 THEN NULL WHEN j.turn IS NOT NULL THEN j.turn
                            ELSE row_number() OVER (PARTITION BY j.key, j.turn IS NULL ORDER BY j.priority DESC, j.created_at, j.place, j.id) - 1 END AS new_turn
                FROM jobs j JOIN queues s ON s.queue = j.queue
                WHERE j.queue = ?1 AND j.done = 0 AND j.key IS NOT NULL) ranked
          WHERE id = ranked_id AND (held_back IS NOT ranked.back OR turn IS NOT ranked.new_turn)`,
    args: [queue],
  };
}

/** One queue's settings (one row, whether or not it has any). */
export function getQueue(queue: string): Statement {
  return { sql: `SELECT ${SETTINGS} FROM (SELECT ?1 AS queue) q LEFT JOIN queues s ON s.queue = q.queue`, args: [queue] };
}

/** The settings of every queue that has settings or jobs, by name. */
export function listQueues(): Statement {
  return {
    sql: `SELECT ${SETTINGS} FROM (${QUEUES_WITH_JOBS} UNION SELECT queue FROM queues) q
          LEFT JOIN queues s ON s.queue = q.queue ORDER BY q.queue`,
    args: [],
  };
}
