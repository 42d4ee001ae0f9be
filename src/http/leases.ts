import { createRoute, z } from "@hono/zod-openapi";
import type { NotClaimableReason } from "../store/errors.ts";
import * as check from "../store/validate.ts";
import { MAX_PROGRESS_BYTES, utf8Bytes } from "../store/validate.ts";
import { answered } from "../wait/long-poll.ts";
import { type Api, error, IdParam, json, QueueParam, refusals, requestBody, type Served } from "./resource.ts";
import { anyJson, body, Fence, integer, JobId, JobSchema, jsonValueRules, LeaseErrorSchema, LeaseSchema, type Limits, many, MAX_MANY, MAX_WAIT_MS, Owner, positive, query, QueueName, textOfAtMost, Ttl } from "./shapes.ts";
import { claimedView, jobView, leaseView, outcomeView, settledView } from "./views.ts";
import { unseenAsUnknown } from "./permit.ts";
import { afterAnswer } from "./after-answer.ts";

// The leases: claim a job by id or the next of a queue, and what the holder of
// a lease does with it (renew, complete, release, fail, one or many at once);
// and the check a downstream system makes of a lease before a side effect.
// Every write names its lease by owner and fence, and a stale one is refused.

/** What POST /v1/jobs/{id}/claim asks for: who, and for how long. */
export const ClaimBody = (limits: Limits) => body({ owner: Owner, ttlMs: Ttl(limits) });

/** How long a request may wait, 0 (no wait, the default) to MAX_WAIT_MS. */
function waitMs() {
  return integer().min(0, { error: "must not be negative" }).max(MAX_WAIT_MS, { error: `must be at most ${MAX_WAIT_MS}` }).optional();
}

/** What POST /v1/queues/{queue}/claim asks for: who, for how long, how many, and how long to wait for one. */
export const ClaimNextBody = (limits: Limits) =>
  body({
    owner: Owner,
    ttlMs: Ttl(limits),
    limit: positive(100).optional().openapi({ description: "How many jobs to take at most, 1 to 100; default 1" }),
    waitMs: waitMs().openapi({ description: `With no due job, wait up to this many ms (0 to ${MAX_WAIT_MS}) for one before answering; default 0, no wait` }),
  });

/** What a claim-next answers: the leases taken, and why there are fewer when the server can say. */
export const ClaimNextAnswer = z.object({
  leases: z.array(LeaseSchema),
  waitedMs: z.number().int().optional().openapi({
    description: "With waitMs: how long the server waited before the claim that took these leases, in ms. The leases began no earlier than the request's send time plus waitedMs, on the client's own clock",
  }),
  retryAfterMs: z.number().int().optional().openapi({
    description: "Present only when the queue's rate limit is what stopped the claim short (no whole token left while a job is due): in how many ms the next token is due. Ask again then, not before",
  }),
});

/** What a complete or fail may take in the same transaction: the next due jobs of the job's queue. */
export const NextBody = (limits: Limits) =>
  body({
    limit: positive(100).openapi({ description: "How many jobs to take at most, 1 to 100" }),
    ttlMs: Ttl(limits),
  }).openapi({ description: "Also lease up to `limit` due jobs of the same queue to the same owner, in the same transaction; a refused write takes none" });

/** The bytes of `value` as JSON text; Infinity when it is nested too deeply for JSON.stringify, which throws then. */
function jsonBytes(value: unknown): number {
  try {
    return utf8Bytes(JSON.stringify(value));
  } catch {
    return Infinity;
  }
}

/** What a renew may report: any JSON value of at most MAX_PROGRESS_BYTES as JSON text, stored on the job only if the renew is accepted. */
const progressField = z
  .unknown()
  .superRefine((value, context) => {
    if (value === undefined) return;
    const bytes = jsonBytes(value);
    if (bytes <= MAX_PROGRESS_BYTES) return;
    const got = bytes === Infinity ? "it is nested too deeply to be written as JSON" : `got ${bytes}`;
    context.addIssue({ code: "custom", message: `must be at most ${MAX_PROGRESS_BYTES} bytes as JSON, ${got}; keep the details elsewhere and report a summary` });
  })
  .optional()
  .openapi(jsonValueRules(`Any JSON value of at most ${MAX_PROGRESS_BYTES} bytes as JSON: stored as the job's progress if, and only if, the renew is accepted; absent keeps what is stored`));

/** What POST /v1/jobs/{id}/renew sends: the lease, its new length, and the progress to store. */
export const RenewBody = (limits: Limits) => body({ owner: Owner, fence: Fence, ttlMs: Ttl(limits), progress: progressField });

const resultField = anyJson().openapi(jsonValueRules("Any JSON value: the job's result"));

/** What POST /v1/jobs/{id}/complete sends: the lease, the result, and what to take next. */
export const CompleteBody = (limits: Limits) => body({ owner: Owner, fence: Fence, result: resultField, next: NextBody(limits).optional() });

/** What POST /v1/jobs/{id}/release sends: the lease. */
export const ReleaseBody = body({ owner: Owner, fence: Fence });

const YEAR_MS = 365 * 24 * 60 * 60 * 1000;

/** What POST /v1/jobs/{id}/fail sends: the lease, why, when to try again, and what to take next. */
export const FailBody = (limits: Limits) =>
  body({
    owner: Owner,
    fence: Fence,
    error: textOfAtMost(10_000).openapi({ description: "Why the attempt failed, at most 10000 characters; kept as the job's lastError" }),
    retryInMs: integer().min(0, { error: "must not be negative" }).max(YEAR_MS, { error: `must be at most ${YEAR_MS} (a year)` }).optional()
      .openapi({ description: "Due again this many ms from now; default the backoff (1 s doubling per attempt, capped at 1 hour, with jitter)" }),
    next: NextBody(limits).optional(),
  });

/** What POST /v1/leases/renew sends: one owner's leases, each with the progress it reports. */
export const RenewManyBody = (limits: Limits) =>
  body({
    owner: Owner,
    ttlMs: Ttl(limits),
    leases: many(body({ id: JobId, fence: Fence, progress: progressField }), "leases").openapi({ description: `1 to ${MAX_MANY} leases, each renewed or refused alone, each with the progress it reports, if any` }),
  });

/** What POST /v1/leases/complete sends: one owner's completions, and what to take next. */
export const CompleteManyBody = (limits: Limits) =>
  body({
    owner: Owner,
    leases: many(body({ id: JobId, fence: Fence, result: resultField }), "leases").openapi({ description: `1 to ${MAX_MANY} completions, each accepted or refused alone` }),
    next: body({ queue: QueueName, limit: positive(100), ttlMs: Ttl(limits) }).optional()
      .openapi({ description: "Also lease up to `limit` due jobs of `queue` to the same owner, in the same transaction" }),
  });

/** The query of GET /v1/jobs/{id}/lease: the lease to check. */
export const LeaseQuery = query({
  owner: Owner,
  fence: z.string({ error: (issue) => (issue.input === undefined ? "is required" : "must be a string") }).regex(/^\d+$/, { error: "must be a whole number" }).transform(Number)
    .pipe(z.number().min(1, { error: "must be at least 1" }).max(Number.MAX_SAFE_INTEGER, { error: "must be a safe integer" }))
    .openapi({ type: "integer", minimum: 1, maximum: Number.MAX_SAFE_INTEGER, description: "The fence of the lease to check" }),
});

/** What a many-lease renew answers: each lease's new end, or its refusal. */
export const RenewManyAnswer = z
  .object({ leases: z.array(z.union([z.object({ id: z.string(), until: z.number().int() }), z.object({ id: z.string(), error: LeaseErrorSchema })])) })
  .openapi("RenewManyAnswer");

/** What a many-lease complete answers: each completion, or its refusal; and the leases taken. */
export const CompleteManyAnswer = z
  .object({
    completed: z.array(z.union([z.object({ id: z.string(), done: z.literal(true) }), z.object({ id: z.string(), error: LeaseErrorSchema })])),
    leases: z.array(LeaseSchema),
  })
  .openapi("CompleteManyAnswer");

/** Each reason a claim by id is refused (details.reason of not_claimable, src/store/errors.ts), in words. */
const NOT_CLAIMABLE: Record<NotClaimableReason, string> = {
  leased: "another lease holds it",
  done: "it is done",
  dead: "it is dead",
  cancelled: "it is cancelled",
  paused: "the queue is paused",
  rate_limited: "the queue's rate limit has no token left",
  full: "the queue has its maxLeased current leases",
  key_full: "its key has its maxLeasedPerKey current leases",
  key_rate_limited: "its key's rate limit has no token left",
  key_ordered: "the queue is ordered by key, and an earlier job of its key runs first: details.behind names it",
};

/** The refusal of a claim by id: 409 not_claimable, why, and for key_ordered the job it waits behind. */
const NotClaimableSchema = z
  .object({
    error: z.object({
      code: z.literal("not_claimable"),
      message: z.string(),
      details: z.object({
        reason: z.enum(Object.keys(NOT_CLAIMABLE) as [NotClaimableReason, ...NotClaimableReason[]]),
        behind: z.string().optional().openapi({ description: "key_ordered only: the job of its key that runs first (held, or waiting for its retry or its time)" }),
      }),
    }),
  })
  .openapi("NotClaimable");

/** The tag of these routes in the OpenAPI document. */
export const LEASES_TAG = { name: "leases", description: "The leases: claim a job by id or the next due jobs of a queue; renew, complete, release or fail a lease, one or many at once; record a step under it; check a lease before a side effect. Every write names its lease by owner and fence, and a stale one is refused (409 stale_lease) without changing anything." };

/** The leases a complete or fail took: there only when it asked for next. */
const takenLeases = z.array(LeaseSchema).optional().openapi({ description: "Only when the request asked for next: the leases it took, maybe none" });

/** The lease routes for the given limits. */
export function leaseRoutes(limits: Limits) {
  return {
    claim: createRoute({
      method: "post",
      path: "/v1/jobs/{id}/claim",
      tags: [LEASES_TAG.name],
      operationId: "claimJob",
      summary: "Claim a job by id: a new lease with the next fence",
      request: { params: IdParam, ...requestBody(ClaimBody(limits)) },
      responses: {
        200: json(LeaseSchema, "The lease"),
        404: error("not_found"),
        409: json(NotClaimableSchema, `not_claimable, with details.reason: ${Object.entries(NOT_CLAIMABLE).map(([reason, why]) => `${reason} (${why})`).join(", ")}`),
        ...refusals,
      },
    }),
    claimNext: createRoute({
      method: "post",
      path: "/v1/queues/{queue}/claim",
      tags: [LEASES_TAG.name],
      operationId: "claimNext",
      summary: "Claim the next due jobs of a queue: highest priority first, then due longest; with waitMs, wait for one while none is due (a long poll)",
      request: { params: QueueParam, ...requestBody(ClaimNextBody(limits)) },
      responses: { 200: json(ClaimNextAnswer, "The leases taken; empty when nothing is due (or came within waitMs). Short because of the queue's rate limit, retryAfterMs says when the next token is due"), ...refusals },
    }),
    renew: createRoute({
      method: "post",
      path: "/v1/jobs/{id}/renew",
      tags: [LEASES_TAG.name],
      operationId: "renewLease",
      summary: "Extend the current lease, and store the progress it reports",
      request: { params: IdParam, ...requestBody(RenewBody(limits)) },
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
      tags: [LEASES_TAG.name],
      operationId: "completeLease",
      summary: "Store the result of the current lease; the same completion again answers 200 again. With next, also lease the next due jobs of the queue",
      request: { params: IdParam, ...requestBody(CompleteBody(limits)) },
      responses: {
        200: json(z.object({ job: JobSchema, leases: takenLeases }), "The job, done; with next, the leases taken"),
        404: error("not_found"),
        409: error("stale_lease: the stored result is untouched"),
        ...refusals,
      },
    }),
    release: createRoute({
      method: "post",
      path: "/v1/jobs/{id}/release",
      tags: [LEASES_TAG.name],
      operationId: "releaseLease",
      summary: "Give the lease back; the job is claimable at once and its fence stays",
      request: { params: IdParam, ...requestBody(ReleaseBody) },
      responses: {
        200: json(z.object({ job: JobSchema }), "The job, released"),
        404: error("not_found"),
        409: error("stale_lease"),
        ...refusals,
      },
    }),
    fail: createRoute({
      method: "post",
      path: "/v1/jobs/{id}/fail",
      tags: [LEASES_TAG.name],
      operationId: "failLease",
      summary: "End the current lease as a failed attempt: the job is due again later, or dead after its last attempt",
      request: { params: IdParam, ...requestBody(FailBody(limits)) },
      responses: {
        200: json(z.object({ job: JobSchema, leases: takenLeases }), "The job, queued again (status scheduled) or dead; with next, the leases taken"),
        404: error("not_found"),
        409: error("stale_lease"),
        ...refusals,
      },
    }),
    renewMany: createRoute({
      method: "post",
      path: "/v1/leases/renew",
      tags: [LEASES_TAG.name],
      operationId: "renewLeases",
      summary: `One heartbeat for many leases: extend each of 1 to ${MAX_MANY} leases of one owner, each decided alone`,
      request: requestBody(RenewManyBody(limits)),
      responses: { 200: json(RenewManyAnswer, "Each lease, in order: its new until, or the error a single renew would answer"), ...refusals },
    }),
    completeMany: createRoute({
      method: "post",
      path: "/v1/leases/complete",
      tags: [LEASES_TAG.name],
      operationId: "completeLeases",
      summary: `Complete 1 to ${MAX_MANY} leases of one owner, each decided alone; with next, also lease the next due jobs of a queue`,
      request: requestBody(CompleteManyBody(limits)),
      responses: { 200: json(CompleteManyAnswer, "Each completion, in order: done, or the error a single complete would answer; and the leases taken"), ...refusals },
    }),
    lease: createRoute({
      method: "get",
      path: "/v1/jobs/{id}/lease",
      tags: [LEASES_TAG.name],
      operationId: "checkLease",
      summary: "Whether (owner, fence) is the job's current lease: for a downstream system to check a token before a side effect",
      request: { params: IdParam, query: LeaseQuery },
      responses: {
        200: json(
          z.object({
            current: z.boolean(),
            fence: z.number().int(),
            until: z.number().int(),
            reason: z.enum(["superseded", "not_owner", "done", "cancelled", "expired"]).optional().openapi({ description: "When not current: why, as a stale write with this lease would be told (details.reason of stale_lease)" }),
            supersededBy: z.string().optional().openapi({ description: "With reason cancelled, when an enqueue with supersede cancelled the job: the job that superseded it" }),
          }),
          "The answer, with the job's current fence; when not current, the reason",
        ),
        404: error("not_found"),
        ...refusals,
      },
    }),
  };
}

/** Serves the lease routes on `app`. */
export function serveLeases(app: Api, route: ReturnType<typeof leaseRoutes>, { store, clock, waits, wake }: Served): void {
  app.openapi(route.claim, async (c) => {
    const { owner, ttlMs } = c.req.valid("json");
    await c.get("permit").job("work", c.req.valid("param").id);
    return c.json(leaseView(await store.claim(c.req.valid("param").id, { owner, ttlMs, now: clock() })), 200);
  });

  app.openapi(route.claimNext, async (c) => {
    const { owner, ttlMs, limit = 1, waitMs = 0 } = c.req.valid("json");
    const queue = c.req.valid("param").queue;
    const permit = c.get("permit");
    permit.need("work", queue);
    if (waitMs === 0) return c.json(claimedView(answered(await store.claimNext(queue, { owner, ttlMs, limit, now: clock() }), 0), false), 200);
    const claimed = await permit.whileValid(c.req.raw.signal, (signal) => waits.claimNext({ queue, owner, ttlMs, limit, waitMs }, signal), (answer) => answer.leases.length > 0);
    return c.json(claimedView(claimed, true), 200);
  });

  app.openapi(route.renew, async (c) => {
    const { owner, fence, ttlMs, progress } = c.req.valid("json");
    await c.get("permit").job("work", c.req.valid("param").id);
    return c.json(await store.renew(c.req.valid("param").id, { owner, fence, ttlMs, progress, now: clock() }), 200);
  });

  app.openapi(route.complete, async (c) => {
    const { owner, fence, result, next } = c.req.valid("json");
    await c.get("permit").job("work", c.req.valid("param").id);
    const settled = await store.complete(c.req.valid("param").id, { owner, fence, result: check.json("result", result)!, next, now: clock() });
    wake.finished([settled.job.id]);
    afterAnswer(c, wake.ended([settled.job.queue], owner));
    return c.json(settledView(settled, next), 200);
  });

  app.openapi(route.release, async (c) => {
    const { owner, fence } = c.req.valid("json");
    await c.get("permit").job("work", c.req.valid("param").id);
    const now = clock();
    const job = await store.release(c.req.valid("param").id, { owner, fence, now });
    afterAnswer(c, wake.settled(job, owner));
    return c.json({ job: jobView(job) }, 200);
  });

  app.openapi(route.fail, async (c) => {
    const { owner, fence, error, retryInMs, next } = c.req.valid("json");
    await c.get("permit").job("work", c.req.valid("param").id);
    const now = clock();
    const settled = await store.fail(c.req.valid("param").id, { owner, fence, error, retryInMs, next, now });
    afterAnswer(c, wake.settled(settled.job, owner));
    return c.json(settledView(settled, next), 200);
  });

  app.openapi(route.renewMany, async (c) => {
    const { owner, ttlMs, leases } = c.req.valid("json");
    const permit = c.get("permit");
    permit.needRole("work", "renew leases");
    check.distinctIds("leases", leases);
    const hidden = await permit.hidden(leases.map((lease) => lease.id));
    const renewed = await store.renewMany({ owner, ttlMs, leases: leases.filter((lease) => !hidden.has(lease.id)), now: clock() });
    return c.json({ leases: unseenAsUnknown(leases, hidden, renewed).map(outcomeView) }, 200);
  });

  app.openapi(route.completeMany, async (c) => {
    const { owner, leases, next } = c.req.valid("json");
    const permit = c.get("permit");
    permit.needRole("work", "complete leases");
    if (next !== undefined) permit.need("work", next.queue);
    check.distinctIds("leases", leases);
    const hidden = await permit.hidden(leases.map((lease) => lease.id));
    const results = leases.map(({ result }, i) => check.json(`leases[${i}].result`, result)!); // indexed as sent, hidden ones included
    const completions = leases.flatMap(({ id, fence }, i) => (hidden.has(id) ? [] : [{ id, fence, result: results[i]! }]));
    const { completed: seen, leases: taken, ended } = await store.completeMany({ owner, leases: completions, next, now: clock() });
    const completed = unseenAsUnknown(leases, hidden, seen);
    wake.finished(completed.flatMap((outcome) => ("done" in outcome ? [outcome.id] : [])));
    afterAnswer(c, wake.ended(ended, owner));
    return c.json({ completed: completed.map(outcomeView), leases: taken.map(leaseView) }, 200);
  });

  app.openapi(route.lease, async (c) => {
    const { owner, fence } = c.req.valid("query");
    await c.get("permit").job("read", c.req.valid("param").id);
    return c.json(await store.leaseCheck(c.req.valid("param").id, { owner, fence, now: clock() }), 200);
  });
}
