import { createRoute, z } from "@hono/zod-openapi";
import { InvalidArgument } from "../store/errors.ts";
import { DEFAULT_MAX_IN_FLIGHT, DEFAULT_PUSH_TIMEOUT_MS, MAX_IN_FLIGHT, MAX_PUSH_TIMEOUT_MS, MAX_URL_LENGTH } from "../store/push.ts";
import { type Api, error, json, QueueParam, refusals, requestBody, type Served } from "./resource.ts";
import { body, positive, printablePattern, textOfAtMost } from "./shapes.ts";
import { afterAnswer } from "./after-answer.ts";

// A queue's push endpoint: where the service POSTs each of its due jobs
// (src/push/), set, read, rotated and deleted here. The secret that signs the
// deliveries is answered twice only: by the put that creates the endpoint,
// and by each rotation.

/**
 * What the push routes tell the pusher of the runtime (the Node dispatcher,
 * the Worker's cache of pushed queues), and what it may ask of them:
 * `checkUrl` throws InvalidArgument for an endpoint URL it will not deliver
 * to (the Node server's private addresses), and `timeoutMs` is the longest
 * timeoutMs it can deliver with, and why: a put asking either is refused
 * before it writes anything.
 */
export type PushChanges = {
  changed(queue: string): void | Promise<void>;
  checkUrl?: ((url: string) => void) | undefined;
  timeoutMs?: { max: number; because: string } | undefined;
};

/** A queue's push settings as the API shows them: never the secret. */
export const PushSettingsSchema = z
  .object({
    queue: z.string(),
    url: z.string().openapi({ description: "Where each due job is POSTed" }),
    timeoutMs: z.number().int().openapi({ description: "How long a delivery waits for the answer before it fails" }),
    maxInFlight: z.number().int().openapi({ description: "At most this many of the queue's jobs pushed and not yet answered (or, answered 202, not yet ended) at once" }),
    rotating: z.boolean().openapi({ description: "Whether deliveries are signed with the secret before the last rotation too, until the next rotation" }),
    rotatedAt: z.number().int().nullable().openapi({ description: "The last rotation (ms since the epoch); null before the first" }),
    createdAt: z.number().int(),
    updatedAt: z.number().int(),
  })
  .openapi("PushSettings");

/** The push settings with the secret, as a create and a rotation answer them, once. */
const WithSecret = PushSettingsSchema.extend({
  secret: z.string().openapi({ description: "whsec_ and base64: the Standard Webhooks secret that signs the deliveries. Shown this once: keep it where the endpoint can read it", example: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw" }),
}).openapi("PushSettingsWithSecret");

/** What PUT /v1/queues/{queue}/push sets. */
export const PushBody = body({
  url: textOfAtMost(MAX_URL_LENGTH).openapi({
    description: "An absolute http: or https: URL (http:// or https://, then a host the URL parser takes), without a user name or password",
    example: "https://mail.example/fencelease",
    minLength: "http://x".length,
    pattern: printablePattern("[Hh][Tt][Tt][Pp][Ss]?://"),
  }),
  timeoutMs: positive(MAX_PUSH_TIMEOUT_MS).optional().openapi({ description: `How long a delivery waits for the answer; default ${DEFAULT_PUSH_TIMEOUT_MS}. A runtime may allow less, and its refusal names its limit: the Cloudflare Worker in D1 mode, whose deliveries run in a waitUntil` }),
  maxInFlight: positive(MAX_IN_FLIGHT).optional().openapi({ description: `At most this many deliveries at once (202 leases count until they end); default ${DEFAULT_MAX_IN_FLIGHT}` }),
}).openapi("PushBody");

const noPush = error("not_found: the queue has no push endpoint");

/** The tag of these routes in the OpenAPI document. */
export const PUSH_TAG = {
  name: "push",
  description: "A queue's push endpoint: the service claims the queue's due jobs itself and POSTs each one there, signed as Standard Webhooks sign, with its lease in headers; the answer completes or fails the lease.",
};

/** The push routes. */
export function pushRoutes() {
  return {
    putPush: createRoute({
      tags: [PUSH_TAG.name],
      operationId: "setPush",
      method: "put",
      path: "/v1/queues/{queue}/push",
      summary: "Push the queue's due jobs to an endpoint: the service claims each one (as claim-next does, within maxInFlight) and POSTs it, signed (Standard Webhooks), with its lease in headers; a 2xx completes it with the answer's body as the result, a 202 leaves the lease to the endpoint, anything else fails it. The first put answers the secret; a later one changes the endpoint and keeps it",
      request: { params: QueueParam, ...requestBody(PushBody) },
      responses: {
        201: json(WithSecret, "The queue is pushed now; the secret is shown this once"),
        200: json(PushSettingsSchema, "The endpoint changed; the secret is kept, and not shown"),
        ...refusals,
      },
    }),
    getPush: createRoute({
      tags: [PUSH_TAG.name],
      operationId: "getPush",
      method: "get",
      path: "/v1/queues/{queue}/push",
      summary: "A queue's push settings, without the secret",
      request: { params: QueueParam },
      responses: { 200: json(PushSettingsSchema, "The push settings"), 404: noPush, ...refusals },
    }),
    listPush: createRoute({
      tags: [PUSH_TAG.name],
      operationId: "listPush",
      method: "get",
      path: "/v1/push",
      summary: "The push settings of every pushed queue, by queue name, without the secrets",
      responses: { 200: json(z.object({ endpoints: z.array(PushSettingsSchema) }), "The pushed queues"), ...refusals },
    }),
    rotatePush: createRoute({
      tags: [PUSH_TAG.name],
      operationId: "rotatePushSecret",
      method: "post",
      path: "/v1/queues/{queue}/push/rotate",
      summary: "A new secret: deliveries are signed with it and the one it replaces until the next rotation, so that the endpoint can move to it without a refused delivery",
      request: { params: QueueParam },
      responses: { 200: json(WithSecret, "The new secret, shown this once"), 404: noPush, ...refusals },
    }),
    deletePush: createRoute({
      tags: [PUSH_TAG.name],
      operationId: "deletePush",
      method: "delete",
      path: "/v1/queues/{queue}/push",
      summary: "Stop pushing the queue's jobs: no more are claimed for the endpoint; deliveries on their way end as usual",
      request: { params: QueueParam },
      responses: { 204: { description: "No longer pushed" }, 404: noPush, ...refusals },
    }),
  };
}

/**
 * Serves the push routes on `app`, over `store.push`; each change is told to
 * `push` (the runtime's pusher, if any) once written. Setting, rotating and
 * deleting a queue's endpoint is managing the queue (an admin token for it):
 * the endpoint receives the queue's jobs, and the secret signs for them.
 */
export function servePush(app: Api, route: ReturnType<typeof pushRoutes>, { store, clock }: Served, push?: PushChanges): void {
  const told = (queue: string) => push?.changed(queue);

  app.openapi(route.putPush, async (c) => {
    const queue = c.req.valid("param").queue;
    c.get("permit").need("manage", queue);
    const asked = c.req.valid("json");
    push?.checkUrl?.(asked.url);
    const most = push?.timeoutMs;
    if (most && asked.timeoutMs !== undefined && asked.timeoutMs > most.max) throw new InvalidArgument(`timeoutMs must be at most ${most.max}, got ${asked.timeoutMs}: ${most.because}`);
    const { created, settings, secret } = await store.push.put(queue, { ...asked, now: clock() });
    afterAnswer(c, told(queue));
    return created ? c.json({ ...settings, secret: secret! }, 201) : c.json(settings, 200);
  });

  app.openapi(route.getPush, async (c) => {
    const queue = c.req.valid("param").queue;
    c.get("permit").need("read", queue);
    return c.json(await store.push.get(queue), 200);
  });

  app.openapi(route.listPush, async (c) => {
    const permit = c.get("permit");
    return c.json({ endpoints: (await store.push.list()).filter((settings) => permit.sees(settings.queue)) }, 200);
  });

  app.openapi(route.rotatePush, async (c) => {
    const queue = c.req.valid("param").queue;
    c.get("permit").need("manage", queue);
    const { settings, secret } = await store.push.rotate(queue, { now: clock() });
    afterAnswer(c, told(queue));
    return c.json({ ...settings, secret }, 200);
  });

  app.openapi(route.deletePush, async (c) => {
    const queue = c.req.valid("param").queue;
    c.get("permit").need("manage", queue);
    await store.push.delete(queue);
    afterAnswer(c, told(queue));
    return c.body(null, 204);
  });
}
