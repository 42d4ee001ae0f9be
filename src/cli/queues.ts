import type { QueueStats } from "../client/types.ts";
import type { Command } from "./command.ts";

// The commands about queues: their numbers (stats).

function statsLine(stats: QueueStats): string {
  const jobs = Object.entries(stats.jobs).map(([status, count]) => `${status} ${count}`).join(", ");
  const due = stats.oldestDueAgeMs === null ? "none due" : `oldest due ${stats.oldestDueAgeMs} ms ago`;
  return `${stats.queue}: ${jobs}; ${due}; refused ${stats.refused.lastHour} in the last hour, ${stats.refused.total} ever`;
}

/** stats. */
export const QUEUE_COMMANDS: Record<string, Command> = {
  stats: {
    argument: null,
    async run({ client }) {
      const queues = await client.stats();
      return { json: { queues }, text: queues.length === 0 ? "no jobs" : queues.map(statsLine).join("\n") };
    },
  },
};
