import { z } from "@hono/zod-openapi";
import { hasUnprintable } from "./printable.ts";
import { STATUSES } from "../store/sql/lease.ts";
import { MAX_PROGRESS_BYTES, MAX_REASON_BYTES, utf8Bytes } from "../store/validate.ts";
import { MAX_TRACESTATE, traceparentFault, tracestateFault } from "../tracing/trace-context.ts";

// The request and response shapes of the API. The same schemas validate every
// request, generate the OpenAPI document and type the client.

/** What the operator may tune; the defaults suit most deployments. */
export type Limits = {
  /** The largest request body accepted, in bytes; default 1 MiB. */
  maxBodyBytes: number;
  /** The longest lease a claim or renew may ask for, in ms; default 1 hour. */
  maxTtlMs: number;
};

/** The limits used where none are given. */
export const DEFAULT_LIMITS: Limits = { maxBodyBytes: 1024 * 1024, maxTtlMs: 60 * 60 * 1000 };

const utf8 = new TextEncoder();

// Messages name no field: the validation hook puts the field's path before each.

/** A non-empty string of at most 255 bytes of UTF-8: an id, an owner, a queue name. */
export function label() {
  return z
    .string({ error: (issue) => (issue.input === undefined ? "is required" : "must be a string") })
    .min(1, { error: "must not be empty" })
    .refine((value) => utf8.encode(value).byteLength <= 255, { error: "must be at most 255 bytes of UTF-8" })
    // A NUL would be cut off by SQLite, a lone surrogate would become U+FFFD, and
    // "." or ".." would be rewritten by every URL parser on the way to /v1/jobs/:id.
    .refine((value) => !value.includes("\u0000") && value.isWellFormed(), { error: "must be well-formed text without NUL characters" })
    // Control characters would reach logs and terminals; ids, owners and queues never need them.
    .refine((value) => !hasUnprintable(value), { error: "must not contain control characters (U+0000 to U+001F, U+007F to U+009F) or bidirectional overrides" })
    .refine((value) => value !== "." && value !== "..", { error: 'must not be "." or ".."' });
}

export function integer() {
  return z
    .number({ error: (issue) => (issue.input === undefined ? "is required" : "must be a number") })
    .int({ error: "must be a whole number" })
    .min(Number.MIN_SAFE_INTEGER, { error: "must be a safe integer" })
    .max(Number.MAX_SAFE_INTEGER, { error: "must be a safe integer" });
}

export function positive(max = Number.MAX_SAFE_INTEGER) {
  return integer().min(1, { error: "must be at least 1" }).max(max, { error: `must be at most ${max}` });
}

function instant() {
  return integer().min(0, { error: "must be milliseconds since the epoch, not negative" });
}

/** A JSON object body that refuses fields it does not know, and says which ones it knows. */
export function body<T extends Record<string, z.ZodType>>(shape: T) {
  const known = Object.keys(shape).join(", ");
  return z.strictObject(shape, {
    error: (issue) =>
      issue.code === "unrecognized_keys"
        ? `unknown field ${issue.keys.map((key) => JSON.stringify(key)).join(", ")}; the fields are ${known}`
        : issue.input === null || typeof issue.input !== "object" || Array.isArray(issue.input)
          ? "the body must be a JSON object"
          : undefined,
  });
}

export const JobId = label().openapi({ example: "invoice-42" });
export const Owner = label().openapi({ example: "worker-a" });
export const QueueName = label().openapi({ example: "default" });
export const Fence = positive().openapi({ example: 1, description: "The fencing token of the lease" });
export const Ttl = (limits: Limits) =>
  positive(limits.maxTtlMs).openapi({ example: 30_000, description: "How long the lease lasts, in ms" });

/** A job as the API shows it: `result` is the JSON value that completed it. */
export const JobSchema = z
  .object({
    id: z.string(),
    queue: z.string(),
    payload: z.unknown(),
    priority: z.number().int(),
    runAt: z.number().int(),
    owner: z.string().nullable(),
    until: z.number().int(),
    fence: z.number().int(),
    result: z.unknown(),
    done: z.boolean(),
    status: z.enum(STATUSES),
    attempts: z.number().int(),
    maxAttempts: z.number().int(),
    lastError: z.string().nullable(),
    progress: z.unknown().openapi({ description: "The JSON value a current lease last reported with a renew, or null; kept when the lease ends" }),
    traceparent: z.string().nullable().openapi({ description: "The W3C traceparent the job was enqueued with (its producer's span), or null: a worker continues that trace" }),
    tracestate: z.string().nullable().openapi({ description: "The W3C tracestate that came with the traceparent, or null" }),
    createdAt: z.number().int(),
    updatedAt: z.number().int(),
  })
  .openapi("Job");

export const LeaseSchema = z
  .object({ fence: z.number().int(), until: z.number().int(), job: JobSchema })
  .openapi("Lease");

export const ErrorSchema = z
  .object({
    error: z.object({
      code: z.string().openapi({ example: "stale_lease" }),
      message: z.string(),
      details: z.record(z.string(), z.unknown()).optional(),
    }),
  })
  .openapi("Error");

/** The fields of one job to enqueue, the queue apart. */
const newJob = {
  id: JobId,
  payload: z.unknown().optional().openapi({ description: "Any JSON value, handed to the worker" }),
  priority: integer().optional().openapi({ description: "Higher is claimed first; default 0" }),
  runAt: instant().optional().openapi({ description: "Not claimed by claim-next before this time (ms since the epoch)" }),
  delayMs: integer().min(0, { error: "must not be negative" }).optional().openapi({ description: "Or: due this many ms from now" }),
  maxAttempts: positive().optional(),
  traceparent: z
    .string({ error: "must be a string" })
    .refine((value) => traceparentFault(value) === null, { error: (issue) => `${traceparentFault(issue.input as string)} (W3C Trace Context)` })
    .optional()
    .openapi({
      example: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
      description: "The W3C traceparent of the producer's span, handed back with every lease of the job; default the request's traceparent header (docs/traces.md)",
    }),
  tracestate: z
    .string({ error: "must be a string" })
    .refine((value) => tracestateFault(value) === null, { error: (issue) => `${tracestateFault(issue.input as string)} (W3C Trace Context)` })
    .optional()
    .openapi({ maxLength: MAX_TRACESTATE, description: "The W3C tracestate that goes with traceparent; only with it" }),
};

const oneOfRunAtOrDelay = [
  (job: { runAt?: number; delayMs?: number }) => job.runAt === undefined || job.delayMs === undefined,
  { error: "give runAt or delayMs, not both" },
] as const;

const tracestateOnlyWithTraceparent = [
  (job: { traceparent?: string; tracestate?: string }) => job.tracestate === undefined || job.traceparent !== undefined,
  { error: "needs a traceparent: the spec gives a tracestate no meaning without one", path: ["tracestate"] },
] as [(job: { traceparent?: string; tracestate?: string }) => boolean, { error: string; path: string[] }];

export const EnqueueBody = body({ ...newJob, queue: QueueName.optional() }).refine(...oneOfRunAtOrDelay).refine(...tracestateOnlyWithTraceparent);

/** The most jobs or leases one many-job call carries. */
export const MAX_MANY = 1_000;

/** A list of 1 to MAX_MANY entries in which no id comes twice. */
function many<T extends z.ZodType<{ id: string }>>(entry: T, what: string) {
  return z
    .array(entry, { error: (issue) => (issue.input === undefined ? "is required" : `must be an array of ${what}`) })
    .min(1, { error: `must hold at least one of the ${what}` })
    .max(MAX_MANY, { error: `must hold at most ${MAX_MANY} ${what}; send the rest in another call` })
    .superRefine((entries, context) => {
      const seen = new Set<string>();
      entries.forEach((entry, i) => {
        if (seen.has(entry.id)) context.addIssue({ code: "custom", path: [i, "id"], message: `repeats the id ${JSON.stringify(entry.id)}; each id may come once` });
        seen.add(entry.id);
      });
    });
}

export const EnqueueManyBody = body({
  jobs: many(body(newJob).refine(...oneOfRunAtOrDelay).refine(...tracestateOnlyWithTraceparent), "jobs").openapi({ description: `1 to ${MAX_MANY} jobs, enqueued in one transaction` }),
});

export const ClaimBody = (limits: Limits) => body({ owner: Owner, ttlMs: Ttl(limits) });

/** The longest a request may wait: for a job (claim-next) or for a result (a job's read). */
export const MAX_WAIT_MS = 30_000;

/** How long a request may wait, 0 (no wait, the default) to MAX_WAIT_MS. */
function waitMs() {
  return integer().min(0, { error: "must not be negative" }).max(MAX_WAIT_MS, { error: `must be at most ${MAX_WAIT_MS}` }).optional();
}

export const ClaimNextBody = (limits: Limits) =>
  body({
    owner: Owner,
    ttlMs: Ttl(limits),
    limit: positive(100).optional().openapi({ description: "How many jobs to take at most, 1 to 100; default 1" }),
    waitMs: waitMs().openapi({ description: `With no due job, wait up to this many ms (0 to ${MAX_WAIT_MS}) for one before answering; default 0, no wait` }),
  });

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

/** What a renew may report: any JSON value of at most MAX_PROGRESS_BYTES as JSON text, stored on the job only if the renew is accepted. */
const progressField = z
  .unknown()
  .refine((value) => value === undefined || utf8Bytes(JSON.stringify(value)) <= MAX_PROGRESS_BYTES, {
    error: (issue) => `must be at most ${MAX_PROGRESS_BYTES} bytes as JSON, got ${utf8Bytes(JSON.stringify(issue.input))}; keep the details elsewhere and report a summary`,
  })
  .optional()
  .openapi({ description: `Any JSON value of at most ${MAX_PROGRESS_BYTES} bytes as JSON: stored as the job's progress if, and only if, the renew is accepted; absent keeps what is stored` });

export const RenewBody = (limits: Limits) => body({ owner: Owner, fence: Fence, ttlMs: Ttl(limits), progress: progressField });

/** What a cancel answers: the job, and whether this cancel changed it (false: it was already cancelled). */
export const CancelAnswer = z.object({ job: JobSchema, changed: z.boolean() }).openapi("CancelAnswer");

/** What a cancel says: who cancels (default "api") and why. */
export const CancelBody = body({
  by: label().optional().openapi({ example: "ops-console", description: 'Who cancels, recorded in the cancelled event; default "api"' }),
  reason: z
    .string({ error: "must be a string" })
    .refine((value) => utf8Bytes(value) <= MAX_REASON_BYTES, { error: `must be at most ${MAX_REASON_BYTES} bytes of UTF-8` })
    .optional()
    .openapi({ description: "Why, recorded in the cancelled event (its error)" }),
});

const resultField = z.unknown().refine((value) => value !== undefined, { error: "is required: any JSON value" });

export const CompleteBody = (limits: Limits) => body({ owner: Owner, fence: Fence, result: resultField, next: NextBody(limits).optional() });

export const ReleaseBody = body({ owner: Owner, fence: Fence });

const YEAR_MS = 365 * 24 * 60 * 60 * 1000;

export const FailBody = (limits: Limits) =>
  body({
    owner: Owner,
    fence: Fence,
    error: z.string({ error: (issue) => (issue.input === undefined ? "is required" : "must be a string") }).max(10_000, { error: "must be at most 10000 characters" })
      .openapi({ description: "Why the attempt failed; kept as the job's lastError" }),
    retryInMs: integer().min(0, { error: "must not be negative" }).max(YEAR_MS, { error: `must be at most ${YEAR_MS} (a year)` }).optional()
      .openapi({ description: "Due again this many ms from now; default the backoff (1 s doubling per attempt, capped at 1 hour, with jitter)" }),
    next: NextBody(limits).optional(),
  });

export const RenewManyBody = (limits: Limits) =>
  body({
    owner: Owner,
    ttlMs: Ttl(limits),
    leases: many(body({ id: JobId, fence: Fence, progress: progressField }), "leases").openapi({ description: `1 to ${MAX_MANY} leases, each renewed or refused alone, each with the progress it reports, if any` }),
  });

export const CompleteManyBody = (limits: Limits) =>
  body({
    owner: Owner,
    leases: many(body({ id: JobId, fence: Fence, result: resultField }), "leases").openapi({ description: `1 to ${MAX_MANY} completions, each accepted or refused alone` }),
    next: body({ queue: QueueName, limit: positive(100), ttlMs: Ttl(limits) }).optional()
      .openapi({ description: "Also lease up to `limit` due jobs of `queue` to the same owner, in the same transaction" }),
  });

/** A number sent as a query parameter. */
const queryInt = (max: number) =>
  z.string().regex(/^\d+$/, { error: "must be a whole number" }).transform(Number).pipe(z.number().min(1, { error: "must be at least 1" }).max(max, { error: `must be at most ${max}` }));

/** The query of a listing that refuses parameters it does not know. */
function query<T extends Record<string, z.ZodType>>(shape: T) {
  const known = Object.keys(shape).join(", ");
  return z.strictObject(shape, { error: (issue) => (issue.code === "unrecognized_keys" ? `unknown query parameter ${issue.keys.map((key) => JSON.stringify(key)).join(", ")}; the parameters are ${known}` : undefined) });
}

export const ListQuery = query({
  queue: QueueName.optional(),
  status: z.enum(STATUSES, { error: `must be one of ${STATUSES.join(", ")}` }).optional(),
  limit: queryInt(100).optional().openapi({ type: "integer", description: "1 to 100; default 50" }),
  cursor: z.string().optional().openapi({ description: "nextCursor of the page before" }),
});

export const EventsQuery = query({
  limit: queryInt(1000).optional().openapi({ type: "integer", description: "1 to 1000; default 100" }),
  cursor: z.string().regex(/^\d+$/, { error: "must be the nextCursor of the page before" }).optional(),
});

export const JobQuery = query({
  waitMs: z.string().regex(/^\d+$/, { error: "must be a whole number" }).transform(Number).pipe(z.number().max(MAX_WAIT_MS, { error: `must be at most ${MAX_WAIT_MS}` })).optional()
    .openapi({ type: "integer", description: `Wait up to this many ms (0 to ${MAX_WAIT_MS}) for the job to be done, dead or cancelled, then answer it as it is; default 0` }),
});

export const LeaseQuery = query({
  owner: Owner,
  fence: z.string({ error: (issue) => (issue.input === undefined ? "is required" : "must be a string") }).regex(/^\d+$/, { error: "must be a whole number" }).transform(Number)
    .pipe(z.number().min(1, { error: "must be at least 1" }).max(Number.MAX_SAFE_INTEGER, { error: "must be a safe integer" }))
    .openapi({ type: "integer" }),
});

export const EventSchema = z
  .object({
    seq: z.number().int(),
    jobId: z.string(),
    queue: z.string(),
    at: z.number().int(),
    kind: z.string().openapi({ description: "enqueued, claimed, renewed, completed, released, failed, expired, dead, retried, cancelled, deleted, or refused" }),
    action: z.string().nullable(),
    owner: z.string().nullable().openapi({ description: "Who acted; of a refusal, the owner presented; of a cancel, who cancelled (by)" }),
    fence: z.number().int().nullable(),
    currentOwner: z.string().nullable(),
    currentFence: z.number().int().nullable(),
    error: z.string().nullable().openapi({ description: "Why: of a failure, an expiry or a death; of a cancel, the reason given" }),
    progress: z.unknown().openapi({ description: "renewed: the job's progress after the latest renew of the lease; other events null" }),
    count: z.number().int().openapi({ description: "How many times it happened: the renews of one lease, or the same stale lease refused again, are one event" }),
    lastAt: z.number().int().openapi({ description: "When it last happened; at is the first time" }),
  })
  .openapi("Event");

/** How one lease of a many-lease call was refused: the code and details a single call would answer. */
export const LeaseErrorSchema = z.object({ code: z.string(), message: z.string(), details: z.record(z.string(), z.unknown()).optional() });

export const RenewManyAnswer = z
  .object({ leases: z.array(z.union([z.object({ id: z.string(), until: z.number().int() }), z.object({ id: z.string(), error: LeaseErrorSchema })])) })
  .openapi("RenewManyAnswer");

export const CompleteManyAnswer = z
  .object({
    completed: z.array(z.union([z.object({ id: z.string(), done: z.literal(true) }), z.object({ id: z.string(), error: LeaseErrorSchema })])),
    leases: z.array(LeaseSchema),
  })
  .openapi("CompleteManyAnswer");
