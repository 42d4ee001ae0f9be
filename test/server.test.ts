import { spawn } from "node:child_process";
import { once } from "node:events";
import { createInterface } from "node:readline";
import { describe, expect, test } from "vitest";
import { type RunningServer, serverConfigFromEnv, startServer } from "../src/index.ts";
import { freshStore, freshUrl } from "./fresh-db.ts";
import type { ErrorBody } from "../src/http/errors.ts";

const TOKEN = "server-test-token";
const TTL = 60_000;

async function running(url: string, log?: (line: string) => void): Promise<RunningServer> {
  return startServer({ host: "127.0.0.1", port: 0, databaseUrl: url, auth: { tokens: [TOKEN] }, log });
}

function post(server: RunningServer, path: string, body: unknown) {
  return fetch(`${server.url}${path}`, {
    method: "POST",
    headers: { Authorization: `Bearer ${TOKEN}`, "Content-Type": "application/json" },
    body: JSON.stringify(body),
  });
}

describe("the Node server", () => {
  test("N concurrent claims of one job over HTTP: exactly one winner, round after round", async () => {
    const { store, url, snapshot } = await freshStore();
    const server = await running(url);
    try {
      for (let round = 0; round < 25; round++) {
        await store.enqueue(`round-${round}`);
        const responses = await Promise.all(
          Array.from({ length: 16 }, (_, i) => post(server, `/v1/jobs/round-${round}/claim`, { owner: `w${i}`, ttlMs: TTL })),
        );
        const bodies = (await Promise.all(responses.map((response) => response.json()))) as Partial<ErrorBody>[];
        const winners = responses.flatMap((response, i) => (response.status === 200 ? [i] : []));
        expect(winners, `round ${round}`).toHaveLength(1);
        expect(responses.filter((response) => response.status === 409)).toHaveLength(15);
        expect(bodies.filter((body) => body.error?.code === "not_claimable")).toHaveLength(15);
        expect((await snapshot())[`round-${round}`]).toMatchObject({ owner: `w${winners[0]}`, fence: 1 });
      }
    } finally {
      await server.stop();
    }
  });

  test("logs one line per request: method, path, status and ms, never the token", async () => {
    const lines: string[] = [];
    const server = await running(freshUrl(), (line) => lines.push(line));
    try {
      await post(server, "/v1/jobs", { id: "job-1" });
      await fetch(`${server.url}/v1/jobs/job-1`, { headers: { Authorization: "Bearer wrong-token" } });
    } finally {
      await server.stop();
    }
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(/^POST \/v1\/jobs 201 \d+ms$/);
    expect(lines[1]).toMatch(/^GET \/v1\/jobs\/job-1 401 \d+ms$/);
    expect(lines.join("\n")).not.toMatch(/token/);
  });

  test("a control character in the URL is escaped in the log line, which stays one line", async () => {
    const lines: string[] = [];
    const server = await running(freshUrl(), (line) => lines.push(line));
    try {
      await fetch(`${server.url}/v1/jobs/x%0AGET%20admin%20200%201ms%1B%5B2J`, { headers: { Authorization: `Bearer ${TOKEN}` } });
    } finally {
      await server.stop();
    }
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^GET \/v1\/jobs\/x\\u000aGET admin 200 1ms\\u001b\[2J 400 \d+ms$/);
  });

  test("ends expired leases and purges old jobs on a timer, as the Worker's cron does", async () => {
    const { url, snapshot } = await freshStore();
    const clock = { now: 1_000_000 };
    const lines: string[] = [];
    const server = await startServer({
      host: "127.0.0.1", port: 0, databaseUrl: url, auth: { tokens: [TOKEN] },
      clock: () => clock.now, maintainEveryMs: 5, retentionMs: 60_000, log: (line) => lines.push(line),
    });
    try {
      await post(server, "/v1/jobs", { id: "job-1" });
      await post(server, "/v1/jobs/job-1/claim", { owner: "A", ttlMs: 1_000 });
      await post(server, "/v1/jobs", { id: "old" });
      await post(server, "/v1/jobs/old/claim", { owner: "A", ttlMs: 1_000 });
      await post(server, "/v1/jobs/old/complete", { owner: "A", fence: 1, result: 1 });
      clock.now += 60_000; // job-1's lease has expired, and "old" was finished a retention ago
      for (let waited = 0; !lines.some((line) => line.includes("ended 1 expired lease, purged 1 old job")) && waited < 5_000; waited += 10) {
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      expect(lines).toContain("fencelease: ended 1 expired lease, purged 1 old job");
      const rows = await snapshot();
      expect(Object.keys(rows)).toEqual(["job-1"]);
      expect(rows["job-1"]).toMatchObject({ owner: null, until: 0, fence: 1, last_event: "expired" });
    } finally {
      await server.stop();
    }
  });

  test("stop closes the listener and the database", async () => {
    const url = freshUrl();
    const server = await running(url);
    await server.stop();
    await expect(fetch(`${server.url}/healthz`)).rejects.toThrow();
  });

  test("refuses to start with auth off on an address other than loopback, or with no token at all", async () => {
    const base = { host: "0.0.0.0", port: 0, databaseUrl: freshUrl() };
    await expect(startServer({ ...base, auth: "off" })).rejects.toThrow(/loopback only/);
    await expect(startServer({ ...base, auth: { tokens: [] } })).rejects.toThrow(/FENCELEASE_TOKENS/);
  });

  test("reads its settings from the environment, with defaults for the embedded database on loopback", () => {
    expect(serverConfigFromEnv({})).toEqual({
      host: "127.0.0.1", port: 8787, databaseUrl: "file:./data/fencelease.db", databaseAuthToken: undefined, auth: { tokens: [] },
    });
    expect(serverConfigFromEnv({ HOST: "::1", PORT: "9000", DATABASE_URL: "libsql://db.example", DATABASE_AUTH_TOKEN: "t", FENCELEASE_TOKENS: "a,b" }))
      .toEqual({ host: "::1", port: 9000, databaseUrl: "libsql://db.example", databaseAuthToken: "t", auth: { tokens: ["a", "b"] } });
    expect(() => serverConfigFromEnv({ PORT: "eighty" })).toThrow(/PORT/);
  });

  test("npm start's entry serves, then stops gracefully on SIGTERM", async () => {
    const child = spawn(process.execPath, ["src/cli/main.ts", "serve"], {
      env: { ...process.env, PORT: "0", DATABASE_URL: freshUrl(), FENCELEASE_AUTH: "off", FENCELEASE_TOKENS: "" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
    const first = (await lines.next()).value as string;
    const url = /listening on (\S+)/.exec(first)?.[1];
    expect(url, first).toBeDefined();
    expect((await fetch(`${url}/healthz`)).status).toBe(200);
    child.kill("SIGTERM");
    const [code] = await once(child, "exit");
    expect(code).toBe(0);
    const rest: string[] = [];
    for await (const line of { [Symbol.asyncIterator]: () => lines }) rest.push(line);
    expect(rest.join("\n")).toMatch(/GET \/healthz 200/);
    expect(rest.join("\n")).toMatch(/SIGTERM: finishing requests in flight/);
  });
});
