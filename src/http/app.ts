import { OpenAPIHono } from "@hono/zod-openapi";
import type { Job, Lease } from "../store/job.ts";
import type { LeaseOutcome } from "../store/refusal.ts";
import type { LeaseStore, Settled } from "../store/store.ts";
import * as check from "../store/validate.ts";
import { ApiError } from "./api-error.ts";
import { limitBody } from "./middleware/body-limit.ts";
import { type Auth, bearerAuth, localCallersOnly, requireConfiguredAuth } from "./middleware/auth.ts";
import { describeError, errorResponse } from "./errors.ts";
import { exactNumbers } from "./middleware/exact-numbers.ts";
import { prometheusText } from "./metrics.ts";
import { requestLog } from "./middleware/request-log.ts";
import { routes } from "./routes.ts";
import { scheduleRoutes } from "./schedules.ts";
import { DEFAULT_LIMITS, type Limits } from "./schemas.ts";
import { type UiFiles, uiRoutes } from "./ui.ts";
import { unknownRoute } from "./middleware/unknown-route.ts";
import { afterAnswer, wakeWith } from "./wake.ts";
import { answered, type Claimed, localWaits, type Waits } from "../wait/long-poll.ts";
import { WaitRoom } from "../wait/wait-room.ts";
import { traceContextFor } from "../tracing/trace-context.ts";

/** What the app is built from. */
export type AppOptions = {
  store: LeaseStore;
  /** Who may call; see `authFromEnv`. */
  auth: Auth;
  /** Body size and lease length caps; each defaults to DEFAULT_LIMITS. */
  limits?: Partial<Limits>;
  /** The server's clock, in ms since the epoch. Only tests replace it. */
  clock?: () => number;
  /** Where to write one line per request; none by default. */
  log?: (line: string) => void;
  /** The files of the dashboard (/ui) and of the API docs (/docs); without them neither is served. */
  ui?: UiFiles;
  /** Where requests with waitMs wait, and what writes ring; default a WaitRoom of the app's own, in this process. */
  waits?: Waits;
};

/** A job as the API shows it: the result parsed back into the JSON value it was stored from. */
export function jobView(job: Job) {
  return { ...job, result: job.result === null ? null : parseOr(job.result) };
}

function parseOr(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text; // a result stored through the store API as plain text
  }
}

const leaseView = (lease: Lease) => ({ fence: lease.fence, until: lease.until, job: jobView(lease.job) });

/** A claim-next's answer: the leases; with waitMs, how long it waited; stopped short by the rate limit, when the next token is due. */
const claimedView = ({ leases, waitedMs, retryAfterMs }: Claimed, waited: boolean) => ({
  leases: leases.map(leaseView),
  ...(waited && { waitedMs }),
  ...(retryAfterMs !== undefined && { retryAfterMs }),
});

/** A job whose lease a complete or fail ended, with the leases taken when `next` was asked (and only then). */
const settledView = (settled: Settled, next: unknown) => ({ job: jobView(settled.job), ...(next !== undefined && { leases: settled.leases.map(leaseView) }) });

/** One lease of a many-lease call: its answer, or the error a single call would answer, in the API's shape. */
function outcomeView<T extends object>(outcome: LeaseOutcome<T>) {
  if (!("error" in outcome)) return outcome;
  const { code, message, details } = describeError(outcome.error);
  return { id: outcome.id, error: { code, message, details } };
}

/** The limits given, each checked once when the app is built, the rest from DEFAULT_LIMITS. */
function limitsOf(given: Partial<Limits> = {}): Limits {
  const limits = {
    maxBodyBytes: given.maxBodyBytes ?? DEFAULT_LIMITS.maxBodyBytes,
    maxTtlMs: given.maxTtlMs ?? DEFAULT_LIMITS.maxTtlMs,
  };
  for (const [name, value] of Object.entries(limits)) {
    if (!Number.isSafeInteger(value) || value < 1) throw new RangeError(`limits.${name} must be a positive integer, got ${value}`);
  }
  return limits;
}

/**
 * createApp builds the fencelease HTTP API over a store: one Hono app that
 * runs as it is on Node, Cloudflare Workers, Deno and Bun.
 *
 * @example
 * const app = createApp({ store: await openStore({ url: "file:./data/fencelease.db" }), auth: { tokens: ["s3cret"] } });
 * serve({ fetch: app.fetch, port: 8787 });
 */
export function createApp(options: AppOptions) {
  const { store, auth } = options;
  const clock = options.clock ?? (() => Date.now());
  const limits = limitsOf(options.limits);
  const route = routes(limits);
  const waits = options.waits ?? localWaits(store, new WaitRoom({ clock }), clock);
  const wake = wakeWith(waits);

  const app = new OpenAPIHono({
    defaultHook: (result) => {
      if (result.success) return;
      const issues = result.error.issues.map((issue) => (issue.path.length ? `${issue.path.join(".")} ` : "") + issue.message);
      throw new ApiError(400, "invalid_request", issues.join("; "));
    },
  });
  app.onError(errorResponse);
  app.notFound(unknownRoute(Object.values(route)));
  if (options.log) app.use(requestLog(options.log));
  app.use(requireConfiguredAuth(auth));
  app.use(localCallersOnly(auth));
  // A body that is not JSON is refused by the route's validator (415, mapped to
  // a 400 that says so in src/http/errors.ts); routes without a body ignore it.
  app.use("/v1/*", bearerAuth(auth));
  // The OpenAPI document is open, like the README that says as much: it describes
  // the routes, holds no data, and so /docs can render it before anyone signs in.
  app.use("/metrics", bearerAuth(auth));
  app.use("/v1/*", limitBody(limits.maxBodyBytes));
  app.use("/v1/*", exactNumbers());

  app.openapi(route.enqueue, async (c) => {
    const { id, delayMs, runAt, ...rest } = c.req.valid("json");
    const now = clock();
    const trace = traceContextFor(rest, c.req.raw.headers);
    const { created, job } = await store.enqueueJob(id, { ...rest, ...trace, runAt: runAt ?? (delayMs === undefined ? undefined : now + delayMs), now });
    if (created) afterAnswer(c, wake.enqueued(job.queue, [job.runAt], now));
    return created ? c.json({ created: true as const, job: jobView(job) }, 201) : c.json({ created: false as const, job: jobView(job) }, 200);
  });

  app.openapi(route.enqueueMany, async (c) => {
    const now = clock();
    const headers = c.req.raw.headers;
    const jobs = c.req.valid("json").jobs.map(({ delayMs, runAt, ...job }) => ({ ...job, ...traceContextFor(job, headers), runAt: runAt ?? (delayMs === undefined ? undefined : now + delayMs) }));
    const queue = c.req.valid("param").queue;
    const enqueued = await store.enqueueMany(queue, jobs, now);
    afterAnswer(c, wake.enqueued(queue, jobs.filter((_, i) => enqueued[i]!.created).map((job) => job.runAt ?? now), now));
    return c.json({ jobs: enqueued }, 200);
  });

  app.openapi(route.get, async (c) => {
    const { id } = c.req.valid("param");
    const waitMs = c.req.valid("query").waitMs ?? 0;
    return c.json(jobView(waitMs > 0 ? await waits.job(id, waitMs, c.req.raw.signal) : await store.getJob(id, clock())), 200);
  });

  app.openapi(route.claim, async (c) => {
    const { owner, ttlMs } = c.req.valid("json");
    return c.json(leaseView(await store.claimJob(c.req.valid("param").id, owner, clock(), ttlMs)), 200);
  });

  app.openapi(route.claimNext, async (c) => {
    const { owner, ttlMs, limit = 1, waitMs = 0 } = c.req.valid("json");
    const queue = c.req.valid("param").queue;
    if (waitMs === 0) return c.json(claimedView(answered(await store.claimNext(queue, owner, clock(), ttlMs, limit), 0), false), 200);
    return c.json(claimedView(await waits.claimNext({ queue, owner, ttlMs, limit, waitMs }, c.req.raw.signal), true), 200);
  });

  app.openapi(route.renew, async (c) => {
    const { owner, fence, ttlMs, progress } = c.req.valid("json");
    return c.json({ until: await store.renewLease(c.req.valid("param").id, owner, fence, clock(), ttlMs, { progress }) }, 200);
  });

  app.openapi(route.complete, async (c) => {
    const { owner, fence, result, next } = c.req.valid("json");
    const settled = await store.completeJob(c.req.valid("param").id, owner, fence, clock(), check.json("result", result)!, { next });
    wake.finished([settled.job.id]);
    wake.ended([settled.job.queue]);
    return c.json(settledView(settled, next), 200);
  });

  app.openapi(route.release, async (c) => {
    const { owner, fence } = c.req.valid("json");
    const now = clock();
    const job = await store.releaseLease(c.req.valid("param").id, owner, fence, now);
    afterAnswer(c, wake.settled(job, now));
    return c.json({ job: jobView(job) }, 200);
  });

  app.openapi(route.fail, async (c) => {
    const { owner, fence, error, retryInMs, next } = c.req.valid("json");
    const now = clock();
    const settled = await store.failJob(c.req.valid("param").id, owner, fence, now, error, { retryInMs, next });
    afterAnswer(c, wake.settled(settled.job, now));
    return c.json(settledView(settled, next), 200);
  });

  app.openapi(route.renewMany, async (c) => {
    const { owner, ttlMs, leases } = c.req.valid("json");
    return c.json({ leases: (await store.renewMany(owner, leases, clock(), ttlMs)).map(outcomeView) }, 200);
  });

  app.openapi(route.completeMany, async (c) => {
    const { owner, leases, next } = c.req.valid("json");
    const completions = leases.map(({ id, fence, result }) => ({ id, fence, result: check.json("result", result)! }));
    const { completed, leases: taken, ended } = await store.completeMany(owner, completions, clock(), next);
    wake.finished(completed.flatMap((outcome) => ("done" in outcome ? [outcome.id] : [])));
    wake.ended(ended);
    return c.json({ completed: completed.map(outcomeView), leases: taken.map(leaseView) }, 200);
  });

  app.openapi(route.retry, async (c) => {
    const now = clock();
    const job = await store.retryJob(c.req.valid("param").id, now);
    afterAnswer(c, wake.settled(job, now));
    return c.json({ job: jobView(job) }, 200);
  });

  app.openapi(route.cancel, async (c) => {
    const { by = "api", reason } = c.req.valid("json");
    const now = clock();
    const { changed, job } = await store.cancelJob(c.req.valid("param").id, { by, reason }, now);
    if (changed) afterAnswer(c, wake.cancelled(job, now));
    return c.json({ job: jobView(job), changed }, 200);
  });

  app.openapi(route.delete, async (c) => {
    await store.deleteJob(c.req.valid("param").id, clock());
    wake.finished([c.req.valid("param").id]);
    return c.json({ deleted: true as const }, 200);
  });

  app.openapi(route.list, async (c) => {
    const page = await store.list(c.req.valid("query"), clock());
    return c.json({ jobs: page.items.map(jobView), nextCursor: page.next }, 200);
  });

  app.openapi(route.events, async (c) => {
    const page = await store.events(c.req.valid("param").id, c.req.valid("query"));
    return c.json({ events: page.items, nextCursor: page.next }, 200);
  });

  app.openapi(route.lease, async (c) => {
    const { owner, fence } = c.req.valid("query");
    return c.json(await store.leaseCheck(c.req.valid("param").id, owner, fence, clock()), 200);
  });

  app.openapi(route.pauseQueue, async (c) => c.json(await store.pauseQueue(c.req.valid("param").queue, clock()), 200));

  app.openapi(route.resumeQueue, async (c) => {
    const settings = await store.resumeQueue(c.req.valid("param").queue, clock());
    afterAnswer(c, wake.queueOpened(settings.queue));
    return c.json(settings, 200);
  });

  app.openapi(route.setQueue, async (c) => {
    const settings = await store.setQueue(c.req.valid("param").queue, c.req.valid("json"), clock());
    afterAnswer(c, wake.queueOpened(settings.queue));
    return c.json(settings, 200);
  });

  app.openapi(route.getQueue, async (c) => c.json(await store.getQueue(c.req.valid("param").queue), 200));

  app.openapi(route.listQueues, async (c) => c.json({ queues: await store.listQueues() }, 200));

  scheduleRoutes(app, route, store, clock);

  app.openapi(route.stats, async (c) => c.json({ queues: await store.stats(clock()) }, 200));

  app.openapi(route.metrics, async (c) => c.text(prometheusText(await store.stats(clock())), 200, { "Content-Type": "text/plain; version=0.0.4" }));

  app.openapi(route.health, async (c) => {
    const health = await store.health();
    if (health.ok) return c.json({ ok: true as const }, 200);
    const details = { reason: health.reason, ...(health.outcome && { outcome: health.outcome }) };
    return c.json({ error: { code: "unavailable", message: health.message, details } }, 503, { "Retry-After": "1" });
  });

  app.doc31("/openapi.json", {
    openapi: "3.1.0",
    info: { title: "fencelease", version: "1", description: "Leases with fencing tokens: a stale worker never overwrites a newer result." },
    security: [{ bearer: [] }],
  });
  app.openAPIRegistry.registerComponent("securitySchemes", "bearer", { type: "http", scheme: "bearer" });
  if (options.ui) app.route("/", uiRoutes(options.ui));
  return app;
}
