import type { z } from "@hono/zod-openapi";
import type * as jobs from "../http/jobs.ts";
import type * as keySchema from "../http/keys.ts";
import type * as leases from "../http/leases.ts";
import type * as pushSchema from "../http/push.ts";
import type * as queueSchema from "../http/queues.ts";
import type * as scheduleSchema from "../http/schedules.ts";
import type * as searchSchema from "../http/search.ts";
import type * as seriesSchema from "../http/series.ts";
import type * as shapes from "../http/shapes.ts";
import type * as stepSchema from "../http/steps.ts";
import type * as tokenSchema from "../http/tokens.ts";

// The client's request and response types, taken from the schemas that the
// server validates with, so that the two cannot drift apart.

type Routes = ReturnType<typeof jobs.jobRoutes> & ReturnType<typeof searchSchema.searchRoutes> & ReturnType<typeof leases.leaseRoutes> & ReturnType<typeof stepSchema.stepRoutes>;

/** What a route answers with the given status, as its definition in src/http/ says. */
type Answer<Route extends keyof Routes, Status extends 200 | 201> = Routes[Route]["responses"] extends {
  [S in Status]: { content: { "application/json": { schema: infer Body extends z.ZodType } } };
}
  ? z.output<Body>
  : never;

/**
 * A job as the API shows it. `Payload` and `Result` say what its payload and
 * its result hold (default unknown: the server takes any JSON). They are the
 * caller's word, not checked: a payload or result read back has been through
 * JSON (a Date comes back a string).
 */
export type Job<Payload = unknown, Result = unknown> = Omit<z.infer<typeof shapes.JobSchema>, "payload" | "result"> & {
  payload: Payload;
  /** What the job's last completion stored; null until it is done. */
  result: Result | null;
};
/** Where a job is in its life: queued, scheduled (due later), leased, done, dead or cancelled. */
export type JobStatus = Job["status"];
/** A lease: its fence, its expiry and the job it holds (whose payload is a `Payload`). */
export type Lease<Payload = unknown> = Omit<z.infer<typeof shapes.LeaseSchema>, "job"> & { job: Job<Payload> };
/** One entry of a job's history: an accepted transition, or a refused write with a lease. */
export type JobEvent = z.infer<typeof jobs.EventSchema>;
/** One queue's numbers: jobs by status, the oldest due job's age, refused stale writes. */
export type QueueStats = z.infer<typeof queueSchema.QueueStatsSchema>;
/** A queue's settings: whether it is paused, its maxLeased, and its rate limit, ratePerSecond with burst (null: no limit); per key, maxLeasedPerKey, keyRatePerSecond with keyBurst, orderedByKey and fairByKey. */
export type QueueSettings = z.infer<typeof queueSchema.QueueSettingsSchema>;
/** The query of `GET /v1/queues/:queue/keys`, as the server reads it: the last key of the page before, and how many keys (1 to 1000, default 100). */
export type KeysRequest = z.output<typeof keySchema.KeysQuery>;
/** What `GET /v1/queues/:queue/keys` answers: a page of the queue's keys that have open jobs, in key order, each with its waiting jobs, current leases and why it holds jobs back; and the cursor of the next (null on the last). */
export type KeyPage = z.output<ReturnType<typeof keySchema.keyRoutes>["listKeys"]["responses"][200]["content"]["application/json"]["schema"]>;
/** The query of `GET /v1/queues/:queue/series`: `from` and `to` (ms since the epoch) and `step` (ms, whole minutes). */
export type SeriesRequest = z.output<typeof seriesSchema.SeriesQuery>;
/** What `GET /v1/queues/:queue/series` answers: a point a step of what the queue did, with its range and where its keeping begins. */
export type Series = z.output<ReturnType<typeof seriesSchema.seriesRoutes>["series"]["responses"][200]["content"]["application/json"]["schema"]>;
/** What a queue did in one step: its counts, and its completed jobs' wait and run quantiles. */
export type SeriesPoint = z.infer<typeof seriesSchema.SeriesPointSchema>;
/** The body of `PUT /v1/queues/:queue`. */
export type QueueSettingsRequest = z.input<typeof queueSchema.QueueSettingsBody>;
/** The body of `POST /v1/jobs`. */
export type EnqueueRequest = z.input<typeof jobs.EnqueueBody>;
/** The body of `POST /v1/jobs/:id/claim`. */
export type ClaimRequest = z.input<ReturnType<typeof leases.ClaimBody>>;
/** The body of `POST /v1/queues/:queue/claim`. */
export type ClaimNextRequest = z.input<ReturnType<typeof leases.ClaimNextBody>>;
/** What `POST /v1/queues/:queue/claim` answers: the leases, with waitMs how long the server waited before taking them, and when the rate limit stopped it short, when the next token is due. */
export type ClaimNextAnswer<Payload = unknown> = Omit<Answer<"claimNext", 200>, "leases"> & { leases: Lease<Payload>[] };
/** What `claimNext` answers: the leases taken; when the queue's rate limit stopped the claim short, `retryAfterMs` says in how many ms its next token is due. */
export type ClaimedLeases<Payload = unknown> = Lease<Payload>[] & { retryAfterMs?: number };
/** The body of `POST /v1/jobs/:id/renew`. */
export type RenewRequest = z.input<ReturnType<typeof leases.RenewBody>>;
/** The body of `POST /v1/jobs/:id/complete`. */
export type CompleteRequest = z.input<ReturnType<typeof leases.CompleteBody>>;
/** The body of `POST /v1/jobs/:id/steps/:name`: the lease, and the step's result (any JSON value). */
export type StepRequest = z.input<typeof stepSchema.StepBody>;
/** A step as recorded: its name, its result, the fence of the lease that recorded it, and when. */
export type Step = z.infer<typeof stepSchema.StepSchema>;
/** What `POST /v1/jobs/:id/steps/:name` answers: whether this call recorded the step (false: it was recorded before), and the step as recorded. */
export type StepAnswer = Answer<"step", 201>;
/** What `POST /v1/jobs/:id/cancel` answers: the job, cancelled, and whether this cancel changed it (false: it already was). */
export type Cancelled = Answer<"cancel", 200>;
/** The body of `POST /v1/jobs/:id/cancel`: who cancels (default "api") and why. */
export type CancelRequest = z.input<typeof jobs.CancelBody>;
/** The body of `POST /v1/jobs/:id/release`. */
export type ReleaseRequest = z.input<typeof leases.ReleaseBody>;
/** The body of `POST /v1/jobs/:id/fail`. */
export type FailRequest = z.input<ReturnType<typeof leases.FailBody>>;
/** One job of `POST /v1/queues/:queue/jobs`. */
export type NewJobRequest = z.input<typeof jobs.EnqueueManyBody>["jobs"][number];
/** What `POST /v1/queues/:queue/jobs` answers for each job, in order; a job not created for its dedup key names the job that holds it. */
export type Enqueued = { id: string; created: boolean; deduplicated?: true; duplicateOf?: string };
/** What `POST /v1/jobs` answers: created (with supersede, the job it cancelled, or null); or not, with the job its id or dedup key stands for; or the id of the purged job that holds the key's window. */
export type EnqueueAnswer =
  | { created: true; job: Job; superseded?: string | null }
  | { created: false; job: Job; deduplicated?: true; debounced?: true }
  | { created: false; deduplicated: true; id: string };
/** An enqueue without a dedup key: its answer always holds the job. */
export type PlainEnqueueRequest = EnqueueRequest & { dedupKey?: undefined };
/** What complete and fail ask to take next in the same transaction: up to `limit` due jobs of the same queue. */
export type NextRequest = z.input<ReturnType<typeof leases.NextBody>>;
/** A job whose lease complete or fail ended, and the leases taken when `next` was asked. */
export type Settled = { job: Job; leases: Lease[] };
/** The body of `POST /v1/leases/renew`. */
export type RenewManyRequest = z.input<ReturnType<typeof leases.RenewManyBody>>;
/** What `POST /v1/leases/renew` answers: each lease, in order, with its new `until` or its `error`. */
export type RenewManyAnswer = z.output<typeof leases.RenewManyAnswer>;
/** The body of `POST /v1/leases/complete`. */
export type CompleteManyRequest = z.input<ReturnType<typeof leases.CompleteManyBody>>;
/** What `POST /v1/leases/complete` answers: each completion, in order, done or with its `error`; and the leases taken. */
export type CompleteManyAnswer = z.output<typeof leases.CompleteManyAnswer>;
/** The query of `GET /v1/jobs`, as the server reads it (numbers as numbers). */
export type ListRequest = z.output<typeof searchSchema.ListQuery>;
/** The query of `GET /v1/jobs/:id/events`, as the server reads it. */
export type EventsRequest = z.output<typeof jobs.EventsQuery>;
/** The query of `GET /v1/jobs/:id/lease`, as the server reads it. */
export type LeaseCheckRequest = z.output<typeof leases.LeaseQuery>;
/** What `POST /v1/jobs/bulk` takes: the action, the filter of the jobs it is asked of, a limit, a cursor, and dryRun. */
export type BulkRequest = z.input<typeof searchSchema.BulkBody>;
/** What `POST /v1/jobs/bulk` answers: how many jobs matched, how many it changed, those it skipped by reason, and the cursor to go on from (null once done). */
export type BulkAnswer = Answer<"bulk", 200>;
/** What `GET /v1/jobs` answers: a page of jobs, and the cursor of the next (null on the last). */
export type JobPage = Answer<"list", 200>;
/** What `GET /v1/jobs/:id/events` answers: a page of events, oldest first, and the cursor of the next. */
export type EventPage = Answer<"events", 200>;
/** What `GET /v1/jobs/:id/lease` answers: whether the lease is current, with the job's fence and lease end. */
export type LeaseCheck = Answer<"lease", 200>;
/** A recurring schedule: when it fires (cron in a time zone, or everyMs), and the job each fire enqueues. */
export type Schedule = z.infer<typeof scheduleSchema.ScheduleSchema>;
/** The body of `PUT /v1/schedules/:name`: the queue, exactly one of cron and everyMs, and the jobs' fields. */
export type ScheduleRequest = z.input<typeof scheduleSchema.ScheduleBody>;
/** A queue's push settings: where its jobs are POSTed, the timeout, maxInFlight, and whether a rotation's two secrets sign them. */
export type PushSettings = z.infer<typeof pushSchema.PushSettingsSchema>;
/** The push settings with the secret, as the first set and each rotation answer them, once. */
export type PushSettingsWithSecret = PushSettings & { secret: string };
/** The body of `PUT /v1/queues/:queue/push`. */
export type PushRequest = z.input<typeof pushSchema.PushBody>;
/** An API token as anyone may see it (never its secret): its id, name, role and queues (names, prefixes ending in `*`, or `["*"]`). */
export type Token = z.infer<typeof tokenSchema.TokenSchema>;
/** A token just made: a Token with its secret (`token`), shown this once. */
export type CreatedToken = z.infer<typeof tokenSchema.CreatedTokenSchema>;
/** The body of `POST /v1/tokens`: a role, the queues, and a name if wanted. */
export type TokenRequest = z.input<typeof tokenSchema.CreateTokenBody>;
/** What `GET /v1/tokens/self` answers: the calling token's role and queues (id and name null for a FENCELEASE_TOKENS token). */
export type TokenSelf = z.infer<typeof tokenSchema.TokenSelfSchema>;
