import { runInDurableObject, SELF } from "cloudflare:test";
import { describe, expect, inject, test } from "vitest";
import { verifyPush } from "../../../src/client/index.ts";
import type { QueueObject } from "../../../src/worker.ts";
import { queueObject } from "../storage-mode.ts";

// Push in objects mode: the queue's object keeps its push settings, delivers
// a job after the write that made it due, and its alarm delivers what came
// due later. The endpoint is the real Node one of test/push/worker-endpoint.setup.ts.

const ENDPOINT = inject("pushEndpoint");
const TOKEN = "worker-test-token";
const TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

async function call(method: string, path: string, body?: unknown, token = TOKEN): Promise<{ status: number; body: any }> {
  const response = await SELF.fetch(`https://fencelease.test${path}`, {
    method,
    headers: { Authorization: `Bearer ${token}`, ...(body !== undefined && { "Content-Type": "application/json" }) },
    ...(body !== undefined && { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  return { status: response.status, body: text === "" || !response.headers.get("Content-Type")?.includes("json") ? text : JSON.parse(text) };
}

/** What the endpoint received for job `id`, oldest first. */
async function received(id: string): Promise<{ headers: Record<string, string>; body: string }[]> {
  const all = (await (await fetch(`${ENDPOINT}/received`)).json()) as { headers: Record<string, string>; body: string }[];
  return all.filter((request) => request.headers["fencelease-job-id"] === id);
}

/** Waits until job `id` has `status`, for at most 10 s (deliveries run after the answers, the alarm on the real clock). */
async function until(id: string, status: string): Promise<any> {
  for (const started = Date.now(); Date.now() - started < 10_000; await new Promise((resolve) => setTimeout(resolve, 25))) {
    const job = (await call("GET", `/v1/jobs/${id}`)).body;
    if (job.status === status) return job;
  }
  throw new Error(`job ${id} did not become ${status} within 10 s`);
}

describe("push in objects mode", () => {
  test("the queue's object keeps its push settings and delivers a job after the write that made it due", async () => {
    const put = await call("PUT", "/v1/queues/op-ok/push", { url: `${ENDPOINT}/ok` });
    expect(put.status).toBe(201);
    expect((await call("GET", "/v1/queues/op-ok/push")).body).toMatchObject({ queue: "op-ok", url: `${ENDPOINT}/ok` });
    expect((await call("GET", "/v1/push")).body.endpoints).toEqual(expect.arrayContaining([expect.objectContaining({ queue: "op-ok" })]));
    expect((await call("POST", "/v1/jobs", { id: "op-ok-1", queue: "op-ok", payload: { n: 1 } })).status).toBe(201);
    expect(await until("op-ok-1", "done")).toMatchObject({ result: { delivered: "op-ok-1", path: "/ok" }, owner: "push", fence: 1 });
    const [delivery] = await received("op-ok-1");
    expect((await verifyPush({ headers: delivery!.headers, body: delivery!.body }, put.body.secret)).job.payload).toEqual({ n: 1 });
  });

  test("a failed delivery due again is delivered by the queue's alarm, armed for it; both carry the job's traceparent", async () => {
    await call("PUT", "/v1/queues/op-flaky/push", { url: `${ENDPOINT}/flaky?retryAfter=1` });
    await call("POST", "/v1/jobs", { id: "op-flaky-1", queue: "op-flaky", traceparent: TRACEPARENT });
    expect(await until("op-flaky-1", "done")).toMatchObject({ fence: 2, attempts: 2, result: { delivered: "op-flaky-1" } });
    expect((await received("op-flaky-1")).map(({ headers }) => [headers["fencelease-fence"], headers.traceparent, headers.tracestate])).toEqual([["1", TRACEPARENT, undefined], ["2", TRACEPARENT, undefined]]);
  });

  test("a job waiting for a slot keeps the alarm armed, and goes out as soon as the slot frees, not when the lease would end", async () => {
    await call("PUT", "/v1/queues/op-slot/push", { url: `${ENDPOINT}/accept`, maxInFlight: 1, timeoutMs: 20_000 });
    expect((await call("POST", "/v1/queues/op-slot/jobs", { jobs: [{ id: "op-slot-1" }, { id: "op-slot-2" }] })).status).toBe(200);
    const first = await until("op-slot-1", "leased");
    expect(first).toMatchObject({ owner: "push", fence: 1 });
    expect((await call("GET", "/v1/jobs/op-slot-2")).body).toMatchObject({ status: "queued", attempts: 0 });
    // The slot is held by a 202 lease (for timeoutMs + 5 s): the alarm is armed for its end at the latest.
    const armed = await runInDurableObject(queueObject("op-slot"), (object: QueueObject) => object.alarmAt());
    expect(armed).not.toBeNull();
    expect(armed!).toBeLessThanOrEqual(Math.ceil(first.until / 1000) * 1000);
    const freed = Date.now();
    expect((await call("POST", "/v1/jobs/op-slot-1/complete", { owner: "push", fence: 1, result: "later" })).status).toBe(200);
    expect(await until("op-slot-2", "leased")).toMatchObject({ owner: "push", fence: 1 });
    expect(Date.now() - freed).toBeLessThan(10_000);
    expect(await received("op-slot-2")).toHaveLength(1);
  });

  test("/metrics counts the deliveries of each pushed queue, by outcome, and only of the queues the token sees", async () => {
    await call("PUT", "/v1/queues/op-count/push", { url: `${ENDPOINT}/flaky` });
    await call("POST", "/v1/jobs", { id: "op-count-1", queue: "op-count" });
    await until("op-count-1", "done");
    await call("PUT", "/v1/queues/op-hold/push", { url: `${ENDPOINT}/accept` });
    await call("POST", "/v1/jobs", { id: "op-hold-1", queue: "op-hold" });
    await until("op-hold-1", "leased");
    const metrics = (await call("GET", "/metrics")).body as string;
    expect(metrics).toContain('fencelease_push_deliveries_total{queue="op-count",outcome="success"} 1');
    expect(metrics).toContain('fencelease_push_deliveries_total{queue="op-count",outcome="failure"} 1');
    expect(metrics).toContain('fencelease_push_deliveries_total{queue="op-count",outcome="timeout"} 0');
    expect(metrics).toMatch(/fencelease_push_delivery_seconds_total\{queue="op-count",outcome="success"\} \d/);
    expect(metrics).toContain('fencelease_push_in_flight{queue="op-count"} 0');
    expect(metrics).toContain('fencelease_push_deliveries_total{queue="op-hold",outcome="accepted"} 1');
    expect(metrics).toContain('fencelease_push_in_flight{queue="op-hold"} 1');
    const reader = await call("POST", "/v1/tokens", { role: "reader", queues: ["op-hold"] });
    expect(reader.status).toBe(201);
    const seen = (await call("GET", "/metrics", undefined, reader.body.token)).body as string;
    expect(seen).toContain('fencelease_push_in_flight{queue="op-hold"} 1');
    expect(seen).not.toContain("op-count");
  });

  test("a queue without push arms no alarm for its due jobs, and nothing is delivered", async () => {
    await call("POST", "/v1/jobs", { id: "op-plain-1", queue: "op-plain" });
    expect(await runInDurableObject(queueObject("op-plain"), (object: QueueObject) => object.alarmAt())).toBeNull();
    expect(await received("op-plain-1")).toEqual([]);
  });
});
