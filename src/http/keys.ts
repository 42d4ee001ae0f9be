import { createRoute, z } from "@hono/zod-openapi";
import { MAX_KEYS_PAGE } from "../store/key-stats.ts";
import { MAX_COUNTED_OPEN } from "../store/sql/key-reads.ts";
import { type Api, json, QueueParam, refusals, type Served } from "./resource.ts";
import { query, queryInt } from "./shapes.ts";
import { QUEUES_TAG } from "./queues.ts";

// A queue's keys (docs/queues.md#keys): which have open jobs, how many each
// has waiting and leased, and why a key holds jobs back. The store reads them
// in src/store/sql/key-reads.ts.

/** A key of a queue with open jobs, and what it has. */
export const KeyStatsSchema = z
  .object({
    key: z.string(),
    waiting: z.number().int().openapi({ description: `Its jobs open and not currently leased: queued or scheduled, let in or held back (a key with more than ${MAX_COUNTED_OPEN} open jobs counts ${MAX_COUNTED_OPEN})` }),
    leased: z.number().int().openapi({ description: "Its current leases" }),
    heldBack: z.enum(["key_full", "key_ordered", "key_rate_limited"]).nullable().openapi({
      description: "Why it holds jobs back now: key_full, its maxLeasedPerKey current leases; key_ordered, an ordered queue whose job of the key let in is leased or waits for its retry or run time, while later ones wait; key_rate_limited, no whole token in its bucket; null: nothing of it waits, or nothing holds it back",
    }),
  })
  .openapi("KeyStats");

/** The query of GET /v1/queues/{queue}/keys. */
export const KeysQuery = query({
  limit: queryInt(MAX_KEYS_PAGE).optional().openapi({ type: "integer", description: `1 to ${MAX_KEYS_PAGE}; default 100` }),
  // The store checks it as it checks a key (1 to 255 bytes of UTF-8, printable): a 400 names it.
  cursor: z.string().optional().openapi({ description: "nextCursor of the page before (the last key it had)" }),
});

/** The key routes. */
export function keyRoutes() {
  return {
    listKeys: createRoute({
      method: "get",
      path: "/v1/queues/{queue}/keys",
      tags: [QUEUES_TAG.name],
      operationId: "listQueueKeys",
      summary: "A queue's keys that have open jobs, in key order, one page at a time: each with its waiting jobs, its current leases, and why it holds jobs back",
      request: { params: QueueParam, query: KeysQuery },
      responses: {
        200: json(z.object({ keys: z.array(KeyStatsSchema), nextCursor: z.string().nullable() }), "A page of keys"),
        ...refusals,
      },
    }),
  };
}

/** Serves the key routes on `app`. */
export function serveKeys(app: Api, route: ReturnType<typeof keyRoutes>, { store, clock }: Served): void {
  app.openapi(route.listKeys, async (c) => {
    const { queue } = c.req.valid("param");
    c.get("permit").need("read", queue);
    const page = await store.queues.keys(queue, { ...c.req.valid("query"), now: clock() });
    return c.json({ keys: page.keys, nextCursor: page.next }, 200);
  });
}
