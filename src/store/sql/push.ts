import type { Statement } from "../../drivers/driver.ts";
import { NEXT_SEQ } from "./lease.ts";

// The push settings of a queue (migrations/0031) and the record of each
// delivery. These statements store and read; the push claim, which decides
// which jobs go out, is a lease rule (claimToPush in src/store/sql/lease.ts).

/** The columns of a queue's push settings, without the secrets. */
const SETTINGS = "queue, url, timeout_ms, max_in_flight, previous_secret IS NOT NULL AS rotating, rotated_at, created_at, updated_at";

/** The push settings as a delivery needs them: with both secrets. */
const TARGET = `${SETTINGS}, secret, previous_secret`;

/** What a put stores: the endpoint's URL, its request timeout and how many deliveries it takes at once. */
export type StoredPush = { url: string; timeoutMs: number; maxInFlight: number };

/**
 * Creates a queue's push settings with `secret`, or replaces its URL, timeout
 * and maxInFlight, keeping the secrets it has; answers the row, whose secret
 * is `secret` exactly when it was created.
 */
export function putPush(queue: string, push: StoredPush, secret: string, now: number): Statement {
  return {
    sql: `INSERT INTO push_endpoints (queue, url, timeout_ms, max_in_flight, secret, created_at, updated_at)
          VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6)
          ON CONFLICT (queue) DO UPDATE SET
            url = excluded.url, timeout_ms = excluded.timeout_ms, max_in_flight = excluded.max_in_flight, updated_at = excluded.updated_at
          RETURNING ${SETTINGS}, secret = ?5 AS created`,
    args: [queue, push.url, push.timeoutMs, push.maxInFlight, secret, now],
  };
}

/** Makes `secret` the queue's secret and the one it had its previous; answers the row, none if the queue has no push settings. */
export function rotatePush(queue: string, secret: string, now: number): Statement {
  return {
    sql: `UPDATE push_endpoints SET previous_secret = secret, secret = ?2, rotated_at = ?3, updated_at = ?3
          WHERE queue = ?1
          RETURNING ${SETTINGS}`,
    args: [queue, secret, now],
  };
}

/** One queue's push settings, without the secrets; no row if it has none. */
export function getPush(queue: string): Statement {
  return { sql: `SELECT ${SETTINGS} FROM push_endpoints WHERE queue = ?1`, args: [queue] };
}

/** One queue's push settings with its secrets, for a delivery; no row if it has none. */
export function pushTarget(queue: string): Statement {
  return { sql: `SELECT ${TARGET} FROM push_endpoints WHERE queue = ?1`, args: [queue] };
}

/** Every queue's push settings, by queue name. */
export function listPush(): Statement {
  return { sql: `SELECT ${SETTINGS} FROM push_endpoints ORDER BY queue`, args: [] };
}

/** Deletes a queue's push settings; answers its name, none if it had none. */
export function deletePush(queue: string): Statement {
  return { sql: "DELETE FROM push_endpoints WHERE queue = ?1 RETURNING queue", args: [queue] };
}

/** One delivery, as recorded among its job's events. */
export type DeliveryRow = {
  id: string;
  queue: string;
  owner: string;
  fence: number;
  at: number;
  outcome: string;
  status: number | null;
  durationMs: number;
  error: string | null;
};

/**
 * Records a delivery as an event of its job, stored in its history at the
 * job's next place (kind 'pushed', its status and time as JSON in `progress`,
 * see migrations/0031), and counts it.
 */
export function recordDelivery(delivery: DeliveryRow): Statement[] {
  const { id, queue, owner, fence, at, outcome, status, durationMs, error } = delivery;
  return [
    {
      sql: `INSERT INTO history (job_id, seq, queue, at, kind, action, owner, fence, error, progress)
            SELECT id, ${NEXT_SEQ}, queue, ?2, 'pushed', ?3, ?4, ?5, ?6, ?7 FROM jobs WHERE id = ?1`,
      args: [id, at, outcome, owner, fence, error, JSON.stringify({ httpStatus: status, durationMs })],
    },
    {
      sql: `INSERT INTO push_counts (queue, outcome, deliveries, duration_ms) VALUES (?1, ?2, 1, ?3)
            ON CONFLICT (queue, outcome) DO UPDATE SET deliveries = deliveries + 1, duration_ms = duration_ms + excluded.duration_ms`,
      args: [queue, outcome, durationMs],
    },
  ];
}

/**
 * Per pushed queue, or queue with deliveries counted: its deliveries by
 * outcome with their total time (one row per outcome; none yet: a row of
 * nulls), and its current pushed leases at `now` (owner ?2).
 */
export function pushStats(owner: string, now: number): Statement {
  return {
    sql: `SELECT q.queue AS queue, c.outcome AS outcome, c.deliveries AS deliveries, c.duration_ms AS duration_ms,
                 (SELECT count(*) FROM jobs WHERE queue = q.queue AND done = 0 AND owner IS NOT NULL AND owner = ?1 AND until > ?2) AS in_flight
          FROM (SELECT queue FROM push_endpoints UNION SELECT queue FROM push_counts) q
          LEFT JOIN push_counts c ON c.queue = q.queue
          ORDER BY q.queue, c.outcome`,
    args: [owner, now],
  };
}
