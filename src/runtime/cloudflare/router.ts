import { type Context, Hono } from "hono";
import type { Driver } from "../../drivers/driver.ts";
import { createApp } from "../../http/app.ts";
import { ApiError } from "../../http/api-error.ts";
import { errorResponse } from "../../http/errors.ts";
import { type Auth, bearerAuth, localCallersOnly, requireConfiguredAuth } from "../../http/middleware/auth.ts";
import { limitBody } from "../../http/middleware/body-limit.ts";
import { requestLog } from "../../http/middleware/request-log.ts";
import { requestMetrics } from "../../http/middleware/request-metrics.ts";
import { tracing } from "../../http/middleware/tracing.ts";
import { RequestMetrics } from "../../http/metrics.ts";
import { DEFAULT_LIMITS, type Limits } from "../../http/shapes.ts";
import type { UiFiles } from "../../http/ui.ts";
import { LeaseStore } from "../../store/store.ts";
import { cachedTokens } from "../../store/token-cache.ts";
import { Revocations } from "../../wait/revocations.ts";
import type { Action, Permit } from "../../http/permit.ts";
import type { WorkerEnv } from "./env.ts";
import { allowedQueue, bodyQueue, type Call, Objects } from "./objects.ts";
import { NO_QUEUE } from "./queue-object.ts";
import { registryTokens } from "./registry-tokens.ts";
import { jobList, learned, manyLeases, metrics, parseJson, pushList, queueList, scheduleList, stats } from "./spanning.ts";

/** What the router is built from: the app's own options, and the env with the objects' bindings. */
export type RouterOptions = { env: WorkerEnv; auth: Auth; limits: Partial<Limits>; ui?: UiFiles; log?: (line: string) => void };

type Lease = { job: { id: string; queue: string } };
type JobAnswer = { id?: string; queue?: string; job?: { id: string; queue: string }; leases?: Lease[] };

/**
 * The storage of the router's own app, which serves only what reads none (the
 * dashboard's files, the API docs, the OpenAPI document, and the answers to
 * unknown routes): every route that reads the store is the router's.
 */
const noStorage: Driver = {
  run: () => Promise.reject(new Error("objects mode: the router keeps no jobs; this route should have gone to a queue's object")),
  batch: () => Promise.reject(new Error("objects mode: the router keeps no jobs; this route should have gone to a queue's object")),
  close() {},
};

/**
 * objectsRouter is the Worker in objects mode (docs/scale.md): the same API,
 * each request handed to the object of its queue (QueueObject), which runs
 * the same app on the queue's own SQLite. The router checks the caller as the
 * app does (the object checks again), then:
 *
 * - a queue's routes go to its object; an enqueue to the object of its body's queue;
 * - a job's routes (/v1/jobs/{id}...) to the object of the id's queue, found
 *   as Objects says (remembered, or the directory);
 * - what spans queues is put together by src/runtime/cloudflare/spanning.ts;
 * - what no queue can answer (an unknown id, a body that names no valid
 *   queue) goes to the object that holds none, whose app refuses it as a
 *   queue's would; and everything else (pages, docs, unknown routes) to an
 *   app of the router's own that reads no storage.
 */
export function objectsRouter(options: RouterOptions): Hono {
  const { auth } = options;
  const limits = { ...DEFAULT_LIMITS, ...Object.fromEntries(Object.entries(options.limits).filter(([, value]) => value !== undefined)) };
  const objects = new Objects(options.env);
  // The tokens made through the API live in the registry; one cache for the router and its app, so a revoke here takes effect here at once,
  // and one Revocations, so that it ends at once the waiting calls that came through here (the others at their next lookup).
  const registered = registryTokens(options.env.DIRECTORY!);
  const tokens = cachedTokens(registered);
  const revocations = new Revocations((secret) => registered.find(secret));
  const pages = createApp({ store: new LeaseStore(noStorage), auth, limits, ui: options.ui, tokens, tokenCacheMs: 0, revocations });
  const lookup = { tokens, jobQueues: (ids: string[]) => objects.locate(ids), revocations };

  const app = new Hono();
  app.onError(errorResponse);
  // Counted and traced here, where every request of the API arrives (as createApp does), by the router's route patterns.
  const requests = new RequestMetrics();
  app.use(requestMetrics(requests));
  app.use(tracing());
  if (options.log) app.use(requestLog(options.log));
  app.use(requireConfiguredAuth(auth));
  app.use(localCallersOnly(auth));
  app.use("/v1/*", bearerAuth(auth, lookup));
  app.use("/metrics", bearerAuth(auth, lookup));
  app.use("/v1/*", limitBody(limits.maxBodyBytes));

  // One queue: its object, for a call the token may make there (allowedQueue), and for a read, once it holds something (readable).
  const toQueue = (action: Action) => async (c: Context) => {
    const call = await callOf(c);
    return objects.send(allowedQueue(call, action, c.req.param("queue")!), call);
  };
  const readQueue = async (c: Context) => {
    const call = await callOf(c);
    return objects.send(await objects.readable(call, c.req.param("queue")!), call);
  };
  app.post("/v1/jobs", async (c) => {
    const call = await callOf(c);
    const queue = bodyQueue((parseJson(call.body) as { queue?: unknown } | undefined)?.queue ?? "default");
    const response = await objects.send(allowedQueue(call, "enqueue", queue), call);
    return response.ok ? learned(objects, response, (body: JobAnswer) => (body.job ? [body.job] : [])) : response;
  });
  app.post("/v1/queues/:queue/jobs", toQueue("enqueue"));
  app.post("/v1/queues/:queue/claim", async (c) => {
    const call = await callOf(c);
    const response = await whileValid(c, (signal) => objects.send(allowedQueue(call, "work", c.req.param("queue")), { ...call, signal }));
    return response.ok ? learned(objects, response, leasedJobs) : response;
  });
  app.post("/v1/queues/:queue/pause", toQueue("manage"));
  app.post("/v1/queues/:queue/resume", toQueue("manage"));
  app.get("/v1/queues/:queue", readQueue);
  app.get("/v1/queues/:queue/keys", readQueue);
  app.get("/v1/queues/:queue/series", readQueue);
  app.put("/v1/queues/:queue", toQueue("manage"));
  app.get("/v1/queues/:queue/push", readQueue);
  app.put("/v1/queues/:queue/push", toQueue("manage"));
  app.delete("/v1/queues/:queue/push", toQueue("manage"));
  app.post("/v1/queues/:queue/push/rotate", toQueue("manage"));

  // One job: the object of its queue.
  const toJob = async (c: Context) => byId(objects, c.req.param("id")!, await callOf(c));
  app.get("/v1/jobs/:id", async (c) => {
    const call = await callOf(c);
    return whileValid(c, (signal) => byId(objects, c.req.param("id"), { ...call, signal }));
  });
  app.delete("/v1/jobs/:id", toJob);
  for (const verb of ["claim", "renew", "complete", "release", "fail", "retry", "cancel"]) app.post(`/v1/jobs/:id/${verb}`, toJob);
  app.post("/v1/jobs/:id/steps/:name", toJob);
  app.get("/v1/jobs/:id/lease", toJob);
  app.get("/v1/jobs/:id/events", async (c) => {
    // An unknown id answers an empty page, so a queue remembered out of date could not be told: ask the directory.
    const id = c.req.param("id");
    const queue = (await objects.locate([id], true)).get(id) ?? NO_QUEUE;
    return objects.send(queue, await callOf(c));
  });

  // A bulk action: the object of its filter's queue, which acts in its own transactions (none spans queues).
  app.post("/v1/jobs/bulk", async (c) => {
    const call = await callOf(c);
    const body = parseJson(call.body) as { filter?: { queue?: unknown } } | undefined;
    if (body?.filter?.queue === undefined) {
      throw new ApiError(400, "invalid_request", "filter.queue is required in objects mode: each queue's jobs are in its own object, so a bulk action names the queue it acts on (one call per queue)");
    }
    return objects.send(allowedQueue(call, "manage", bodyQueue(body.filter.queue)), call);
  });

  // Several queues.
  app.get("/v1/jobs", async (c) => jobList(objects, await callOf(c)));
  app.get("/v1/queues", async (c) => queueList(objects, await callOf(c)));
  app.get("/v1/push", async (c) => pushList(objects, await callOf(c)));
  app.get("/v1/stats", async (c) => stats(objects, await callOf(c)));
  app.get("/metrics", async (c) => metrics(objects, await callOf(c), requests));
  app.post("/v1/leases/renew", async (c) => manyLeases(objects, await callOf(c), "leases"));
  app.post("/v1/leases/complete", async (c) => manyLeases(objects, await callOf(c), "completed"));

  // Schedules: each in the object of its queue, the registry saying which (a put goes to its body's queue, whose object keeps the registry true: registry-schedules.ts).
  const toSchedule = async (c: Context) => objects.send((await objects.registry.scheduleQueue(c.req.param("name")!)) ?? NO_QUEUE, await callOf(c));
  app.get("/v1/schedules", async (c) => scheduleList(objects, await callOf(c)));
  app.get("/v1/schedules/:name", toSchedule);
  app.put("/v1/schedules/:name", async (c) => {
    const call = await callOf(c);
    const queue = bodyQueue((parseJson(call.body) as { queue?: unknown } | undefined)?.queue); // required: without it, the app says so
    return objects.send(allowedQueue(call, "manage", queue), call);
  });
  app.delete("/v1/schedules/:name", toSchedule);

  // Whether objects can write: the probe of the object that holds no queue.
  app.get("/healthz", async (c) => objects.send(NO_QUEUE, await callOf(c)));

  app.all("*", (c) => pages.fetch(c.req.raw));
  return app;
}

/** The request as the router hands it on, its body read once (the body limit has already been applied), with what the caller's token may do. */
async function callOf(c: Context): Promise<Call> {
  const body = c.req.method === "GET" || c.req.method === "HEAD" ? null : await c.req.arrayBuffer();
  return { request: c.req.raw, body, grant: (c.var.permit as Permit | undefined)?.grant };
}

/**
 * A call that may wait in a queue's object (claim-next, a job's long poll),
 * sent with a signal that aborts when its token is revoked (Permit.whileValid):
 * the object then stops its wait and hands nothing out, and the call answers
 * 401. An answer that came before is the caller's, whatever it holds.
 */
function whileValid(c: Context, send: (signal: AbortSignal) => Promise<Response>): Promise<Response> {
  return (c.var.permit as Permit).whileValid(c.req.raw.signal, send, () => true);
}

/** The jobs of the leases a claim answers. */
function leasedJobs(body: { leases?: Lease[] }) {
  return (body.leases ?? []).map((lease) => lease.job);
}

/**
 * A call on one job: sent to the queue remembered for its id, or found in the
 * directory; a 404 from a queue remembered means it was out of date (the job
 * deleted and enqueued again elsewhere), and the directory says where to send
 * it again. An id no queue holds goes to the object that holds none, which
 * answers 404 as a queue would.
 */
async function byId(objects: Objects, id: string, call: Call): Promise<Response> {
  const remembered = objects.remembers(id);
  const queue = (await objects.locate([id])).get(id) ?? NO_QUEUE;
  let response = await objects.send(queue, call);
  if (response.status === 404 && remembered) {
    objects.forget(id);
    const now = (await objects.locate([id], true)).get(id);
    if (now !== undefined && now !== queue) response = await objects.send(now, call);
  }
  if (!response.ok) return response;
  if (call.request.method === "DELETE") {
    objects.forget(id);
    return response;
  }
  return learned(objects, response, (body: JobAnswer) => [...(body.queue && body.id ? [{ id: body.id, queue: body.queue }] : []), ...(body.job ? [body.job] : []), ...leasedJobs(body)]);
}
