import { createRoute, z } from "@hono/zod-openapi";
import { KEPT_MINUTES, MAX_SERIES_POINTS } from "../store/series.ts";
import { BUCKET_EDGES_MS } from "../store/sql/series.ts";
import { type Api, json, QueueParam, refusals, type Served } from "./resource.ts";
import { query, queryInstant, queryInt } from "./shapes.ts";
import { QUEUES_TAG } from "./queues.ts";

// What a queue did over time (docs/operations.md#series): its counts and its
// wait and run quantiles, step by step, from the minutes and hours the store
// keeps (src/store/series.ts).

/** The most a step may be: 30 days, the hours' keeping. */
const MAX_STEP_MS = KEPT_MINUTES[60] * 60_000;

/** How many of a step's completed jobs a time was measured for, and its quantiles. */
const QuantilesSchema = z
  .object({
    count: z.number().int(),
    p50: z.number().int().nullable(),
    p90: z.number().int().nullable(),
    p99: z.number().int().nullable(),
  })
  .openapi("Quantiles", {
    description: `Milliseconds, estimated from buckets whose edges are ${BUCKET_EDGES_MS.join(", ")} ms (spread evenly within a bucket; an hour or more reads 3600000); null when count is 0`,
  });

/** What a queue did in one step. */
export const SeriesPointSchema = z
  .object({
    at: z.number().int().openapi({ description: "The step's start (ms since the epoch)" }),
    enqueued: z.number().int().openapi({ description: "Jobs enqueued" }),
    completed: z.number().int().openapi({ description: "Jobs completed" }),
    failed: z.number().int().openapi({ description: "Failed leases whose job will be tried again" }),
    expired: z.number().int().openapi({ description: "Expired leases whose job will be tried again" }),
    dead: z.number().int().openapi({ description: "Jobs that died: their last attempt failed or expired" }),
    refused: z.number().int().openapi({ description: "Writes refused from stale leases" }),
    wait: QuantilesSchema.openapi({ description: "How long the step's completed jobs waited, from due to the claim that completed them" }),
    run: QuantilesSchema.openapi({ description: "How long the step's completed jobs ran, from that claim to their completion" }),
  })
  .openapi("SeriesPoint");

/** The query of GET /v1/queues/{queue}/series. */
export const SeriesQuery = query({
  from: queryInstant().optional().openapi({ description: "The first step holds this time (ms since the epoch); default 59 steps before `to`" }),
  to: queryInstant().optional().openapi({ description: "The last step holds this time; default now" }),
  step: queryInt(MAX_STEP_MS).optional().openapi({
    description: `Milliseconds a step, a whole number of minutes; default 60000. A whole number of hours reads the hours (kept 30 days), else the minutes (kept 24 hours). At most ${MAX_SERIES_POINTS} steps`,
  }),
});

/** The series routes. */
export function seriesRoutes() {
  return {
    series: createRoute({
      method: "get",
      path: "/v1/queues/{queue}/series",
      tags: [QUEUES_TAG.name],
      operationId: "getQueueSeries",
      summary: "What a queue did, step by step: jobs enqueued, completed, failed, expired and dead, refused writes, and its completed jobs' wait and run quantiles",
      request: { params: QueueParam, query: SeriesQuery },
      responses: {
        200: json(
          z.object({
            queue: z.string(),
            step: z.number().int(),
            from: z.number().int().openapi({ description: "The first step's start: `from` as asked, aligned down to the step" }),
            to: z.number().int(),
            keptFrom: z.number().int().openapi({ description: "Before this time nothing is kept at this step: steps there answer zeros" }),
            points: z.array(SeriesPointSchema).openapi({ description: "A point a step, oldest first, steps with nothing in them as zeros" }),
          }),
          "The queue's series",
        ),
        ...refusals,
      },
    }),
  };
}

/** Serves the series routes on `app`. */
export function serveSeries(app: Api, route: ReturnType<typeof seriesRoutes>, { store, clock }: Served): void {
  app.openapi(route.series, async (c) => {
    const { queue } = c.req.valid("param");
    c.get("permit").need("read", queue);
    return c.json(await store.queues.series(queue, { ...c.req.valid("query"), now: clock() }), 200);
  });
}
