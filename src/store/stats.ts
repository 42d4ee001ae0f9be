import type { Row } from "../drivers/driver.ts";
import type { JobStatus } from "./job.ts";
import { type TopKey, topKeysOfRow } from "./key-stats.ts";

/**
 * Per queue, at the time asked: jobs by status (as each job's `status` would
 * say), how long the job due longest has waited (null when none is queued),
 * and refused stale writes in the last hour (this minute and the 59 before
 * it) and ever, whether the queue is paused, and its top keys by waiting
 * jobs (at most 10, of its first 1,000 keys with open jobs, each counted up
 * to 1,000 open jobs: `topKeys` in src/store/sql/key-reads.ts; [] for a queue
 * without keys).
 */
export type QueueStats = {
  queue: string;
  jobs: Record<JobStatus, number>;
  oldestDueAgeMs: number | null;
  refused: { lastHour: number; total: number };
  paused: boolean;
  topKeys: TopKey[];
};

/**
 * Reads the rows of `stats` (src/store/sql/reads.ts) into the stats of each queue.
 * Of its open jobs (not done), those nobody holds wait: a waiting job is
 * queued once it is due (`due` in src/store/sql/lease.ts), else scheduled; a
 * held job is leased until its lease ends, and then, until the cron or a
 * claim ends the lease, queued or scheduled as well.
 */
export function queueStats(rows: Row[], now: number): QueueStats[] {
  return rows.map((row) => {
    const count = (column: string) => row[column] as number;
    const expiredDue = count("expired") - count("expired_later");
    const queued = count("open") - count("held") - count("waiting_later") + expiredDue;
    // While a job is queued, the earliest run_at of the two parts (scheduled
    // ones included) is that of the job due longest, if it is behind `now`;
    // ahead, every queued job was due at its enqueue on a clock ahead of `now`,
    // and none has waited yet by this clock.
    const firstRunAt = [row.waiting_first_run_at, row.expired_first_run_at].filter((runAt): runAt is number => typeof runAt === "number");
    return {
      queue: row.queue as string,
      jobs: {
        queued,
        scheduled: count("waiting_later") + count("expired_later"),
        leased: count("held") - count("expired"),
        done: count("done"),
        dead: count("dead"),
        cancelled: count("cancelled"),
      },
      oldestDueAgeMs: queued > 0 ? Math.max(0, now - Math.min(...firstRunAt)) : null,
      refused: { lastHour: count("refused_recent"), total: count("refused_total") },
      paused: row.paused === 1,
      topKeys: topKeysOfRow(row.top_keys),
    };
  });
}
