import { type ChildProcess, spawn } from "node:child_process";
import { createServer } from "node:net";
import { join } from "node:path";
import { freshDir } from "../fresh-db.ts";

// npm's scripts as a user runs them, each in a process group of its own, on a free port.

/** A port nobody listens on now: the kernel's pick for port 0, closed again. */
export async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
  const { port } = probe.address() as { port: number };
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

/** Whether something listens on 127.0.0.1:port: a listen there fails only then. */
export async function listening(port: number): Promise<boolean> {
  const probe = createServer();
  return new Promise((resolve) => {
    probe.once("error", () => resolve(true));
    probe.listen(port, "127.0.0.1", () => probe.close(() => resolve(false)));
  });
}

/** Runs `npm <args>` in its own process group (so a test can clean up all of it), with PORT and a fresh database (or the one given). */
export function npm(args: string[], port: number, databaseUrl = `file:${join(freshDir(), "fencelease.db")}`): ChildProcess & { output: () => { stdout: string; stderr: string } } {
  const env = { ...process.env, PORT: String(port), DATABASE_URL: databaseUrl };
  const child = spawn("npm", args, { env, stdio: ["ignore", "pipe", "pipe"], detached: true });
  let stdout = "";
  let stderr = "";
  child.stdout!.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
  child.stderr!.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
  return Object.assign(child, { output: () => ({ stdout, stderr }) });
}

/** Ends what is left of a process group that this test started. */
export function killGroup(child: ChildProcess) {
  try {
    process.kill(-child.pid!, "SIGKILL");
  } catch {
    // the group has ended already
  }
}

/** Whether `condition` holds within `ms`, looked at every 50 ms. */
export async function until(condition: () => boolean | Promise<boolean>, ms: number): Promise<boolean> {
  for (const started = Date.now(); Date.now() - started < ms; await new Promise((resolve) => setTimeout(resolve, 50))) {
    if (await condition()) return true;
  }
  return condition();
}
