import type { MiddlewareHandler } from "hono";

/** Writes one line per request: method, path, status and milliseconds. Never headers, so never a token. */
export function requestLog(write: (line: string) => void): MiddlewareHandler {
  return async function requestLog(c, next) {
    const started = performance.now();
    await next();
    write(`${c.req.method} ${c.req.path} ${c.res.status} ${Math.round(performance.now() - started)}ms`);
  };
}
