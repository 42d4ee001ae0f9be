import { createClient } from "@libsql/client";
import { onTestFinished } from "vitest";
import { LeaseClient, type RetryOptions } from "../../src/client/index.ts";
import { InProcessApi } from "../../src/client/in-process/api.ts";
import type { EmbeddedStore } from "../../src/client/in-process/embedded-store.ts";
import { openStore, type RunningServer, startServer } from "../../src/node.ts";
import { freshStore } from "../fresh-db.ts";

// The client's suites run on both of its transports: over HTTP against the
// real Node server, and in-process on a store of the test's own process. Each
// test gets a fresh database file; what it asserts of the rows it reads
// through a connection of its own.

/** How a client reaches fencelease in a test. */
export type TransportName = "http" | "in-process";

/** Both, for describe.each. */
export const TRANSPORTS: TransportName[] = ["http", "in-process"];

export const TOKEN = "client-test-token";

/** What a test may set: the clock the server (or the store's calls) read, the database's busy timeout, the client's retries, and a wrapper of the store the in-process client calls. */
export type ServedOptions = {
  clock?: () => number;
  busyTimeoutMs?: number;
  retry?: RetryOptions;
  /** In-process only: the store the client is given, made from the real one (a test's way to watch or break its calls). */
  storeFor?: (store: EmbeddedStore) => EmbeddedStore;
};

/**
 * A client over `transport` on a fresh file database: over HTTP, the Node
 * server (auth on) and a client for it; in-process, a store opened on the
 * file and a client over it. `other` is a second client the same way (its
 * calls ring the same waiters), `waiting()` how many calls wait now (the
 * server's long polls, or the in-process room), `stop()` what the server (or
 * the store) runs, once.
 */
export async function served(transport: TransportName, options: ServedOptions = {}) {
  const fresh = await freshStore();
  const delays: number[] = [];
  const retry: RetryOptions = options.retry ?? { retries: 3, baseDelayMs: 100, random: () => 0.5, sleep: async (ms) => void delays.push(ms) };
  const reader = createClient({ url: fresh.url });
  onTestFinished(() => reader.close());
  const eventRows = async (id: string) =>
    (await reader.execute({ sql: "SELECT kind, action, owner, fence, current_owner, current_fence, error FROM events WHERE job_id = ? ORDER BY seq", args: [id] })).rows.map((row) => ({ ...row }));
  const over: Over = await (transport === "http" ? overHttp(fresh.url, options, retry) : inProcess(fresh.url, options, retry));
  let stopped: Promise<void> | undefined;
  const stop = () => (stopped ??= over.stop());
  return { ...fresh, ...over, transport, delays, eventRows, stop, [Symbol.asyncDispose]: stop };
}

/** The client and what it runs on; `server` only over HTTP. */
type Over = { server: RunningServer | undefined; client: LeaseClient; other: LeaseClient; waiting: () => number; stop: () => Promise<void> };

async function overHttp(url: string, options: ServedOptions, retry: RetryOptions): Promise<Over & { server: RunningServer }> {
  const server: RunningServer = await startServer({ host: "127.0.0.1", port: 0, databaseUrl: url, auth: { tokens: [TOKEN] }, busyTimeoutMs: options.busyTimeoutMs, clock: options.clock });
  return {
    server,
    client: new LeaseClient({ baseUrl: server.url, token: TOKEN, retry }),
    other: new LeaseClient({ baseUrl: server.url, token: TOKEN }),
    waiting: () => server.waiting,
    stop: () => server.stop(),
  };
}

async function inProcess(url: string, options: ServedOptions, retry: RetryOptions): Promise<Over> {
  const store = await openStore({ url, migrations: false, busyTimeoutMs: options.busyTimeoutMs });
  const given = options.storeFor?.(store) ?? store;
  const api = InProcessApi.of(given, options.clock);
  const client = new LeaseClient({ store: given, clock: options.clock, retry });
  return {
    server: undefined,
    client,
    other: new LeaseClient({ store: given, clock: options.clock }),
    waiting: () => api.waiting,
    stop: async () => store.close(),
  };
}
