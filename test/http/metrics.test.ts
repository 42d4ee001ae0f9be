import { describe, expect, test } from "vitest";
import { LATENCY_BUCKETS } from "../../src/http/metrics.ts";
import { freshApp, TOKEN } from "../fresh-app.ts";

// /metrics' request histogram (issue 21 part 2): how long each request took,
// by method, route pattern and status class, read back from its text.

const NAME = "fencelease_http_request_duration_seconds";

/** The histogram's series in the text, by their labels: each bucket's count, +Inf, sum and count. */
function histogram(text: string): Map<string, { buckets: [string, number][]; sum: number; count: number }> {
  const series = new Map<string, { buckets: [string, number][]; sum: number; count: number }>();
  const at = (labels: string) => series.get(labels) ?? series.set(labels, { buckets: [], sum: 0, count: 0 }).get(labels)!;
  for (const line of text.split("\n")) {
    const bucket = new RegExp(`^${NAME}_bucket\\{(.*),le="([^"]+)"\\} (\\d+)$`).exec(line);
    if (bucket) at(bucket[1]!).buckets.push([bucket[2]!, Number(bucket[3])]);
    const sum = new RegExp(`^${NAME}_sum\\{(.*)\\} (\\S+)$`).exec(line);
    if (sum) at(sum[1]!).sum = Number(sum[2]);
    const count = new RegExp(`^${NAME}_count\\{(.*)\\} (\\d+)$`).exec(line);
    if (count) at(count[1]!).count = Number(count[2]);
  }
  return series;
}

describe("the request histogram of /metrics", () => {
  test("counts requests by method, route pattern (never the path) and status class, the refused and the unmatched too", async () => {
    const { app, call } = await freshApp();
    await call("POST", "/v1/jobs", { id: "a" });
    await call("POST", "/v1/jobs", { id: "b" });
    await call("GET", "/v1/jobs/a");
    await call("GET", "/v1/jobs/missing"); // 404
    await app.request("/v1/jobs/a"); // 401: no token
    await call("GET", "/no/such/route");
    await call("GET", "/another/one");
    await app.request("/v1/jobs", { method: "PROPFIND", headers: { Authorization: `Bearer ${TOKEN}` } });

    const text = (await call("GET", "/metrics")).body as string;
    expect(text).toContain(`# HELP ${NAME} How long the server took to answer a request, by method, route pattern and status class; _count is the requests answered.`);
    expect(text).toContain(`# TYPE ${NAME} histogram`);
    const counts = Object.fromEntries([...histogram(text)].map(([labels, series]) => [labels, series.count]));
    expect(counts).toEqual({
      'method="POST",route="/v1/jobs",code="2xx"': 2,
      'method="GET",route="/v1/jobs/:id",code="2xx"': 1,
      'method="GET",route="/v1/jobs/:id",code="4xx"': 2, // the 404 and the 401
      'method="GET",route="(unmatched)",code="4xx"': 2,
      'method="_OTHER",route="(unmatched)",code="4xx"': 1,
    });
  });

  test("each series is a Prometheus histogram: every bucket in order, cumulative, +Inf equal to _count", async () => {
    const { call } = await freshApp();
    for (let i = 0; i < 5; i++) await call("POST", "/v1/jobs", { id: `job-${i}` });
    await call("GET", "/v1/stats");
    const series = histogram((await call("GET", "/metrics")).body as string);
    expect(series.size).toBe(2);
    for (const { buckets, count, sum } of series.values()) {
      expect(buckets.map(([le]) => le)).toEqual([...LATENCY_BUCKETS.map(String), "+Inf"]);
      const cumulative = buckets.map(([, n]) => n);
      expect(cumulative).toEqual([...cumulative].sort((a, b) => a - b));
      expect(cumulative.at(-1)).toBe(count);
      expect(sum).toBeGreaterThan(0);
    }
    expect(series.get('method="POST",route="/v1/jobs",code="2xx"')!.count).toBe(5);
  });

  test("a request lands in the bucket of how long it took: a long poll of 300 ms is above 0.25 s", async () => {
    const { call } = await freshApp();
    await call("POST", "/v1/queues/empty/claim", { owner: "W", ttlMs: 30_000, waitMs: 300 });
    const poll = histogram((await call("GET", "/metrics")).body as string).get('method="POST",route="/v1/queues/:queue/claim",code="2xx"')!;
    expect(Object.fromEntries(poll.buckets)).toMatchObject({ "0.25": 0, "30": 1, "+Inf": 1 });
    expect(poll.sum).toBeGreaterThanOrEqual(0.3);
  });

  test("before any other request, the histogram is its HELP and TYPE alone, and the queues' numbers are as before", async () => {
    const { call } = await freshApp();
    const text = (await call("GET", "/metrics")).body as string;
    expect(histogram(text).size).toBe(0);
    expect(text).toContain(`# TYPE ${NAME} histogram\n`);
    expect(text.startsWith("# HELP fencelease_jobs ")).toBe(true);
  });
});

describe("the long polls waiting, in /metrics", () => {
  test("fencelease_waiting_requests counts the claim-nexts and job reads waiting now, and drops as each is answered", async () => {
    const { call } = await freshApp();
    const waiting = async () => Number(/^fencelease_waiting_requests (\d+)$/m.exec((await call("GET", "/metrics")).body as string)?.[1]);
    expect(await waiting()).toBe(0);
    await call("POST", "/v1/jobs", { id: "read-me", queue: "other" });
    const claim = call("POST", "/v1/queues/q/claim", { owner: "w", ttlMs: 60_000, waitMs: 30_000 });
    const read = call("GET", "/v1/jobs/read-me?waitMs=30000");
    while ((await waiting()) < 2);
    expect(await waiting()).toBe(2);
    await call("POST", "/v1/jobs", { id: "taken", queue: "q" }); // rings the claim
    expect(((await claim).body as { leases: { job: { id: string } }[] }).leases.map((lease) => lease.job.id)).toEqual(["taken"]);
    expect(await waiting()).toBe(1);
    await call("POST", "/v1/jobs/read-me/cancel", {});
    expect(((await read).body as { status: string }).status).toBe("cancelled");
    expect(await waiting()).toBe(0);
  });
});
