// The server of a chaos run (and of the HTTP benchmarks): src/server.ts's
// startServer, the same code as `npm start`, in a process of its own, so the
// orchestrator can SIGKILL it mid-request and start it again on the same
// database file. It tells its parent its URL over IPC, writes no request log,
// and exits if the parent goes away.
//   PORT=0 DATABASE_URL=file:... FENCELEASE_TOKENS=... node test/chaos/server.ts
//
// With GROUP_COMMIT=1 it serves the same app over a store whose driver is
// wrapped in src/group-commit.ts, assembled here as startServer would, until
// that option is wired into src/.
import type { AddressInfo } from "node:net";
import { serve } from "@hono/node-server";
import { libsqlDriver } from "../../src/driver.ts";
import { groupCommit } from "../../src/group-commit.ts";
import { createApp } from "../../src/http/app.ts";
import { migrate } from "../../src/migrate.ts";
import { readMigrations } from "../../src/migrations-dir.ts";
import { connect, reconnect } from "../../src/open.ts";
import { type RunningServer, serverConfigFromEnv, startServer } from "../../src/server.ts";
import { LeaseStore } from "../../src/store.ts";

async function startGroupCommitServer(): Promise<RunningServer> {
  const config = serverConfigFromEnv(process.env);
  const client = await connect(config.databaseUrl);
  await migrate(client, await readMigrations());
  const store = new LeaseStore(groupCommit(libsqlDriver(client, { afterBusy: () => reconnect(client) })));
  const app = createApp({ store, auth: config.auth });
  const address = await new Promise<AddressInfo>((resolve) => {
    serve({ fetch: app.fetch, hostname: config.host, port: config.port }, resolve);
  });
  return { url: `http://${address.address}:${address.port}`, stop: async () => store.close() };
}

const server = process.env.GROUP_COMMIT === "1" ? await startGroupCommitServer() : await startServer(serverConfigFromEnv(process.env));
process.send!({ url: server.url });
process.on("disconnect", () => process.exit(0));
process.once("SIGTERM", async () => {
  await server.stop();
  process.exit(0);
});
