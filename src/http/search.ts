import { createRoute, z } from "@hono/zod-openapi";
import { BULK_LIMITS, MAX_ERROR_SEARCH_BYTES, SEARCH_SCAN } from "../store/search.ts";
import { BULK_ACTIONS } from "../store/shapes.ts";
import { STATUSES } from "../store/sql/lease.ts";
import { utf8Bytes } from "../store/validate.ts";
import { afterAnswer } from "./after-answer.ts";
import { CancelBody, JOBS_TAG } from "./jobs.ts";
import { type Api, json, refusals, requestBody, type Served } from "./resource.ts";
import { body, instant, JobSchema, label, LABEL_RULES, positive, query, queryInstant, queryInt, QueueName } from "./shapes.ts";
import { jobView } from "./views.ts";

// Search (docs/search.md): GET /v1/jobs, a page of the jobs that match its
// filters, and POST /v1/jobs/bulk, an action on many of them. The store reads and
// acts in src/store/search.ts, by the statements of src/store/sql/search.ts.

/** A job's status, as a filter names it. */
const Status = z.enum(STATUSES, { error: `must be one of ${STATUSES.join(", ")}` });

/** What the filters say of themselves, whichever way they come. */
const SAID = {
  status: "Jobs in any of these statuses at the time of the call",
  key: "Jobs of this key (docs/queues.md#keys)",
  idPrefix: "Jobs whose id starts with this text (a range of ids: the cheapest filter)",
  error: `Jobs whose lastError contains this text; case counts. 1 to ${MAX_ERROR_SEARCH_BYTES} bytes of UTF-8`,
  createdFrom: "Jobs created at or after this time (ms since the epoch)",
  createdTo: "Jobs created at or before this time (ms since the epoch); not before createdFrom",
  finishedFrom: "Finished jobs (done, dead or cancelled) that finished at or after this time (ms since the epoch)",
  finishedTo: "Finished jobs that finished at or before this time (ms since the epoch); not before finishedFrom",
};

/** Text lastError must contain. */
const ErrorText = z
  .string({ error: "must be a string" })
  .min(1, { error: "must not be empty" })
  .refine((value) => utf8Bytes(value) <= MAX_ERROR_SEARCH_BYTES, { error: `must be at most ${MAX_ERROR_SEARCH_BYTES} bytes of UTF-8` })
  .openapi({ description: SAID.error });

/** The filters, whatever carries their statuses and times: each optional, every one given must hold. */
function filters<Time extends z.ZodType, Statuses extends z.ZodType>(time: () => Time, statuses: Statuses) {
  const at = (said: string) => time().optional().openapi({ description: said });
  return {
    queue: QueueName.optional(),
    status: statuses.optional().openapi({ description: SAID.status }),
    // Checked by the store as it checks a key (1 to 255 bytes of UTF-8, printable): a 400 names it.
    key: z.string({ error: "must be a string" }).optional().openapi({ description: SAID.key }),
    idPrefix: label().optional().openapi({ description: `${SAID.idPrefix}: ${LABEL_RULES}` }),
    error: ErrorText.optional(),
    createdFrom: at(SAID.createdFrom),
    createdTo: at(SAID.createdTo),
    finishedFrom: at(SAID.finishedFrom),
    finishedTo: at(SAID.finishedTo),
  };
}

/** The query of GET /v1/jobs: the filters (a status once, or repeated: `status=dead&status=cancelled`), and the page. */
export const ListQuery = query({
  ...filters(queryInstant, z.union([Status, z.array(Status)], { error: `must be one or more of ${STATUSES.join(", ")}` })),
  limit: queryInt(100).optional().openapi({ type: "integer", description: "1 to 100; default 50" }),
  cursor: label().optional().openapi({ description: `nextCursor of the page before (a job's id: ${LABEL_RULES})` }),
});

/** What a bulk action is asked of: the filters, as JSON. */
const Filter = body(filters(instant, z.union([Status, z.array(Status).min(1)], { error: `must be one of ${STATUSES.join(", ")}, or a list of one or more of them` }))).openapi("JobFilter");

/** What POST /v1/jobs/bulk takes. */
export const BulkBody = body({
  action: z.enum(BULK_ACTIONS, { error: `must be one of ${BULK_ACTIONS.join(", ")}` }).openapi({
    description: "retry: dead and cancelled jobs, due at once, their attempts reset; cancel: queued, scheduled and leased jobs (their holders' writes are refused from then on, reason cancelled); delete: finished jobs (done, dead, cancelled)",
  }),
  filter: Filter.optional().openapi({ description: "The jobs to act on: every filter given holds (none: every job the token may manage)" }),
  limit: positive(BULK_LIMITS.max).optional().openapi({ description: `Act on at most this many matching jobs, 1 to ${BULK_LIMITS.max}; default ${BULK_LIMITS.default}` }),
  cursor: label().optional().openapi({ description: "nextCursor of the call before: go on after it" }),
  dryRun: z.boolean({ error: "must be true or false" }).optional().openapi({ description: "Count the matching jobs (matched) and change nothing" }),
  by: CancelBody.shape.by,
  reason: CancelBody.shape.reason,
});

/** What a bulk action answers. */
const BulkAnswer = z
  .object({
    matched: z.number().int().openapi({ description: "How many jobs matched the filter (those acted on and those skipped)" }),
    changed: z.number().int().openapi({ description: "How many of them the action changed" }),
    skipped: z.record(z.string(), z.number().int()).openapi({ description: "How many it left as they were, by reason: not_dead_or_cancelled (retry), already_finished (cancel), not_finished (delete)" }),
    nextCursor: z.string().nullable().openapi({ description: "Send it back as cursor to go on; null once the filter's range is done" }),
  })
  .openapi("BulkAnswer");

/** The search routes. */
export function searchRoutes() {
  return {
    list: createRoute({
      method: "get",
      path: "/v1/jobs",
      tags: [JOBS_TAG.name],
      operationId: "listJobs",
      summary: `List the jobs that match the filters, in id order, one page at a time (keyset pagination, stable while jobs change); a page looks at ${SEARCH_SCAN} jobs at most, so it may come short, even empty, with a nextCursor to go on`,
      request: { query: ListQuery },
      responses: {
        200: json(z.object({ jobs: z.array(JobSchema), nextCursor: z.string().nullable() }), "A page of jobs"),
        ...refusals,
      },
    }),
    bulk: createRoute({
      method: "post",
      path: "/v1/jobs/bulk",
      tags: [JOBS_TAG.name],
      operationId: "bulkJobs",
      summary: `Retry, cancel or delete up to limit jobs that match a filter, in chunks of one transaction (each search looks at ${SEARCH_SCAN} jobs at most); go on with nextCursor`,
      request: requestBody(BulkBody),
      responses: { 200: json(BulkAnswer, "What the action did"), ...refusals },
    }),
  };
}

/** Serves the search routes on `app`. */
export function serveSearch(app: Api, route: ReturnType<typeof searchRoutes>, { store, clock, wake }: Served): void {
  app.openapi(route.list, async (c) => {
    const query = c.req.valid("query");
    const permit = c.get("permit");
    if (query.queue !== undefined) permit.need("read", query.queue);
    // Only the jobs of the token's queues are read, so that the cursor is one of them: it names nothing the token may not see.
    const page = await store.list({ ...query, queues: permit.scope, now: clock() });
    return c.json({ jobs: page.items.map(jobView), nextCursor: page.next }, 200);
  });

  app.openapi(route.bulk, async (c) => {
    const { filter = {}, ...asked } = c.req.valid("json");
    const permit = c.get("permit");
    if (filter.queue === undefined) permit.needRole("manage", `${asked.action} jobs`);
    else permit.need("manage", filter.queue);
    const now = clock();
    // Only the jobs of the token's queues are read, so that the cursor is one of them.
    const outcome = await store.bulk({ ...asked, filter, queues: permit.scope, now });
    afterAnswer(c, wake.bulk(asked.action, outcome.changed, now));
    return c.json({ matched: outcome.matched, changed: outcome.changed.length, skipped: outcome.skipped, nextCursor: outcome.next }, 200);
  });
}
