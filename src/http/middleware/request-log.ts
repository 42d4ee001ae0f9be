import type { MiddlewareHandler } from "hono";
import { printable } from "../../store/printable.ts";

/** Writes one line per request: method, path (control characters escaped), status and milliseconds. Never headers, so never a token. */
export function requestLog(write: (line: string) => void): MiddlewareHandler {
  return async function requestLog(c, next) {
    const started = performance.now();
    await next();
    write(`${printable(c.req.method)} ${printable(c.req.path)} ${c.res.status} ${Math.round(performance.now() - started)}ms`);
  };
}
