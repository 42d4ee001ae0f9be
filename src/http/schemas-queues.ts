import { z } from "@hono/zod-openapi";
import { STATUSES } from "../store/sql/lease.ts";
import { MAX_BURST, MAX_RATE_PER_SECOND } from "../store/shapes.ts";
import { body, positive } from "./schemas.ts";

// The shapes of a queue as the API shows it: its numbers (GET /v1/stats) and
// its settings (pause, resume, PUT and GET /v1/queues).

/** A queue's numbers: its jobs by status, the oldest due job's age, its refused stale writes, and whether it is paused. */
export const QueueStatsSchema = z
  .object({
    queue: z.string(),
    jobs: z.record(z.enum(STATUSES), z.number().int()),
    oldestDueAgeMs: z.number().int().nullable(),
    refused: z.object({ lastHour: z.number().int(), total: z.number().int() }),
    paused: z.boolean().openapi({ description: "Whether the queue is paused: claims hand out none of its jobs" }),
  })
  .openapi("QueueStats");

/** A queue's settings: whether it is paused, at most how many current leases it may have, and its rate limit (null: no limit). */
export const QueueSettingsSchema = z
  .object({
    queue: z.string(),
    paused: z.boolean(),
    maxLeased: z.number().int().nullable().openapi({ description: "At most this many current leases in the queue at once; null: no limit" }),
    ratePerSecond: z.number().nullable().openapi({ description: "The rate limit: tokens added to the queue's bucket a second, one spent per lease handed out; null: no rate limit" }),
    burst: z.number().int().nullable().openapi({ description: "The most tokens the bucket holds: leases handed out at once after an idle spell; null without a rate limit" }),
  })
  .openapi("QueueSettings");

/** What PUT /v1/queues/{queue} sets, all at once: maxLeased, and ratePerSecond with burst; null or absent for none. */
export const QueueSettingsBody = body({
  maxLeased: positive().nullable().optional().openapi({ description: "At most this many current leases at once, decided in the claim; null or absent: no limit" }),
  ratePerSecond: z.number({ error: (issue) => (issue.input === undefined ? "is required" : "must be a number") })
    .gt(0, { error: "must be above 0" }).max(MAX_RATE_PER_SECOND, { error: `must be at most ${MAX_RATE_PER_SECOND}` }).nullable().optional()
    .openapi({ description: `Leases handed out per second, on average, by a token bucket decided in the claim (above 0, at most ${MAX_RATE_PER_SECOND}, in steps of 0.001); null or absent: no rate limit` }),
  burst: positive(MAX_BURST).nullable().optional()
    .openapi({ description: "The most tokens the bucket holds (leases at once after an idle spell); needs ratePerSecond; default max(1, ceil(ratePerSecond))" }),
}).openapi("QueueSettingsBody");
