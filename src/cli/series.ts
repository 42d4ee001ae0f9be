import type { Series, SeriesPoint } from "../client/types.ts";
import { at, type Command, columns } from "./command.ts";
import { integer, moment } from "./flags.ts";

// The command about what a queue did over time (docs/operations.md#series):
// a line a step that had anything in it, with its counts and its completed
// jobs' wait and run times.

/** A duration as the CLI prints a quantile: ms under a second, else seconds, minutes or hours. */
function duration(ms: number | null): string {
  if (ms === null) return "-";
  if (ms < 1_000) return `${ms}ms`;
  if (ms < 60_000) return `${Number((ms / 1_000).toFixed(1))}s`;
  return ms < 3_600_000 ? `${Number((ms / 60_000).toFixed(1))}m` : `${Number((ms / 3_600_000).toFixed(1))}h`;
}

/** A step's quantiles as one cell: p50 and p99. */
const quantiles = ({ p50, p99 }: SeriesPoint["wait"]) => `${duration(p50)}/${duration(p99)}`;

/** The lines of a series: a header, then each step with something in it. */
function seriesText(series: Series, queue: string): string {
  const busy = series.points.filter(({ enqueued, completed, failed, expired, dead, refused }) => enqueued + completed + failed + expired + dead + refused > 0);
  if (busy.length === 0) return `nothing happened in ${queue} from ${at(series.from)} to ${at(series.to)}`;
  const header = ["step", "enqueued", "completed", "failed", "expired", "dead", "refused", "wait p50/p99", "run p50/p99"];
  const rows = busy.map((point) => [
    at(point.at), ...[point.enqueued, point.completed, point.failed, point.expired, point.dead, point.refused].map(String), quantiles(point.wait), quantiles(point.run),
  ]);
  return columns([header, ...rows]);
}

/** series. */
export const SERIES_COMMANDS: Record<string, Command> = {
  series: {
    argument: "a queue",
    async run({ arg: queue, flags, client }) {
      const series = await client.queues.series(queue, { step: integer(flags, "step"), from: moment(flags, "from"), to: moment(flags, "to") });
      return { json: series, text: seriesText(series, queue) };
    },
  },
};
