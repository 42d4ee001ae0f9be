import { spawn } from "node:child_process";
import { once } from "node:events";
import { createServer, type Server } from "node:net";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { freshDir, freshStore } from "../fresh-db.ts";
import { freePort, killGroup, listening, npm, until } from "./npm-process.ts";

// `npm start` as a user runs it: npm, the script's shell, and the server under
// them. A stop sent to npm alone must reach the server, and a port that is taken
// must be one line, not a stack trace.

describe("npm start", () => {
  test("a SIGTERM to npm's process stops the server: npm exits and the port is free", async () => {
    const port = await freePort();
    const started = npm(["start"], port);
    try {
      expect(await until(() => started.output().stdout.includes(`fencelease listening on http://127.0.0.1:${port}`), 20_000)).toBe(true);
      expect(await listening(port)).toBe(true);
      const exited = once(started, "exit");
      started.kill("SIGTERM"); // npm's pid only, as `kill -TERM <pid>` would
      await exited;
      expect(await until(async () => !(await listening(port)), 5_000)).toBe(true);
      expect(started.output().stdout).toContain("SIGTERM: finishing requests in flight, then closing the database");
    } finally {
      killGroup(started);
    }
  });

  test("a SIGTERM to its whole process group (npm forwards one more) answers the waiting long polls before the server exits", async () => {
    const port = await freePort();
    const started = npm(["start"], port);
    try {
      expect(await until(() => started.output().stdout.includes(`fencelease listening on http://127.0.0.1:${port}`), 20_000)).toBe(true);
      const base = `http://127.0.0.1:${port}`;
      const post = (path: string, body: unknown) => fetch(`${base}${path}`, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });
      expect((await post("/v1/jobs", { id: "pending", queue: "other" })).status).toBe(201);
      const claim = post("/v1/queues/q/claim", { owner: "w", ttlMs: 60_000, waitMs: 30_000 }).then(async (response) => [response.status, await response.json()], (error: Error) => error);
      const read = fetch(`${base}/v1/jobs/pending?waitMs=30000`).then(async (response) => [response.status, await response.json()], (error: Error) => error);
      expect((await fetch(`${base}/healthz`)).status).toBe(200); // the long polls have reached the server
      const exited = once(started, "exit");
      process.kill(-started.pid!, "SIGTERM"); // the group: npm, and the server it exec'd
      expect(await claim).toEqual([200, expect.objectContaining({ leases: [] })]);
      expect(await read).toEqual([200, expect.objectContaining({ id: "pending", status: "queued" })]);
      await exited;
      expect(await until(async () => !(await listening(port)), 5_000)).toBe(true);
    } finally {
      killGroup(started);
    }
  });

  test("on a port that is taken it prints one line naming the port and exits non-zero", async () => {
    const port = await freePort();
    const taken: Server = createServer();
    await new Promise<void>((resolve) => taken.listen(port, "127.0.0.1", resolve));
    const line = `fencelease: port ${port} on 127.0.0.1 is taken (another fencelease, or another program, listens there): stop it, or set PORT to a free port`;
    try {
      const second = npm(["start"], port);
      try {
        const [code] = await once(second, "close");
        expect(code).not.toBe(0);
        // Whatever npm adds of its own, the server's part is the one line and no stack.
        const { stderr } = second.output();
        expect(stderr.split("\n")).toContain(line);
        expect(stderr).not.toMatch(/EADDRINUSE|^\s+at /m);
      } finally {
        killGroup(second);
      }
      // The command itself, without npm: the one line, exit code 1.
      const direct = spawn(process.execPath, ["src/cli/main.ts", "serve"], {
        env: { ...process.env, PORT: String(port), FENCELEASE_AUTH: "off", DATABASE_URL: `file:${join(freshDir(), "fencelease.db")}` },
        stdio: ["ignore", "pipe", "pipe"],
      });
      let stderr = "";
      direct.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
      const [code] = await once(direct, "close");
      expect({ code, stderr }).toEqual({ code: 1, stderr: `${line}\n` });
    } finally {
      await new Promise((resolve) => taken.close(resolve));
    }
  });

  test("on a port that is taken, a database with a pushed queue: the one line, and nothing started before it (no job claimed to push)", async () => {
    const { store, url, snapshot } = await freshStore();
    await store.push.put("thumbs", { url: "http://127.0.0.1:9/" });
    await store.enqueue("thumb-1", { queue: "thumbs" });
    const before = await snapshot();
    const port = await freePort();
    const taken: Server = createServer();
    await new Promise<void>((resolve) => taken.listen(port, "127.0.0.1", resolve));
    try {
      const second = npm(["start"], port, url);
      try {
        const [code] = await once(second, "close");
        expect(code).not.toBe(0);
        // npm adds lines of its own; the server's, on stdout and stderr, are the one line.
        const { stdout, stderr } = second.output();
        const ours = `${stdout}\n${stderr}`.split("\n").filter((line) => line.includes("fencelease:"));
        expect(ours).toEqual([`fencelease: port ${port} on 127.0.0.1 is taken (another fencelease, or another program, listens there): stop it, or set PORT to a free port`]);
      } finally {
        killGroup(second);
      }
    } finally {
      await new Promise((resolve) => taken.close(resolve));
    }
    expect(await snapshot()).toEqual(before);
    expect(before["thumb-1"]).toMatchObject({ fence: 0, owner: null, attempts: 0 });
  });
});
