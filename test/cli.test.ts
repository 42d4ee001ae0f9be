import { execFile } from "node:child_process";
import { describe, expect, test } from "vitest";
import { startServer } from "../src/index.ts";
import { freshStore, freshUrl } from "./fresh-db.ts";

const TOKEN = "cli-test-token";

type Ran = { code: number; stdout: string; stderr: string };

/** Runs the fencelease command as a user would, in a process of its own. */
function cli(args: string[], env: Record<string, string> = {}): Promise<Ran> {
  return new Promise((resolve) => {
    execFile(process.execPath, ["src/cli/main.ts", ...args], { env: { ...process.env, ...env } }, (error, stdout, stderr) => {
      resolve({ code: error ? Number(error.code) : 0, stdout, stderr });
    });
  });
}

/** The Node server on a fresh database, and the CLI pointed at it by environment. */
async function serving() {
  const fresh = await freshStore();
  const server = await startServer({ host: "127.0.0.1", port: 0, databaseUrl: fresh.url, auth: { tokens: [TOKEN] } });
  const run = (...args: string[]) => cli(args, { FENCELEASE_URL: server.url, FENCELEASE_TOKEN: TOKEN });
  return { ...fresh, server, run, [Symbol.asyncDispose]: () => server.stop() };
}

describe("the fencelease command", () => {
  test("walks a job through enqueue, claim, renew, release, claim-next and complete, in words and in JSON", async () => {
    await using s = await serving();
    expect(await s.run("enqueue", "job-1", "--queue", "q", "--payload", '{"n":1}', "--priority", "2")).toEqual({ code: 0, stdout: "enqueued job-1 in queue q\n", stderr: "" });
    expect((await s.run("enqueue", "job-1", "--queue", "q")).stdout).toBe("job-1 exists already; nothing changed\n");
    const got = await s.run("get", "job-1");
    expect(got.stdout).toMatch(/^id {10}"job-1"$/m);
    expect(got.stdout).toMatch(/^payload {5}\{"n":1\}$/m);
    expect((await s.run("claim", "job-1", "--owner", "A", "--ttl-ms", "60000")).stdout).toMatch(/^claimed job-1: fence 1, until \S+Z \(owner A\)\n$/);
    expect((await s.run("renew", "job-1", "--owner", "A", "--fence", "1", "--ttl-ms", "60000")).stdout).toMatch(/^renewed job-1 until /);
    expect((await s.run("release", "job-1", "--owner", "A", "--fence", "1")).stdout).toBe("released job-1; its fence stays 1\n");
    const next = await s.run("claim-next", "q", "--owner", "B", "--ttl-ms", "60000", "--json");
    expect(JSON.parse(next.stdout)).toMatchObject({ leases: [{ fence: 2, job: { id: "job-1", owner: "B" } }] });
    expect((await s.run("claim-next", "q", "--owner", "B", "--ttl-ms", "60000")).stdout).toBe("nothing due in queue q\n");
    const done = await s.run("complete", "job-1", "--owner", "B", "--fence", "2", "--result", '{"ok":true}', "--json");
    expect(JSON.parse(done.stdout)).toMatchObject({ job: { done: true, result: { ok: true } } });
    expect((await s.snapshot())["job-1"]).toMatchObject({ owner: "B", fence: 2, done: 1, result: '{"ok":true}' });
  });

  test("a refusal exits 4 with one line on stderr, and changes nothing", async () => {
    await using s = await serving();
    await s.run("enqueue", "job-1");
    await s.run("claim", "job-1", "--owner", "A", "--ttl-ms", "60000");
    const before = await s.snapshot();
    const taken = await s.run("claim", "job-1", "--owner", "B", "--ttl-ms", "60000");
    expect(taken).toMatchObject({ code: 4, stdout: "" });
    expect(taken.stderr).toMatch(/^fencelease: refused, not_claimable \(leased\): .+\n$/);
    const stale = await s.run("complete", "job-1", "--owner", "B", "--fence", "1", "--result", "1");
    expect(stale.code).toBe(4);
    expect(stale.stderr).toMatch(/^fencelease: refused, stale_lease \(not_owner\): /);
    expect(await s.snapshot()).toEqual(before);
  });

  test.each([
    ["an unknown job", 3, ["get", "nope"], /not_found/],
    ["a missing --owner", 2, ["claim", "job-1", "--ttl-ms", "1000"], /--owner is required/],
    ["a --ttl-ms that is not a number", 2, ["claim", "job-1", "--owner", "A", "--ttl-ms", "soon"], /--ttl-ms must be a whole number/],
    ["a --ttl-ms the server refuses", 2, ["claim", "job-1", "--owner", "A", "--ttl-ms", "0"], /ttlMs must be at least 1/],
    ["a --result that is not JSON", 2, ["complete", "job-1", "--owner", "A", "--fence", "1", "--result", "done"], /--result must be JSON/],
    ["an unknown option", 2, ["get", "job-1", "--colour", "red"], /Unknown option '--colour'/],
    ["an unknown command", 2, ["frobnicate", "job-1"], /unknown command "frobnicate"/],
    ["a command without its id", 2, ["get"], /get needs a job id/],
  ])("%s exits %i", async (_, code, args, says) => {
    await using s = await serving();
    await s.run("enqueue", "job-1");
    const before = await s.snapshot();
    const ran = await s.run(...(args as string[]));
    expect(ran.code).toBe(code);
    expect(ran.stderr).toMatch(says);
    expect(ran.stderr.trim().split("\n")).toHaveLength(1);
    expect(await s.snapshot()).toEqual(before);
  });

  test("a wrong token exits 6, and an unreachable server exits 5", async () => {
    await using s = await serving();
    expect(await cli(["get", "job-1", "--url", s.server.url, "--token", "wrong"])).toMatchObject({ code: 6, stderr: expect.stringMatching(/unauthorized/) });
    const closed = freshUrl(); // nothing listens on port 1
    expect(await cli(["claim", "job-1", "--owner", "A", "--ttl-ms", "1000", "--url", "http://127.0.0.1:1"], { DATABASE_URL: closed }))
      .toMatchObject({ code: 5, stderr: expect.stringMatching(/could not reach http:\/\/127\.0\.0\.1:1/) });
  });

  test("migrate applies the migrations once", async () => {
    const url = freshUrl();
    expect(await cli(["migrate"], { DATABASE_URL: url })).toEqual({ code: 0, stdout: `${url}: applied 0001_jobs.sql, 0002_lifecycle.sql\n`, stderr: "" });
    expect((await cli(["migrate"], { DATABASE_URL: url })).stdout).toBe(`${url}: up to date\n`);
  });

  test("--help prints the usage and exits 0; no command prints it to stderr and exits 2", async () => {
    expect(await cli(["--help"])).toMatchObject({ code: 0, stdout: expect.stringContaining("Usage: fencelease <command>") });
    expect(await cli([])).toMatchObject({ code: 2, stderr: expect.stringContaining("Usage: fencelease <command>") });
  });

  test("demo replays the note's story on a server of its own: A's late complete is refused, B's result stays", async () => {
    const ran = await cli(["demo"], { FENCELEASE_URL: "" });
    expect(ran.code).toBe(0);
    const lines = ran.stdout.trim().split("\n");
    expect(lines[0]).toMatch(/^fencelease demo against http:\/\/127\.0\.0\.1:\d+ \(a temporary database\)$/);
    expect(lines.slice(1).map((line) => line.replace(/^ *\d+ ms {2}/, ""))).toEqual([
      expect.stringMatching(/^ {3}enqueue invoice-\w+$/),
      expect.stringMatching(/^A {2}claims invoice-\w+ +→ fence 1, lease of 500 ms$/),
      "A  stalls past its lease...",
      expect.stringMatching(/^B {2}claims invoice-\w+ +→ fence 2$/),
      expect.stringMatching(/^B {2}completes with "paid by B" +→ 200, stored$/),
      expect.stringMatching(/^A {2}completes late with fence 1 +→ 409 stale_lease \(superseded; current fence 2\)$/),
      expect.stringMatching(/^ {3}stored result +→ "paid by B" \(owner B, fence 2\)$/),
    ]);
  });

  test("demo against a running server uses it, and leaves the story in its database", async () => {
    await using s = await serving();
    const ran = await s.run("demo");
    expect(ran.code).toBe(0);
    expect(ran.stdout).toContain(`fencelease demo against ${s.server.url}`);
    const [row] = Object.values(await s.snapshot());
    expect(row).toMatchObject({ owner: "B", fence: 2, done: 1, result: '"paid by B"' });
  });
});
