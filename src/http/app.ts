import { OpenAPIHono } from "@hono/zod-openapi";
import type { LeaseStore } from "../store/store.ts";
import { ApiError } from "./api-error.ts";
import { limitBody } from "./middleware/body-limit.ts";
import { type Auth, bearerAuth, forwardedGrant, localCallersOnly, requireConfiguredAuth } from "./middleware/auth.ts";
import { cachedTokens, TOKEN_CACHE_MS } from "../store/token-cache.ts";
import type { TokenStore } from "../store/tokens.ts";
import { serveTokens, tokenRoutes, TOKENS_TAG } from "./tokens.ts";
import { errorResponse } from "./errors.ts";
import { bodyRequired } from "./middleware/body-required.ts";
import { checkJsonBody } from "./middleware/json-body.ts";
import { JOBS_TAG, jobRoutes, serveJobs } from "./jobs.ts";
import { searchRoutes, serveSearch } from "./search.ts";
import { LEASES_TAG, leaseRoutes, serveLeases } from "./leases.ts";
import { serveSteps, stepRoutes } from "./steps.ts";
import { PUSH_TAG, type PushChanges, pushRoutes, servePush } from "./push.ts";
import { QUEUES_TAG, queueRoutes, serveQueues } from "./queues.ts";
import { keyRoutes, serveKeys } from "./keys.ts";
import { serveSeries, seriesRoutes } from "./series.ts";
import { requestLog } from "./middleware/request-log.ts";
import { requestMetrics } from "./middleware/request-metrics.ts";
import { tracing } from "./middleware/tracing.ts";
import { RequestMetrics } from "./metrics.ts";
import type { Served } from "./resource.ts";
import { type ScheduleNames, SCHEDULES_TAG, scheduleRoutes, serveSchedules } from "./schedules.ts";
import { DEFAULT_LIMITS, type GivenLimits, type Limits } from "./shapes.ts";
import { serveSystem, systemRoutes } from "./system.ts";
import { type UiFiles, uiRoutes } from "./ui.ts";
import { unknownRoute } from "./middleware/unknown-route.ts";
import { wakeWith } from "../wait/wake.ts";
import { localWaits, type Waits } from "../wait/long-poll.ts";
import { Revocations } from "../wait/revocations.ts";
import { WaitRoom } from "../wait/wait-room.ts";

// The app: its middleware, its one error handler, and the resources it mounts,
// each in its own file with its routes, handlers and shapes (jobs.ts,
// leases.ts, queues.ts, keys.ts, push.ts, schedules.ts, system.ts).

/** What the app is built from. */
export type AppOptions = {
  store: LeaseStore;
  /** Who may call; see `authFromEnv`. */
  auth: Auth;
  /** Body size and lease length caps; each defaults to DEFAULT_LIMITS. */
  limits?: GivenLimits | undefined;
  /** The server's clock, in ms since the epoch. Only tests replace it. */
  clock?: (() => number) | undefined;
  /** Where to write one line per request; none by default. */
  log?: ((line: string) => void) | undefined;
  /** The files of the dashboard (/ui) and of the API docs (/docs); without them neither is served. */
  ui?: UiFiles | undefined;
  /** Where requests with waitMs wait, and what writes ring; default a WaitRoom of the app's own, in this process. */
  waits?: Waits | undefined;
  /** Told when a queue's push settings change (src/http/push.ts): the runtime's pusher. Without it, nothing pushes from this app. */
  push?: PushChanges | undefined;
  /** Where the tokens made through the API are kept; default `store.tokens`, the store's own database. */
  tokens?: TokenStore | undefined;
  /** How long a token found is trusted before it is looked up again: the most a revoke made by another process waits; default TOKEN_CACHE_MS (5 s). */
  tokenCacheMs?: number | undefined;
  /** What ends a revoked token's waiting calls; default one of the app's own, over `tokens`. A router in front that serves the waiting calls itself shares its own. */
  revocations?: Revocations | undefined;
  /** Where schedule names are held; default the store's schedules table (objects mode: the registry). */
  scheduleNames?: ScheduleNames | undefined;
  /**
   * Only a router in front reaches this app, and it has checked the caller (a
   * queue's Durable Object in objects mode): with auth off, each request may
   * do what the grant the router sends in the Fencelease-Grant header allows.
   */
  forwardedGrants?: boolean | undefined;
};

/** The limits given, each checked once when the app is built, the rest from DEFAULT_LIMITS. */
function limitsOf(given: GivenLimits = {}): Limits {
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
  const route = { ...jobRoutes(), ...searchRoutes(), ...leaseRoutes(limits), ...stepRoutes(), ...queueRoutes(), ...keyRoutes(), ...seriesRoutes(), ...pushRoutes(), ...scheduleRoutes(), ...systemRoutes(), ...tokenRoutes() };
  const waits = options.waits ?? localWaits(store, new WaitRoom({ clock }), clock);
  const wake = wakeWith(waits);
  const requests = new RequestMetrics();
  const served: Served = { store, clock, waits, wake, limits };
  const stored = options.tokens ?? store.tokens;
  const tokens = cachedTokens(stored, { ttlMs: options.tokenCacheMs ?? TOKEN_CACHE_MS, clock });
  const revocations = options.revocations ?? new Revocations((secret) => stored.find(secret));
  const lookup = { tokens, jobQueues: (ids: string[]) => store.queuesOf(ids), revocations };

  const app = new OpenAPIHono({
    defaultHook: (result) => {
      if (result.success) return;
      const issues = result.error.issues.map((issue) => (issue.path.length ? `${issue.path.join(".")} ` : "") + issue.message);
      throw new ApiError(400, "invalid_request", issues.join("; "));
    },
  });
  app.onError(errorResponse);
  app.notFound(unknownRoute(Object.values(route)));
  // First, so that every request is counted and traced, those refused by the middleware after them too.
  app.use(requestMetrics(requests));
  app.use(tracing());
  if (options.log) app.use(requestLog(options.log));
  app.use(requireConfiguredAuth(auth));
  app.use(localCallersOnly(auth));
  // A body that is not JSON is refused by the route's validator (415, mapped to
  // a 400 that says so in src/http/errors.ts); routes without a body ignore it.
  app.use("/v1/*", bearerAuth(auth, lookup));
  // The OpenAPI document is open, like the README that says as much: it describes
  // the routes, holds no data, and so /docs can render it before anyone signs in.
  app.use("/metrics", bearerAuth(auth, lookup));
  if (options.forwardedGrants) {
    if (auth !== "off") throw new RangeError("forwardedGrants needs auth off: the router in front checks the caller");
    app.use("/v1/*", forwardedGrant(lookup.jobQueues));
    app.use("/metrics", forwardedGrant(lookup.jobQueues));
  }
  app.use("/v1/*", limitBody(limits.maxBodyBytes));
  app.use("/v1/*", checkJsonBody());
  for (const { method, path, request } of Object.values(route) as { method: string; path: string; request?: { body?: { required?: boolean } } }[]) {
    if (request?.body?.required) app.on(method.toUpperCase(), path.replace(/\{(\w+)\}/g, ":$1"), bodyRequired());
  }

  serveJobs(app, route, served);
  serveSearch(app, route, served);
  serveLeases(app, route, served);
  serveSteps(app, route, served);
  serveQueues(app, route, served);
  serveKeys(app, route, served);
  serveSeries(app, route, served);
  servePush(app, route, served, options.push);
  serveSchedules(app, route, served, options.scheduleNames);
  serveTokens(app, route, tokens, clock, revocations);
  serveSystem(app, route, served, { pages: options.ui !== undefined, tags: [JOBS_TAG, LEASES_TAG, QUEUES_TAG, PUSH_TAG, SCHEDULES_TAG, TOKENS_TAG], requests });
  // With auth off (local development: loopback callers only, so no anonymous loop from afar) the
  // dashboard's files are read again on every request, so that an edit shows on the next reload.
  if (options.ui) app.route("/", uiRoutes(options.ui, { reread: auth === "off" }));
  return app;
}
