import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import { type Client, createClient } from "@libsql/client";
import { libsqlDriver, STATEMENT_TIMEOUT_MS } from "../../drivers/libsql-client.ts";
import { BUSY_TIMEOUT_MS, libsqlFileDriver } from "../../drivers/libsql-file.ts";
import { groupCommit } from "../../drivers/group-commit.ts";
import { type Migration, migrate } from "../../store/migrate.ts";
import { readMigrations } from "./migrations-dir.ts";
import { LeaseStore } from "../../store/store.ts";
import type { Driver } from "../../drivers/driver.ts";

/** Where the store keeps its jobs: a URL to open, or a libSQL client you already have. */
export type OpenOptions = (
  | {
      /** `file:./data/fencelease.db`, `:memory:`, `http(s)://` or `libsql://` (sqld, Turso). */
      url: string;
      /** The token for a remote database. */
      authToken?: string | undefined;
      /** How long a write waits for another connection's lock before failing; default 5000 ms. */
      busyTimeoutMs?: number | undefined;
    }
  | {
      /** An open client; its connection settings stay as you made them. */
      client: Client;
    }
) & {
  /** The migrations to apply at open; default the `migrations/` folder; false applies none. */
  migrations?: Migration[] | false | undefined;
  /** Draws the retry backoff's jitter; default Math.random (tests fix it). */
  random?: (() => number) | undefined;
  /** Commit writes that arrive together as one transaction (see group-commit.ts); default false. Node only. */
  groupCommit?: boolean | undefined;
  /**
   * On a remote database, how long a call may take before it fails with 503
   * `unavailable`, outcome `unknown`, reason `timeout`; default
   * STATEMENT_TIMEOUT_MS (5 s). Also how long a write may wait before
   * `health()` calls writes stuck (on a file: the busy timeout).
   */
  statementTimeoutMs?: number | undefined;
  /** Where the store writes a change of its health (writes failing, and why; writes succeeding again), one line each; default console.error. */
  log?: ((line: string) => void) | undefined;
};

/** The default busy timeout (kept with the file driver, which uses it too), and the default statement timeout of a remote database (kept with its driver). */
export { BUSY_TIMEOUT_MS, STATEMENT_TIMEOUT_MS };

/**
 * openStore opens a lease store and brings its schema up to date (see
 * migrate: it refuses to open a database on which an applied migration's file
 * was edited since). A `file:` URL runs on the native file driver
 * (src/drivers/libsql-file.ts); a remote URL, `:memory:` or a client given run
 * on @libsql/client (libsqlDriver).
 *
 * @example
 * const store = await openStore({ url: "file:./data/fencelease.db" });
 * await store.enqueue("job-1");
 * const { fence } = await store.claim("job-1", { owner: "worker-a", ttlMs: 30_000 });
 */
export async function openStore(options: OpenOptions): Promise<LeaseStore> {
  const { driver, stuckAfterMs } = await openDriver(options);
  const health = { stuckAfterMs, log: options.log ?? ((line: string) => console.error(line)) };
  return new LeaseStore(options.groupCommit ? groupCommit(driver) : driver, { random: options.random, health });
}

/** The store's driver, its schema brought up to date, and how long a write may wait before health calls it stuck. */
async function openDriver(options: OpenOptions): Promise<{ driver: Driver; stuckAfterMs: number }> {
  const migrations = options.migrations === false ? undefined : (options.migrations ?? (await readMigrations()));
  if ("client" in options) {
    const driver = libsqlDriver(options.client, { statementTimeoutMs: options.statementTimeoutMs });
    if (migrations) await migrate(driver, migrations);
    return { driver, stuckAfterMs: options.statementTimeoutMs ?? STATEMENT_TIMEOUT_MS };
  }
  const path = localPath(options.url);
  if (path !== undefined && path !== ":memory:") {
    // A file: the native driver, which prepares each statement once instead of on every call.
    mkdirSync(dirname(path), { recursive: true });
    const driver = libsqlFileDriver(path, { busyTimeoutMs: options.busyTimeoutMs });
    await migrated(driver, migrations);
    return { driver, stuckAfterMs: options.busyTimeoutMs ?? BUSY_TIMEOUT_MS };
  }
  const stuckAfterMs = options.statementTimeoutMs ?? STATEMENT_TIMEOUT_MS;
  if (path === undefined && migrations) {
    // A remote URL: the migrations run without a timeout (one may take long);
    // the store's client aborts every request that outlives the statement timeout.
    await migrated(libsqlDriver(await connect(options.url, { authToken: options.authToken }), { statementTimeoutMs: Number.POSITIVE_INFINITY }), migrations, { close: true });
  }
  // A remote database, or `:memory:`: an in-memory database lives on its one
  // connection, so the store keeps the client that migrated it.
  const client = await connect(options.url, { authToken: options.authToken, ...(path === undefined && { statementTimeoutMs: stuckAfterMs }) });
  const driver = libsqlDriver(client, { statementTimeoutMs: options.statementTimeoutMs, ...(path !== undefined && { afterBusy: () => reconnect(client) }) });
  if (path !== undefined) await migrated(driver, migrations);
  return { driver, stuckAfterMs };
}

/** Migrates over `driver` (when given migrations), closing it if that fails, or when told to. */
async function migrated(driver: Driver, migrations: Migration[] | undefined, { close = false } = {}): Promise<void> {
  try {
    if (migrations) await migrate(driver, migrations);
  } catch (error) {
    driver.close();
    throw error;
  }
  if (close) driver.close();
}

/**
 * connect opens a libSQL client with the settings the store relies on: for a
 * local file, one connection in WAL mode with `synchronous = NORMAL` and a busy
 * timeout, its folder created if need be; for a remote URL, a plain client,
 * whose every request is aborted after `statementTimeoutMs` if given.
 */
export async function connect(url: string, options: { authToken?: string | undefined; busyTimeoutMs?: number | undefined; statementTimeoutMs?: number | undefined } = {}): Promise<Client> {
  const path = localPath(url);
  if (path === undefined) {
    const timeoutMs = options.statementTimeoutMs;
    // Each request aborted once it outlives the timeout: a request that never
    // ends would keep its place among the client's concurrent requests forever.
    const bounded = timeoutMs === undefined ? undefined : (request: Request) => fetch(request, { signal: AbortSignal.timeout(timeoutMs) });
    return createClient({ url, authToken: options.authToken, ...(bounded && { fetch: bounded }) });
  }
  if (path !== ":memory:") mkdirSync(dirname(path), { recursive: true });
  // libSQL runs each local statement synchronously, so extra connections in one
  // process add no parallelism; but a pool would open connections that miss the
  // per-connection PRAGMA below. One connection carries every setting.
  const client = createClient({ url, concurrency: 1, timeout: options.busyTimeoutMs ?? BUSY_TIMEOUT_MS });
  try {
    await applySettings(client);
  } catch (error) {
    client.close();
    throw error;
  }
  return client;
}

/** The settings each new connection needs; the busy timeout comes with the client's `timeout`. */
async function applySettings(client: Client): Promise<void> {
  // WAL lets readers run beside the writer and is kept in the file itself.
  await client.execute("PRAGMA journal_mode = WAL");
  // NORMAL under WAL: a commit survives a process crash; only a power cut can
  // lose the last few, and never corrupts the file.
  await client.execute("PRAGMA synchronous = NORMAL");
}

/** reconnect replaces a local client's connection with a new one that has every setting of `connect`. */
export async function reconnect(client: Client): Promise<void> {
  await client.reconnect();
  await applySettings(client);
}

/** The file path of a local database URL, or undefined for a remote one. */
function localPath(url: string): string | undefined {
  if (url === ":memory:") return url;
  if (!url.startsWith("file:")) return undefined;
  // As @libsql/client reads it: no `//` or `//localhost` authority, no query, percent-decoded.
  return decodeURIComponent(url.replace(/^file:(\/\/(localhost)?(?=\/))?/, "").split("?")[0]!);
}
