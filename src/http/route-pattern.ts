import type { Context } from "hono";
import { matchedRoutes } from "hono/route";

/** The route of a request whose path matched none: one label however many paths are tried. */
export const UNMATCHED = "(unmatched)";

const METHODS = new Set(["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]);

/**
 * The route a request was matched to, as its pattern ("/v1/jobs/:id"), never
 * its path, so that a span's name and a metric's labels stay few: the last
 * matched route registered for a method (app.use's middleware match every
 * method), which is the handler that answered, or that would have had a
 * middleware not answered first (a 401). UNMATCHED for a path of no route.
 */
export function routePattern(c: Context): string {
  const routes = matchedRoutes(c);
  for (let i = routes.length - 1; i >= 0; i--) if (routes[i]!.method !== "ALL") return routes[i]!.path;
  return UNMATCHED;
}

/** The request's method, or "_OTHER" for one no route has (as OpenTelemetry's HTTP conventions say), so a caller cannot add labels at will. */
export function knownMethod(c: Context): string {
  return METHODS.has(c.req.method) ? c.req.method : "_OTHER";
}
