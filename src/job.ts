import type { Row } from "./driver.ts";

/** A job as stored: its lease (owner, until, fence) and its place in a queue. */
export type Job = {
  id: string;
  queue: string;
  /** The JSON value given at enqueue, or null. */
  payload: unknown;
  /** Higher is claimed first. */
  priority: number;
  /** Claim-next leaves the job alone before this time. */
  runAt: number;
  /** The holder of the lease, or null when nobody holds it. */
  owner: string | null;
  /** The lease is valid while `until > now`. */
  until: number;
  /** Raised by one at every claim; never lowered, never reused. */
  fence: number;
  result: string | null;
  done: boolean;
  attempts: number;
  maxAttempts: number;
  createdAt: number;
  updatedAt: number;
};

/** Reads a `jobs` row into a Job. */
export function jobFromRow(row: Row): Job {
  return {
    id: row.id as string,
    queue: row.queue as string,
    payload: row.payload === null ? null : JSON.parse(row.payload as string),
    priority: row.priority as number,
    runAt: row.run_at as number,
    owner: row.owner as string | null,
    until: row.until as number,
    fence: row.fence as number,
    result: row.result as string | null,
    done: row.done === 1,
    attempts: row.attempts as number,
    maxAttempts: row.max_attempts as number,
    createdAt: row.created_at as number,
    updatedAt: row.updated_at as number,
  };
}
