import { createRoute, z } from "@hono/zod-openapi";
import * as schema from "./schemas.ts";
import { QueueSettingsBody, QueueSettingsSchema, QueueStatsSchema } from "./schemas-queues.ts";
import { ScheduleBody, ScheduleName, ScheduleSchema } from "./schemas-schedules.ts";

// The route table of the API, as OpenAPI route definitions. Each names the
// schemas that validate its request, so the document cannot drift from the code.

const json = <T extends z.ZodType>(body: T, description: string) => ({
  content: { "application/json": { schema: body } },
  description,
});

const error = (description: string) => json(schema.ErrorSchema, description);

const refusals = {
  400: error("invalid_request: the request breaks a rule; the message says which"),
  401: error("unauthorized: a missing or wrong bearer token"),
  403: error("forbidden: the token's role or queues do not allow this call; the message names the role and queue it needs"),
  413: error("payload_too_large: the body is over the limit"),
  503: error("unavailable: the database cannot be reached; retry after Retry-After seconds"),
};

const IdParam = z.object({ id: schema.JobId.openapi({ param: { name: "id", in: "path" } }) });
const QueueParam = z.object({ queue: schema.QueueName.openapi({ param: { name: "queue", in: "path" } }) });
const ScheduleParam = z.object({ name: ScheduleName.openapi({ param: { name: "name", in: "path" } }) });

const body = <T extends z.ZodType>(shape: T, required = true) => ({
  body: { content: { "application/json": { schema: shape } }, required },
});

/** The route definitions for the given limits. */
export function routes(limits: schema.Limits) {
  return {
    enqueue: createRoute({
      method: "post",
      path: "/v1/jobs",
      summary: "Enqueue a job; an existing id is left as it is",
      request: body(schema.EnqueueBody),
      responses: {
        201: json(z.object({ created: z.literal(true), job: schema.JobSchema }), "The job was created"),
        200: json(z.object({ created: z.literal(false), job: schema.JobSchema }), "A job with this id exists; nothing changed"),
        ...refusals,
      },
    }),
    enqueueMany: createRoute({
      method: "post",
      path: "/v1/queues/{queue}/jobs",
      summary: `Enqueue 1 to ${schema.MAX_MANY} jobs in one transaction; an id that exists (or repeats) is left as it is`,
      request: { params: QueueParam, ...body(schema.EnqueueManyBody) },
      responses: {
        200: json(z.object({ jobs: z.array(z.object({ id: z.string(), created: z.boolean() })) }), "Each job, in order: created, or already there and untouched"),
        ...refusals,
      },
    }),
    get: createRoute({
      method: "get",
      path: "/v1/jobs/{id}",
      summary: "Read a job; with waitMs, wait for it to be done, dead or cancelled first (a long poll)",
      request: { params: IdParam, query: schema.JobQuery },
      responses: { 200: json(schema.JobSchema, "The job"), 404: error("not_found"), ...refusals },
    }),
    claim: createRoute({
      method: "post",
      path: "/v1/jobs/{id}/claim",
      summary: "Claim a job by id: a new lease with the next fence",
      request: { params: IdParam, ...body(schema.ClaimBody(limits)) },
      responses: {
        200: json(schema.LeaseSchema, "The lease"),
        404: error("not_found"),
        409: error("not_claimable, with details.reason: leased, done, dead, cancelled, paused (the queue is paused), rate_limited (the queue's rate limit has no token left) or full (the queue has its maxLeased current leases)"),
        ...refusals,
      },
    }),
    claimNext: createRoute({
      method: "post",
      path: "/v1/queues/{queue}/claim",
      summary: "Claim the next due jobs of a queue: highest priority first, then due longest; with waitMs, wait for one while none is due (a long poll)",
      request: { params: QueueParam, ...body(schema.ClaimNextBody(limits)) },
      responses: { 200: json(schema.ClaimNextAnswer, "The leases taken; empty when nothing is due (or came within waitMs). Short because of the queue's rate limit, retryAfterMs says when the next token is due"), ...refusals },
    }),
    renew: createRoute({
      method: "post",
      path: "/v1/jobs/{id}/renew",
      summary: "Extend the current lease, and store the progress it reports",
      request: { params: IdParam, ...body(schema.RenewBody(limits)) },
      responses: {
        200: json(z.object({ until: z.number().int() }), "The lease now lasts until this time; its progress, if given, is stored"),
        404: error("not_found"),
        409: error("stale_lease, with details.reason (expired, superseded, not_owner, done, cancelled) and details.currentFence; no progress is stored"),
        ...refusals,
      },
    }),
    complete: createRoute({
      method: "post",
      path: "/v1/jobs/{id}/complete",
      summary: "Store the result of the current lease; the same completion again answers 200 again. With next, also lease the next due jobs of the queue",
      request: { params: IdParam, ...body(schema.CompleteBody(limits)) },
      responses: {
        200: json(z.object({ job: schema.JobSchema, leases: z.array(schema.LeaseSchema).optional() }), "The job, done; with next, the leases taken"),
        404: error("not_found"),
        409: error("stale_lease: the stored result is untouched"),
        ...refusals,
      },
    }),
    release: createRoute({
      method: "post",
      path: "/v1/jobs/{id}/release",
      summary: "Give the lease back; the job is claimable at once and its fence stays",
      request: { params: IdParam, ...body(schema.ReleaseBody) },
      responses: {
        200: json(z.object({ job: schema.JobSchema }), "The job, released"),
        404: error("not_found"),
        409: error("stale_lease"),
        ...refusals,
      },
    }),
    fail: createRoute({
      method: "post",
      path: "/v1/jobs/{id}/fail",
      summary: "End the current lease as a failed attempt: the job is due again later, or dead after its last attempt",
      request: { params: IdParam, ...body(schema.FailBody(limits)) },
      responses: {
        200: json(z.object({ job: schema.JobSchema, leases: z.array(schema.LeaseSchema).optional() }), "The job, queued again (status scheduled) or dead; with next, the leases taken"),
        404: error("not_found"),
        409: error("stale_lease"),
        ...refusals,
      },
    }),
    renewMany: createRoute({
      method: "post",
      path: "/v1/leases/renew",
      summary: `One heartbeat for many leases: extend each of 1 to ${schema.MAX_MANY} leases of one owner, each decided alone`,
      request: body(schema.RenewManyBody(limits)),
      responses: { 200: json(schema.RenewManyAnswer, "Each lease, in order: its new until, or the error a single renew would answer"), ...refusals },
    }),
    completeMany: createRoute({
      method: "post",
      path: "/v1/leases/complete",
      summary: `Complete 1 to ${schema.MAX_MANY} leases of one owner, each decided alone; with next, also lease the next due jobs of a queue`,
      request: body(schema.CompleteManyBody(limits)),
      responses: { 200: json(schema.CompleteManyAnswer, "Each completion, in order: done, or the error a single complete would answer; and the leases taken"), ...refusals },
    }),
    retry: createRoute({
      method: "post",
      path: "/v1/jobs/{id}/retry",
      summary: "Put a dead job back in its queue, its attempts reset; the fence goes on growing",
      request: { params: IdParam },
      responses: {
        200: json(z.object({ job: schema.JobSchema }), "The job, queued"),
        404: error("not_found"),
        409: error("conflict: the job is not dead (details.status)"),
        ...refusals,
      },
    }),
    cancel: createRoute({
      method: "post",
      path: "/v1/jobs/{id}/cancel",
      summary: "Cancel a queued, scheduled or leased job: it becomes cancelled, final; its holder's next renew, complete, fail or release is 409 stale_lease with details.reason cancelled",
      request: { params: IdParam, ...body(schema.CancelBody, false) }, // no body: by "api", no reason
      responses: {
        200: json(schema.CancelAnswer, "The job, cancelled; changed is false when it already was (nothing changed)"),
        404: error("not_found"),
        409: error("conflict: the job is done or dead (details.status); nothing changed"),
        ...refusals,
      },
    }),
    delete: createRoute({
      method: "delete",
      path: "/v1/jobs/{id}",
      summary: "Delete a job that is not leased; its fence is kept, so a new job with this id starts above it",
      request: { params: IdParam },
      responses: {
        200: json(z.object({ deleted: z.literal(true) }), "Deleted"),
        404: error("not_found"),
        409: error("conflict: the job is leased"),
        ...refusals,
      },
    }),
    list: createRoute({
      method: "get",
      path: "/v1/jobs",
      summary: "List jobs in id order, one page at a time (keyset pagination, stable while jobs change)",
      request: { query: schema.ListQuery },
      responses: {
        200: json(z.object({ jobs: z.array(schema.JobSchema), nextCursor: z.string().nullable() }), "A page of jobs"),
        ...refusals,
      },
    }),
    events: createRoute({
      method: "get",
      path: "/v1/jobs/{id}/events",
      summary: "A job's history, oldest first: every transition and every refused write with a lease",
      request: { params: IdParam, query: schema.EventsQuery },
      responses: {
        200: json(z.object({ events: z.array(schema.EventSchema), nextCursor: z.string().nullable() }), "A page of events"),
        ...refusals,
      },
    }),
    lease: createRoute({
      method: "get",
      path: "/v1/jobs/{id}/lease",
      summary: "Whether (owner, fence) is the job's current lease: for a downstream system to check a token before a side effect",
      request: { params: IdParam, query: schema.LeaseQuery },
      responses: {
        200: json(z.object({ current: z.boolean(), fence: z.number().int(), until: z.number().int() }), "The answer, with the job's current fence"),
        404: error("not_found"),
        ...refusals,
      },
    }),
    pauseQueue: createRoute({
      method: "post",
      path: "/v1/queues/{queue}/pause",
      summary: "Pause a queue: claims hand out none of its jobs until it is resumed; leases already held go on (renew, complete, fail, release)",
      request: { params: QueueParam },
      responses: { 200: json(QueueSettingsSchema, "The queue's settings, paused"), ...refusals },
    }),
    resumeQueue: createRoute({
      method: "post",
      path: "/v1/queues/{queue}/resume",
      summary: "Resume a paused queue: claims take its jobs again",
      request: { params: QueueParam },
      responses: { 200: json(QueueSettingsSchema, "The queue's settings, not paused"), ...refusals },
    }),
    setQueue: createRoute({
      method: "put",
      path: "/v1/queues/{queue}",
      summary: "Set a queue's limits, all three at once (null or absent: none): maxLeased, and ratePerSecond with burst; keeps whether it is paused. Leases already held above a new limit go on; a new rate starts with a full bucket, a changed one keeps the tokens it holds (at most the new burst)",
      request: { params: QueueParam, ...body(QueueSettingsBody) },
      responses: { 200: json(QueueSettingsSchema, "The queue's settings"), ...refusals },
    }),
    getQueue: createRoute({
      method: "get",
      path: "/v1/queues/{queue}",
      summary: "A queue's settings; a queue never set is not paused and has no limits",
      request: { params: QueueParam },
      responses: { 200: json(QueueSettingsSchema, "The queue's settings"), ...refusals },
    }),
    listQueues: createRoute({
      method: "get",
      path: "/v1/queues",
      summary: "The settings of every queue that has settings or jobs, by name",
      responses: { 200: json(z.object({ queues: z.array(QueueSettingsSchema) }), "The queues"), ...refusals },
    }),
    putSchedule: createRoute({
      method: "put",
      path: "/v1/schedules/{name}",
      summary: "Create or replace a recurring schedule: each fire (cron in a time zone, or everyMs) enqueues the job {name}@{fire time as ISO 8601}; the next fire is the first after now",
      request: { params: ScheduleParam, ...body(ScheduleBody) },
      responses: { 201: json(ScheduleSchema, "The schedule, created"), 200: json(ScheduleSchema, "The schedule, replaced (createdAt and lastFireAt kept)"), ...refusals },
    }),
    getSchedule: createRoute({
      method: "get",
      path: "/v1/schedules/{name}",
      summary: "Read a schedule",
      request: { params: ScheduleParam },
      responses: { 200: json(ScheduleSchema, "The schedule"), 404: error("not_found"), ...refusals },
    }),
    listSchedules: createRoute({
      method: "get",
      path: "/v1/schedules",
      summary: "Every schedule, by name",
      responses: { 200: json(z.object({ schedules: z.array(ScheduleSchema) }), "The schedules"), ...refusals },
    }),
    deleteSchedule: createRoute({
      method: "delete",
      path: "/v1/schedules/{name}",
      summary: "Delete a schedule: it never fires again; the jobs it enqueued stay",
      request: { params: ScheduleParam },
      responses: { 204: { description: "Deleted" }, 404: error("not_found"), ...refusals },
    }),
    stats: createRoute({
      method: "get",
      path: "/v1/stats",
      summary: "Per queue: jobs by status, the oldest due job's age, refused stale writes in the last hour and ever, and whether it is paused",
      responses: { 200: json(z.object({ queues: z.array(QueueStatsSchema) }), "The numbers"), ...refusals },
    }),
    metrics: createRoute({
      method: "get",
      path: "/metrics",
      summary: "The same numbers as /v1/stats, in Prometheus text format",
      responses: {
        200: { content: { "text/plain": { schema: z.string() } }, description: "Prometheus exposition format 0.0.4" },
        ...refusals,
      },
    }),
    health: createRoute({
      method: "get",
      path: "/healthz",
      summary: "Whether writes can succeed now; needs no token",
      responses: {
        200: json(z.object({ ok: z.literal(true) }), "Writes can succeed: the last one did, or a probe write that changes nothing did"),
        503: error("unavailable: writes are failing or stuck; details.reason says why (read_only, corrupt, full, io, busy, timeout, stuck...)"),
      },
    }),
  };
}
