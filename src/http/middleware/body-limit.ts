import type { MiddlewareHandler } from "hono";
import { bodyLimit } from "hono/body-limit";
import { ApiError } from "../api-error.ts";

/**
 * Refuses (413) a body over `maxBytes`. A request that says its length is
 * judged by its Content-Length alone, without touching the body: Hono's
 * bodyLimit reads `request.body`, which makes @hono/node-server build a full
 * web Request and stream for every POST (a few hundred µs, more than the
 * lease's SQL) instead of reading the body straight from the socket. A body
 * sent in chunks, with no length, is counted as it streams by Hono's bodyLimit.
 */
export function limitBody(maxBytes: number): MiddlewareHandler {
  const tooLarge = () => {
    // The rest of the body is never read, so this connection cannot carry another request: say so.
    throw new ApiError(413, "payload_too_large", `the body must be at most ${maxBytes} bytes`, { Connection: "close" });
  };
  const counted = bodyLimit({ maxSize: maxBytes, onError: tooLarge });
  return async function limitBody(c, next) {
    if (c.req.method === "GET" || c.req.method === "HEAD") return next();
    const length = c.req.header("Content-Length");
    if (length === undefined || c.req.header("Transfer-Encoding") !== undefined) return counted(c, next);
    if (!/^\d+$/.test(length) || Number(length) > maxBytes) tooLarge();
    await next();
  };
}
