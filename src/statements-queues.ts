import type { Statement } from "./drivers/driver.ts";

// The settings of a queue (migrations/0008): whether it is paused and its
// maxLeased. These statements only store and read them; the claims decide by
// them, in the claim statement itself (`room` in src/statements.ts).

/** The columns of a queue's settings, with those of a queue without a row: not paused, no limit. */
const SETTINGS = "q.queue AS queue, coalesce(s.paused, 0) AS paused, s.max_leased AS max_leased";

/** Pauses (`paused` 1) or resumes (0) a queue, keeping its other settings; answers them. */
export function pauseQueue(queue: string, paused: 0 | 1, now: number): Statement {
  return {
    sql: `INSERT INTO queues (queue, paused, updated_at) VALUES (?1, ?2, ?3)
          ON CONFLICT (queue) DO UPDATE SET paused = excluded.paused, updated_at = excluded.updated_at
          RETURNING queue, paused, max_leased`,
    args: [queue, paused, now],
  };
}

/** Sets a queue's maxLeased (null: no limit), keeping whether it is paused; answers its settings. */
export function setQueue(queue: string, maxLeased: number | null, now: number): Statement {
  return {
    sql: `INSERT INTO queues (queue, max_leased, updated_at) VALUES (?1, ?2, ?3)
          ON CONFLICT (queue) DO UPDATE SET max_leased = excluded.max_leased, updated_at = excluded.updated_at
          RETURNING queue, paused, max_leased`,
    args: [queue, maxLeased, now],
  };
}

/** One queue's settings (one row, whether or not it has any). */
export function getQueue(queue: string): Statement {
  return { sql: `SELECT ${SETTINGS} FROM (SELECT ?1 AS queue) q LEFT JOIN queues s ON s.queue = q.queue`, args: [queue] };
}

/** The settings of every queue that has settings or jobs, by name. */
export function listQueues(): Statement {
  return {
    sql: `SELECT ${SETTINGS} FROM (SELECT queue FROM queue_counts UNION SELECT queue FROM queues) q
          LEFT JOIN queues s ON s.queue = q.queue ORDER BY q.queue`,
    args: [],
  };
}
