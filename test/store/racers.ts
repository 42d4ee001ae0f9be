import { type ChildProcess, spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { expect } from "vitest";

// The drivers of the race tests (test/store/races.test.ts, key-races.test.ts):
// racer processes on one database file, driven in lock step, and a claim-next
// over HTTP on a race server.

/** The token the race servers accept. */
export const RACE_TOKEN = "race";

/** A lease as a claim-next over HTTP answers it, as far as the races read it. */
export type RaceLease = { fence: number; job: { id: string } };

/** Racer processes (test/store/race-worker.ts), one per owner, driven in lock step: each command goes to all of them at once. */
export async function racers(url: string, owners: string[], at: { now: number; ttlMs: number }) {
  const children = owners.map((owner) =>
    spawn(process.execPath, ["test/store/race-worker.ts", url, owner, String(at.now), String(at.ttlMs)], { stdio: "pipe" }),
  );
  const stderr = children.map(collect);
  const lines = children.map((child) => createInterface({ input: child.stdout! })[Symbol.asyncIterator]());
  const next = async (i: number) => (await lines[i]!.next()).value as string;
  for (const [i] of children.entries()) expect(await next(i)).toBe("ready");
  return {
    /** Sends one command to every racer at the same moment and answers their replies, in owner order. */
    async all(command: string): Promise<unknown[]> {
      for (const child of children) child.stdin!.write(`${command}\n`);
      return Promise.all(children.map(async (_, i) => JSON.parse(await next(i))));
    },
    /** Sends one command to one racer and answers its reply. */
    async one(i: number, command: string): Promise<unknown> {
      children[i]!.stdin!.write(`${command}\n`);
      return JSON.parse(await next(i));
    },
    /** Ends every racer and checks that none of them failed: no SQLITE_BUSY, no error of any kind. */
    async stop() {
      const exits = children.map((child) => new Promise((resolve) => child.on("close", resolve)));
      for (const child of children) child.stdin!.end();
      expect(await Promise.all(exits)).toEqual(owners.map(() => 0));
      expect(stderr.map((text) => text())).toEqual(owners.map(() => ""));
    },
  };
}

function collect(child: ChildProcess): () => string {
  let text = "";
  child.stderr!.on("data", (chunk) => (text += chunk));
  return () => text;
}

/** A claim-next of `queue` over HTTP, on the race server at `url`: its leases (it must answer 200). */
export async function claimOver(url: string, request: { queue: string; owner: string; limit: number; ttlMs: number }): Promise<{ leases: RaceLease[] }> {
  const response = await fetch(`${url}/v1/queues/${request.queue}/claim`, {
    method: "POST",
    headers: { Authorization: `Bearer ${RACE_TOKEN}`, "Content-Type": "application/json" },
    body: JSON.stringify({ owner: request.owner, ttlMs: request.ttlMs, limit: request.limit }),
  });
  expect(response.status).toBe(200);
  return response.json() as Promise<{ leases: RaceLease[] }>;
}
