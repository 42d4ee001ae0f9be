import { z } from "@hono/zod-openapi";
import { MAX_NAME_BYTES, MIN_EVERY_MS } from "../store/schedule-times.ts";
import { utf8Bytes } from "../store/validate.ts";
import { body, integer, label, positive, QueueName } from "./schemas.ts";

// The request and response shapes of the schedule routes. What needs the cron
// library (a cron expression, a time zone) and which of cron and everyMs is
// given are checked by the store (src/store/schedule-times.ts), whose refusals say
// which field is wrong, so the rules live in one place.


/** A schedule's name: a job id's rules, without "@", short enough that `{name}@{fire time}` is a job id. */
export const ScheduleName = label()
  .refine((value) => !value.includes("@"), { error: `must not contain "@", which separates the name from the fire time in its jobs' ids` })
  .refine((value) => utf8Bytes(value) <= MAX_NAME_BYTES, { error: `must be at most ${MAX_NAME_BYTES} bytes of UTF-8, so that its jobs' ids ({name}@{fire time}) fit in 255` })
  .openapi({ example: "nightly-report" });

/** A recurring schedule: when it fires, and the job each fire enqueues. */
export const ScheduleSchema = z
  .object({
    name: z.string(),
    queue: z.string(),
    cron: z.string().nullable().openapi({ description: "Five fields, read in timezone; null for an everyMs schedule" }),
    everyMs: z.number().int().nullable().openapi({ description: "Fires every everyMs from createdAt; null for a cron schedule" }),
    timezone: z.string().nullable().openapi({ description: "The IANA time zone of the cron; null for an everyMs schedule" }),
    payload: z.unknown(),
    priority: z.number().int(),
    maxAttempts: z.number().int(),
    nextFireAt: z.number().int().nullable().openapi({ description: "The next fire not yet enqueued (ms since the epoch); null when a cron has no time left" }),
    lastFireAt: z.number().int().nullable().openapi({ description: "The last fire; null before the first" }),
    lastFireTaken: z.boolean().openapi({ description: "Whether the last fire found its job's id ({name}@{fire time}) taken by a job already there, and so enqueued nothing" }),
    createdAt: z.number().int(),
    updatedAt: z.number().int(),
  })
  .openapi("Schedule");

/** What PUT /v1/schedules/{name} creates or replaces: exactly one of cron and everyMs. */
export const ScheduleBody = body({
  queue: QueueName,
  cron: z.string({ error: "must be a string" }).max(256, { error: "must be at most 256 characters" }).optional()
    .openapi({ example: "0 9 * * 1-5", description: "Five fields: minute hour day-of-month month day-of-week (names and @daily-style nicknames too), read in timezone" }),
  everyMs: integer().min(MIN_EVERY_MS, { error: `must be at least ${MIN_EVERY_MS} (a second)` }).optional()
    .openapi({ description: `Or: fire every this many ms (at least ${MIN_EVERY_MS}), from the schedule's creation` }),
  timezone: z.string({ error: "must be a string" }).optional()
    .openapi({ example: "Europe/Paris", description: 'The IANA time zone the cron is read in; default "UTC"; with cron only' }),
  payload: z.unknown().optional().openapi({ description: "Any JSON value, the payload of every job it enqueues" }),
  priority: integer().optional().openapi({ description: "Every job's priority; default 0" }),
  maxAttempts: positive().optional().openapi({ description: "Every job's maxAttempts; default 25" }),
}).openapi("ScheduleBody");
