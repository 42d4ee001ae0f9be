import type { PushStats } from "../store/push.ts";
import type { QueueStats } from "../store/stats.ts";

/** A label value, quoted, with the three escapes the exposition format has: \\, \" and \n. */
function label(value: string): string {
  return `"${value.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n")}"`;
}

/**
 * The upper bounds of the latency buckets, in seconds: a write to a local
 * file answers in about a millisecond, a long poll in up to 30 s (MAX_WAIT_MS).
 */
export const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/** One histogram series: the requests of one method, route and status class. */
type Series = { labels: string; counts: number[]; sum: number; count: number };

/**
 * How long the server took to answer, as a Prometheus histogram by method,
 * route pattern ("/v1/jobs/:id", never the path) and status class ("2xx");
 * its `_count` is the requests answered. Held in this process's memory, from
 * its start: on the Worker, each isolate has its own.
 */
export class RequestMetrics {
  readonly #series = new Map<string, Series>();

  /** Counts one request that took `seconds`. */
  observe(method: string, route: string, status: number, seconds: number): void {
    const key = `${method} ${route} ${Math.floor(status / 100)}`;
    let series = this.#series.get(key);
    if (series === undefined) {
      series = { labels: `method=${label(method)},route=${label(route)},code="${Math.floor(status / 100)}xx"`, counts: LATENCY_BUCKETS.map(() => 0), sum: 0, count: 0 };
      this.#series.set(key, series);
    }
    const bucket = LATENCY_BUCKETS.findIndex((bound) => seconds <= bound);
    if (bucket !== -1) series.counts[bucket]!++;
    series.sum += seconds;
    series.count++;
  }

  /** The histogram in the exposition format, its series in the order of their labels. */
  lines(): string[] {
    const name = "fencelease_http_request_duration_seconds";
    const lines = [
      `# HELP ${name} How long the server took to answer a request, by method, route pattern and status class; _count is the requests answered.`,
      `# TYPE ${name} histogram`,
    ];
    for (const series of [...this.#series.values()].sort((a, b) => (a.labels < b.labels ? -1 : 1))) {
      let cumulative = 0;
      LATENCY_BUCKETS.forEach((bound, i) => {
        cumulative += series.counts[i]!;
        lines.push(`${name}_bucket{${series.labels},le="${bound}"} ${cumulative}`);
      });
      lines.push(`${name}_bucket{${series.labels},le="+Inf"} ${series.count}`, `${name}_sum{${series.labels}} ${series.sum}`, `${name}_count{${series.labels}} ${series.count}`);
    }
    return lines;
  }
}

/**
 * The queue stats, the push deliveries of the pushed queues, the long polls
 * waiting in this process and the request histogram (each when given), in the Prometheus text exposition format (0.0.4).
 */
export function prometheusText(queues: QueueStats[], { push = [], requests, waiting }: { push?: PushStats[]; requests?: RequestMetrics; waiting?: number | undefined } = {}): string {
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
    "# HELP fencelease_key_waiting Waiting jobs of a queue's top keys: at most 10 a queue, of its first 1,000 keys with open jobs, each counted up to 1,000.",
    "# TYPE fencelease_key_waiting gauge",
    ...queues.flatMap((stats) => stats.topKeys.map(({ key, waiting }) => `fencelease_key_waiting{queue=${label(stats.queue)},key=${label(key)}} ${waiting}`)),
    "# HELP fencelease_push_deliveries_total Push deliveries by outcome: success (2xx), accepted (202), failure (another status), timeout, unreachable.",
    "# TYPE fencelease_push_deliveries_total counter",
    ...push.flatMap((stats) => Object.entries(stats.deliveries).map(([outcome, { count }]) => `fencelease_push_deliveries_total{queue=${label(stats.queue)},outcome="${outcome}"} ${count}`)),
    "# HELP fencelease_push_delivery_seconds_total The time push deliveries took, by outcome: divided by the deliveries, the mean.",
    "# TYPE fencelease_push_delivery_seconds_total counter",
    ...push.flatMap((stats) => Object.entries(stats.deliveries).map(([outcome, { durationMs }]) => `fencelease_push_delivery_seconds_total{queue=${label(stats.queue)},outcome="${outcome}"} ${durationMs / 1000}`)),
    "# HELP fencelease_push_in_flight Pushed leases current now: deliveries on their way, and jobs their endpoint answered 202 and has not ended.",
    "# TYPE fencelease_push_in_flight gauge",
    ...push.map((stats) => `fencelease_push_in_flight{queue=${label(stats.queue)}} ${stats.inFlight}`),
    ...(waiting === undefined ? [] : ["# HELP fencelease_waiting_requests Long polls (claim-next and job reads with waitMs) waiting in this process now.", "# TYPE fencelease_waiting_requests gauge", `fencelease_waiting_requests ${waiting}`]),
    ...(requests?.lines() ?? []),
  ];
  return `${lines.join("\n")}\n`;
}
