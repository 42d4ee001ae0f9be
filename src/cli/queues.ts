import type { QueueSettings, QueueSettingsRequest, QueueStats } from "../client/types.ts";
import { type Command, columns } from "./command.ts";
import { UsageError } from "./exit-codes.ts";
import { type Flags, integer } from "./flags.ts";

// The commands about queues: their numbers (stats), their settings, and the
// pause and resume that stop and start their claims.

function statsLine(stats: QueueStats): string {
  const jobs = Object.entries(stats.jobs).map(([status, count]) => `${status} ${count}`).join(", ");
  const due = stats.oldestDueAgeMs === null ? "none due" : `oldest due ${stats.oldestDueAgeMs} ms ago`;
  return `${stats.queue}: ${jobs}; ${due}; refused ${stats.refused.lastHour} in the last hour, ${stats.refused.total} ever${stats.paused ? "; paused" : ""}`;
}

/** A queue's settings as cells: its name, whether it is paused, its limits. */
const settingsCells = (settings: QueueSettings) => [settings.queue, settings.paused ? "paused" : "running", `maxLeased ${settings.maxLeased ?? "none"}`];

/** A limit option: a whole number, or `none` to take the limit away (null); undefined when not given. */
function limit(flags: Flags, name: "max-leased"): number | null | undefined {
  if (flags[name] === "none") return null;
  if (flags[name] === "") throw new UsageError(`--${name} needs a whole number, or none for no limit`);
  return integer(flags, name);
}

/** The settings a `queue` command line changes; empty when it only reads. */
function changes(flags: Flags): QueueSettingsRequest {
  const maxLeased = limit(flags, "max-leased");
  return maxLeased === undefined ? {} : { maxLeased };
}

/** stats, queues, queue, pause and resume. */
export const QUEUE_COMMANDS: Record<string, Command> = {
  stats: {
    argument: null,
    async run({ client }) {
      const queues = await client.stats();
      return { json: { queues }, text: queues.length === 0 ? "no jobs" : queues.map(statsLine).join("\n") };
    },
  },
  queues: {
    argument: null,
    async run({ client }) {
      const queues = await client.listQueues();
      return { json: { queues }, text: queues.length === 0 ? "no queues" : columns(queues.map(settingsCells)) };
    },
  },
  queue: {
    argument: "a queue",
    async run({ arg: queue, flags, client }) {
      const request = changes(flags);
      const settings = Object.keys(request).length === 0 ? await client.getQueue(queue) : await client.setQueue(queue, request);
      return { json: settings, text: columns([settingsCells(settings)]) };
    },
  },
  pause: {
    argument: "a queue",
    async run({ arg: queue, client }) {
      const settings = await client.pause(queue);
      return { json: settings, text: `paused queue ${queue}: claims take none of its jobs until resume; leases held go on` };
    },
  },
  resume: {
    argument: "a queue",
    async run({ arg: queue, client }) {
      const settings = await client.resume(queue);
      return { json: settings, text: `resumed queue ${queue}: its jobs can be claimed again` };
    },
  },
};
