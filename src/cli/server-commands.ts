import { EXIT } from "./exit-codes.ts";
import type { Io } from "./command.ts";

// The server-side commands load the server, the database and the migrations
// only when they run, so that the job commands start quickly.

/** serve: the Node server until SIGINT or SIGTERM, then a graceful stop. */
export async function serve(io: Io): Promise<number> {
  const { serverConfigFromEnv, startServer } = await import("../runtime/node/server.ts");
  const log = (line: string) => io.out(`${new Date().toISOString()} ${line}`);
  const config = { ...serverConfigFromEnv(io.env), log };
  const server = await startServer(config);
  log(`fencelease listening on ${server.url} (database ${config.databaseUrl}, auth ${config.auth === "off" ? "off" : "on"})`);
  const signal = await new Promise<string>((resolve) => {
    for (const name of ["SIGINT", "SIGTERM"] as const) process.once(name, () => resolve(name));
  });
  log(`${signal}: finishing requests in flight, then closing the database`);
  await server.stop();
  return EXIT.ok;
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
