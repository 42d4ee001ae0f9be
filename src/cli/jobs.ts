import type { EnqueueAnswer, Job, JobEvent } from "../client/types.ts";
import { printable } from "../store/printable.ts";
import { at, type Command, columns, more } from "./command.ts";
import { enqueueMany } from "./enqueue-many.ts";
import { integer, json, moment } from "./flags.ts";

// The commands about jobs as a whole: adding them, reading them and their
// history, and the operator's retry, delete and cancel. Listing them and the
// bulk actions are in search.ts.

/** The job's moments, printed as ISO times like every other command's (--json keeps the API's ms). */
const MOMENTS = new Set(["runAt", "until", "createdAt", "updatedAt"]);

/** A job field by field; a lease end of 0 (never leased) is "none". */
const jobText = (job: Job) =>
  Object.entries(job)
    .map(([key, value]) => `${key.padEnd(12)}${MOMENTS.has(key) && typeof value === "number" ? (value === 0 ? "none" : at(value)) : JSON.stringify(value)}`)
    .join("\n");
const holder = (owner: string | null, fence: number | null) => (owner === null ? `fence ${fence}` : `${owner}/${fence}`);

function eventLine(event: JobEvent): string {
  const what =
    event.kind === "refused"
      ? `refused ${event.action}: presented ${holder(event.owner, event.fence)}, current ${holder(event.currentOwner, event.currentFence)}`
      : event.kind === "cancelled" // its owner is who cancelled, not a lease's
        ? `cancelled by ${event.owner}`
        : event.owner === null && event.fence === null
          ? event.kind
          : `${event.kind} ${holder(event.owner, event.fence)}`;
  return `${at(event.at)}  ${what}${event.error === null ? "" : `: ${printable(event.error)}`}`;
}

/** What an enqueue did, in a line. */
function enqueuedText(id: string, answer: EnqueueAnswer): string {
  if (!("job" in answer)) return `not enqueued: the window of its dedup key is held by ${answer.id}, purged since`;
  if (answer.created) return `enqueued ${id} in queue ${answer.job.queue}${answer.superseded ? `; cancelled ${answer.superseded}, which it supersedes` : ""}`;
  if (answer.debounced) return `not enqueued: moved ${answer.job.id}, the waiting job of its dedup key, to ${at(answer.job.runAt)}`;
  if (answer.deduplicated) return `not enqueued: the window of its dedup key is held by ${answer.job.id} (${answer.job.status})`;
  return `${id} exists already; nothing changed`;
}

/** enqueue, enqueue-many, get, retry, delete, cancel and events (list is a search: search.ts). */
export const JOB_COMMANDS: Record<string, Command> = {
  enqueue: {
    argument: "a job id",
    async run({ arg: id, flags, client }) {
      const answer = await client.enqueue({
        id,
        queue: flags.queue,
        key: flags.key,
        payload: json(flags, "payload"),
        priority: integer(flags, "priority"),
        runAt: moment(flags, "run-at"),
        delayMs: integer(flags, "delay-ms"),
        maxAttempts: integer(flags, "max-attempts"),
        dedupKey: flags["dedup-key"],
        dedupTtlMs: integer(flags, "dedup-ttl-ms"),
        debounceMs: integer(flags, "debounce-ms"),
        debounceMaxMs: integer(flags, "debounce-max-ms"),
        supersede: flags.supersede,
      });
      return { json: answer, text: enqueuedText(id, answer) };
    },
  },
  "enqueue-many": { argument: "a queue", run: ({ arg: queue, flags, client, io }) => enqueueMany(queue, flags.file, client, io.stdin) },
  get: {
    argument: "a job id",
    async run({ arg: id, flags, client }) {
      // --wait alone waits until the job is done, dead or cancelled; --wait MS at most that long.
      const job = flags.wait === undefined ? await client.get(id) : await client.waitFor(id, { timeoutMs: flags.wait === "" ? Number.MAX_SAFE_INTEGER : integer(flags, "wait") });
      return { json: job, text: jobText(job) };
    },
  },
  retry: {
    argument: "a job id",
    async run({ arg: id, client }) {
      const job = await client.retry(id);
      return { json: { job }, text: `retried ${id}: queued again with its attempts reset; its fence stays ${job.fence}` };
    },
  },
  delete: {
    argument: "a job id",
    async run({ arg: id, client }) {
      await client.delete(id);
      return { json: { deleted: true }, text: `deleted ${id}` };
    },
  },
  cancel: {
    argument: "a job id",
    async run({ arg: id, flags, client }) {
      // Who cancelled goes into the job's history; from the command line, "cli" unless --by names someone.
      // A job cancelled already is answered as it is: cancelling is safe to repeat.
      const { job } = await client.cancel(id, { by: flags.by ?? "cli", reason: flags.reason });
      return { json: { job }, text: `cancelled ${id}: it will not run again, and a lease held on it is refused at its next write` };
    },
  },
  events: {
    argument: "a job id",
    async run({ arg: id, flags, client }) {
      const page = await client.events(id, { limit: integer(flags, "limit"), cursor: flags.cursor });
      return { json: page, text: (page.events.length === 0 ? `no events for ${id}` : page.events.map(eventLine).join("\n")) + more(page.nextCursor) };
    },
  },
};
