import { createExecutionContext, env, waitOnExecutionContext } from "cloudflare:test";
import { describe, expect, inject, test } from "vitest";
import { verifyPush } from "../../src/client/index.ts";
import worker from "../../src/worker.ts";

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

  test("a failed delivery is delivered again by the cron; both carry the job's trace context as W3C headers", async () => {
    await call("PUT", "/v1/queues/w-flaky/push", { url: `${ENDPOINT}/flaky` });
    await call("POST", "/v1/jobs", { id: "w-flaky-1", queue: "w-flaky", traceparent: TRACEPARENT, tracestate: TRACESTATE });
    expect(await received("w-flaky-1")).toHaveLength(1);
    // Due again at once (Retry-After: 0), but not delivered again within the same request.
    expect((await call("GET", "/v1/jobs/w-flaky-1")).body).toMatchObject({ status: "queued", attempts: 1, lastError: "the endpoint answered 500: first time" });
    await cron();
    expect((await received("w-flaky-1")).map(({ headers }) => [headers["fencelease-fence"], headers.traceparent, headers.tracestate])).toEqual([["1", TRACEPARENT, TRACESTATE], ["2", TRACEPARENT, TRACESTATE]]);
    expect((await call("GET", "/v1/jobs/w-flaky-1")).body).toMatchObject({ status: "done", fence: 2, attempts: 2, result: { delivered: "w-flaky-1" } });
  });

  test("a job answered 202 stays leased to the endpoint: the cron does not deliver it again while the lease lasts", async () => {
    await call("PUT", "/v1/queues/w-accept/push", { url: `${ENDPOINT}/accept` });
    await call("POST", "/v1/jobs", { id: "w-accept-1", queue: "w-accept" });
    await cron();
    expect(await received("w-accept-1")).toHaveLength(1);
    expect((await call("GET", "/v1/jobs/w-accept-1")).body).toMatchObject({ status: "leased", owner: "push", fence: 1 });
    expect((await call("POST", "/v1/jobs/w-accept-1/complete", { owner: "push", fence: 1, result: "later" })).status).toBe(200);
  });

  test("a queue without push is left to its workers: nothing is delivered, the job waits", async () => {
    await call("POST", "/v1/jobs", { id: "w-plain-1", queue: "w-plain" });
    await cron();
    expect(await received("w-plain-1")).toEqual([]);
    expect((await call("GET", "/v1/jobs/w-plain-1")).body.status).toBe("queued");
  });
});
