import { describe, expect, test } from "vitest";
import { type RunningServer, startServer } from "../../src/node.ts";
import { freshStore } from "../fresh-db.ts";

// A body over the limit, sent to a real Node server by Node's own fetch: the
// client must read the 413 whatever it was still writing when the server
// answered, never an EPIPE or a reset in its place.

const TOKEN = "too-large-token";
const TRIES = 40;
const AT_ONCE = 4;
const SIZE = 1.5 * 1024 * 1024; // over the default limit of 1 MiB
const CHUNK = 64 * 1024;
const BIG = JSON.stringify({ id: "big", payload: "y".repeat(SIZE) });

async function running(): Promise<RunningServer & { snapshot: () => Promise<Record<string, unknown>> }> {
  const { url, snapshot } = await freshStore();
  const server = await startServer({ host: "127.0.0.1", port: 0, databaseUrl: url, auth: { tokens: [TOKEN] }, maintainEveryMs: 0, scheduleRecheckMs: 0 });
  return Object.assign(server, { snapshot });
}

/** The body in chunks of 64 KiB, each a moment after the one before, as a client writes what it produces. */
function produced(): ReadableStream<Uint8Array> {
  let sent = 0;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (sent >= SIZE) return controller.close();
      await new Promise((resolve) => setTimeout(resolve, 1));
      controller.enqueue(new Uint8Array(CHUNK).fill(0x79));
      sent += CHUNK;
    },
  });
}

type Send = { body: () => string | ReadableStream<Uint8Array>; headers?: Record<string, string> };

/** What one POST came to: the status and error code read, or the error fetch threw instead. */
async function postOnce(server: RunningServer, { body, headers = {} }: Send): Promise<string> {
  try {
    const response = await fetch(`${server.url}/v1/jobs`, {
      method: "POST",
      headers: { Authorization: `Bearer ${TOKEN}`, "Content-Type": "application/json", ...headers },
      body: body(),
      duplex: "half",
    } as RequestInit);
    const answer = (await response.json()) as { error?: { code: string } };
    return `${response.status} ${answer.error?.code}`;
  } catch (error) {
    const cause = (error as { cause?: { code?: string; message?: string } }).cause;
    return `threw ${cause?.code ?? cause?.message ?? (error as Error).message}`;
  }
}

describe("a body over the limit, from Node's fetch to the Node server", () => {
  test.each<[string, Send]>([
    ["all at once, with a Content-Length", { body: () => BIG }],
    ["written as it is produced, with a Content-Length", { body: produced, headers: { "Content-Length": String(SIZE) } }],
    ["written as it is produced, in chunks with no length", { body: produced }],
  ])("%s: every one of many tries reads its 413, and nothing is written", async (_, send) => {
    const server = await running();
    try {
      const outcomes: string[] = [];
      for (let i = 0; i < TRIES; i += AT_ONCE) outcomes.push(...(await Promise.all(Array.from({ length: AT_ONCE }, () => postOnce(server, send)))));
      expect(outcomes).toEqual(Array.from({ length: TRIES }, () => "413 payload_too_large"));
      expect(await server.snapshot()).toEqual({});
    } finally {
      await server.stop();
    }
  }, 60_000);
});
