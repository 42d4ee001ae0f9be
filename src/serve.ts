// `npm start`: the Node server on the embedded file database, stopped
// gracefully by SIGINT or SIGTERM.
import { serverConfigFromEnv, startServer } from "./server.ts";

const log = (line: string) => console.log(`${new Date().toISOString()} ${line}`);

try {
  const config = { ...serverConfigFromEnv(process.env), log };
  const server = await startServer(config);
  log(`fencelease listening on ${server.url} (database ${config.databaseUrl}, auth ${config.auth === "off" ? "off" : "on"})`);
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    process.once(signal, async () => {
      log(`${signal}: finishing requests in flight, then closing the database`);
      await server.stop();
      process.exit(0);
    });
  }
} catch (error) {
  console.error(`fencelease: ${(error as Error).message}`);
  process.exit(1);
}
