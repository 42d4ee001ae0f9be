import type { MiddlewareHandler } from "hono";
import { ApiError } from "../api-error.ts";
import { inexactNumberPath } from "../../store/exact-numbers.ts";
import { MAX_JSON_DEPTH, textNestsDeeper } from "../../json/depth.ts";

// A JSON body's text, checked once before any route parses it, with the same
// answer on every runtime: first how deep it nests (src/json/depth.ts:
// nothing after this recurses deeper than that), then whether JSON.parse reads
// its numbers exactly (src/store/exact-numbers.ts).

/** How deep a route's own fields hold a JSON value: POST /v1/queues/{queue}/jobs's `{ jobs: [ { payload } ] }`, the deepest. */
const ENVELOPE_DEPTH = 3;

/**
 * The most levels of arrays and objects a request body may nest: a JSON value
 * one level deeper than MAX_JSON_DEPTH in the deepest route's fields. Such a
 * value, and any value deeper than MAX_JSON_DEPTH in a shallower place, is
 * refused by the store's check, which names its field; a body deeper still,
 * by this one, before anything parses it.
 */
export const MAX_BODY_DEPTH = MAX_JSON_DEPTH + ENVELOPE_DEPTH + 1;

/** A media type that the routes' validators parse as JSON: application/json, or application/...+json. */
const JSON_TYPE = /^\s*application\/([\w.-]+\+)?json\s*(;|$)/i;

/**
 * Refuses (400) a JSON body that nests more than MAX_BODY_DEPTH levels, or
 * holds a number JSON.parse could not read exactly (naming its field).
 */
export function checkJsonBody(): MiddlewareHandler {
  return async function checkJsonBody(c, next) {
    if (!JSON_TYPE.test(c.req.header("Content-Type") ?? "")) return next();
    const text = await c.req.text(); // kept by Hono for the route's own parse
    if (textNestsDeeper(text, MAX_BODY_DEPTH)) {
      throw new ApiError(400, "invalid_request", `the body must nest at most ${MAX_BODY_DEPTH} levels of arrays and objects (a payload, result or progress at most ${MAX_JSON_DEPTH}); flatten it, or send its deep part as a string`);
    }
    const path = inexactNumberPath(text);
    if (path) throw new ApiError(400, "invalid_request", `${path.join(".")} is a number that cannot be kept exactly (an integer beyond ±2^53, or too large for a double); send it as a string`);
    await next();
  };
}
