import type { PushStats } from "../store/push.ts";
import type { QueueStats } from "../store/stats.ts";

/** A label value, quoted, with the three escapes the exposition format has: \\, \" and \n. */
function label(value: string): string {
  return `"${value.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n")}"`;
}

/** The queue stats, and the push deliveries of the pushed queues, in the Prometheus text exposition format (0.0.4). */
export function prometheusText(queues: QueueStats[], push: PushStats[] = []): string {
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
    "# HELP fencelease_push_deliveries_total Push deliveries by outcome: success (2xx), accepted (202), failure (another status), timeout, unreachable.",
    "# TYPE fencelease_push_deliveries_total counter",
    ...push.flatMap((stats) => Object.entries(stats.deliveries).map(([outcome, { count }]) => `fencelease_push_deliveries_total{queue=${label(stats.queue)},outcome="${outcome}"} ${count}`)),
    "# HELP fencelease_push_delivery_seconds_total The time push deliveries took, by outcome: divided by the deliveries, the mean.",
    "# TYPE fencelease_push_delivery_seconds_total counter",
    ...push.flatMap((stats) => Object.entries(stats.deliveries).map(([outcome, { durationMs }]) => `fencelease_push_delivery_seconds_total{queue=${label(stats.queue)},outcome="${outcome}"} ${durationMs / 1000}`)),
    "# HELP fencelease_push_in_flight Pushed leases current now: deliveries on their way, and jobs their endpoint answered 202 and has not ended.",
    "# TYPE fencelease_push_in_flight gauge",
    ...push.map((stats) => `fencelease_push_in_flight{queue=${label(stats.queue)}} ${stats.inFlight}`),
  ];
  return `${lines.join("\n")}\n`;
}
