import type { AddressInfo } from "node:net";
import type { Server } from "node:http";
import { serve } from "@hono/node-server";
import { createApp } from "../../http/app.ts";
import { type Auth, authFromEnv } from "../../http/middleware/auth.ts";
import { gracefulStop, SHUTDOWN_GRACE_MS } from "./graceful-stop.ts";
import { didAnything, fireOnTime, maintain, maintainedLine, repeat, SCHEDULE_RECHECK_MS, wakeAfter } from "../../store/maintenance.ts";
import { openStore } from "./open.ts";
import { uiFilesFromDisk } from "./ui-files.ts";
import { PushDispatcher } from "../../push/dispatcher.ts";
import { type PrivateAddresses, pushNetwork } from "./push-network.ts";
import { localWaits } from "../../wait/long-poll.ts";
import { WaitRoom } from "../../wait/wait-room.ts";

/** How the Node server runs; `serverConfigFromEnv` reads it from the environment. */
export type ServerConfig = {
  /** Default 127.0.0.1. */
  host: string;
  /** Default 8787; 0 picks a free port. */
  port: number;
  /** Default `file:./data/fencelease.db`. */
  databaseUrl: string;
  databaseAuthToken?: string | undefined;
  /** How long a write waits for the database's lock before answering 503; default BUSY_TIMEOUT_MS. */
  busyTimeoutMs?: number | undefined;
  /** On a remote database, how long a call may take before answering 503 `unavailable`, outcome `unknown`; default STATEMENT_TIMEOUT_MS (5 s). */
  statementTimeoutMs?: number | undefined;
  auth: Auth;
  /** How long done and dead jobs are kept; default RETENTION_MS (7 days). */
  retentionMs?: number | undefined;
  /** Commit requests that arrive together as one transaction; default true. */
  groupCommit?: boolean | undefined;
  /** How long between the end of one run that fires due schedules, ends expired leases and purges old jobs and the start of the next; default a minute; 0 never. */
  maintainEveryMs?: number | undefined;
  /** The longest the schedule timer sleeps: it fires each schedule at its time, and one another process put within this; default SCHEDULE_RECHECK_MS (1 s); 0 leaves schedules to the maintenance run. */
  scheduleRecheckMs?: number | undefined;
  log?: ((line: string) => void) | undefined;
  /** How long requests in flight may take to finish after a stop before their connections are cut; default SHUTDOWN_GRACE_MS (10 s). */
  shutdownGraceMs?: number | undefined;
  /** The most requests waiting at once (waitMs); beyond it they answer at once. Default MAX_WAITING (10,000). */
  maxWaiting?: number | undefined;
  /** How often a queue with waiting claims, or a job with waiting reads, is looked at again for writes of other processes; default RECHECK_MS (1 s). */
  recheckMs?: number | undefined;
  /**
   * Whether push deliveries may go to addresses that are not public
   * (loopback, private, link-local...): default "allow" with auth off (the
   * server then listens on loopback only, and every caller may do anything:
   * local development), "deny" with tokens (an admin of one queue must not
   * reach the server's own network). See docs/push.md, Security.
   */
  pushPrivate?: PrivateAddresses | undefined;
  /** The server's clock; only tests replace it. */
  clock?: (() => number) | undefined;
};

/** A running server: where it listens, how many requests wait (waitMs) now, and how to stop it. */
export type RunningServer = { url: string; readonly waiting: number; stop: () => Promise<void> };

/** Reads HOST, PORT, DATABASE_URL, DATABASE_AUTH_TOKEN, DATABASE_TIMEOUT_MS, RETENTION_MS, SHUTDOWN_GRACE_MS, MAX_WAITING, WAIT_RECHECK_MS, FENCELEASE_TOKENS, FENCELEASE_AUTH and FENCELEASE_PUSH_PRIVATE. */
export function serverConfigFromEnv(env: Record<string, string | undefined>): ServerConfig {
  const port = Number(env.PORT ?? 8787);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`PORT must be a port number, got ${env.PORT}`);
  return {
    host: env.HOST ?? "127.0.0.1",
    port,
    databaseUrl: env.DATABASE_URL ?? "file:./data/fencelease.db",
    databaseAuthToken: env.DATABASE_AUTH_TOKEN,
    statementTimeoutMs: env.DATABASE_TIMEOUT_MS === undefined ? undefined : positive("DATABASE_TIMEOUT_MS", env.DATABASE_TIMEOUT_MS),
    auth: authFromEnv(env),
    retentionMs: env.RETENTION_MS === undefined ? undefined : positive("RETENTION_MS", env.RETENTION_MS),
    shutdownGraceMs: env.SHUTDOWN_GRACE_MS === undefined ? undefined : positive("SHUTDOWN_GRACE_MS", env.SHUTDOWN_GRACE_MS),
    maxWaiting: env.MAX_WAITING === undefined ? undefined : positive("MAX_WAITING", env.MAX_WAITING),
    recheckMs: env.WAIT_RECHECK_MS === undefined ? undefined : positive("WAIT_RECHECK_MS", env.WAIT_RECHECK_MS),
    ...(env.FENCELEASE_PUSH_PRIVATE !== undefined && { pushPrivate: allowOrDeny("FENCELEASE_PUSH_PRIVATE", env.FENCELEASE_PUSH_PRIVATE) }),
  };
}

function allowOrDeny(name: string, value: string): PrivateAddresses {
  if (value === "allow" || value === "deny") return value;
  throw new Error(`${name} must be allow or deny, got ${value}`);
}

function positive(name: string, value: string): number {
  const number = Number(value);
  if (!Number.isSafeInteger(number) || number < 1) throw new Error(`${name} must be a positive whole number of milliseconds, got ${value}`);
  return number;
}

const LOOPBACK = new Set(["127.0.0.1", "::1", "localhost"]);

/**
 * Listens on host:port. A port that cannot be had is one line that names it and
 * says what to do, instead of an unhandled 'error' event and its stack.
 */
function listen(fetch: (request: Request) => Response | Promise<Response>, host: string, port: number) {
  return new Promise<{ server: ReturnType<typeof serve>; address: AddressInfo }>((resolve, reject) => {
    const server = serve({ fetch, hostname: host, port }, (address) => {
      server.off("error", failed);
      resolve({ server, address });
    });
    function failed(error: NodeJS.ErrnoException) {
      const where = `${host}:${port}`;
      if (error.code === "EADDRINUSE") reject(new Error(`port ${port} on ${host} is taken (another fencelease, or another program, listens there): stop it, or set PORT to a free port`));
      else if (error.code === "EACCES") reject(new Error(`not allowed to listen on ${where} (ports below 1024 need privileges): set PORT to a port above 1023`));
      else if (error.code === "EADDRNOTAVAIL" || error.code === "ENOTFOUND") reject(new Error(`cannot listen on ${where}: HOST ${host} is not an address of this machine`));
      else reject(error);
    }
    server.once("error", failed);
  });
}

/**
 * startServer opens the store (running its migrations) and serves the API.
 * With auth off it serves on loopback only; with no token it refuses to start.
 */
export async function startServer(config: ServerConfig): Promise<RunningServer> {
  if (config.auth === "off" && !LOOPBACK.has(config.host)) {
    throw new Error(`with FENCELEASE_AUTH=off the server listens on loopback only; HOST ${config.host} needs FENCELEASE_TOKENS`);
  }
  if (config.auth !== "off" && config.auth.tokens.length === 0) {
    throw new Error("set FENCELEASE_TOKENS (one token or a comma-separated list), or FENCELEASE_AUTH=off for local development");
  }
  // Requests that arrive together share one commit: about twice the lease writes per second.
  const store = await openStore({
    url: config.databaseUrl,
    authToken: config.databaseAuthToken,
    busyTimeoutMs: config.busyTimeoutMs,
    statementTimeoutMs: config.statementTimeoutMs,
    groupCommit: config.groupCommit ?? true,
    log: config.log,
  });
  const clock = config.clock ?? Date.now;
  // Requests with waitMs wait here; on a stop every one of them answers at once.
  const room = new WaitRoom({ maxWaiting: config.maxWaiting, recheckMs: config.recheckMs, clock });
  const waits = localWaits(store, room, clock);
  // The pushed queues' jobs go out from here, woken in the same room as the long polls.
  const network = pushNetwork(config.pushPrivate ?? (config.auth === "off" ? "allow" : "deny"));
  const pushing = new PushDispatcher({ store, room, waits, clock, post: network.post, log: config.log ?? ((line) => console.error(line)) });
  const push = { changed: (queue: string) => pushing.changed(queue), checkUrl: network.checkUrl };
  const app = createApp({ store, auth: config.auth, log: config.log, clock: config.clock, ui: uiFilesFromDisk(), waits, push });
  const graceful = gracefulStop(app.fetch);
  graceful.onStop(() => room.stop());
  const { server, address } = await listen(graceful.fetch, config.host, config.port).catch((error: unknown) => {
    network.close();
    store.close();
    throw error;
  });
  // Nothing starts before the port is ours: a second server on a taken port must push no job.
  await pushing.start();
  const host = address.family === "IPv6" ? `[${address.address}]` : address.address;
  const every = config.maintainEveryMs ?? 60_000;
  const recheckMs = config.scheduleRecheckMs ?? SCHEDULE_RECHECK_MS;
  // The Node server's stand-in for the Worker's cron trigger: one run at a time,
  // each working through its backlog in chunks with requests served between them.
  const maintenance = every > 0 ? repeat(every, async (signal) => {
    try {
      const done = await maintain(store, clock(), config.retentionMs, { signal, schedules: recheckMs === 0 }); // else the schedule timer fires them
      void wakeAfter(done, waits);
      if (didAnything(done)) config.log?.(maintainedLine(done));
    } catch (error) {
      config.log?.(`fencelease: maintenance failed: ${(error as Error).message}`);
    }
  }) : undefined;
  const firing = recheckMs > 0 ? fireOnTime(store, { clock, waits, recheckMs, log: config.log }) : undefined;
  return {
    url: `http://${host}:${address.port}`,
    get waiting() {
      return room.waiting;
    },
    stop: async () => {
      await Promise.all([maintenance?.stop(), firing?.stop()]); // the runs in progress stop after their current chunk
      // No new request starts and no job is pushed; those in flight finish (within the grace; a delivery
      // cut then gives its lease back), then the database closes.
      const [stopped] = await Promise.allSettled([graceful.stop(server as Server, config.shutdownGraceMs), pushing.stop(config.shutdownGraceMs ?? SHUTDOWN_GRACE_MS)]);
      network.close();
      store.close();
      if (stopped.status === "rejected") throw stopped.reason;
    },
  };
}
