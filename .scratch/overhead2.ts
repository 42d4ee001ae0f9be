import { Hono } from "hono";
import { tracing } from "../src/http/middleware/tracing.ts";
import { requestMetrics } from "../src/http/middleware/request-metrics.ts";
import { RequestMetrics } from "../src/http/metrics.ts";
import { createApp } from "../src/http/app.ts";
import { openStore } from "../src/node.ts";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";

function app(withTracing: boolean, withMetrics: boolean, noop = false) {
  const a = new Hono();
  if (noop) a.use(async function noop(_c, next) { await next(); });
  if (withMetrics) a.use(requestMetrics(new RequestMetrics()));
  if (withTracing) a.use(tracing());
  a.get("/v1/jobs/:id", (c) => c.json({ id: c.req.param("id") }));
  return a;
}
async function time(a: { request: (p: string, i?: RequestInit) => Response | Promise<Response> }, n: number, path: (i: number) => string, init: RequestInit = {}): Promise<number> {
  const start = process.cpuUsage();
  for (let i = 0; i < n; i++) await a.request(path(i), init);
  const used = process.cpuUsage(start);
  return ((used.user + used.system) / n);
}
const headers = { traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01" };
const apps = { bare: app(false, false), noopMiddleware: app(false, false, true), tracing: app(true, false), metrics: app(false, true), both: app(true, true) };
const samples: Record<string, number[]> = { bare: [], noopMiddleware: [], tracing: [], metrics: [], both: [] };
for (let round = 0; round < 25; round++) {
  for (const [name, a] of Object.entries(apps)) samples[name]!.push(await time(a, 5000, (i) => `/v1/jobs/job-${i}`, { headers }));
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
console.log("middleware alone, CPU µs per request (median of 15 rounds of 5000):", Object.fromEntries(Object.entries(samples).map(([k, v]) => [k, median(v).toFixed(2)])));

const store = await openStore({ url: `file:${mkdtempSync(`${tmpdir()}/ovh-`)}/db` });
const full = createApp({ store, auth: "off" as const });
await store.enqueue("job-1", {});
console.log((await full.request("/v1/jobs/job-1")).status);
const real: number[] = [];
for (let round = 0; round < 7; round++) real.push(await time(full, 2000, () => "/v1/jobs/job-1", { headers: { ...headers } }));
console.log("the whole app, GET /v1/jobs/:id on a file, CPU µs per request (median of 7 rounds of 2000):", median(real).toFixed(1));
store.close();
