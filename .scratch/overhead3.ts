import { context, propagation, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { createApp } from "../src/http/app.ts";
import { openStore } from "../src/node.ts";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
async function time(a: { request: (p: string, i?: RequestInit) => Response | Promise<Response> }, n: number): Promise<number> {
  const start = process.cpuUsage();
  for (let i = 0; i < n; i++) await a.request("/v1/jobs/job-1");
  const used = process.cpuUsage(start);
  return (used.user + used.system) / n;
}
const store = await openStore({ url: `file:${mkdtempSync(`${tmpdir()}/ovh-`)}/db` });
const full = createApp({ store, auth: "off" as const });
await store.enqueue("job-1", {});
const off: number[] = [];
for (let r = 0; r < 9; r++) off.push(await time(full, 2000));
const exporter = new InMemorySpanExporter();
trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }));
context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
propagation.setGlobalPropagator(new W3CTraceContextPropagator());
const on: number[] = [];
for (let r = 0; r < 9; r++) { on.push(await time(full, 2000)); exporter.reset(); }
console.log("GET /v1/jobs/:id CPU µs/request: no SDK", median(off).toFixed(1), "| SDK, every span recorded to memory", median(on).toFixed(1));
store.close();
