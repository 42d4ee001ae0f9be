import { execFile } from "node:child_process";
import { startServer } from "../../src/node.ts";
import { freshStore } from "../fresh-db.ts";

// What the CLI tests share: the fencelease command run as a user runs it, in a
// process of its own, against a real Node server on a fresh database.

export const TOKEN = "cli-test-token";

export type Ran = { code: number; stdout: string; stderr: string };

/** Runs the fencelease command as a user would, in a process of its own. */
export function cli(args: string[], env: Record<string, string> = {}, stdin = ""): Promise<Ran> {
  return new Promise((resolve) => {
    const child = execFile(process.execPath, ["src/cli/main.ts", ...args], { env: { ...process.env, ...env } }, (error, stdout, stderr) => {
      resolve({ code: error ? Number(error.code) : 0, stdout, stderr });
    });
    child.stdin!.end(stdin);
  });
}

/** The Node server on a fresh database, and the CLI pointed at it by environment. */
export async function serving() {
  const fresh = await freshStore();
  const server = await startServer({ host: "127.0.0.1", port: 0, databaseUrl: fresh.url, auth: { tokens: [TOKEN] }, pushPrivate: "allow" }); // the push tests' endpoints listen on 127.0.0.1
  const run = (...args: string[]) => cli(args, { FENCELEASE_URL: server.url, FENCELEASE_TOKEN: TOKEN });
  const runWithInput = (stdin: string, ...args: string[]) => cli(args, { FENCELEASE_URL: server.url, FENCELEASE_TOKEN: TOKEN }, stdin);
  /** Reads the API as the server answers it, for the state a command left behind. */
  const read = async (path: string): Promise<any> => (await fetch(`${server.url}${path}`, { headers: { Authorization: `Bearer ${TOKEN}` } })).json();
  return { ...fresh, server, run, runWithInput, read, [Symbol.asyncDispose]: () => server.stop() };
}
