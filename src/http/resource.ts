import type { OpenAPIHono } from "@hono/zod-openapi";
import { z } from "@hono/zod-openapi";
import type { LeaseStore } from "../store/store.ts";
import type { Waits } from "../wait/long-poll.ts";
import { ErrorSchema, JobId, type Limits, QueueName } from "./shapes.ts";
import type { wakeWith } from "../wait/wake.ts";

// What a resource file (jobs.ts, leases.ts, queues.ts, schedules.ts, system.ts)
// is built from: the helpers its route definitions use, and what its handlers
// are served with.

/** The app every resource mounts its routes on. */
export type Api = OpenAPIHono;

/** What every handler may use: the store, the server's clock, where requests with waitMs wait, what writes ring, and the limits in force. */
export type Served = {
  store: LeaseStore;
  clock: () => number;
  waits: Waits;
  wake: ReturnType<typeof wakeWith>;
  limits: Limits;
};

/** An answer of JSON with this shape. */
export const json = <T extends z.ZodType>(body: T, description: string) => ({
  content: { "application/json": { schema: body } },
  description,
});

/** An error answer, described by its code. */
export const error = (description: string) => json(ErrorSchema, description);

/** The Retry-After header every 503 carries (src/http/errors.ts, the auth's and the stop's refusals): whole seconds to wait before trying again. */
export const RETRY_AFTER = {
  "Retry-After": { description: "Whole seconds to wait before trying again", required: true, schema: { type: "integer" as const, minimum: 0 } },
};

/** The answer of a 503: unavailable, and when to try again. */
export const unavailable = (description: string) => ({ ...error(description), headers: RETRY_AFTER });

/** The answer nobody expects: something failed that the server did not foresee (nothing of it is shown; it is logged). */
export const internalError = error("internal_error: the server failed in a way it did not foresee; nothing of it is shown, and it is logged");

/** The refusals every API route may answer, and the 500 no route means to. */
export const refusals = {
  400: error("invalid_request: the request breaks a rule; the message says which"),
  401: {
    ...error("unauthorized: a missing or wrong bearer token"),
    headers: { "WWW-Authenticate": { description: 'The scheme to authenticate with: Bearer realm="fencelease"', required: true, schema: { type: "string" as const } } },
  },
  403: error("forbidden: the token's role or queues do not allow this call; the message names the role and queue it needs"),
  413: error("payload_too_large: the body is over the limit"),
  500: internalError,
  503: unavailable("unavailable: the database cannot be reached (or no token is configured, or the server is stopping); migration_changed or migration_failed: the Worker cannot bring its database's schema up to date. Retry after Retry-After seconds"),
};

/** The {id} of a job's path. */
export const IdParam = z.object({ id: JobId.openapi({ param: { name: "id", in: "path" } }) });
/** The {queue} of a queue's path. */
export const QueueParam = z.object({ queue: QueueName.openapi({ param: { name: "queue", in: "path" } }) });

/** A request body of JSON with this shape; optional when `required` is false. */
export const requestBody = <T extends z.ZodType>(shape: T, required = true) => ({
  body: { content: { "application/json": { schema: shape } }, required },
});
