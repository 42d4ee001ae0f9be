import type { Schedule } from "../client/types.ts";
import { at, type Command, columns, shellWord } from "./command.ts";
import { UsageError } from "./exit-codes.ts";
import { type Flags, integer, json } from "./flags.ts";

// The commands about recurring schedules: list them, put one (create or
// replace it), read one, and remove one. The server fires them; these only
// store and read what it fires by.

/** When a schedule fires, in words: `cron "0 3 * * *" in Europe/Paris` or `every 60000 ms`. */
const cadence = (schedule: Schedule) => (schedule.cron === null ? `every ${schedule.everyMs} ms` : `cron ${JSON.stringify(schedule.cron)} in ${schedule.timezone}`);

/** A schedule as cells: its name, its queue, when it fires, its next fire, and its jobs' key if they have one. */
const scheduleCells = (schedule: Schedule) => [
  schedule.name,
  `queue ${schedule.queue}`,
  cadence(schedule),
  `next ${schedule.nextFireAt === null ? "none" : at(schedule.nextFireAt)}`,
  schedule.key === null ? "" : `key ${shellWord(schedule.key)}`,
];

/** The body of PUT /v1/schedules/{name} from a command line; exactly one of --cron and --every-ms. */
function scheduleRequest(flags: Flags) {
  if (flags.queue === undefined) throw new UsageError("--queue is required: the queue each fire enqueues a job in");
  if ((flags.cron === undefined) === (flags["every-ms"] === undefined)) throw new UsageError("give exactly one of --cron EXPR and --every-ms N");
  if (flags.tz !== undefined && flags.cron === undefined) throw new UsageError("--tz goes with --cron: an interval does not depend on the time zone");
  return {
    queue: flags.queue,
    cron: flags.cron,
    everyMs: integer(flags, "every-ms"),
    timezone: flags.tz,
    payload: json(flags, "payload"),
    priority: integer(flags, "priority"),
    maxAttempts: integer(flags, "max-attempts"),
    key: flags.key,
  };
}

/** schedules, schedule put, schedule get and schedule rm. */
export const SCHEDULE_COMMANDS: Record<string, Command> = {
  schedules: {
    argument: null,
    async run({ client }) {
      const schedules = await client.schedules.list();
      return { json: { schedules }, text: schedules.length === 0 ? "no schedules" : columns(schedules.map(scheduleCells)) };
    },
  },
  "schedule put": {
    argument: "a schedule name",
    async run({ arg: name, flags, client }) {
      const schedule = await client.schedules.put(name, scheduleRequest(flags));
      return { json: schedule, text: columns([scheduleCells(schedule)]) };
    },
  },
  "schedule get": {
    argument: "a schedule name",
    async run({ arg: name, client }) {
      const schedule = await client.schedules.get(name);
      return { json: schedule, text: columns([scheduleCells(schedule)]) };
    },
  },
  "schedule rm": {
    argument: "a schedule name",
    async run({ arg: name, client }) {
      await client.schedules.delete(name);
      return { json: { deleted: true }, text: `deleted schedule ${name}; jobs it enqueued stay` };
    },
  },
};
