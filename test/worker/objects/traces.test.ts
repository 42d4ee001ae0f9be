import { SELF } from "cloudflare:test";
import { describe, expect, test } from "vitest";

// A job's trace context and the request histogram in objects mode (issue 21
// part 2): the router hands an enqueue's headers on to the queue's object,
// whose store keeps them; the router counts every request by its own route
// patterns, and its /metrics shows them beside the queues' numbers.

const TOKEN = "worker-test-token"; // FENCELEASE_TOKENS in vitest.config.ts
const PARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
const STATE = "congo=t61rcWkgMzE";
const OTHER = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00";

function call(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return SELF.fetch(`https://fencelease.test${path}`, {
    method,
    headers: { Authorization: `Bearer ${TOKEN}`, "Content-Type": "application/json", ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
}

type Leases = { leases: { job: { id: string; traceparent: string | null; tracestate: string | null } }[] };

describe("the trace context in objects mode", () => {
  test("a traceparent survives enqueue -> lease: the headers of POST /v1/jobs, a bulk enqueue's fields, and a claim by id", async () => {
    expect((await call("POST", "/v1/jobs", { id: "ot-1", queue: "ot-traced" }, { traceparent: PARENT, tracestate: STATE })).status).toBe(201);
    expect((await call("POST", "/v1/queues/ot-traced/jobs", { jobs: [{ id: "ot-2", traceparent: OTHER }, { id: "ot-3" }] })).status).toBe(200);
    const claimed = (await (await call("POST", "/v1/queues/ot-traced/claim", { owner: "W", ttlMs: 30_000, limit: 2 })).json()) as Leases;
    expect(Object.fromEntries(claimed.leases.map(({ job }) => [job.id, [job.traceparent, job.tracestate]]))).toEqual({ "ot-1": [PARENT, STATE], "ot-2": [OTHER, null] });
    const byId = (await (await call("POST", "/v1/jobs/ot-3/claim", { owner: "W", ttlMs: 30_000 })).json()) as Leases["leases"][number];
    expect(byId.job).toMatchObject({ id: "ot-3", traceparent: null, tracestate: null });
  });

  test("/metrics has the router's request histogram, by route pattern and status class", async () => {
    await call("POST", "/v1/queues/ot-metrics/jobs", { jobs: [{ id: "ot-m1" }] });
    await call("GET", "/v1/jobs/ot-m1");
    await call("GET", "/v1/jobs/ot-missing");
    const text = await (await call("GET", "/metrics")).text();
    const count = (labels: string) => Number(new RegExp(`^fencelease_http_request_duration_seconds_count\\{${labels.replace(/[/]/g, "\\/")}\\} (\\d+)$`, "m").exec(text)?.[1] ?? 0);
    expect(count('method="POST",route="/v1/queues/:queue/jobs",code="2xx"')).toBeGreaterThanOrEqual(1);
    expect(count('method="GET",route="/v1/jobs/:id",code="2xx"')).toBeGreaterThanOrEqual(1);
    expect(count('method="GET",route="/v1/jobs/:id",code="4xx"')).toBeGreaterThanOrEqual(1);
    expect(text).toContain('fencelease_jobs{queue="ot-metrics",status="queued"} 1');
  });
});
