import { createExecutionContext, env, waitOnExecutionContext } from "cloudflare:test";
import { describe, expect, inject, test } from "vitest";
import { verifyPush } from "../../src/client/index.ts";
import { d1Driver } from "../../src/drivers/d1.ts";
import { pushAfterWrites } from "../../src/push/after-write.ts";
import { LeaseStore } from "../../src/store/store.ts";
import { requestWaits } from "../../src/wait/long-poll.ts";
import worker from "../../src/worker.ts";

/** The longest timeoutMs the Worker in D1 mode accepts (src/push/after-write.ts), as the docs state it. */
const WORKER_MAX_PUSH_TIMEOUT_MS = 25_000;

// Push on the Worker, in the Workers runtime on D1: the request that enqueues
// delivers the job itself in its waitUntil, and the cron delivers what is due
// later. The endpoint is a real HTTP server in Node
// (test/push/worker-endpoint.setup.ts), reached by the Worker's own fetch.

const ENDPOINT = inject("pushEndpoint");
const TOKEN = "worker-test-token";
const TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
const TRACESTATE = "congo=t61rcWkgMzE";

/** One request to the Worker; answers once its waitUntil work (the deliveries) has ended too. */
async function call(method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
  const ctx = createExecutionContext();
  const request = new Request(`https://fencelease.test${path}`, {
    method,
    headers: { Authorization: `Bearer ${TOKEN}`, ...(body !== undefined && { "Content-Type": "application/json" }) },
    ...(body !== undefined && { body: JSON.stringify(body) }),
  });
  const response = await worker.fetch(request as never, env, ctx as never);
  const text = await response.text();
  await waitOnExecutionContext(ctx);
  return { status: response.status, body: text === "" ? null : JSON.parse(text) };
}

/** What the endpoint received for job `id`, oldest first. */
async function received(id: string): Promise<{ path: string; headers: Record<string, string>; body: string }[]> {
  const all = (await (await fetch(`${ENDPOINT}/received`)).json()) as { path: string; headers: Record<string, string>; body: string }[];
  return all.filter((request) => request.headers["fencelease-job-id"] === id);
}

const cron = () => worker.scheduled({ scheduledTime: Date.now(), cron: "* * * * *", noRetry() {} } as never, env as never);

describe("push on the Worker", () => {
  test("the request that enqueues delivers the job in its waitUntil, signed, and the answer completes it", async () => {
    const put = await call("PUT", "/v1/queues/w-ok/push", { url: `${ENDPOINT}/ok` });
    expect(put.status).toBe(201);
    expect((await call("POST", "/v1/jobs", { id: "w-ok-1", queue: "w-ok", payload: { n: 1 } })).status).toBe(201);
    const [delivery, ...more] = await received("w-ok-1");
    expect(more).toEqual([]);
    expect(delivery!.headers).not.toHaveProperty("traceparent"); // enqueued without a trace context
    expect(delivery!.headers).toMatchObject({ "fencelease-owner": "push", "fencelease-fence": "1", "fencelease-attempt": "1" });
    expect((await verifyPush({ headers: delivery!.headers, body: delivery!.body }, put.body.secret)).job).toMatchObject({ id: "w-ok-1", payload: { n: 1 } });
    expect((await call("GET", "/v1/jobs/w-ok-1")).body).toMatchObject({ status: "done", result: { delivered: "w-ok-1", path: "/ok" }, fence: 1 });
    const events = (await call("GET", "/v1/jobs/w-ok-1/events")).body.events;
    expect(events.map((event: { kind: string; httpStatus: number | null }) => [event.kind, event.httpStatus])).toEqual([["enqueued", null], ["claimed", null], ["pushed", 200], ["completed", null]]);
  });

  test("a failed delivery due at once goes out again in the next round of the same waitUntil; both carry the job's trace context as W3C headers", async () => {
    await call("PUT", "/v1/queues/w-flaky/push", { url: `${ENDPOINT}/flaky` });
    await call("POST", "/v1/jobs", { id: "w-flaky-1", queue: "w-flaky", traceparent: TRACEPARENT, tracestate: TRACESTATE });
    expect((await received("w-flaky-1")).map(({ headers }) => [headers["fencelease-fence"], headers.traceparent, headers.tracestate])).toEqual([["1", TRACEPARENT, TRACESTATE], ["2", TRACEPARENT, TRACESTATE]]);
    expect((await call("GET", "/v1/jobs/w-flaky-1")).body).toMatchObject({ status: "done", fence: 2, attempts: 2, result: { delivered: "w-flaky-1" } });
  });

  test("a failed delivery due later is delivered by the cron", async () => {
    await call("PUT", "/v1/queues/w-later/push", { url: `${ENDPOINT}/flaky?retryAfter=1` });
    await call("POST", "/v1/jobs", { id: "w-later-1", queue: "w-later" });
    expect(await received("w-later-1")).toHaveLength(1);
    const failed = (await call("GET", "/v1/jobs/w-later-1")).body;
    expect(failed).toMatchObject({ status: "scheduled", attempts: 1, lastError: "the endpoint answered 500: first time" });
    await cron();
    expect(await received("w-later-1")).toHaveLength(1); // not due yet
    await new Promise((resolve) => setTimeout(resolve, failed.runAt - Date.now() + 10));
    await cron();
    expect((await received("w-later-1")).map((delivery) => delivery.headers["fencelease-fence"])).toEqual(["1", "2"]);
    expect((await call("GET", "/v1/jobs/w-later-1")).body).toMatchObject({ status: "done", fence: 2, attempts: 2, result: { delivered: "w-later-1" } });
  });

  test("a job answered 202 stays leased to the endpoint: the cron does not deliver it again while the lease lasts", async () => {
    await call("PUT", "/v1/queues/w-accept/push", { url: `${ENDPOINT}/accept` });
    await call("POST", "/v1/jobs", { id: "w-accept-1", queue: "w-accept" });
    await cron();
    expect(await received("w-accept-1")).toHaveLength(1);
    expect((await call("GET", "/v1/jobs/w-accept-1")).body).toMatchObject({ status: "leased", owner: "push", fence: 1 });
    expect((await call("POST", "/v1/jobs/w-accept-1/complete", { owner: "push", fence: 1, result: "later" })).status).toBe(200);
  });

  test("an endpoint that answered 202 and completes later through the API frees its slot: that request delivers the job held back", async () => {
    await call("PUT", "/v1/queues/w-slot/push", { url: `${ENDPOINT}/accept`, maxInFlight: 1 });
    await call("POST", "/v1/jobs", { id: "w-slot-1", queue: "w-slot" });
    await call("POST", "/v1/jobs", { id: "w-slot-2", queue: "w-slot" });
    expect(await received("w-slot-1")).toHaveLength(1);
    expect(await received("w-slot-2")).toEqual([]); // its one slot is held by the first, answered 202
    expect((await call("GET", "/v1/jobs/w-slot-2")).body).toMatchObject({ status: "queued", owner: null, fence: 0 });
    expect((await call("POST", "/v1/jobs/w-slot-1/complete", { owner: "push", fence: 1, result: "later" })).status).toBe(200);
    expect(await received("w-slot-2")).toHaveLength(1); // no enqueue, no cron: the completion's waitUntil delivered it
    expect((await call("GET", "/v1/jobs/w-slot-2")).body).toMatchObject({ status: "leased", owner: "push", fence: 1 });
  });

  test("the enqueue's waitUntil goes on delivering as slots free up: five jobs at two at a time are all delivered by it", async () => {
    await call("PUT", "/v1/queues/w-rounds/push", { url: `${ENDPOINT}/ok`, maxInFlight: 2 });
    const ids = ["w-rounds-1", "w-rounds-2", "w-rounds-3", "w-rounds-4", "w-rounds-5"];
    expect((await call("POST", "/v1/queues/w-rounds/jobs", { jobs: ids.map((id) => ({ id })) })).status).toBe(200);
    for (const id of ids) {
      expect((await call("GET", `/v1/jobs/${id}`)).body, id).toMatchObject({ status: "done", fence: 1, attempts: 1, result: { delivered: id } });
      expect(await received(id), id).toHaveLength(1);
    }
  });

  test("on the Worker, a timeoutMs longer than a waitUntil can wait for is refused, naming the limit, and changes nothing", async () => {
    const refused = await call("PUT", "/v1/queues/w-long/push", { url: `${ENDPOINT}/ok`, timeoutMs: WORKER_MAX_PUSH_TIMEOUT_MS + 1 });
    expect(refused.status).toBe(400);
    expect(refused.body.error).toEqual({
      code: "invalid_request",
      message: `timeoutMs must be at most ${WORKER_MAX_PUSH_TIMEOUT_MS}, got ${WORKER_MAX_PUSH_TIMEOUT_MS + 1}: on the Cloudflare Worker, a delivery must end within the waitUntil of the request that starts it, which the runtime ends 30 s after the answer`,
    });
    expect((await call("GET", "/v1/queues/w-long/push")).status).toBe(404);
    expect((await call("PUT", "/v1/queues/w-long/push", { url: `${ENDPOINT}/ok`, timeoutMs: WORKER_MAX_PUSH_TIMEOUT_MS })).status).toBe(201);
    expect((await call("PUT", "/v1/queues/w-long/push", { url: `${ENDPOINT}/accept`, timeoutMs: 60_000 })).status).toBe(400);
    expect((await call("GET", "/v1/queues/w-long/push")).body).toMatchObject({ url: `${ENDPOINT}/ok`, timeoutMs: WORKER_MAX_PUSH_TIMEOUT_MS });
  });

  test("a queue without push is left to its workers: nothing is delivered, the job waits", async () => {
    await call("POST", "/v1/jobs", { id: "w-plain-1", queue: "w-plain" });
    await cron();
    expect(await received("w-plain-1")).toEqual([]);
    expect((await call("GET", "/v1/jobs/w-plain-1")).body.status).toBe("queued");
  });
});

describe("the deliveries of a write, bounded in time", () => {
  const store = new LeaseStore(d1Driver(env.DB));
  const pushing = (options: { windowMs?: number; maxTimeoutMs?: number }) => pushAfterWrites(requestWaits(store, Date.now), { store, clock: Date.now, ttlMs: 0, ...options });

  test("a later round starts only if it can end within the window: what is left waits for the cron", async () => {
    await store.push.put("w-window", { url: `${ENDPOINT}/ok`, timeoutMs: 1_000, maxInFlight: 2 });
    await store.enqueueMany("w-window", { jobs: [{ id: "w-window-1" }, { id: "w-window-2" }, { id: "w-window-3" }] });
    // The first round always runs; a second, which could wait 1000 ms more, would end past the 1000 ms window.
    await pushing({ windowMs: 1_000 }).waits.claimable("w-window", 3);
    expect((await Promise.all(["w-window-1", "w-window-2", "w-window-3"].map((id) => store.get(id)))).map((job) => job.status)).toEqual(["done", "done", "queued"]);
    expect(await received("w-window-3")).toEqual([]);
  });

  test("a delivery waits no longer than the runtime allows, whatever timeoutMs its queue was set with elsewhere, and the timeout is recorded", async () => {
    // As a Node server on the same database could set it: the Worker's put would refuse it.
    await store.push.put("w-clamp", { url: `${ENDPOINT}/slow?ms=3000`, timeoutMs: 60_000 });
    await store.enqueue("w-clamp-1", { queue: "w-clamp" });
    await pushing({ maxTimeoutMs: 300 }).waits.claimable("w-clamp", 1);
    expect(await store.get("w-clamp-1")).toMatchObject({ status: "scheduled", attempts: 1, lastError: "the endpoint did not answer within 300 ms" });
    const pushed = (await store.events("w-clamp-1")).items.filter((event) => event.kind === "pushed");
    expect(pushed).toMatchObject([{ action: "timeout", httpStatus: null, error: "the endpoint did not answer within 300 ms" }]);
  });
});
