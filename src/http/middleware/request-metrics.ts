import type { MiddlewareHandler } from "hono";
import type { RequestMetrics } from "../metrics.ts";
import { knownMethod, routePattern } from "../route-pattern.ts";

/** Counts every request in `metrics` (/metrics): its method, route pattern, status class and how long it took to answer. */
export function requestMetrics(metrics: RequestMetrics): MiddlewareHandler {
  return async function requestMetrics(c, next) {
    const started = performance.now();
    await next();
    metrics.observe(knownMethod(c), routePattern(c), c.res.status, (performance.now() - started) / 1000);
  };
}
