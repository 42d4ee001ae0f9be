import type { Statement } from "../../drivers/driver.ts";
import { keptBucket } from "./bucket.ts";
import { QUEUES_WITH_JOBS } from "./reads.ts";

// The settings of a queue (migrations/0008 and 0009): whether it is paused,
// its maxLeased, and its rate limit. These statements only store and read
// them; the claims decide by them, in the claim statement itself (`room` in
// src/store/sql/claim-next.ts).

/** The settings a statement answers, as columns of the `queues` row. */
const RETURNED = "queue, paused, max_leased, refill_per_ms, burst";

/** The columns of a queue's settings, with those of a queue without a row: not paused, no limit. */
const SETTINGS = "q.queue AS queue, coalesce(s.paused, 0) AS paused, s.max_leased AS max_leased, s.refill_per_ms AS refill_per_ms, s.burst AS burst";

/** Pauses (`paused` 1) or resumes (0) a queue, keeping its other settings; answers them. */
export function pauseQueue(queue: string, paused: 0 | 1, now: number): Statement {
  return {
    sql: `INSERT INTO queues (queue, paused, updated_at) VALUES (?1, ?2, ?3)
          ON CONFLICT (queue) DO UPDATE SET paused = excluded.paused, updated_at = excluded.updated_at
          RETURNING ${RETURNED}`,
    args: [queue, paused, now],
  };
}

/** A queue's limits: maxLeased, and the rate (micro-tokens a ms, see migrations/0009) with its burst; null for none. */
export type StoredLimits = { maxLeased: number | null; refillPerMs: number | null; burst: number | null };

/**
 * Sets a queue's limits, keeping whether it is paused; answers its settings.
 * Its bucket is kept as `keptBucket` says: full for a new rate, else what it
 * holds now, at most the new burst. `clock` is the clock `now` was read from.
 */
export function setQueue(queue: string, limits: StoredLimits, now: number, clock: string): Statement {
  // In DO UPDATE a bare column is the stored row's (excluded.* the new one's).
  const kept = keptBucket("", "excluded.refill_per_ms", "excluded.burst", "excluded.updated_at", "?6");
  return {
    sql: `INSERT INTO queues (queue, max_leased, refill_per_ms, burst, micro_tokens, tokens_at, tokens_clock, updated_at)
          VALUES (?1, ?2, ?3, ?4, ?4 * 1000000, CASE WHEN ?3 IS NOT NULL THEN ?5 END, CASE WHEN ?3 IS NOT NULL THEN ?6 END, ?5)
          ON CONFLICT (queue) DO UPDATE SET
            max_leased = excluded.max_leased, refill_per_ms = excluded.refill_per_ms, burst = excluded.burst,
            micro_tokens = ${kept.tokens}, tokens_at = ${kept.at}, tokens_clock = ${kept.by}, updated_at = excluded.updated_at
          RETURNING ${RETURNED}`,
    args: [queue, limits.maxLeased, limits.refillPerMs, limits.burst, now, clock],
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
