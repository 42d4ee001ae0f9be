import type { BulkAnswer, BulkRequest, ListRequest } from "../client/types.ts";
import type { LeaseClient } from "../client/lease-client.ts";
import { type Answer, type Command, columns, more } from "./command.ts";
import { UsageError } from "./exit-codes.ts";
import { type Flags, integer, moment } from "./flags.ts";

// Search from the command line (docs/search.md): `list` with the filters, and
// `jobs bulk <action>`, which goes on call after call until the filter's
// range is done, a line on stderr after each.

/** The actions of `jobs bulk`. */
const ACTIONS = ["retry", "cancel", "delete"] as const;

/** The filters the flags give: --status takes one status or several, comma-separated (--status dead,cancelled). */
function filterOf(flags: Flags) {
  const statuses = flags.status?.split(",") as Exclude<ListRequest["status"], string> | undefined; // the server names the statuses it knows when it refuses one
  return {
    queue: flags.queue,
    status: statuses?.length === 1 ? statuses[0] : statuses,
    key: flags.key,
    idPrefix: flags["id-prefix"],
    error: flags.error,
    createdFrom: moment(flags, "created-from"),
    createdTo: moment(flags, "created-to"),
    finishedFrom: moment(flags, "finished-from"),
    finishedTo: moment(flags, "finished-to"),
  };
}

/** The skipped jobs by reason, in a few words ("2 not_finished"), or "none". */
const skippedText = (skipped: Record<string, number>) => Object.entries(skipped).map(([reason, count]) => `${count} ${reason}`).join(", ") || "none";

/**
 * Runs a bulk action call after call (each up to 1,000 jobs, or what is left
 * of --limit) until the filter's range is done or --limit jobs matched,
 * writing a progress line after each; answers the totals, and the cursor to
 * go on from when --limit stopped it.
 */
async function bulkUntilDone(client: LeaseClient, asked: BulkRequest, most: number | undefined, progress: (line: string) => void): Promise<BulkAnswer> {
  const total: BulkAnswer = { matched: 0, changed: 0, skipped: {}, nextCursor: asked.cursor ?? null };
  do {
    const left = most === undefined ? undefined : Math.min(1_000, most - total.matched); // 1,000 a call, the default: a line each
    const answer = await client.bulk({ ...asked, cursor: total.nextCursor ?? undefined, limit: left });
    total.matched += answer.matched;
    total.changed += answer.changed;
    for (const [reason, count] of Object.entries(answer.skipped)) total.skipped[reason] = (total.skipped[reason] ?? 0) + count;
    total.nextCursor = answer.nextCursor;
    progress(`${asked.action}${asked.dryRun ? " (dry run)" : ""}: ${total.matched} matched, ${total.changed} changed, skipped ${skippedText(total.skipped)}${total.nextCursor === null ? "; done" : `; going on after ${total.nextCursor}`}`);
  } while (total.nextCursor !== null && (most === undefined || total.matched < most));
  return total;
}

/** list (with the filters) and jobs bulk. */
export const SEARCH_COMMANDS: Record<string, Command> = {
  list: {
    argument: null,
    async run({ flags, client }) {
      const page = await client.list({ ...filterOf(flags), limit: integer(flags, "limit"), cursor: flags.cursor });
      const rows = page.jobs.map((job) => [job.id, job.status, job.queue, `fence ${job.fence}`, job.owner === null ? "" : `owner ${job.owner}`]);
      // A page that looked at its most jobs may come short, even empty, with a cursor to go on.
      return { json: page, text: (rows.length === 0 ? "no jobs" : columns(rows)) + more(page.nextCursor) };
    },
  },
  "jobs bulk": {
    argument: "an action: retry, cancel or delete",
    async run({ arg, flags, client, io }): Promise<Answer> {
      if (!(ACTIONS as readonly string[]).includes(arg)) throw new UsageError(`jobs bulk needs an action: retry, cancel or delete, got ${JSON.stringify(arg)}`);
      const action = arg as (typeof ACTIONS)[number];
      const dryRun = flags["dry-run"] === true;
      const asked: BulkRequest = { action, filter: filterOf(flags), dryRun, cursor: flags.cursor, ...(action === "cancel" ? { by: flags.by ?? "cli", reason: flags.reason } : {}) };
      const total = await bulkUntilDone(client, asked, integer(flags, "limit"), io.err);
      const did = dryRun ? `would ${action} up to ${total.matched}` : `${total.changed} ${action === "retry" ? "retried" : action === "cancel" ? "cancelled" : "deleted"}`;
      return { json: total, text: `${total.matched} matched; ${did}; skipped ${skippedText(total.skipped)}${more(total.nextCursor)}` };
    },
  },
};
