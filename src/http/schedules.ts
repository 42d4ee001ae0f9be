import { createRoute, z } from "@hono/zod-openapi";
import { MAX_NAME_BYTES, MIN_EVERY_MS } from "../store/schedule-times.ts";
import { utf8Bytes } from "../store/validate.ts";
import { NotFound } from "../store/errors.ts";
import type { Schedule } from "../store/schedules.ts";
import { ApiError } from "./api-error.ts";
import type { Permit } from "./permit.ts";
import { type Api, error, json, refusals, requestBody, type Served } from "./resource.ts";
import { anyJson, body, integer, jsonValueRules, Key, label, labelPattern, positive, printablePattern, QueueName, textOfAtMost } from "./shapes.ts";

// The schedules: each fire (cron in a time zone, or everyMs) enqueues one job;
// the fires themselves are the maintenance's work, not a request's. What needs
// the cron library (a cron expression, a time zone) and which of cron and
// everyMs is given are checked by the store (src/store/schedule-times.ts), whose
// refusals say which field is wrong, so the rules live in one place.

/** A schedule's name: a job id's rules, without "@", short enough that `{name}@{fire time}` is a job id. */
const ScheduleName = label()
  .refine((value) => !value.includes("@"), { error: `must not contain "@", which separates the name from the fire time in its jobs' ids` })
  .refine((value) => utf8Bytes(value) <= MAX_NAME_BYTES, { error: `must be at most ${MAX_NAME_BYTES} bytes of UTF-8, so that its jobs' ids ({name}@{fire time}) fit in 255` })
  .openapi({
    example: "nightly-report",
    maxLength: MAX_NAME_BYTES,
    pattern: labelPattern("@"),
    description: `A schedule's name: a job id's rules, without "@" and at most ${MAX_NAME_BYTES} bytes of UTF-8 (so that {name}@{fire time} is a job id; maxLength counts characters)`,
  });

/** A recurring schedule: when it fires, and the job each fire enqueues. */
export const ScheduleSchema = z
  .object({
    name: z.string(),
    queue: z.string(),
    cron: z.string().nullable().openapi({ description: "Five fields, read in timezone; null for an everyMs schedule" }),
    everyMs: z.number().int().nullable().openapi({ description: "Fires every everyMs from createdAt; null for a cron schedule" }),
    timezone: z.string().nullable().openapi({ description: "The IANA time zone of the cron; null for an everyMs schedule" }),
    payload: anyJson().openapi({ description: "The payload of every job it enqueues; null without one" }),
    priority: z.number().int(),
    maxAttempts: z.number().int(),
    key: z.string().nullable().openapi({ description: "The key of every job it enqueues (docs/queues.md#keys), or null" }),
    nextFireAt: z.number().int().nullable().openapi({ description: "The next fire not yet enqueued (ms since the epoch); null when a cron has no time left" }),
    lastFireAt: z.number().int().nullable().openapi({ description: "The last fire; null before the first" }),
    lastFireTaken: z.boolean().openapi({ description: "Whether the last fire found its job's id ({name}@{fire time}) taken by a job already there, and so enqueued nothing" }),
    createdAt: z.number().int(),
    updatedAt: z.number().int(),
  })
  .openapi("Schedule");

/** The longest time zone name taken: the longest IANA name has 32 characters. */
const MAX_TIMEZONE_LENGTH = 64;
/** The characters of every time zone name the runtimes know (Europe/Paris, Etc/GMT+5, America/Port-au-Prince, +05:30). */
const TIMEZONE = /^[A-Za-z0-9_+\-/:]+$/;

/** What PUT /v1/schedules/{name} creates or replaces: exactly one of cron and everyMs. */
export const ScheduleBody = body({
  queue: QueueName,
  cron: textOfAtMost(256).optional()
    .openapi({
      example: "0 9 * * 1-5",
      description: "Five fields: minute hour day-of-month month day-of-week (names and @daily-style nicknames too), read in timezone; give cron or everyMs, exactly one. The pattern says its shape; what each field may hold is croner's (the message of a refusal says which)",
      minLength: 1,
      // Five fields between white space, or a nickname: what src/store/schedule-times.ts counts before croner reads it.
      pattern: printablePattern(String.raw`\s*(?:@.*|\S+(?:\s+\S+){4}\s*)$`),
    }),
  everyMs: integer().min(MIN_EVERY_MS, { error: `must be at least ${MIN_EVERY_MS} (a second)` }).optional()
    .openapi({ description: `Or: fire every this many ms (at least ${MIN_EVERY_MS}), from the schedule's creation` }),
  timezone: z.string({ error: "must be a string" })
    .max(MAX_TIMEZONE_LENGTH, { error: `must be at most ${MAX_TIMEZONE_LENGTH} characters` })
    .regex(TIMEZONE, { error: 'must be an IANA time zone name such as "Europe/Paris" (letters, digits and _ + - / :)' })
    .optional()
    .openapi({ example: "Europe/Paris", description: 'The IANA time zone the cron is read in, one this server\'s time zone database knows; default "UTC"; with cron only' }),
  payload: z.unknown().optional().openapi(jsonValueRules("Any JSON value, the payload of every job it enqueues")),
  priority: integer().optional().openapi({ description: "Every job's priority; default 0" }),
  maxAttempts: positive().optional().openapi({ description: "Every job's maxAttempts; default 25" }),
  key: Key.optional(), // every job's key
}).openapi("ScheduleBody", {
  // Exactly one of cron and everyMs; timezone only with cron. The store checks both, and says which field is wrong.
  oneOf: [{ required: ["cron"] }, { required: ["everyMs"] }],
  dependentRequired: { timezone: ["cron"] },
} as object);

const ScheduleParam = z.object({ name: ScheduleName.openapi({ param: { name: "name", in: "path" } }) });

/** The tag of these routes in the OpenAPI document. */
export const SCHEDULES_TAG = { name: "schedules", description: "Recurring schedules: each fire (cron in a time zone, or every everyMs) enqueues one job, {name}@{fire time}." };

/** The schedule routes. */
export function scheduleRoutes() {
  return {
    putSchedule: createRoute({
      method: "put",
      path: "/v1/schedules/{name}",
      tags: [SCHEDULES_TAG.name],
      operationId: "putSchedule",
      summary: "Create or replace a recurring schedule: each fire (cron in a time zone, or everyMs) enqueues the job {name}@{fire time as ISO 8601}; the next fire is the first after now",
      request: { params: ScheduleParam, ...requestBody(ScheduleBody) },
      responses: {
        201: json(ScheduleSchema, "The schedule, created"),
        200: json(ScheduleSchema, "The schedule, replaced (createdAt and lastFireAt kept)"),
        409: error("conflict: the name is taken by a schedule of a queue this token may not see, or was taken by another put meanwhile; nothing changed"),
        ...refusals,
      },
    }),
    getSchedule: createRoute({
      method: "get",
      path: "/v1/schedules/{name}",
      tags: [SCHEDULES_TAG.name],
      operationId: "getSchedule",
      summary: "Read a schedule",
      request: { params: ScheduleParam },
      responses: { 200: json(ScheduleSchema, "The schedule"), 404: error("not_found"), ...refusals },
    }),
    listSchedules: createRoute({
      method: "get",
      path: "/v1/schedules",
      tags: [SCHEDULES_TAG.name],
      operationId: "listSchedules",
      summary: "Every schedule, by name",
      responses: { 200: json(z.object({ schedules: z.array(ScheduleSchema) }), "The schedules"), ...refusals },
    }),
    deleteSchedule: createRoute({
      method: "delete",
      path: "/v1/schedules/{name}",
      tags: [SCHEDULES_TAG.name],
      operationId: "deleteSchedule",
      summary: "Delete a schedule: it never fires again; the jobs it enqueued stay",
      request: { params: ScheduleParam },
      responses: { 204: { description: "Deleted" }, 404: error("not_found"), ...refusals },
    }),
  };
}

/**
 * Where schedule names are held: one name is one schedule in the whole
 * deployment, whatever its queue. `put` runs `write`, the put of `name` into
 * `queue`, with `holder`, the queue whose schedule has the name (null: none):
 * the write checks that the token may take the name from it
 * (needScheduleName) and replaces only a schedule of that queue, so a put of
 * that name by another call meanwhile is refused, never overwritten. By
 * default (storeScheduleNames) the store's one table, keyed by name; in
 * objects mode each queue's object keeps its own schedules and the registry
 * holds the names (src/runtime/cloudflare/registry-schedules.ts).
 */
export type ScheduleNames = {
  put<T>(name: string, queue: string, write: (holder: string | null) => Promise<T>): Promise<T>;
  /** Runs `remove`, the delete of schedule `name` (NotFound when there is none), and lets the name go. */
  delete(name: string, remove: () => Promise<void>): Promise<void>;
};

/** The names of the store's own schedules table: the holder read by name, and a put into another queue moves the row (the table's key is the name). */
export function storeScheduleNames(store: Served["store"]): ScheduleNames {
  return {
    async put(name, _queue, write) {
      const before = await store.schedules.get(name).catch((error: unknown) => (error instanceof NotFound ? null : Promise.reject(error)));
      return write(before?.queue ?? null);
    },
    delete: (_name, remove) => remove(),
  };
}

/**
 * Refuses a put of schedule `name` by a token that may not take the name from
 * `holder`, the queue whose schedule has it (null: none). A schedule's name is
 * one for all queues, like a job's id: that it is taken cannot be hidden, but
 * where can: 409 when the token may not see that queue, 403 when it sees it but
 * may not manage it (a replace, or a move, changes that queue's schedule too).
 */
export function needScheduleName(permit: Permit, name: string, holder: string | null): void {
  if (holder === null) return;
  if (!permit.sees(holder)) throw new ApiError(409, "conflict", `the schedule name ${JSON.stringify(name)} is taken by a schedule of a queue this token may not see; nothing changed: choose another name`);
  permit.need("manage", holder);
}

/** Serves the schedule routes on `app`, over `store.schedules`, their names held by `names`; a fire's jobs are enqueued by the maintenance, not here. */
export function serveSchedules(app: Api, route: ReturnType<typeof scheduleRoutes>, { store, clock }: Served, names: ScheduleNames = storeScheduleNames(store)): void {
  app.openapi(route.putSchedule, async (c) => {
    const { name } = c.req.valid("param");
    const body = c.req.valid("json");
    const permit = c.get("permit");
    permit.need("manage", body.queue);
    const { created, schedule } = await names.put(name, body.queue, async (holder) => {
      needScheduleName(permit, name, holder);
      return store.schedules.put(name, { ...body, now: clock(), replacing: holder });
    });
    return created ? c.json(schedule, 201) : c.json(schedule, 200);
  });

  /** A schedule by name; one of a queue the token may not see is none at all (NotFound), as for jobs. */
  async function visibleSchedule(permit: Permit, name: string): Promise<Schedule> {
    const schedule = await store.schedules.get(name);
    if (!permit.sees(schedule.queue)) throw new NotFound(name, `no schedule has the name ${JSON.stringify(name)}`);
    return schedule;
  }

  app.openapi(route.getSchedule, async (c) => c.json(await visibleSchedule(c.get("permit"), c.req.valid("param").name), 200));

  app.openapi(route.listSchedules, async (c) => {
    const permit = c.get("permit");
    return c.json({ schedules: (await store.schedules.list()).filter((schedule) => permit.sees(schedule.queue)) }, 200);
  });

  app.openapi(route.deleteSchedule, async (c) => {
    const permit = c.get("permit");
    const { name } = c.req.valid("param");
    if (!permit.everywhere("manage")) permit.need("manage", (await visibleSchedule(permit, name)).queue);
    await names.delete(name, () => store.schedules.delete(name));
    return c.body(null, 204);
  });
}
