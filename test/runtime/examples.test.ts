import { spawn } from "node:child_process";
import { once } from "node:events";
import { createInterface } from "node:readline";
import { expect, test } from "vitest";
import { LeaseClient } from "../../src/client/index.ts";
import { startServer } from "../../src/node.ts";
import { freshStore } from "../fresh-db.ts";

const TOKEN = "examples-token";

test("examples/node-worker.ts works through a queue, then stops gracefully on SIGTERM", async () => {
  const { url, snapshot } = await freshStore();
  const server = await startServer({ host: "127.0.0.1", port: 0, databaseUrl: url, auth: { tokens: [TOKEN] } });
  const client = new LeaseClient({ baseUrl: server.url, token: TOKEN });
  const child = spawn(process.execPath, ["--conditions=fencelease-source", "examples/node-worker.ts"], {
    env: { ...process.env, FENCELEASE_URL: server.url, FENCELEASE_TOKEN: TOKEN, QUEUE: "words", IDLE_MS: "20" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  try {
    const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
    expect((await lines.next()).value).toBe(`node-worker-${child.pid} taking jobs from queue words`);
    for (let i = 0; i < 5; i++) await client.enqueue({ id: `doc-${i}`, queue: "words", payload: { text: "one two three ".repeat(i) } });
    for (let i = 0; i < 5; i++) expect((await lines.next()).value).toMatch(/^processed doc-\d with fence 1$/);

    child.kill("SIGTERM");
    const [code] = await once(child, "exit");
    expect(code).toBe(0);
    const rest: string[] = [];
    for await (const line of { [Symbol.asyncIterator]: () => lines }) rest.push(line);
    expect(rest).toEqual(["SIGTERM: finishing the job in hand, then stopping", `node-worker-${child.pid} stopped`]);

    const rows = await snapshot();
    for (let i = 0; i < 5; i++) {
      expect(rows[`doc-${i}`]).toMatchObject({ owner: `node-worker-${child.pid}`, fence: 1, done: 1, result: JSON.stringify({ words: 3 * i }) });
    }
  } finally {
    child.kill("SIGKILL");
    await server.stop();
  }
});
