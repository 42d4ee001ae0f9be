import { env, SELF } from "cloudflare:test";
import { trace } from "@opentelemetry/api";
import { describe, expect, test } from "vitest";
import { checked } from "../../src/store/checked.ts";

// A job's trace context on the Worker (issue 21 part 2): D1 stores it, every
// lease hands it back. The Worker has no OpenTelemetry SDK: the API is a
// no-op there, and serving a traced request costs nothing more.

const TOKEN = "worker-test-token"; // FENCELEASE_TOKENS in vitest.config.ts
const PARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
const STATE = "congo=t61rcWkgMzE";
const OTHER = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00";

function call(method: string, path: string, body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return SELF.fetch(`https://fencelease.test${path}`, {
    method,
    headers: { Authorization: `Bearer ${TOKEN}`, "Content-Type": "application/json", ...headers },
    body: JSON.stringify(body),
  });
}

type Leases = { leases: { job: { id: string; traceparent: string | null; tracestate: string | null } }[] };

describe("the trace context on the Worker", () => {
  test("a traceparent survives enqueue -> lease on D1: from the headers of POST /v1/jobs, and from each job of a bulk enqueue", async () => {
    expect(trace.getActiveSpan()).toBeUndefined(); // no SDK: the API is a no-op
    expect((await call("POST", "/v1/jobs", { id: "traced-1", queue: "traced" }, { traceparent: PARENT, tracestate: STATE })).status).toBe(201);
    const bulk = await call("POST", "/v1/queues/traced/jobs", { jobs: [{ id: "traced-2", traceparent: OTHER }, { id: "traced-3" }] });
    expect(bulk.status).toBe(200);

    const claimed = (await (await call("POST", "/v1/queues/traced/claim", { owner: "W", ttlMs: 30_000, limit: 3 })).json()) as Leases;
    const seen = Object.fromEntries(claimed.leases.map(({ job }) => [job.id, [job.traceparent, job.tracestate]]));
    expect(seen).toEqual({ "traced-1": [PARENT, STATE], "traced-2": [OTHER, null], "traced-3": [null, null] });
    expect(await env.DB.prepare("SELECT traceparent, tracestate FROM jobs WHERE id = 'traced-1'").first()).toEqual({ traceparent: PARENT, tracestate: STATE });
  });

  test("the trace context adds no row written to an enqueue, as D1 counts them (rows and index entries)", async () => {
    async function rowsWritten(id: string, trace: { traceparent?: string; tracestate?: string }): Promise<number> {
      const [statement] = checked.enqueue(id, { queue: "cost", ...trace }, 1_000).statements;
      return (await env.DB.prepare(statement!.sql).bind(...statement!.args).run()).meta.rows_written;
    }
    await rowsWritten("cost-first", {}); // a queue's first job also inserts its count's row
    const plain = await rowsWritten("cost-plain", {});
    expect(plain).toBeGreaterThan(0);
    expect(await rowsWritten("cost-traced", { traceparent: PARENT, tracestate: STATE })).toBe(plain);
    expect(await rowsWritten("cost-plain-again", {})).toBe(plain);
  });
});
