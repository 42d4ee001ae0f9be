import type { Server } from "node:http";

/** The default time in-flight requests get to finish after a stop, before their connections are cut: 10 s. */
export const SHUTDOWN_GRACE_MS = 10_000;

type Fetch = (request: Request, env?: object) => Response | Promise<Response>;

/** What a request that arrives during a stop is told: nothing was started, ask again elsewhere or later. */
function shuttingDown(): Response {
  const body = { error: { code: "unavailable", message: "the server is shutting down and started nothing; retry shortly", details: { outcome: "not_applied" } } };
  return Response.json(body, { status: 503, headers: { "Retry-After": "1", Connection: "close" } });
}

/**
 * gracefulStop wraps a fetch handler so that a Node server can stop under
 * keep-alive load. After `stop` begins, no new request is started (each is
 * answered 503 `unavailable`, outcome `not_applied`); every answer, those of
 * the requests in flight included, says `Connection: close`, so keep-alive
 * clients leave; idle connections are closed at once. `stop` resolves when the
 * last connection has closed, or after `graceMs`, when the rest are cut.
 * Without this, Node's `server.close()` keeps serving new requests on open
 * keep-alive connections for as long as their clients go on sending.
 */
export function gracefulStop(inner: Fetch) {
  let stopping = false;
  const listeners: (() => void)[] = [];
  return {
    /** The wrapped handler, to serve. */
    async fetch(request: Request, env?: object): Promise<Response> {
      if (stopping) return shuttingDown();
      const response = await inner(request, env);
      if (!stopping) return response;
      const closing = new Response(response.body, response); // an answer's headers may be immutable
      closing.headers.set("Connection", "close");
      return closing;
    },
    /** Whether a stop has begun. */
    get stopping(): boolean {
      return stopping;
    },
    /** Calls `listener` once when a stop begins (a waiting request answers at once). */
    onStop(listener: () => void): void {
      listeners.push(listener);
    },
    /** Stops `server` as described above; resolves once every connection is closed. */
    stop(server: Server, graceMs = SHUTDOWN_GRACE_MS): Promise<void> {
      stopping = true;
      for (const listener of listeners.splice(0)) listener();
      return new Promise<void>((resolve, reject) => {
        const cut = setTimeout(() => server.closeAllConnections(), graceMs);
        server.close((error) => {
          clearTimeout(cut);
          if (error) reject(error);
          else resolve();
        });
        server.closeIdleConnections();
      });
    },
  };
}
