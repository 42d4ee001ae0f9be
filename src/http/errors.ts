import type { Context } from "hono";
import { HTTPException } from "hono/http-exception";
import { InvalidArgument, LeaseLost, NotClaimable, NotFound, ScheduleNameTaken, StepLimit, StorageUnavailable, WrongStatus } from "../store/errors.ts";
import { MigrationChanged, MigrationFailed } from "../store/migrate.ts";
import { ApiError } from "./api-error.ts";

/** The body of every error response. */
export type ErrorBody = { error: { code: string; message: string; details?: Record<string, unknown> } };

type Described = {
  status: 400 | 401 | 403 | 404 | 405 | 409 | 413 | 500 | 503;
  code: string;
  message: string;
  details?: Record<string, unknown>;
  headers?: Record<string, string>;
};

/** The seconds a client should wait before retrying a request the database could not serve. */
const RETRY_AFTER_SECONDS = "1";

/**
 * Every error the app can meet, turned into its status, code and message.
 * Anything unexpected is a plain 500 that shows nothing of the internals.
 */
export function describeError(error: unknown): Described {
  if (error instanceof ApiError) return error;
  if (error instanceof InvalidArgument) return { status: 400, code: error.code, message: error.message };
  if (error instanceof NotFound) return { status: 404, code: error.code, message: error.message };
  if (error instanceof NotClaimable || error instanceof LeaseLost || error instanceof WrongStatus) {
    return { status: 409, code: error.code, message: error.message, details: error.details };
  }
  // A job's limit on its steps: what the step would add is too large for it, as a body over the limit is.
  if (error instanceof StepLimit) return { status: 413, code: error.code, message: error.message, details: error.details };
  if (error instanceof ScheduleNameTaken) return { status: 409, code: error.code, message: error.message };
  if (error instanceof StorageUnavailable) {
    return { status: 503, code: error.code, message: error.message, details: error.details, headers: { "Retry-After": RETRY_AFTER_SECONDS } };
  }
  // The schema could not be brought up to date (the Worker migrates its D1 before serving): nothing is served until it is.
  // Retry-After as every 503 has it: an operator's fix is awaited, so a minute.
  if (error instanceof MigrationChanged) return { status: 503, code: error.code, message: error.message, details: { migration: error.migration }, headers: { "Retry-After": "60" } };
  if (error instanceof MigrationFailed) {
    const message = `migration ${error.migration} failed, and nothing of it was applied: see the server's log`;
    return { status: 503, code: "migration_failed", message, details: { migration: error.migration }, headers: { "Retry-After": "60" } };
  }
  // Hono's own refusals of a body: malformed JSON (400), or none where one is required (415).
  if (error instanceof HTTPException && error.status === 400) {
    return { status: 400, code: "invalid_request", message: "the body is not valid JSON" };
  }
  if (error instanceof HTTPException && error.status === 415) {
    return { status: 400, code: "invalid_request", message: "send the body as JSON, with the header Content-Type: application/json" };
  }
  return { status: 500, code: "internal_error", message: "internal error" };
}

/** An error's status, headers and JSON body; logs what was not expected. */
function answerOf(error: unknown): { status: Described["status"]; headers?: Record<string, string>; body: ErrorBody } {
  const { status, code, message, details, headers } = describeError(error);
  if (status === 500) console.error("fencelease: unexpected error", error);
  return { status, headers, body: { error: { code, message, ...(details && { details }) } } };
}

/** The one error handler: maps domain errors to HTTP, and logs what it did not expect. */
export function errorResponse(error: unknown, c: Context): Response {
  const { status, headers, body } = answerOf(error);
  return c.json(body, status, headers);
}

/** The answer errorResponse gives, for code that answers outside the app (a queue's object in objects mode). */
export function errorAnswer(error: unknown): Response {
  const { status, headers, body } = answerOf(error);
  return Response.json(body, { status, headers });
}
