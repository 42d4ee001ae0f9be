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

/** A queue's rate limit in words: `rate 5/s burst 10`, or `rate none`. */
const rate = (settings: QueueSettings) => (settings.ratePerSecond === null ? "rate none" : `rate ${settings.ratePerSecond}/s burst ${settings.burst}`);

/** The limits of a queue's keys in words, `per key: maxLeased 2, rate 5/s burst 5, ordered, fair`; empty when it has none. */
export function keyLimits(settings: QueueSettings): string {
  const parts = [
    ...(settings.maxLeasedPerKey === null ? [] : [`maxLeased ${settings.maxLeasedPerKey}`]),
    ...(settings.keyRatePerSecond === null ? [] : [`rate ${settings.keyRatePerSecond}/s burst ${settings.keyBurst}`]),
    ...(settings.orderedByKey ? ["ordered"] : []),
    ...(settings.fairByKey ? ["fair"] : []),
  ];
  return parts.length === 0 ? "" : `per key: ${parts.join(", ")}`;
}

/** A queue's settings as cells: its name, whether it is paused, its limits, and those of its keys (an empty cell when none). */
const settingsCells = (settings: QueueSettings) => [settings.queue, settings.paused ? "paused" : "running", `maxLeased ${settings.maxLeased ?? "none"}`, rate(settings), keyLimits(settings)];

/** A limit option: a number, or `none` to take the limit away (null); undefined when not given. */
function limit(flags: Flags, name: "max-leased" | "rate" | "burst" | "max-leased-per-key" | "key-rate" | "key-burst"): number | null | undefined {
  const value = flags[name];
  if (value === "none") return null;
  if (value === "") throw new UsageError(`--${name} needs a number, or none for no limit`);
  if (name !== "rate" && name !== "key-rate") return integer(flags, name);
  if (value === undefined) return undefined;
  const number = Number(value);
  if (value.trim() === "" || !Number.isFinite(number)) throw new UsageError(`--${name} must be a number of claims per second, got ${JSON.stringify(value)}`);
  return number;
}

/** An on-off option: `true` or `false`; undefined when not given. */
function onOff(flags: Flags, name: "ordered-by-key" | "fair-by-key"): boolean | undefined {
  const value = flags[name];
  if (value === undefined || value === "true" || value === "false") return value === undefined ? undefined : value === "true";
  throw new UsageError(`--${name} must be true or false, got ${JSON.stringify(value)}`);
}

/** The settings a `queue` command line names; empty when it only reads. */
function named(flags: Flags): QueueSettingsRequest {
  const given = {
    maxLeased: limit(flags, "max-leased"),
    ratePerSecond: limit(flags, "rate"),
    burst: limit(flags, "burst"),
    maxLeasedPerKey: limit(flags, "max-leased-per-key"),
    keyRatePerSecond: limit(flags, "key-rate"),
    keyBurst: limit(flags, "key-burst"),
    orderedByKey: onOff(flags, "ordered-by-key"),
    fairByKey: onOff(flags, "fair-by-key"),
  };
  return Object.fromEntries(Object.entries(given).filter(([, value]) => value !== undefined));
}

/**
 * The whole set of settings to PUT (the route replaces them all): those named
 * on the line, the others as they are now. A rate and its burst go together: a
 * --rate without --burst gets the server's default burst (none without a rate);
 * a --burst alone keeps the rate. So do --key-rate and --key-burst.
 */
function merged(current: QueueSettings, changes: QueueSettingsRequest): QueueSettingsRequest {
  const { maxLeased, ratePerSecond, burst, maxLeasedPerKey, keyRatePerSecond, keyBurst, orderedByKey, fairByKey } = current;
  const kept = { maxLeased, ratePerSecond, burst, maxLeasedPerKey, keyRatePerSecond, keyBurst, orderedByKey, fairByKey };
  if (changes.ratePerSecond !== undefined) kept.burst = null;
  if (changes.keyRatePerSecond !== undefined) kept.keyBurst = null;
  return { ...kept, ...changes };
}

/** stats, queues, queue, pause and resume. */
export const QUEUE_COMMANDS: Record<string, Command> = {
  stats: {
    argument: null,
    async run({ client }) {
      const queues = await client.queues.stats();
      return { json: { queues }, text: queues.length === 0 ? "no jobs" : queues.map(statsLine).join("\n") };
    },
  },
  queues: {
    argument: null,
    async run({ client }) {
      const queues = await client.queues.list();
      return { json: { queues }, text: queues.length === 0 ? "no queues" : columns(queues.map(settingsCells)) };
    },
  },
  queue: {
    argument: "a queue",
    async run({ arg: queue, flags, client }) {
      const changes = named(flags);
      const current = await client.queues.get(queue);
      // Read, then write the whole set: two people changing one queue at once may lose one's change (no lease depends on it).
      const settings = Object.keys(changes).length === 0 ? current : await client.queues.set(queue, merged(current, changes));
      return { json: settings, text: columns([settingsCells(settings)]) };
    },
  },
  pause: {
    argument: "a queue",
    async run({ arg: queue, client }) {
      const settings = await client.queues.pause(queue);
      return { json: settings, text: `paused queue ${queue}: claims take none of its jobs until resume; leases held go on` };
    },
  },
  resume: {
    argument: "a queue",
    async run({ arg: queue, client }) {
      const settings = await client.queues.resume(queue);
      return { json: settings, text: `resumed queue ${queue}: its jobs can be claimed again` };
    },
  },
};
