import type { QueueStats } from "../store/stats.ts";

/** A label value, quoted, with the three escapes the exposition format has: \\, \" and \n. */
function label(value: string): string {
  return `"${value.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n")}"`;
}

/** The queue stats in the Prometheus text exposition format (0.0.4). */
export function prometheusText(queues: QueueStats[]): string {
  const lines = [
    "# HELP fencelease_jobs Jobs by queue and status.",
    "# TYPE fencelease_jobs gauge",
    ...queues.flatMap((stats) => Object.entries(stats.jobs).map(([status, count]) => `fencelease_jobs{queue=${label(stats.queue)},status="${status}"} ${count}`)),
    "# HELP fencelease_oldest_due_age_seconds How long the job that has been due longest has waited.",
    "# TYPE fencelease_oldest_due_age_seconds gauge",
    ...queues.map((stats) => `fencelease_oldest_due_age_seconds{queue=${label(stats.queue)}} ${(stats.oldestDueAgeMs ?? 0) / 1000}`),
    "# HELP fencelease_refused_stale_writes_total Writes refused because their lease was not the current one.",
    "# TYPE fencelease_refused_stale_writes_total counter",
    ...queues.map((stats) => `fencelease_refused_stale_writes_total{queue=${label(stats.queue)}} ${stats.refused.total}`),
    "# HELP fencelease_refused_stale_writes_last_hour Refused stale writes in the last hour.",
    "# TYPE fencelease_refused_stale_writes_last_hour gauge",
    ...queues.map((stats) => `fencelease_refused_stale_writes_last_hour{queue=${label(stats.queue)}} ${stats.refused.lastHour}`),
    "# HELP fencelease_queue_paused Whether the queue is paused (1) or not (0).",
    "# TYPE fencelease_queue_paused gauge",
    ...queues.map((stats) => `fencelease_queue_paused{queue=${label(stats.queue)}} ${stats.paused ? 1 : 0}`),
  ];
  return `${lines.join("\n")}\n`;
}
