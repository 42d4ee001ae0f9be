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

/** The path to the first INEXACT in a parsed value, or null; without recursion, so no depth of nesting overflows the stack. */
function pathTo(value: unknown): (string | number)[] | null {
  type Visit = { value: unknown; key: string | number; parent: Visit | null };
  const stack: Visit[] = [{ value, key: "", parent: null }];
  while (stack.length > 0) {
    const visit = stack.pop()!;
    if (visit.value === INEXACT) {
      const path: (string | number)[] = [];
      for (let at: Visit | null = visit; at?.parent; at = at.parent) path.unshift(at.key);
      return path;
    }
    if (visit.value === null || typeof visit.value !== "object") continue;
    const entries = Object.entries(visit.value);
    // Pushed last to first, so that the first in the document is found first.
    for (let i = entries.length - 1; i >= 0; i--) {
      const [key, inner] = entries[i]!;
      stack.push({ value: inner, key: Array.isArray(visit.value) ? Number(key) : key, parent: visit });
    }
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
    } catch (error) {
      if (error instanceof SyntaxError) return next(); // not JSON: the route's validator says so
      // The reviver recurses once per level, and overflows the stack at a depth
      // that JSON.parse and JSON.stringify still take: let nothing through unchecked.
      throw new ApiError(400, "invalid_request", "the body is nested too deeply for its numbers to be checked; nest it less deeply");
    }
    const path = pathTo(parsed);
    if (path) throw new ApiError(400, "invalid_request", `${path.join(".")} is a number that cannot be kept exactly (an integer beyond ±2^53, or too large for a double); send it as a string`);
    await next();
  };
}
