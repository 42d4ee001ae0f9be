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
type BufferClass = typeof import("node:buffer").Buffer;

/** What sendWithNodeHttp runs on: the modules, and one keep-alive agent per protocol for every client of the process. */
type NodeHttp = { http: HttpModule; https: HttpModule; Buffer: BufferClass; agents: { http: Http.Agent; https: Http.Agent } };
let nodeHttp: NodeHttp | null | undefined; // null: the runtime has none

/** The node:http and node:https of the runtime, once; null in Workers, browsers, or a runtime without process.getBuiltinModule. */
function nodeHttpOfRuntime(): NodeHttp | null {
  if (nodeHttp !== undefined) return nodeHttp;
  const process = (globalThis as { process?: { getBuiltinModule?: (id: string) => unknown } }).process;
  const inWorkers = (globalThis as { navigator?: { userAgent?: string } }).navigator?.userAgent === "Cloudflare-Workers";
  const load = (id: string) => (typeof process?.getBuiltinModule === "function" && !inWorkers ? process.getBuiltinModule(id) : undefined);
  const http = load("node:http") as HttpModule | undefined;
  const https = load("node:https") as HttpModule | undefined;
  const buffer = load("node:buffer") as { Buffer: BufferClass } | undefined;
  if (http === undefined || https === undefined || buffer === undefined) return (nodeHttp = null);
  // Idle connections close after 4 s, as undici's do, unless the server's Keep-Alive hint says sooner:
  // a request sent on a connection its server (or a proxy) is closing fails with its outcome unknown.
  const agent = (module: HttpModule) => new module.Agent({ keepAlive: true, timeout: 4_000 });
  return (nodeHttp = { http, https, Buffer: buffer.Buffer, agents: { http: agent(http), https: agent(https) } });
}

/**
 * A Send over node:http and node:https with keep-alive connections, shared by
 * every client of the process, where the runtime has them (Node, Bun, Deno;
 * not Workers nor browsers: undefined). The worker runner spends most of its
 * own time in its HTTP calls, and Node's fetch (undici behind web streams)
 * costs it about twice what node:http does: in the bench's worker runner,
 * about 16,000 against 19,000 jobs/s. The modules are taken with
 * process.getBuiltinModule, so that no bundler for another runtime meets an
 * import of them. Unlike fetch, it follows no redirect: a 3xx is answered as
 * it is.
 */
export function sendWithNodeHttp(): Send | undefined {
  const node = nodeHttpOfRuntime();
  if (node === null) return undefined;
  const { Buffer } = node;
  return (url, { method, headers, body, signal }) =>
    new Promise((resolve, reject) => {
      const secure = /^https:/i.test(url); // a scheme is case-insensitive: "HTTPS://" too
      const [module, agent] = secure ? [node.https, node.agents.https] : [node.http, node.agents.http];
      const failed = (error: unknown) => reject(signal.aborted ? signal.reason : new Error(`request failed: ${(error as Error).message}`, { cause: error }));
      const sized = body === undefined ? headers : { ...headers, "Content-Length": String(Buffer.byteLength(body)) };
      const request = module.request(url, { method, headers: sized, agent, signal }, (response) => {
        const chunks: Uint8Array[] = [];
        response.on("data", (chunk: Uint8Array) => chunks.push(chunk));
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
