import type { MiddlewareHandler } from "hono";
import { ApiError } from "../api-error.ts";

// JSON.parse reads every number as a double, so an integer beyond ±2^53 comes
// out rounded and 1e400 as Infinity (stored as null): a payload or result
// would change without a word. This refuses such a body instead, naming the
// field, before any route sees it.

/** A body worth the closer look: a run of 16 or more digits, or an exponent of three digits. */
const SUSPECT = /\d{16}|[eE][+-]?\d{3}/;

/** Stands in, after parsing, for a number that was not read exactly. */
const INEXACT = Symbol("inexact number");

/** Whether the number written as `source` was read as `value` exactly; a decimal fraction or an exponent asks for a double anyway. */
function exact(value: number, source: string | undefined): boolean {
  if (!Number.isFinite(value)) return false;
  if (source === undefined || !/^-?\d+$/.test(source)) return true; // without the source text (older runtimes) only Infinity is caught
  return BigInt(source) === BigInt(value);
}

/** The path to the first INEXACT in a parsed value, or null. */
function pathTo(value: unknown, path: (string | number)[] = []): (string | number)[] | null {
  if (value === INEXACT) return path;
  if (value === null || typeof value !== "object") return null;
  for (const [key, inner] of Object.entries(value)) {
    const found = pathTo(inner, [...path, Array.isArray(value) ? Number(key) : key]);
    if (found) return found;
  }
  return null;
}

/** Refuses (400) a JSON body holding a number that JSON.parse could not read exactly, naming its field. */
export function exactNumbers(): MiddlewareHandler {
  return async function exactNumbers(c, next) {
    if (!/^application\/json/i.test(c.req.header("Content-Type") ?? "")) return next();
    const text = await c.req.text(); // kept by Hono for the route's own parse
    if (!SUSPECT.test(text)) return next();
    let parsed: unknown;
    try {
      parsed = JSON.parse(text, (_key, value, context?: { source?: string }) => (typeof value === "number" && !exact(value, context?.source) ? INEXACT : value));
    } catch {
      return next(); // not JSON: the route's validator says so
    }
    const path = pathTo(parsed);
    if (path) throw new ApiError(400, "invalid_request", `${path.join(".")} is a number that cannot be kept exactly (an integer beyond ±2^53, or too large for a double); send it as a string`);
    await next();
  };
}
