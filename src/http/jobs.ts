import { createRoute, z } from "@hono/zod-openapi";
import { MAX_DEDUP_MS } from "../store/dedup-plan.ts";
import { STATUSES } from "../store/sql/lease.ts";
import { MAX_REASON_BYTES, utf8Bytes } from "../store/validate.ts";
import { MAX_TRACESTATE, TRACEPARENT_PATTERN, TRACESTATE_PATTERN, traceContextFor, traceparentFault, tracestateFault } from "../tracing/trace-context.ts";
import { emptyBodyIsNone } from "./middleware/empty-body.ts";
import { type Api, error, IdParam, json, QueueParam, refusals, requestBody, type Served } from "./resource.ts";
import { anyJson, body, DedupKey, integer, instant, JobId, JobSchema, Key, jsonValueRules, label, LABEL_RULES, many, MAX_MANY, MAX_WAIT_MS, positive, query, queryInt, QueueName } from "./shapes.ts";
import { jobView } from "./views.ts";
import { ApiError } from "./api-error.ts";
import { afterAnswer } from "./after-answer.ts";

// The jobs: enqueue one or many, read one (or wait for its end), read their
// history, retry a dead one, cancel, delete. What a worker does with a job it
// holds is in leases.ts; listing and searching them, and the bulk actions, in
// search.ts.

/** A length of time a dedup key is held for: 1 ms to 30 days. */
function dedupSpan() {
  return integer()
    .min(1, { error: "must be at least 1 ms" })
    .max(MAX_DEDUP_MS, { error: `must be at most ${MAX_DEDUP_MS} ms (30 days)` });
}

/** The fields of one job to enqueue, the queue apart. */
const newJob = {
  id: JobId,
  key: Key.optional(),
  payload: z.unknown().optional().openapi(jsonValueRules("Any JSON value, handed to the worker")),
  priority: integer().optional().openapi({ description: "Higher is claimed first; default 0" }),
  runAt: instant().optional().openapi({ description: "Not claimed by claim-next before this time (ms since the epoch); not with delayMs" }),
  delayMs: integer().min(0, { error: "must not be negative" }).optional().openapi({ description: "Or: due this many ms from now; not with runAt" }),
  maxAttempts: positive().optional().openapi({ description: "How many failed or expired attempts make it dead; default 25" }),
  dedupKey: DedupKey.optional(),
  dedupTtlMs: dedupSpan().optional().openapi({ description: "With dedupKey, a window: for this many ms after this job's enqueue (1 ms to 30 days), an enqueue of the key creates nothing and answers this job, even once it is purged" }),
  debounceMs: dedupSpan()
    .optional()
    .openapi({ description: "With dedupKey, one job at a time: the job runs this many ms (1 ms to 30 days) after the latest enqueue of its key; each enqueue before its first claim replaces its payload and priority and moves it. Not with runAt or delayMs" }),
  debounceMaxMs: dedupSpan().optional().openapi({ description: "With debounceMs: the most the job may be moved past its first enqueue, debounceMs to 30 days; default 30 days" }),
  supersede: z.boolean({ error: "must be true or false" }).optional().openapi({ description: "With dedupKey, one job at a time: cancel the key's job that is not finished, held or not (its holder's writes are then refused, reason cancelled), and take the key" }),
  traceparent: z
    .string({ error: "must be a string" })
    .refine((value) => traceparentFault(value) === null, { error: (issue) => `${traceparentFault(issue.input as string)} (W3C Trace Context)` })
    .optional()
    .openapi({
      example: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
      description: "The W3C traceparent of the producer's span, handed back with every lease of the job (stored as version 00); default the request's traceparent header",
      minLength: 55,
      pattern: TRACEPARENT_PATTERN,
    }),
  tracestate: z
    .string({ error: "must be a string" })
    .refine((value) => tracestateFault(value) === null, { error: (issue) => `${tracestateFault(issue.input as string)} (W3C Trace Context)` })
    .optional()
    .openapi({ maxLength: MAX_TRACESTATE, pattern: TRACESTATE_PATTERN, description: "The W3C tracestate that goes with traceparent; only with it. Up to 32 key=value members, no key twice" }),
};

const oneOfRunAtOrDelay = [
  (job: { runAt?: number; delayMs?: number }) => job.runAt === undefined || job.delayMs === undefined,
  { error: "give runAt or delayMs, not both" },
] as const;

/** oneOfRunAtOrDelay in the OpenAPI document's words. */
const notBothRunAtAndDelay = { not: { required: ["runAt", "delayMs"] } };

const tracestateOnlyWithTraceparent: [(job: { traceparent?: string; tracestate?: string }) => boolean, { error: string; path: string[] }] = [
  (job) => job.tracestate === undefined || job.traceparent !== undefined,
  { error: "needs a traceparent: the spec gives a tracestate no meaning without one", path: ["tracestate"] },
];

/** tracestateOnlyWithTraceparent in the OpenAPI document's words. */
const tracestateNeedsTraceparent = { dependentRequired: { tracestate: ["traceparent"] } };

/** What POST /v1/jobs enqueues: one job, its queue included. */
export const EnqueueBody = body({ ...newJob, queue: QueueName.optional().openapi({ description: `The job's queue; default "default". ${LABEL_RULES}` }) })
  .refine(...oneOfRunAtOrDelay)
  .refine(...tracestateOnlyWithTraceparent)
  .openapi({ ...notBothRunAtAndDelay, ...tracestateNeedsTraceparent });

/** What POST /v1/queues/{queue}/jobs enqueues: 1 to MAX_MANY jobs of that queue. */
export const EnqueueManyBody = body({
  jobs: many(body(newJob).refine(...oneOfRunAtOrDelay).refine(...tracestateOnlyWithTraceparent).openapi({ ...notBothRunAtAndDelay, ...tracestateNeedsTraceparent }), "jobs")
    .openapi({ description: `1 to ${MAX_MANY} jobs, each id once, enqueued in one transaction` }),
});

/** What a cancel answers: the job, and whether this cancel changed it (false: it was already cancelled). */
const CancelAnswer = z.object({ job: JobSchema, changed: z.boolean() }).openapi("CancelAnswer");

/** What a cancel says: who cancels (default "api") and why. */
export const CancelBody = body({
  by: label().optional().openapi({ example: "ops-console", description: `Who cancels, recorded in the cancelled event; default "api". ${LABEL_RULES}` }),
  reason: z
    .string({ error: "must be a string" })
    .refine((value) => utf8Bytes(value) <= MAX_REASON_BYTES, { error: `must be at most ${MAX_REASON_BYTES} bytes of UTF-8` })
    .optional()
    .openapi({ maxLength: MAX_REASON_BYTES, description: `Why, recorded in the cancelled event (its error): at most ${MAX_REASON_BYTES} bytes of UTF-8 (maxLength counts characters)` }),
});

/** The query of GET /v1/jobs/{id}/events. */
export const EventsQuery = query({
  limit: queryInt(1000).optional().openapi({ type: "integer", description: "1 to 1000; default 100" }),
  // At most 15 digits: every sequence number fits, and so does Number's exact range.
  cursor: z.string().regex(/^\d{1,15}$/, { error: "must be the nextCursor of the page before" }).optional().openapi({ description: "nextCursor of the page before" }),
});

/** The query of GET /v1/jobs/{id}: how long to wait for the job's end. */
const JobQuery = query({
  waitMs: z.string().regex(/^\d+$/, { error: "must be a whole number" }).transform(Number).pipe(z.number().max(MAX_WAIT_MS, { error: `must be at most ${MAX_WAIT_MS}` })).optional()
    .openapi({ type: "integer", minimum: 0, maximum: MAX_WAIT_MS, description: `Wait up to this many ms (0 to ${MAX_WAIT_MS}) for the job to be done, dead or cancelled, then answer it as it is; default 0` }),
});

/** One entry of a job's history: an accepted transition, or a refused write with a lease. */
export const EventSchema = z
  .object({
    seq: z.number().int(),
    jobId: z.string(),
    queue: z.string(),
    at: z.number().int(),
    kind: z.string().openapi({ description: "enqueued, claimed, pushed, renewed, completed, released, failed, expired, dead, retried, cancelled, deleted, or refused" }),
    action: z.string().nullable().openapi({ description: "Of a refusal: renew, complete, release, fail or step; of a push delivery (pushed): its outcome, success, accepted, failure, timeout or unreachable" }),
    owner: z.string().nullable().openapi({ description: "Who acted; of a refusal, the owner presented; of a cancel, who cancelled (by)" }),
    fence: z.number().int().nullable(),
    currentOwner: z.string().nullable(),
    currentFence: z.number().int().nullable(),
    error: z.string().nullable().openapi({ description: "Why: of a failure, an expiry or a death; of a cancel, the reason given" }),
    progress: anyJson().openapi({ description: "renewed: the job's progress after the latest renew of the lease; other events null" }),
    httpStatus: z.number().int().nullable().openapi({ description: "pushed: the endpoint's HTTP status, null when no answer came; other events null" }),
    durationMs: z.number().int().nullable().openapi({ description: "pushed: how long the delivery took; other events null" }),
    count: z.number().int().openapi({ description: "How many times it happened: the renews of one lease, or the same stale lease refused again, are one event" }),
    lastAt: z.number().int().openapi({ description: "When it last happened; at is the first time" }),
  })
  .openapi("Event");

/** The refusal of an enqueue whose id a job of a queue the token may not see holds: an id is one for all queues, so that it is taken cannot be hidden, but what takes it can. */
export function takenUnseen(id: string): ApiError {
  return new ApiError(409, "conflict", `the id ${JSON.stringify(id)} is taken by a job in a queue this token may not see; nothing changed: choose another id`);
}

/** The tag of these routes in the OpenAPI document. */
export const JOBS_TAG = { name: "jobs", description: "The jobs: enqueue one or many, read one (or wait for its end), list them and their history, retry a dead one, cancel, delete." };

/** The job routes. */
export function jobRoutes() {
  return {
    enqueue: createRoute({
      method: "post",
      path: "/v1/jobs",
      tags: [JOBS_TAG.name],
      operationId: "enqueueJob",
      summary: "Enqueue a job; an existing id is left as it is",
      request: requestBody(EnqueueBody),
      responses: {
        201: json(
          z.object({ created: z.literal(true), job: JobSchema, superseded: z.string().nullable().optional().openapi({ description: "With supersede: the job it cancelled, or null" }) }),
          "The job was created",
        ),
        200: json(
          z.union([
            z.object({
              created: z.literal(false),
              job: JobSchema,
              deduplicated: z.literal(true).optional().openapi({ description: "The key's window lasts: job is the job that holds it, whatever its status" }),
              debounced: z.literal(true).optional().openapi({ description: "The key's job was waiting: job is that job, moved" }),
            }),
            z.object({ created: z.literal(false), deduplicated: z.literal(true), id: z.string().openapi({ description: "The job that holds the key's window, purged since" }) }),
          ]),
          "Nothing created: a job with this id exists, untouched; or the dedup key's window lasts (deduplicated); or the key's waiting job was moved (debounced)",
        ),
        ...refusals,
      },
    }),
    enqueueMany: createRoute({
      method: "post",
      path: "/v1/queues/{queue}/jobs",
      tags: [JOBS_TAG.name],
      operationId: "enqueueJobs",
      summary: `Enqueue 1 to ${MAX_MANY} jobs in one transaction; an id that exists (or repeats) is left as it is`,
      request: { params: QueueParam, ...requestBody(EnqueueManyBody) },
      responses: {
        200: json(
          z.object({
            jobs: z.array(
              z.object({
                id: z.string(),
                created: z.boolean(),
                deduplicated: z.literal(true).optional().openapi({ description: "Not created: its dedup key's window lasts, or another job of the call took the key first" }),
                duplicateOf: z.string().optional().openapi({ description: "With deduplicated: the job that holds the key" }),
              }),
            ),
          }),
          "Each job, in order: created, or already there and untouched, or deduplicated",
        ),
        ...refusals,
      },
    }),
    get: createRoute({
      method: "get",
      path: "/v1/jobs/{id}",
      tags: [JOBS_TAG.name],
      operationId: "getJob",
      summary: "Read a job; with waitMs, wait for it to be done, dead or cancelled first (a long poll)",
      request: { params: IdParam, query: JobQuery },
      responses: { 200: json(JobSchema, "The job"), 404: error("not_found"), ...refusals },
    }),
    events: createRoute({
      method: "get",
      path: "/v1/jobs/{id}/events",
      tags: [JOBS_TAG.name],
      operationId: "listJobEvents",
      summary: "A job's history, oldest first: every transition and every refused write with a lease",
      request: { params: IdParam, query: EventsQuery },
      responses: {
        200: json(z.object({ events: z.array(EventSchema), nextCursor: z.string().nullable() }), "A page of events"),
        ...refusals,
      },
    }),
    retry: createRoute({
      method: "post",
      path: "/v1/jobs/{id}/retry",
      tags: [JOBS_TAG.name],
      operationId: "retryJob",
      summary: "Put a dead job back in its queue, its attempts reset; the fence goes on growing",
      request: { params: IdParam },
      responses: {
        200: json(z.object({ job: JobSchema }), "The job, queued"),
        404: error("not_found"),
        409: error("conflict: the job is not dead (details.status)"),
        ...refusals,
      },
    }),
    cancel: createRoute({
      method: "post",
      path: "/v1/jobs/{id}/cancel",
      tags: [JOBS_TAG.name],
      operationId: "cancelJob",
      summary: "Cancel a queued, scheduled or leased job: it becomes cancelled, final; its holder's next renew, complete, fail or release is 409 stale_lease with details.reason cancelled",
      request: { params: IdParam, ...requestBody(CancelBody, false) }, // no body: by "api", no reason
      middleware: [emptyBodyIsNone()],
      responses: {
        200: json(CancelAnswer, "The job, cancelled; changed is false when it already was (nothing changed)"),
        404: error("not_found"),
        409: error("conflict: the job is done or dead (details.status); nothing changed"),
        ...refusals,
      },
    }),
    delete: createRoute({
      method: "delete",
      path: "/v1/jobs/{id}",
      tags: [JOBS_TAG.name],
      operationId: "deleteJob",
      summary: "Delete a job that is not leased; its fence is kept, so a new job with this id starts above it",
      request: { params: IdParam },
      responses: {
        200: json(z.object({ deleted: z.literal(true) }), "Deleted"),
        404: error("not_found"),
        409: error("conflict: the job is leased"),
        ...refusals,
      },
    }),
  };
}

/** Serves the job routes on `app`. */
export function serveJobs(app: Api, route: ReturnType<typeof jobRoutes>, { store, clock, waits, wake }: Served): void {
  app.openapi(route.enqueue, async (c) => {
    const { id, delayMs, runAt, ...rest } = c.req.valid("json");
    const permit = c.get("permit");
    permit.need("enqueue", rest.queue ?? "default");
    const now = clock();
    const trace = traceContextFor(rest, c.req.raw.headers);
    const answer = await store.enqueue(id, { ...rest, ...trace, runAt: runAt ?? (delayMs === undefined ? undefined : now + delayMs), now });
    if (!("job" in answer)) return c.json(answer, 200);
    const job = jobView(answer.job);
    if (!permit.sees(job.queue)) throw takenUnseen(id);
    if (!answer.created) return c.json({ ...answer, job }, 200);
    afterAnswer(c, wake.enqueued(job.queue, [job.runAt], now));
    // A supersede cancelled a job: whoever waits for its result reads it again.
    if (answer.superseded) wake.finished([answer.superseded]);
    return c.json({ ...answer, job }, 201);
  });

  app.openapi(route.enqueueMany, async (c) => {
    const now = clock();
    const headers = c.req.raw.headers;
    const jobs = c.req.valid("json").jobs.map(({ delayMs, runAt, ...job }) => ({ ...job, ...traceContextFor(job, headers), runAt: runAt ?? (delayMs === undefined ? undefined : now + delayMs) }));
    const queue = c.req.valid("param").queue;
    c.get("permit").need("enqueue", queue);
    const enqueued = await store.enqueueMany(queue, { jobs, now });
    afterAnswer(c, wake.enqueued(queue, jobs.filter((_, i) => enqueued[i]!.created).map((job) => job.runAt ?? now), now));
    return c.json({ jobs: enqueued }, 200);
  });

  app.openapi(route.get, async (c) => {
    const { id } = c.req.valid("param");
    const permit = c.get("permit");
    await permit.job("read", id);
    const waitMs = c.req.valid("query").waitMs ?? 0;
    return c.json(jobView(waitMs > 0 ? await permit.whileValid(c.req.raw.signal, (signal) => waits.job(id, waitMs, signal)) : await store.get(id, { now: clock() })), 200);
  });

  app.openapi(route.events, async (c) => {
    // Each event names its job's queue, so those of a queue the token may not see are left out by the read: an unknown id's answer, an empty page, and no cursor.
    const page = await store.events(c.req.valid("param").id, { ...c.req.valid("query"), queues: c.get("permit").scope });
    return c.json({ events: page.items, nextCursor: page.next }, 200);
  });

  app.openapi(route.retry, async (c) => {
    await c.get("permit").job("manage", c.req.valid("param").id);
    const now = clock();
    const job = await store.retry(c.req.valid("param").id, { now });
    afterAnswer(c, wake.settled(job));
    return c.json({ job: jobView(job) }, 200);
  });

  app.openapi(route.cancel, async (c) => {
    const { by = "api", reason } = c.req.valid("json");
    await c.get("permit").job("manage", c.req.valid("param").id);
    const now = clock();
    const { changed, job } = await store.cancel(c.req.valid("param").id, { by, reason, now });
    if (changed) afterAnswer(c, wake.cancelled(job, now));
    return c.json({ job: jobView(job), changed }, 200);
  });

  app.openapi(route.delete, async (c) => {
    await c.get("permit").job("manage", c.req.valid("param").id);
    await store.delete(c.req.valid("param").id, { now: clock() });
    wake.finished([c.req.valid("param").id]);
    return c.json({ deleted: true as const }, 200);
  });
}
