// The server of a chaos run (and of the HTTP benchmarks): src/runtime/node/server.ts's
// startServer, the same code as `npm start`, in a process of its own, so the
// orchestrator can SIGKILL it mid-request and start it again on the same
// database file. It tells its parent its URL over IPC, writes no request log,
// and exits if the parent goes away.
//   PORT=0 DATABASE_URL=file:... FENCELEASE_TOKENS=... node test/chaos/server.ts
//
// GROUP_COMMIT=0 turns the server's group commit off, to compare.
import { serverConfigFromEnv, startServer } from "../../src/runtime/node/server.ts";

const server = await startServer({ ...serverConfigFromEnv(process.env), groupCommit: process.env.GROUP_COMMIT !== "0" });
process.send!({ url: server.url });
process.on("disconnect", () => process.exit(0));
process.once("SIGTERM", async () => {
  await server.stop();
  process.exit(0);
});
