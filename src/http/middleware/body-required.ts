import type { MiddlewareHandler } from "hono";
import { ApiError } from "../api-error.ts";

/**
 * Refuses (400) a request that sends no body to a route whose body is
 * required, as the OpenAPI document says. A route's validator reads a missing
 * body as `{}`, which a body of optional fields takes: PUT /v1/queues/{queue}
 * with no body at all cleared every limit of the queue.
 */
export function bodyRequired(): MiddlewareHandler {
  return async function bodyRequired(c, next) {
    // A body without a Content-Type is refused by the validator, saying to send JSON; one with it and empty, as not JSON.
    if (c.req.header("Content-Type") === undefined && (await c.req.text()) === "") {
      throw new ApiError(400, "invalid_request", "the body is required: send it as JSON, with the header Content-Type: application/json");
    }
    await next();
  };
}
