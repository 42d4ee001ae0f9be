import { spawn } from "node:child_process";
import { once } from "node:events";
import { fileURLToPath } from "node:url";
import { describe, expect, test } from "vitest";
import { type RunningServer, startServer } from "../../src/node.ts";
import { freshUrl } from "../fresh-db.ts";

const TOKEN = "lock-test-token";

// Another process takes the database's write lock and holds it for `ms`: it
// prints "held" once it has the lock, and exits once it has given it back.
const HOLDER = `
const Database = require("libsql");
const db = new Database(process.argv[1]);
db.exec("BEGIN IMMEDIATE");
console.log("held");
setTimeout(() => { db.exec("COMMIT"); db.close(); }, Number(process.argv[2]));
`;

async function holdLock(url: string, ms: number) {
  const path = fileURLToPath(url);
  const child = spawn(process.execPath, ["-e", HOLDER, path, String(ms)], { cwd: process.cwd(), stdio: ["ignore", "pipe", "inherit"] });
  const [first] = (await once(child.stdout!, "data")) as [Buffer];
  expect(first.toString()).toContain("held");
  return { released: once(child, "exit") };
}

async function serving(options: { busyTimeoutMs?: number } = {}) {
  const databaseUrl = freshUrl();
  const server = await startServer({ host: "127.0.0.1", port: 0, databaseUrl, auth: { tokens: [TOKEN] }, ...options });
  return Object.assign(server, { databaseUrl });
}

const call = (server: RunningServer, path: string, init: RequestInit = {}) =>
  fetch(`${server.url}${path}`, { ...init, headers: { Authorization: `Bearer ${TOKEN}`, "Content-Type": "application/json", ...init.headers } });

/** How long `request` takes to answer, in ms, with its answer. */
async function timed(request: Promise<Response>): Promise<{ ms: number; status: number; body: any }> {
  const started = performance.now();
  const response = await request;
  return { ms: performance.now() - started, status: response.status, body: await response.json() };
}

describe("a write waiting for another process's lock", () => {
  test("leaves the server answering: /healthz says writes are waiting, reads answer, and the write lands once the lock is given back", { timeout: 20_000 }, async () => {
    const server = await serving();
    try {
      expect((await call(server, "/v1/jobs", { method: "POST", body: JSON.stringify({ id: "before" }) })).status).toBe(201);
      const lock = await holdLock(server.databaseUrl, 3000);
      const write = call(server, "/v1/jobs", { method: "POST", body: JSON.stringify({ id: "during" }) });
      await new Promise((resolve) => setTimeout(resolve, 50)); // the write is on its way and waits for the lock

      const health = await timed(call(server, "/healthz"));
      expect(health.ms).toBeLessThan(1000); // about PROBE_WAIT_MS (100 ms); the bound leaves room for a loaded machine, far below the 3 s the lock is held
      expect(health.status).toBe(503);
      expect(health.body.error).toMatchObject({ code: "unavailable", details: { reason: "busy" }, message: expect.stringMatching(/waited \d+ ms for the database/) });

      const read = await timed(call(server, "/v1/jobs/before"));
      expect(read.ms).toBeLessThan(1000);
      expect(read.body).toMatchObject({ id: "before", status: "queued" });

      const written = await write;
      expect(written.status).toBe(201); // it waited for the lock, then wrote once
      await lock.released;
      expect(await (await call(server, "/v1/jobs?limit=10")).json()).toMatchObject({ jobs: [{ id: "before" }, { id: "during" }] });
      expect((await call(server, "/healthz")).status).toBe(200);
    } finally {
      await server.stop();
    }
  });

  test("past the busy timeout answers 503 unavailable, not_applied, and nothing is written", { timeout: 20_000 }, async () => {
    const server = await serving({ busyTimeoutMs: 300 });
    try {
      const lock = await holdLock(server.databaseUrl, 1500);
      const refused = await timed(call(server, "/v1/jobs", { method: "POST", body: JSON.stringify({ id: "late" }) }));
      expect(refused.status).toBe(503);
      expect(refused.body.error).toMatchObject({ code: "unavailable", details: { outcome: "not_applied", reason: "busy" } });
      await lock.released;
      expect((await call(server, "/v1/jobs/late")).status).toBe(404);
      expect((await call(server, "/v1/jobs", { method: "POST", body: JSON.stringify({ id: "late" }) })).status).toBe(201);
    } finally {
      await server.stop();
    }
  });
});
