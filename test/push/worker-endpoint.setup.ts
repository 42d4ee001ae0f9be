import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import type { TestProject } from "vitest/node";

// A real HTTP endpoint for the Worker's push tests (test/worker/push.test.ts),
// started in Node for the whole workers project: a Worker under test cannot
// listen, but it fetches 127.0.0.1 as it would any URL. How it answers is in
// the path; what it received is at GET /received, oldest first.

declare module "vitest" {
  export interface ProvidedContext {
    /** The base URL of the push endpoint: POST /ok, /flaky, /accept, /slow; GET /received. */
    pushEndpoint: string;
  }
}

/** One delivery the endpoint received. */
type Received = { path: string; headers: Record<string, string>; body: string };

/** Starts the endpoint, provides its URL to the tests, and answers how to close it. */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const received: Received[] = [];
  const failedOnce = new Set<string>();
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      const url = new URL(request.url!, "http://endpoint");
      const path = url.pathname;
      if (request.method === "GET" && path === "/received") {
        response.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(received));
        return;
      }
      const body = Buffer.concat(chunks).toString("utf8");
      received.push({ path, headers: Object.fromEntries(Object.entries(request.headers).map(([name, value]) => [name, String(value)])), body });
      const job = String(request.headers["fencelease-job-id"]);
      if (path === "/accept") return void response.writeHead(202).end();
      // Fails each job's first delivery, due again at once (or after ?retryAfter= seconds); takes the next.
      if (path === "/flaky" && !failedOnce.has(job)) {
        failedOnce.add(job);
        return void response.writeHead(500, { "retry-after": url.searchParams.get("retryAfter") ?? "0" }).end("first time");
      }
      // Answers after ?ms= milliseconds.
      if (path === "/slow") {
        setTimeout(() => response.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ delivered: job, path })), Number(url.searchParams.get("ms")));
        return;
      }
      response.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ delivered: job, path }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  project.provide("pushEndpoint", `http://127.0.0.1:${(server.address() as AddressInfo).port}`);
  return async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  };
}
