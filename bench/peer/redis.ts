// A Redis of the bench's own for the BullMQ peer: redis-server on a free
// loopback port, in a temporary directory that is removed at exit, with the
// append-only file fsynced once a second (`--appendonly yes --appendfsync
// everysec`): the same durability class as our SQLite in WAL mode with
// synchronous = NORMAL. No RDB snapshots (`--save ""`), so nothing else writes
// to disk while a scenario runs.
import { type ChildProcess, spawn } from "node:child_process";
import { accessSync, constants, mkdtempSync, rmSync } from "node:fs";
import { createServer, Socket } from "node:net";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";

/** A running redis-server of ours and how to reach it. */
export type RedisProcess = { host: string; port: number; version: string; stop: () => Promise<void> };

/** The path of `name` on PATH, or null. */
function onPath(name: string): string | null {
  for (const dir of (process.env.PATH ?? "").split(delimiter)) {
    if (dir === "") continue;
    try {
      accessSync(join(dir, name), constants.X_OK);
      return join(dir, name);
    } catch {
      // not here
    }
  }
  return null;
}

/** A loopback port that was free a moment ago. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** Encodes one command in RESP. */
function resp(args: string[]): string {
  return `*${args.length}\r\n${args.map((arg) => `$${Buffer.byteLength(arg)}\r\n${arg}\r\n`).join("")}`;
}

/**
 * Sends one command on a connection of its own and answers the first line of
 * the reply (e.g. "+PONG", "+OK", "$123" for a bulk string, whose text follows).
 * Enough for PING, FLUSHALL and INFO; the scenarios talk to Redis through BullMQ.
 */
export function redisCommand(port: number, ...args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = new Socket();
    let data = "";
    socket.setEncoding("utf8");
    socket.once("error", reject);
    socket.on("data", (chunk) => {
      data += chunk;
      const end = data.indexOf("\r\n");
      if (end < 0) return;
      const first = data.slice(0, end);
      if (first.startsWith("$")) {
        const length = Number(first.slice(1));
        if (length >= 0 && data.length < end + 2 + length + 2) return; // the bulk string is not all here yet
        socket.destroy();
        resolve(length < 0 ? "" : data.slice(end + 2, end + 2 + length));
        return;
      }
      socket.destroy();
      if (first.startsWith("-")) reject(new Error(`redis: ${first.slice(1)}`));
      else resolve(first);
    });
    socket.connect(port, "127.0.0.1", () => socket.write(resp(args)));
  });
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Starts redis-server once on a port that is free; throws if it exits or does not answer PING within 10 s. */
async function startOn(binary: string, port: number, dir: string): Promise<{ child: ChildProcess; version: string }> {
  const args = [
    "--bind", "127.0.0.1",
    "--port", String(port),
    // Loopback only (the bind above), so protected mode has nothing to protect; off, it cannot refuse us.
    "--protected-mode", "no",
    "--dir", dir,
    "--appendonly", "yes",
    "--appendfsync", "everysec",
    "--save", "",
    "--daemonize", "no",
    "--logfile", "",
    // BullMQ's requirement: never evict a key (this is also Redis's default).
    "--maxmemory-policy", "noeviction",
  ];
  const child = spawn(binary, args, { stdio: ["ignore", "pipe", "pipe"] });
  let log = "";
  child.stdout!.on("data", (chunk) => (log = (log + chunk).slice(-4000)));
  child.stderr!.on("data", (chunk) => (log = (log + chunk).slice(-4000)));
  let exited: number | null | undefined;
  child.once("exit", (code) => (exited = code));
  const deadline = performance.now() + 10_000;
  while (performance.now() < deadline) {
    if (exited !== undefined) throw new Error(`redis-server exited with ${exited}:\n${log}`);
    try {
      if ((await redisCommand(port, "PING")) === "+PONG") {
        const info = await redisCommand(port, "INFO", "server");
        return { child, version: /redis_version:(\S+)/.exec(info)?.[1] ?? "unknown" };
      }
    } catch {
      // not listening yet
    }
    await sleep(20);
  }
  child.kill("SIGKILL");
  throw new Error(`redis-server did not answer PING within 10 s:\n${log}`);
}

/**
 * Starts redis-server (see the top of this file) and waits until it answers
 * PING; null if there is no redis-server on PATH. `stop()` shuts it down and
 * removes its directory; the directory is removed at exit in any case.
 */
export async function startRedis(): Promise<RedisProcess | null> {
  const binary = onPath("redis-server");
  if (binary === null) return null;
  const dir = mkdtempSync(join(tmpdir(), "fencelease-bench-redis-"));
  let child: ChildProcess | undefined;
  const killOnExit = () => {
    child?.kill("SIGKILL");
    rmSync(dir, { recursive: true, force: true });
  };
  process.on("exit", killOnExit);
  let lastError: unknown;
  // The port was free a moment ago; another process may take it first, so a few tries.
  for (let attempt = 0; attempt < 3; attempt++) {
    const port = await freePort();
    try {
      const started = await startOn(binary, port, dir);
      const redis = started.child;
      child = redis;
      return {
        host: "127.0.0.1",
        port,
        version: started.version,
        stop: async () => {
          if (redis.exitCode === null && redis.signalCode === null) {
            const exited = new Promise((resolve) => redis.once("exit", resolve));
            redis.kill("SIGTERM"); // Redis shuts down cleanly on SIGTERM
            await exited;
          }
          rmSync(dir, { recursive: true, force: true });
          process.off("exit", killOnExit);
        },
      };
    } catch (error) {
      lastError = error;
    }
  }
  killOnExit();
  process.off("exit", killOnExit);
  throw lastError;
}
