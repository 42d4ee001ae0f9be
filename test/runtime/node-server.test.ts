import { spawn } from "node:child_process";
import { once } from "node:events";
import { Agent, request } from "node:http";
import { connect } from "node:net";
import { createInterface } from "node:readline";
import { describe, expect, test } from "vitest";
import { type RunningServer, serverConfigFromEnv, startServer } from "../../src/node.ts";
import { freshStore, freshUrl } from "../fresh-db.ts";
import type { ErrorBody } from "../../src/http/errors.ts";

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

/** POSTs a job over the given agent's connections: what a keep-alive client sees. */
function postOver(agent: Agent, server: RunningServer, body: string): Promise<{ status: number; connection: string | undefined }> {
  const { port } = new URL(server.url);
  return new Promise((resolve, reject) => {
    const headers = { Authorization: `Bearer ${TOKEN}`, "Content-Type": "application/json", "Content-Length": Buffer.byteLength(body) };
    const sent = request({ agent, host: "127.0.0.1", port, path: "/v1/jobs", method: "POST", headers }, (response) => {
      response.resume();
      response.on("end", () => resolve({ status: response.statusCode!, connection: response.headers.connection }));
    });
    sent.on("error", reject);
    sent.end(body);
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

  test("after a 413 on a keep-alive connection, the next request of the same client works: the 413 says Connection: close", async () => {
    const { url, snapshot } = await freshStore();
    const server = await running(url);
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const tooBig = await postOver(agent, server, JSON.stringify({ id: "big", payload: "y".repeat(1024 * 1024) }));
      expect(tooBig).toMatchObject({ status: 413, connection: "close" });
      expect(await postOver(agent, server, JSON.stringify({ id: "after" }))).toMatchObject({ status: 201 });
      expect(Object.keys(await snapshot())).toEqual(["after"]);
    } finally {
      agent.destroy();
      await server.stop();
    }
  });

  test("an idle server's housekeeping writes no line; a run that ends a lease writes one", async () => {
    const { url } = await freshStore();
    const clock = { now: 1_000_000 };
    const lines: string[] = [];
    const server = await startServer({
      host: "127.0.0.1", port: 0, databaseUrl: url, auth: { tokens: [TOKEN] },
      clock: () => clock.now, maintainEveryMs: 5, log: (line) => lines.push(line),
    });
    const housekeeping = () => lines.filter((line) => line.startsWith("fencelease: ended"));
    try {
      await post(server, "/v1/jobs", { id: "job-1" });
      await post(server, "/v1/jobs/job-1/claim", { owner: "A", ttlMs: 1_000 });
      await new Promise((resolve) => setTimeout(resolve, 200)); // dozens of runs, each with nothing to do
      expect(housekeeping()).toEqual([]);
      clock.now += 1_000; // job-1's lease ends now
      for (let waited = 0; housekeeping().length === 0 && waited < 5_000; waited += 10) await new Promise((resolve) => setTimeout(resolve, 10));
      await new Promise((resolve) => setTimeout(resolve, 100)); // and more runs with nothing to do
      expect(housekeeping()).toEqual(["fencelease: ended 1 expired lease, purged 0 old jobs"]);
    } finally {
      await server.stop();
    }
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

  test("stop under keep-alive load starts no new request, lets those in flight finish, closes every connection and resolves at once", async () => {
    const { url, snapshot } = await freshStore();
    const server = await running(url);
    const agent = new Agent({ keepAlive: true, maxSockets: 16 });
    const answered: number[] = [];
    let next = 0;
    const client = async () => {
      // Each client sends until the server turns it away (503) or its connection is gone.
      for (;;) {
        const answer = await postOver(agent, server, JSON.stringify({ id: `job-${next++}` })).catch(() => undefined);
        if (answer === undefined || answer.status !== 201) return;
        answered.push(answer.status);
      }
    };
    const clients = Array.from({ length: 16 }, client);
    try {
      while (answered.length < 300) await new Promise((resolve) => setTimeout(resolve, 5));
      const stopping = server.stop();
      const stopCalledAt = Date.now();
      const within = await Promise.race([stopping.then(() => "stopped"), new Promise((resolve) => setTimeout(() => resolve("still serving"), 3_000))]);
      expect(within).toBe("stopped");
      await Promise.all(clients);
      const rows = Object.values(await snapshot());
      expect(rows.length).toBeGreaterThanOrEqual(300);
      expect(rows.filter((row) => (row.created_at as number) > stopCalledAt)).toEqual([]); // nothing was started after the stop
      expect(rows.length).toBe(answered.length); // and every request that was started got its answer
      await expect(fetch(`${server.url}/healthz`)).rejects.toThrow();
    } finally {
      agent.destroy();
    }
  });

  test("a keep-alive connection busy when the stop begins gets its answer with Connection: close, and serves nothing more", async () => {
    const { url, snapshot } = await freshStore();
    const server = await running(url);
    const socket = connect(Number(new URL(server.url).port), "127.0.0.1");
    await once(socket, "connect");
    socket.on("error", () => {}); // writing to the closed connection may fail: that is the point
    const closed = once(socket, "close").then(() => "closed");
    let received = "";
    socket.setEncoding("utf8").on("data", (chunk: string) => (received += chunk));
    const head = (body: string) => `POST /v1/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${TOKEN}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`;
    const first = JSON.stringify({ id: "in-flight" });
    socket.write(head(first) + first.slice(0, 5)); // the request is under way when the stop begins
    await new Promise((resolve) => setTimeout(resolve, 50));
    const stopped = server.stop();
    socket.write(first.slice(5));
    while (!received.includes("\r\n\r\n{")) await new Promise((resolve) => setTimeout(resolve, 5));
    expect(received).toMatch(/^HTTP\/1\.1 201 /);
    expect(received.toLowerCase()).toContain("connection: close");
    const second = JSON.stringify({ id: "after-the-stop" });
    socket.write(head(second) + second);
    expect(await Promise.race([closed, new Promise((resolve) => setTimeout(() => resolve("still open"), 2_000))])).toBe("closed");
    expect(received.match(/HTTP\/1\.1/g)).toHaveLength(1); // one answer only
    await stopped;
    expect(Object.keys(await snapshot())).toEqual(["in-flight"]);
    socket.destroy();
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
    expect(serverConfigFromEnv({ DATABASE_TIMEOUT_MS: "2000" }).statementTimeoutMs).toBe(2000);
    expect(() => serverConfigFromEnv({ DATABASE_TIMEOUT_MS: "soon" })).toThrow(/DATABASE_TIMEOUT_MS/);
  });

  test("a SIGTERM that comes again during the stop (a process group's, forwarded by npm) is ignored: waiting long polls and a request in flight get their answers, and the server exits 0", async () => {
    const { url, snapshot } = await freshStore();
    const child = spawn(process.execPath, ["src/cli/main.ts", "serve"], {
      env: { ...process.env, PORT: "0", DATABASE_URL: url, FENCELEASE_TOKENS: TOKEN, FENCELEASE_AUTH: "" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    const exited = once(child, "exit");
    const logged: string[] = [];
    createInterface({ input: child.stdout }).on("line", (line) => logged.push(line));
    /** The first line the server logged that matches `pattern`, once it has. */
    const line = async (pattern: RegExp) => {
      for (;;) {
        const found = logged.find((line) => pattern.test(line));
        if (found !== undefined) return found;
        await new Promise((resolve) => child.stdout!.once("data", resolve));
      }
    };
    try {
      const base = /listening on (\S+)/.exec(await line(/listening on/))![1]!;
      const call = (path: string, body?: unknown) => fetch(`${base}${path}`, {
        method: body === undefined ? "GET" : "POST",
        headers: { Authorization: `Bearer ${TOKEN}`, "Content-Type": "application/json" },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      /** An answer's status, Connection header and JSON body; a connection cut without one is an error. */
      const answer = (sent: Promise<Response>) =>
        sent.then(async (response) => ({ status: response.status, connection: response.headers.get("connection"), body: await response.json() }), (error: Error) => error);
      expect((await call("/v1/jobs", { id: "pending", queue: "other" })).status).toBe(201);
      const claim = answer(call("/v1/queues/q/claim", { owner: "w", ttlMs: TTL, waitMs: 30_000 }));
      const read = answer(call("/v1/jobs/pending?waitMs=30000"));
      // A request in flight: its body half sent, so the stop waits for it.
      const socket = connect(Number(new URL(base).port), "127.0.0.1");
      await once(socket, "connect");
      let received = "";
      socket.setEncoding("utf8").on("data", (chunk: string) => (received += chunk));
      socket.on("error", () => {}); // a connection cut is what the assertions below would show
      const closed = once(socket, "close");
      const body = JSON.stringify({ id: "in-flight", queue: "other" });
      socket.write(`POST /v1/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${TOKEN}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 5)}`);
      // The two long polls wait in the server, and the request in flight has reached it: an answer to another
      // request says nothing of when the server took theirs, so the test waits until it says it has.
      for (let metrics = ""; !/^fencelease_waiting_requests 2$/m.test(metrics); ) metrics = await (await call("/metrics")).text();
      expect((await call("/healthz")).status).toBe(200);

      const stoppedAt = performance.now();
      child.kill("SIGTERM");
      await line(/SIGTERM: finishing requests in flight, then closing the database$/);
      child.kill("SIGTERM"); // what npm forwards when the whole group was sent SIGTERM
      expect(await claim).toMatchObject({ status: 200, connection: "close", body: { leases: [] } });
      expect(await read).toMatchObject({ status: 200, connection: "close", body: { id: "pending", status: "queued", fence: 0 } });
      expect(performance.now() - stoppedAt).toBeLessThan(1_000);
      socket.write(body.slice(5));
      await closed;
      expect(received).toMatch(/^HTTP\/1\.1 201 /);
      expect(received.toLowerCase()).toContain("connection: close");

      expect(await exited).toEqual([0, null]);
      await line(/SIGTERM again: already stopping/);
      const rows = await snapshot();
      expect(Object.keys(rows)).toEqual(["in-flight", "pending"]);
      expect(rows.pending).toMatchObject({ owner: null, fence: 0, done: 0, attempts: 0 });
    } finally {
      child.kill("SIGKILL");
    }
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
