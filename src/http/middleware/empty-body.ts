import type { MiddlewareHandler } from "hono";

/**
 * For a route whose body is optional: an empty body is no body, whatever its
 * Content-Type. Many clients send `Content-Type: application/json` on every
 * POST; without this the route's validator would parse "" and answer that the
 * body is not valid JSON.
 */
export function emptyBodyIsNone(): MiddlewareHandler {
  return async function emptyBodyIsNone(c, next) {
    // Hono keeps the text it read, so the route reads a body that is there without a second pass over the stream.
    if (c.req.header("Content-Type") !== undefined && (await c.req.text()) === "") {
      const headers = new Headers(c.req.raw.headers);
      headers.delete("Content-Type");
      c.req.raw = new Request(c.req.raw.url, { method: c.req.method, headers, signal: c.req.raw.signal });
    }
    await next();
  };
}
