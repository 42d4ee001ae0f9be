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

/** The refusals every API route may answer. */
export const refusals = {
  400: error("invalid_request: the request breaks a rule; the message says which"),
  401: error("unauthorized: a missing or wrong bearer token"),
  403: error("forbidden: the token's role or queues do not allow this call; the message names the role and queue it needs"),
  413: error("payload_too_large: the body is over the limit"),
  503: error("unavailable: the database cannot be reached; retry after Retry-After seconds"),
};

/** The {id} of a job's path. */
export const IdParam = z.object({ id: JobId.openapi({ param: { name: "id", in: "path" } }) });
/** The {queue} of a queue's path. */
export const QueueParam = z.object({ queue: QueueName.openapi({ param: { name: "queue", in: "path" } }) });

/** A request body of JSON with this shape; optional when `required` is false. */
export const requestBody = <T extends z.ZodType>(shape: T, required = true) => ({
  body: { content: { "application/json": { schema: shape } }, required },
});
