import { describe, expect, test } from "vitest";
import { trace } from "@opentelemetry/api";
import { LeaseClient, runWorker, traceJob, withLease } from "../../src/client/index.ts";
import { freshApp, TOKEN } from "../fresh-app.ts";

// The client's tracing with no OpenTelemetry SDK registered, as most users
// run it: no span is active, no call carries a traceparent, and a job that
// has one is worked on as any other. (With an SDK: test/tracing/one-trace.test.ts.)

const PARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

/** A client that calls the app in this process and keeps every request's headers. */
async function clientSeeingHeaders() {
  const fresh = await freshApp({ clock: Date.now });
  const headers: Headers[] = [];
  const client = new LeaseClient({
    baseUrl: "http://fencelease.test",
    token: TOKEN,
    fetch: (input, init) => {
      headers.push(new Headers(init?.headers));
      return Promise.resolve(fresh.app.request(String(input), init));
    },
  });
  return { ...fresh, client, headers };
}

describe("the client with no SDK registered", () => {
  test("sends no traceparent, and runWorker and withLease work on jobs that carry one as on any other", async () => {
    const { client, headers } = await clientSeeingHeaders();
    expect(trace.getActiveSpan()).toBeUndefined();
    await client.enqueueMany("q", [{ id: "a", traceparent: PARENT }, { id: "b" }]);
    await client.enqueue({ id: "c", queue: "solo", traceparent: PARENT });

    const seen: (string | null)[] = [];
    const worker = runWorker(client, { queue: "q", owner: "w", concurrency: 2, ttlMs: 30_000 }, async ({ job }) => {
      seen.push(job.traceparent);
      return trace.getActiveSpan() === undefined; // nothing is made active
    });
    await expect.poll(async () => (await client.get("b")).status, { timeout: 10_000 }).toBe("done");
    await expect.poll(async () => (await client.get("a")).status, { timeout: 10_000 }).toBe("done");
    await worker.stop();
    expect(seen.sort()).toEqual([PARENT, null].sort());
    expect((await client.get("a")).result).toBe(true);

    const done = await withLease(client, { queue: "solo" }, async ({ job }) => job.traceparent, { owner: "w", ttlMs: 30_000 });
    expect(done?.result).toBe(PARENT);
    expect(await traceJob(done!, async () => "ran")).toBe("ran");
    expect(headers.length).toBeGreaterThan(5);
    expect(headers.filter((sent) => sent.has("traceparent") || sent.has("tracestate"))).toEqual([]);
  });
});
