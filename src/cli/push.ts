import { NotFoundError } from "../client/errors.ts";
import type { PushRequest, PushSettings } from "../client/types.ts";
import { at, type Command, columns } from "./command.ts";
import { UsageError } from "./exit-codes.ts";
import { type Flags, integer } from "./flags.ts";

// The commands about a queue's push endpoint: set it (the first time, the
// secret is printed, once), read it, rotate its secret, and remove it. The
// server does the pushing; these only store and read what it pushes by.

/** A queue's push settings as cells: its queue, its endpoint, its timeout and maxInFlight, and its signing. */
const pushCells = (settings: PushSettings) => [
  settings.queue,
  settings.url,
  `timeout ${settings.timeoutMs} ms`,
  `maxInFlight ${settings.maxInFlight}`,
  settings.rotating ? `signed with 2 secrets (rotated ${at(settings.rotatedAt!)})` : "signed with 1 secret",
];

/** The lines that show a secret, once. */
const secretLines = (secret: string) => `secret ${secret}\nshown this once: keep it where the endpoint reads it (verifyPush in fencelease/client)`;

/**
 * The whole request to PUT: the options on the line, the others as they are
 * now (--endpoint is needed for a queue without one).
 */
function request(flags: Flags, current: PushSettings | null): PushRequest {
  const url = flags.endpoint ?? current?.url;
  if (url === undefined) throw new UsageError("--endpoint URL is required: the queue has no push endpoint yet");
  return { url, timeoutMs: integer(flags, "timeout-ms") ?? current?.timeoutMs, maxInFlight: integer(flags, "max-in-flight") ?? current?.maxInFlight };
}

/** push list, push set, push get, push rotate and push rm. */
export const PUSH_COMMANDS: Record<string, Command> = {
  "push list": {
    argument: null,
    async run({ client }) {
      const endpoints = await client.push.list();
      return { json: { endpoints }, text: endpoints.length === 0 ? "no pushed queues" : columns(endpoints.map(pushCells)) };
    },
  },
  "push set": {
    argument: "a queue",
    async run({ arg: queue, flags, client }) {
      const current = await client.push.get(queue).catch((error: unknown) => {
        if (error instanceof NotFoundError) return null;
        throw error;
      });
      const settings = await client.push.set(queue, request(flags, current));
      const secret = "secret" in settings ? settings.secret : undefined;
      return { json: settings, text: columns([pushCells(settings)]) + (secret === undefined ? "" : `\n${secretLines(secret)}`) };
    },
  },
  "push get": {
    argument: "a queue",
    async run({ arg: queue, client }) {
      const settings = await client.push.get(queue);
      return { json: settings, text: columns([pushCells(settings)]) };
    },
  },
  "push rotate": {
    argument: "a queue",
    async run({ arg: queue, client }) {
      const settings = await client.push.rotate(queue);
      return { json: settings, text: `${secretLines(settings.secret)}\nthe secret before it signs too, until the next rotation` };
    },
  },
  "push rm": {
    argument: "a queue",
    async run({ arg: queue, client }) {
      await client.push.delete(queue);
      return { json: { deleted: true }, text: `queue ${queue} is no longer pushed; its jobs wait for workers, deliveries on their way end as usual` };
    },
  },
};
