import type * as Http from "node:http";

/** One request as Transport sends it. */
export type Outgoing = { method: string; headers: Record<string, string>; body?: string; signal: AbortSignal };

/** What Transport reads of an answer: its status, a header, and its body as text (read in full before the answer resolves). */
export type Answer = { status: number; header(name: string): string | null; body: string };

/**
 * Sends one request and answers once its whole body has arrived. It rejects
 * when no answer came in full: the request could not be sent (the error's
 * `cause` carries the system code, as fetch's does), the connection broke
 * before the body ended, or `signal` aborted it (with the signal's reason).
 */
export type Send = (url: string, request: Outgoing) => Promise<Answer>;

/** A Send over a fetch (the global one in browsers and Workers, or the one given). */
export function sendWithFetch(fetcher: typeof fetch): Send {
  return async (url, { method, headers, body, signal }) => {
    const response = await fetcher(url, { method, headers, body, signal });
    return { status: response.status, header: (name) => response.headers.get(name), body: await response.text() };
  };
}

type HttpModule = Pick<typeof Http, "Agent" | "request">;

/**
 * A Send over node:http and node:https with keep-alive connections, where the
 * runtime has them (Node, Bun, Deno; not Workers nor browsers: undefined).
 * The worker runner spends most of its own time in its HTTP calls, and Node's
 * fetch (undici behind web streams) costs it about twice what node:http does:
 * in the bench's worker runner, about 16,000 against 19,000 jobs/s. The
 * modules are taken with process.getBuiltinModule, so that no bundler for
 * another runtime meets an import of them.
 */
export function sendWithNodeHttp(): Send | undefined {
  const process = (globalThis as { process?: { getBuiltinModule?: (id: string) => unknown } }).process;
  const inWorkers = (globalThis as { navigator?: { userAgent?: string } }).navigator?.userAgent === "Cloudflare-Workers";
  if (typeof process?.getBuiltinModule !== "function" || inWorkers) return undefined;
  const http = process.getBuiltinModule("node:http") as HttpModule | undefined;
  const https = process.getBuiltinModule("node:https") as HttpModule | undefined;
  if (http === undefined || https === undefined) return undefined;
  // Each client keeps its connections alive; Node's agent drops an idle one before the server's Keep-Alive timeout.
  const plain = { module: http, agent: new http.Agent({ keepAlive: true }) };
  const secure = { module: https, agent: new https.Agent({ keepAlive: true }) };
  return (url, { method, headers, body, signal }) =>
    new Promise((resolve, reject) => {
      const { module, agent } = url.startsWith("https:") ? secure : plain;
      const failed = (error: unknown) => reject(signal.aborted ? signal.reason : new Error(`request failed: ${(error as Error).message}`, { cause: error }));
      const sized = body === undefined ? headers : { ...headers, "Content-Length": String(Buffer.byteLength(body)) };
      const request = module.request(url, { method, headers: sized, agent, signal }, (response) => {
        const chunks: Buffer[] = [];
        response.on("data", (chunk: Buffer) => chunks.push(chunk));
        response.on("error", failed);
        response.on("close", () => response.complete || failed(new Error("the connection closed before the answer's end")));
        response.on("end", () => {
          if (!response.complete) return failed(new Error("the connection closed before the answer's end"));
          const header = (name: string) => {
            const value = response.headers[name.toLowerCase()];
            return value === undefined ? null : Array.isArray(value) ? value.join(", ") : value;
          };
          resolve({ status: response.statusCode!, header, body: Buffer.concat(chunks).toString("utf8") });
        });
      });
      request.on("error", failed);
      request.end(body);
    });
}
