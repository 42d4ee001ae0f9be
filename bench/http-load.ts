// The HTTP side of the benchmarks: the server in a process of its own (so it
// has a core to itself, as in production), and a lean load generator over
// node:http keep-alive connections (fetch costs the client several times more
// CPU per request, and on 2 cores the client competes with the server).
import { type ChildProcess, spawn } from "node:child_process";
import { Agent, request } from "node:http";
import { fileURLToPath } from "node:url";

/** A running server process and how to reach it. */
export type ServerProcess = { url: string; token: string; stop: () => Promise<void> };

/** Starts src/runtime/node/server.ts's startServer in a child process, with no request log, on a free loopback port. */
/** `--cpu-prof` into $BENCH_CPU_PROF, when set: a profile of the server process for each run. */
const profileArgs = () => (process.env.BENCH_CPU_PROF ? ["--cpu-prof", `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : []);

export async function startServerProcess(databaseUrl: string, env: Record<string, string> = {}): Promise<ServerProcess> {
  const token = "bench-token";
  const child: ChildProcess = spawn(process.execPath, [...profileArgs(), fileURLToPath(new URL("../test/chaos/server.ts", import.meta.url))], {
    env: { ...process.env, HOST: "127.0.0.1", PORT: "0", DATABASE_URL: databaseUrl, FENCELEASE_TOKENS: token, FENCELEASE_AUTH: "", ...env },
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  const url = await new Promise<string>((resolve, reject) => {
    child.once("message", (message: { url: string }) => resolve(message.url));
    child.once("exit", (code) => reject(new Error(`the server exited with ${code}`)));
  });
  return {
    url,
    token,
    stop: async () => {
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.kill("SIGTERM");
      await exited;
    },
  };
}

/** A JSON client over keep-alive connections, at most `connections` of them. */
export function jsonClient(server: ServerProcess, connections: number) {
  const agent = new Agent({ keepAlive: true, maxSockets: connections, maxFreeSockets: connections });
  const { hostname, port } = new URL(server.url);
  const auth = `Bearer ${server.token}`;
  return {
    post(path: string, body: unknown): Promise<{ status: number; body: any }> {
      const text = JSON.stringify(body);
      return new Promise((resolve, reject) => {
        const req = request(
          {
            agent, hostname, port, path, method: "POST",
            headers: { Authorization: auth, "Content-Type": "application/json", "Content-Length": Buffer.byteLength(text) },
          },
          (res) => {
            let data = "";
            res.setEncoding("utf8");
            res.on("data", (chunk) => (data += chunk));
            res.on("end", () => resolve({ status: res.statusCode!, body: JSON.parse(data) }));
            res.on("error", reject);
          },
        );
        req.on("error", reject);
        req.end(text);
      });
    },
    close: () => agent.destroy(),
  };
}
