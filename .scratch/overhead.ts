import { Hono } from "hono";
import { tracing } from "../src/http/middleware/tracing.ts";
import { requestMetrics } from "../src/http/middleware/request-metrics.ts";
import { RequestMetrics } from "../src/http/metrics.ts";
import { traced } from "../src/drivers/traced.ts";
import { freshApp } from "../test/fresh-app.ts";

function app(withTracing: boolean, withMetrics: boolean) {
  const a = new Hono();
  if (withMetrics) a.use(requestMetrics(new RequestMetrics()));
  if (withTracing) a.use(tracing());
  a.get("/v1/jobs/:id", (c) => c.json({ id: c.req.param("id") }));
  return a;
}
async function time(a: Hono, n: number): Promise<number> {
  const start = performance.now();
  for (let i = 0; i < n; i++) await a.request(`/v1/jobs/job-${i}`, { headers: { traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01" } });
  return ((performance.now() - start) / n) * 1000;
}
const N = 20000;
const apps = { bare: app(false, false), tracing: app(true, false), metrics: app(false, true), both: app(true, true) };
for (const round of [1, 2, 3]) {
  const out: Record<string, string> = {};
  for (const [name, a] of Object.entries(apps)) out[name] = (await time(a, N)).toFixed(2) + " µs";
  console.log(round, JSON.stringify(out));
}
// the driver wrapper alone
const noop = { run: async () => [], batch: async (s: unknown[]) => s.map(() => []), close() {} } as any;
const wrapped = traced(noop);
for (const round of [1, 2]) {
  let t = performance.now();
  for (let i = 0; i < 200000; i++) await noop.batch([{ sql: "UPDATE jobs SET x = 1", args: [] }]);
  const bare = (performance.now() - t) / 200;
  t = performance.now();
  for (let i = 0; i < 200000; i++) await wrapped.batch([{ sql: "UPDATE jobs SET x = 1", args: [] }]);
  const w = (performance.now() - t) / 200;
  console.log("driver", round, bare.toFixed(3), "µs bare", w.toFixed(3), "µs traced");
}
