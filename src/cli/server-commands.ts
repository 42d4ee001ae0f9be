import { EXIT } from "./exit-codes.ts";
import type { Io } from "./command.ts";

// The server-side commands load the server, the database and the migrations
// only when they run, so that the job commands start quickly.

/** serve: the Node server until SIGINT or SIGTERM, then a graceful stop; a signal that comes during the stop is ignored. */
export async function serve(io: Io): Promise<number> {
  const { serverConfigFromEnv, startServer } = await import("../runtime/node/server.ts");
  const log = (line: string) => io.out(`${new Date().toISOString()} ${line}`);
  const config = { ...serverConfigFromEnv(io.env), log };
  const server = await startServer(config);
  log(`fencelease listening on ${server.url} (database ${config.databaseUrl}, auth ${config.auth === "off" ? "off" : "on"})`);
  const signals = stopSignals(log);
  try {
    log(`${await signals.first}: finishing requests in flight, then closing the database`);
    await server.stop();
  } finally {
    signals.release();
  }
  return EXIT.ok;
}

/**
 * The first SIGINT or SIGTERM (`first`), and a listener for both until
 * `release`, under which another is logged and ignored. A stop signal often
 * comes twice: sent to a process group (Ctrl-C in a terminal, systemd's
 * control group, `kill -- -PGID`), it reaches `npm start` and the server, and
 * npm forwards its own. With no listener left, the second would kill the
 * server mid-stop, cutting the long polls it was answering and the requests in
 * flight; the stop is bounded by the shutdown grace instead.
 */
function stopSignals(log: (line: string) => void): { first: Promise<string>; release: () => void } {
  const names = ["SIGINT", "SIGTERM"] as const;
  let stopping = false;
  let resolveFirst: (name: string) => void = () => {};
  const first = new Promise<string>((resolve) => (resolveFirst = resolve));
  const listener = (name: NodeJS.Signals) => {
    if (stopping) return log(`${name} again: already stopping, within the shutdown grace`);
    stopping = true;
    resolveFirst(name);
  };
  for (const name of names) process.on(name, listener);
  return { first, release: () => names.forEach((name) => process.off(name, listener)) };
}

/** migrate: applies migrations/ to DATABASE_URL. */
export async function migrateDatabase(io: Io): Promise<number> {
  const [{ migrate }, { readMigrations }, { connect }, { libsqlDriver }] = await Promise.all([
    import("../store/migrate.ts"),
    import("../runtime/node/migrations-dir.ts"),
    import("../runtime/node/open.ts"),
    import("../drivers/libsql-client.ts"),
  ]);
  const url = io.env.DATABASE_URL ?? "file:./data/fencelease.db";
  const driver = libsqlDriver(await connect(url, { authToken: io.env.DATABASE_AUTH_TOKEN }), { statementTimeoutMs: Number.POSITIVE_INFINITY });
  try {
    const applied = await migrate(driver, await readMigrations());
    io.out(applied.length === 0 ? `${url}: up to date` : `${url}: applied ${applied.join(", ")}`);
    return EXIT.ok;
  } finally {
    driver.close();
  }
}
