import type { NotFoundHandler } from "hono";
import { ApiError } from "../api-error.ts";

/**
 * Answers a request that no route took: 405 with an Allow header when the path
 * is known under other methods, else 404 route_not_found.
 */
export function unknownRoute(known: readonly { method: string; path: string }[]): NotFoundHandler {
  // "/v1/jobs/{id}/claim" matches any one path segment where "{id}" stands.
  const patterns = known.map(({ method, path }) => ({
    method: method.toUpperCase(),
    pattern: new RegExp(`^${path.replace(/\{[^/]+\}/g, "[^/]+")}$`),
  }));
  return function unknownRoute(c) {
    const allowed = patterns.filter(({ pattern }) => pattern.test(c.req.path)).map(({ method }) => method);
    if (allowed.length > 0) {
      const message = `${c.req.method} is not allowed on ${c.req.path}; use ${allowed.join(" or ")}`;
      throw new ApiError(405, "method_not_allowed", message, { Allow: allowed.join(", ") });
    }
    throw new ApiError(404, "route_not_found", `no route ${c.req.method} ${c.req.path}; see /openapi.json`);
  };
}
