import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { LeaseLostError } from "../client/errors.ts";
import { LeaseClient } from "../client/lease-client.ts";
import { startServer } from "../runtime/node/server.ts";
import { EXIT } from "./exit-codes.ts";

/** How long A's lease lasts in the demo: long enough to see, short enough not to wait for. */
const TTL_MS = 500;

/**
 * runDemo replays the design note's story against a fencelease server and
 * prints its timeline: A claims, stalls past its lease, B claims and
 * completes, A's late complete is refused, and B's result stays.
 * Without a baseUrl it starts a server of its own on a temporary database.
 */
export async function runDemo(options: { baseUrl?: string; token?: string; out: (line: string) => void }): Promise<number> {
  if (options.baseUrl) return replay(new LeaseClient({ baseUrl: options.baseUrl, token: options.token }), options.baseUrl, options.out);
  const dir = mkdtempSync(join(tmpdir(), "fencelease-demo-"));
  const server = await startServer({ host: "127.0.0.1", port: 0, databaseUrl: `file:${join(dir, "demo.db")}`, auth: "off" });
  try {
    return await replay(new LeaseClient({ baseUrl: server.url }), `${server.url} (a temporary database)`, options.out);
  } finally {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function replay(client: LeaseClient, where: string, out: (line: string) => void): Promise<number> {
  const started = Date.now();
  const say = (who: string, what: string, outcome = "") =>
    out(`${String(Date.now() - started).padStart(5)} ms  ${who.padEnd(2)} ${outcome ? `${what.padEnd(34)}→ ${outcome}` : what}`);
  const id = `invoice-${started.toString(36)}`;

  out(`fencelease demo against ${where}`);
  await client.enqueue({ id, payload: { amount: 120 } });
  say("", `enqueue ${id}`);
  const a = await client.claim(id, { owner: "A", ttlMs: TTL_MS });
  say("A", `claims ${id}`, `fence ${a.fence}, lease of ${TTL_MS} ms`);
  say("A", "stalls past its lease...");
  await new Promise((resolve) => setTimeout(resolve, TTL_MS + 50));
  const b = await client.claim(id, { owner: "B", ttlMs: 30_000 });
  say("B", `claims ${id}`, `fence ${b.fence}`);
  await client.complete(id, { owner: "B", fence: b.fence, result: "paid by B" });
  say("B", `completes with "paid by B"`, "200, stored");

  const late = await client.complete(id, { owner: "A", fence: a.fence, result: "paid by A" }).catch((error: unknown) => error);
  const refused = late instanceof LeaseLostError;
  say("A", `completes late with fence ${a.fence}`, refused ? `409 stale_lease (${late.reason}; current fence ${late.currentFence})` : "ACCEPTED: the fence did not hold");
  const stored = await client.get(id);
  say("", "stored result", `${JSON.stringify(stored.result)} (owner ${stored.owner}, fence ${stored.fence})`);
  return refused && stored.result === "paid by B" ? EXIT.ok : EXIT.failed;
}
