import { createRoute, z } from "@hono/zod-openapi";
import { STATUSES } from "../store/sql/lease.ts";
import { MAX_BURST, MAX_RATE_PER_SECOND } from "../store/shapes.ts";
import { MAX_LEASED_PER_KEY } from "../store/sql/keys.ts";
import { type Api, json, QueueParam, refusals, requestBody, type Served } from "./resource.ts";
import { body, positive } from "./shapes.ts";
import { afterAnswer } from "./after-answer.ts";

// The queues: their numbers (GET /v1/stats) and their settings (pause, resume,
// limits). A queue's jobs are claimed through leases.ts.

/** A queue's numbers: its jobs by status, the oldest due job's age, its refused stale writes, whether it is paused, and its top keys. */
export const QueueStatsSchema = z
  .object({
    queue: z.string(),
    // Every status, 0 included: an object of them all, so that the document says each is always there.
    jobs: z.object(Object.fromEntries(STATUSES.map((status) => [status, z.number().int()])) as Record<(typeof STATUSES)[number], z.ZodNumber>),
    oldestDueAgeMs: z.number().int().nullable(),
    refused: z.object({ lastHour: z.number().int(), total: z.number().int() }),
    paused: z.boolean().openapi({ description: "Whether the queue is paused: claims hand out none of its jobs" }),
    topKeys: z.array(z.object({ key: z.string(), waiting: z.number().int() }))
      .openapi({ description: "Its keys with the most waiting jobs, most first (docs/queues.md#keys): at most 10, of its first 1,000 keys with open jobs in key order, each counted up to 1,000; [] without keys" }),
  })
  .openapi("QueueStats");

/**
 * A queue's settings: whether it is paused, at most how many current leases
 * it may have, and its rate limit (null: no limit); and those of each key of
 * its jobs, whether a key's jobs run one at a time in order, and whether
 * claim-next takes turns between keys (docs/queues.md#keys).
 */
export const QueueSettingsSchema = z
  .object({
    queue: z.string(),
    paused: z.boolean(),
    maxLeased: z.number().int().nullable().openapi({ description: "At most this many current leases in the queue at once; null: no limit" }),
    ratePerSecond: z.number().nullable().openapi({ description: "The rate limit: tokens added to the queue's bucket a second, one spent per lease handed out; null: no rate limit" }),
    burst: z.number().int().nullable().openapi({ description: "The most tokens the bucket holds: leases handed out at once after an idle spell; null without a rate limit" }),
    maxLeasedPerKey: z.number().int().nullable().openapi({ description: "At most this many current leases of one key at once; null: no limit" }),
    keyRatePerSecond: z.number().nullable().openapi({ description: "Each key's rate limit: tokens added to the key's bucket a second, one spent per lease of its jobs; null: no rate limit per key" }),
    keyBurst: z.number().int().nullable().openapi({ description: "The most tokens a key's bucket holds; null without keyRatePerSecond" }),
    orderedByKey: z.boolean().openapi({ description: "Whether a key's jobs run one at a time, in the order they were enqueued (priority first, then age)" }),
    fairByKey: z.boolean().openapi({ description: "Whether claim-next takes turns between keys: among due jobs of one priority, the key served longest ago first" }),
  })
  .openapi("QueueSettings");

/**
 * The one rule between a bucket's limits, as the store decides it, for the
 * OpenAPI document: a burst that is a number needs a rate that is a
 * number. It is about values, not presence: `{ burst: null }` alone sets no
 * rate limit, and `{ burst: 5, ratePerSecond: null }` asks for a bucket of
 * no rate (which dependentRequired, a rule of presence, would say the reverse of).
 */
const burstNeedsRate = (burst: string, rate: string) => ({
  if: { properties: { [burst]: { type: "integer" } }, required: [burst] },
  then: { properties: { [rate]: { type: "number" } }, required: [rate] },
});

/** burstNeedsRate, of the queue's bucket and of each key's. */
const BURSTS_NEED_RATES = { allOf: [burstNeedsRate("burst", "ratePerSecond"), burstNeedsRate("keyBurst", "keyRatePerSecond")] };

/** A rate of a token bucket, tokens a second: above 0, at most MAX_RATE_PER_SECOND (the store checks the steps of 0.001). */
const rate = () =>
  z.number({ error: (issue) => (issue.input === undefined ? "is required" : "must be a number") })
    .gt(0, { error: "must be above 0" }).max(MAX_RATE_PER_SECOND, { error: `must be at most ${MAX_RATE_PER_SECOND}` }).nullable().optional();

/** A setting that is on or off; absent: off. */
const onOff = () => z.boolean({ error: "must be true or false" }).optional();

/**
 * What PUT /v1/queues/{queue} sets, all at once: maxLeased, and ratePerSecond
 * with burst; and per key maxLeasedPerKey, keyRatePerSecond with keyBurst,
 * orderedByKey and fairByKey; null or absent for none (false). The body is
 * required ({} clears every limit).
 */
export const QueueSettingsBody = body({
  maxLeased: positive().nullable().optional().openapi({ description: "At most this many current leases at once, decided in the claim; null or absent: no limit" }),
  ratePerSecond: rate()
    .openapi({ description: `Leases handed out per second, on average, by a token bucket decided in the claim (above 0, at most ${MAX_RATE_PER_SECOND}, in steps of 0.001); null or absent: no rate limit` }),
  burst: positive(MAX_BURST).nullable().optional()
    .openapi({ description: "The most tokens the bucket holds (leases at once after an idle spell); a number needs ratePerSecond to be one; default max(1, ceil(ratePerSecond))" }),
  maxLeasedPerKey: positive(MAX_LEASED_PER_KEY).nullable().optional()
    .openapi({ description: `At most this many current leases of one key at once (1 to ${MAX_LEASED_PER_KEY}), decided in the claim; a key's later jobs wait their turn; null or absent: no limit` }),
  keyRatePerSecond: rate()
    .openapi({ description: `Leases of one key handed out per second, on average, by a token bucket per key decided in the claim (above 0, at most ${MAX_RATE_PER_SECOND}, in steps of 0.001); null or absent: no rate limit per key` }),
  keyBurst: positive(MAX_BURST).nullable().optional()
    .openapi({ description: "The most tokens a key's bucket holds; a number needs keyRatePerSecond to be one; default max(1, ceil(keyRatePerSecond))" }),
  orderedByKey: onOff()
    .openapi({ description: "true: a key's jobs run one at a time, in the order they were enqueued (priority first, then age); a later job waits while an earlier one is held or waits for its retry. Absent: false" }),
  fairByKey: onOff()
    .openapi({ description: "true: claim-next takes turns between keys, so a key with many jobs cannot starve one with few. Absent: false" }),
}).openapi("QueueSettingsBody", BURSTS_NEED_RATES as object);

/** The tag of these routes in the OpenAPI document. */
export const QUEUES_TAG = { name: "queues", description: "The queues: their numbers, and their settings (paused, maxLeased, a rate limit, and the limits of each key)." };

/** The queue routes. */
export function queueRoutes() {
  return {
    pauseQueue: createRoute({
      method: "post",
      path: "/v1/queues/{queue}/pause",
      tags: [QUEUES_TAG.name],
      operationId: "pauseQueue",
      summary: "Pause a queue: claims hand out none of its jobs until it is resumed; leases already held go on (renew, complete, fail, release)",
      request: { params: QueueParam },
      responses: { 200: json(QueueSettingsSchema, "The queue's settings, paused"), ...refusals },
    }),
    resumeQueue: createRoute({
      method: "post",
      path: "/v1/queues/{queue}/resume",
      tags: [QUEUES_TAG.name],
      operationId: "resumeQueue",
      summary: "Resume a paused queue: claims take its jobs again",
      request: { params: QueueParam },
      responses: { 200: json(QueueSettingsSchema, "The queue's settings, not paused"), ...refusals },
    }),
    setQueue: createRoute({
      method: "put",
      path: "/v1/queues/{queue}",
      tags: [QUEUES_TAG.name],
      operationId: "setQueue",
      summary: "Set a queue's limits, all at once (null or absent: none; the body {} clears them all, and a body is required): maxLeased, and ratePerSecond with burst; per key, maxLeasedPerKey, keyRatePerSecond with keyBurst, orderedByKey and fairByKey; keeps whether it is paused. Leases already held above a new limit go on; a new rate starts with a full bucket, a changed one keeps the tokens it holds (at most the new burst)",
      request: { params: QueueParam, ...requestBody(QueueSettingsBody) },
      responses: { 200: json(QueueSettingsSchema, "The queue's settings"), ...refusals },
    }),
    getQueue: createRoute({
      method: "get",
      path: "/v1/queues/{queue}",
      tags: [QUEUES_TAG.name],
      operationId: "getQueue",
      summary: "A queue's settings; a queue never set is not paused and has no limits",
      request: { params: QueueParam },
      responses: { 200: json(QueueSettingsSchema, "The queue's settings"), ...refusals },
    }),
    listQueues: createRoute({
      method: "get",
      path: "/v1/queues",
      tags: [QUEUES_TAG.name],
      operationId: "listQueues",
      summary: "The settings of every queue that has settings or jobs, by name",
      responses: { 200: json(z.object({ queues: z.array(QueueSettingsSchema) }), "The queues"), ...refusals },
    }),
    stats: createRoute({
      method: "get",
      path: "/v1/stats",
      tags: [QUEUES_TAG.name],
      operationId: "getStats",
      summary: "Per queue: jobs by status, the oldest due job's age, refused stale writes in the last hour and ever, whether it is paused, and its top keys by waiting jobs",
      responses: { 200: json(z.object({ queues: z.array(QueueStatsSchema) }), "The numbers"), ...refusals },
    }),
  };
}

/** Serves the queue routes on `app`. */
export function serveQueues(app: Api, route: ReturnType<typeof queueRoutes>, { store, clock, wake }: Served): void {
  app.openapi(route.pauseQueue, async (c) => {
    c.get("permit").need("manage", c.req.valid("param").queue);
    return c.json(await store.queues.pause(c.req.valid("param").queue, { now: clock() }), 200);
  });

  app.openapi(route.resumeQueue, async (c) => {
    c.get("permit").need("manage", c.req.valid("param").queue);
    const settings = await store.queues.resume(c.req.valid("param").queue, { now: clock() });
    afterAnswer(c, wake.queueOpened(settings.queue));
    return c.json(settings, 200);
  });

  app.openapi(route.setQueue, async (c) => {
    c.get("permit").need("manage", c.req.valid("param").queue);
    const settings = await store.queues.set(c.req.valid("param").queue, { ...c.req.valid("json"), now: clock() });
    afterAnswer(c, wake.queueOpened(settings.queue));
    return c.json(settings, 200);
  });

  app.openapi(route.getQueue, async (c) => {
    c.get("permit").need("read", c.req.valid("param").queue);
    return c.json(await store.queues.get(c.req.valid("param").queue), 200);
  });

  app.openapi(route.listQueues, async (c) => {
    const permit = c.get("permit");
    return c.json({ queues: (await store.queues.list()).filter((settings) => permit.sees(settings.queue)) }, 200);
  });

  app.openapi(route.stats, async (c) => {
    const permit = c.get("permit");
    return c.json({ queues: (await store.stats({ now: clock() })).filter((stats) => permit.sees(stats.queue)) }, 200);
  });
}
