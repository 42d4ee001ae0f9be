import { createRoute, z } from "@hono/zod-openapi";
import { prometheusText, type RequestMetrics } from "./metrics.ts";
import { type Api, error, internalError, json, refusals, type Served, unavailable } from "./resource.ts";
import { serveFile, type StaticFile, staticFile } from "./static-file.ts";

// What the server says of itself: whether writes can succeed (/healthz), its
// numbers for Prometheus (/metrics), the OpenAPI document of every route
// (/openapi.json), and where to start (/).

/** The package's version, as its package.json says (a test keeps the two equal): the OpenAPI document's and the index's. */
const VERSION = "0.1.0";

/** The tag of these routes in the OpenAPI document. */
const SYSTEM_TAG = { name: "system", description: "The server itself: whether writes can succeed now, and its numbers for Prometheus." };

/** The system routes. */
export function systemRoutes() {
  return {
    metrics: createRoute({
      method: "get",
      path: "/metrics",
      tags: [SYSTEM_TAG.name],
      operationId: "getMetrics",
      summary: "The same numbers as /v1/stats, the push deliveries of the pushed queues, and a histogram of the requests and their latency by route, in Prometheus text format",
      responses: {
        200: { content: { "text/plain": { schema: z.string() } }, description: "Prometheus exposition format 0.0.4" },
        ...refusals,
      },
    }),
    health: createRoute({
      method: "get",
      path: "/healthz",
      tags: [SYSTEM_TAG.name],
      operationId: "getHealth",
      summary: "Whether writes can succeed now; needs no token",
      security: [],
      responses: {
        200: json(z.object({ ok: z.literal(true) }), "Writes can succeed: the last one did, or a probe write that changes nothing did"),
        403: error("forbidden: with auth off, a caller from another host or site"),
        500: internalError,
        503: unavailable("unavailable: writes are failing or stuck; details.reason says why (read_only, corrupt, full, io, busy, timeout, stuck...)"),
      },
    }),
  };
}

/**
 * Serves the system routes on `app`, the OpenAPI document of every route
 * mounted on it, and the index at GET /: a browser goes on to the dashboard
 * (when the app has `pages`), anyone else gets where the API is described.
 */
export function serveSystem(app: Api, route: ReturnType<typeof systemRoutes>, { store, clock, waits }: Served, { pages, tags, requests }: { pages: boolean; tags: Tag[]; requests: RequestMetrics }): void {
  app.openapi(route.metrics, async (c) => {
    const permit = c.get("permit");
    const [queues, push] = await Promise.all([store.stats({ now: clock() }), store.push.stats({ now: clock() })]);
    const sees = (stats: { queue: string }) => permit.sees(stats.queue);
    // The request histogram names routes by their patterns, never a queue: every token that may read /metrics sees it whole.
    return c.text(prometheusText(queues.filter(sees), { push: push.filter(sees), requests, waiting: waits.waiting?.() }), 200, { "Content-Type": "text/plain; version=0.0.4" });
  });

  app.openapi(route.health, async (c) => {
    const health = await store.health();
    if (health.ok) return c.json({ ok: true as const }, 200);
    const details = { reason: health.reason, ...(health.outcome && { outcome: health.outcome }) };
    return c.json({ error: { code: "unavailable", message: health.message, details } }, 503, { "Retry-After": "1" });
  });

  const index = { name: "fencelease", version: VERSION, openapi: "/openapi.json", ...(pages && { docs: "/docs", dashboard: "/ui" }), health: "/healthz" };
  app.get("/", (c) => {
    // A browser asks for text/html first; a client such as curl asks for */* or JSON.
    if (pages && /\btext\/html\b/i.test(c.req.header("Accept") ?? "")) return c.redirect("/ui", 302);
    return c.json(index, 200);
  });

  app.openAPIRegistry.registerComponent("securitySchemes", "bearer", { type: "http", scheme: "bearer" });
  // Built on its first request, when every route is mounted, and then served from memory: generating it takes milliseconds.
  let document: Promise<StaticFile> | undefined;
  app.get("/openapi.json", async (c) => {
    document ??= staticFile(new TextEncoder().encode(JSON.stringify(openApiDocument(app, [...tags, SYSTEM_TAG]))), "application/json");
    return serveFile(c.req.raw, await document, { "Cache-Control": "no-cache" });
  });
}

/** A tag of the OpenAPI document: the resource its operations belong to. */
export type Tag = { name: string; description: string };

/** The OpenAPI 3.1 document of every route mounted on `app`, its operations grouped by these tags. */
function openApiDocument(app: Api, tags: Tag[]) {
  return app.getOpenAPI31Document({
    openapi: "3.1.0",
    info: { title: "fencelease", version: VERSION, description: "Leases with fencing tokens: a stale worker never overwrites a newer result." },
    // Relative: the server that serves this document, wherever it is reached.
    servers: [{ url: "/", description: "This server" }],
    tags,
    security: [{ bearer: [] }],
  });
}
