import type { Row } from "./drivers/driver.ts";
import type { JobStatus } from "./job.ts";
import { STATUSES } from "./statements.ts";

/** Per queue: jobs by status, how long the job due longest has waited, and refused stale writes. */
export type QueueStats = {
  queue: string;
  jobs: Record<JobStatus, number>;
  oldestDueAgeMs: number | null;
  refused: { lastHour: number; total: number };
};

/** Reads the rows of `queueCounts` and `refusalCounts` (src/statements.ts) into the stats of each queue, by name. */
export function queueStats(counts: Row[], refusals: Row[], now: number): QueueStats[] {
  const queues = new Map<string, QueueStats>();
  const of = (queue: string): QueueStats => {
    let stats = queues.get(queue);
    if (!stats) {
      const jobs = Object.fromEntries(STATUSES.map((status) => [status, 0])) as Record<JobStatus, number>;
      stats = { queue, jobs, oldestDueAgeMs: null, refused: { lastHour: 0, total: 0 } };
      queues.set(queue, stats);
    }
    return stats;
  };
  for (const row of counts) {
    const stats = of(row.queue as string);
    stats.jobs[row.status as JobStatus] = row.jobs as number;
    if (row.status === "queued") stats.oldestDueAgeMs = now - (row.oldest_run_at as number);
  }
  for (const row of refusals) of(row.queue as string).refused = { lastHour: row.recent as number, total: row.total as number };
  return [...queues.values()].sort((a, b) => (a.queue < b.queue ? -1 : 1));
}
