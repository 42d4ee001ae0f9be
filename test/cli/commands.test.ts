import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createClient } from "@libsql/client";
import { describe, expect, onTestFinished, test } from "vitest";
import { readMigrations } from "../../src/node.ts";
import { EDITED_MIGRATIONS } from "../../src/store/migration-repairs.ts";
import { cli, serving } from "./process.ts";
import { freshDir, freshUrl } from "../fresh-db.ts";

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

  test("claim-next --wait MS waits for a job enqueued meanwhile; get --wait waits until the job is done", async () => {
    await using s = await serving();
    const claiming = s.run("claim-next", "q", "--owner", "A", "--ttl-ms", "60000", "--wait", "10000");
    for (const started = Date.now(); s.server.waiting === 0 && Date.now() - started < 10_000; ) await new Promise((resolve) => setTimeout(resolve, 5));
    await s.run("enqueue", "job-1", "--queue", "q");
    expect((await claiming).stdout).toMatch(/^claimed job-1: fence 1, until \S+Z \(owner A\)\n$/);
    expect((await s.run("claim-next", "q", "--owner", "A", "--ttl-ms", "60000", "--wait", "200")).stdout).toBe("nothing came in queue q within 200 ms\n");
    expect(await s.run("claim-next", "q", "--owner", "A", "--ttl-ms", "60000", "--wait")).toMatchObject({ code: 2, stderr: "fencelease: --wait needs the most ms to wait for a job, up to 30000 (see fencelease --help)\n" });

    const getting = s.run("get", "job-1", "--wait", "--json");
    for (const started = Date.now(); s.server.waiting === 0 && Date.now() - started < 10_000; ) await new Promise((resolve) => setTimeout(resolve, 5));
    await s.run("complete", "job-1", "--owner", "A", "--fence", "1", "--result", '"paid"');
    expect(JSON.parse((await getting).stdout)).toMatchObject({ id: "job-1", status: "done", result: "paid" });
    await s.run("enqueue", "job-2", "--queue", "q");
    expect((await s.run("get", "job-2", "--wait", "200")).stdout).toMatch(/^status {6}"queued"$/m); // as it is once the 200 ms have passed
  });

  test("enqueue-many reads JSON lines from a file or standard input and sends them 1,000 per call", async () => {
    await using s = await serving();
    const file = join(freshDir(), "jobs.jsonl");
    writeFileSync(file, `${Array.from({ length: 1_500 }, (_, i) => JSON.stringify({ id: `job-${i}`, payload: { n: i } })).join("\n")}\n\n`);
    expect(await s.run("enqueue-many", "q", "--file", file)).toEqual({ code: 0, stdout: "enqueued 1500 of 1500 jobs in queue q\n", stderr: "" });
    const again = await s.runWithInput('{"id":"job-0"}\n{"id":"new","priority":3}\n', "enqueue-many", "q", "--json");
    expect(JSON.parse(again.stdout)).toEqual({ jobs: [{ id: "job-0", created: false }, { id: "new", created: true }] });
    const rows = await s.snapshot();
    expect(Object.keys(rows)).toHaveLength(1_501);
    expect(rows["job-1499"]).toMatchObject({ queue: "q", payload: '{"n":1499}' });
    expect(rows.new).toMatchObject({ priority: 3 });
  });

  test("enqueue --key and enqueue-many lines with a key store the key, and get prints it; a bad --key exits 2 and stores nothing", async () => {
    await using s = await serving();
    expect((await s.run("enqueue", "job-1", "--queue", "q", "--key", "tenant-1")).stdout).toBe("enqueued job-1 in queue q\n");
    expect((await s.run("get", "job-1")).stdout).toMatch(/^key {9}"tenant-1"$/m);
    expect(JSON.parse((await s.run("enqueue", "job-2", "--queue", "q", "--json")).stdout).job.key).toBeNull();
    await s.runWithInput('{"id":"many-1","key":"tenant-2"}\n{"id":"many-2"}\n', "enqueue-many", "q");
    const before = await s.snapshot();
    expect(Object.fromEntries(Object.entries(before).map(([id, row]) => [id, row.key]))).toEqual({ "job-1": "tenant-1", "job-2": null, "many-1": "tenant-2", "many-2": null });
    expect(await s.run("enqueue", "job-3", "--key", "")).toEqual({ code: 2, stdout: "", stderr: "fencelease: invalid_request: --key must not be empty\n" });
    expect(await s.snapshot()).toEqual(before);
  });

  test("enqueue --dedup-key with a window, a debounce or --supersede says what it did; a dedup key alone exits 2 naming the options", async () => {
    await using s = await serving();
    expect((await s.run("enqueue", "pay-1", "--queue", "q", "--dedup-key", "order-7", "--dedup-ttl-ms", "60000")).stdout).toBe("enqueued pay-1 in queue q\n");
    expect((await s.run("enqueue", "pay-2", "--queue", "q", "--dedup-key", "order-7", "--dedup-ttl-ms", "60000")).stdout).toBe(
      "not enqueued: the window of its dedup key is held by pay-1 (queued)\n",
    );
    expect((await s.run("enqueue", "save-1", "--queue", "q", "--dedup-key", "doc", "--debounce-ms", "1000")).stdout).toBe("enqueued save-1 in queue q\n");
    expect((await s.run("enqueue", "save-2", "--queue", "q", "--dedup-key", "doc", "--debounce-ms", "1000", "--payload", "2")).stdout).toMatch(/^not enqueued: moved save-1, the waiting job of its dedup key, to \d{4}-/);
    expect((await s.run("enqueue", "v1", "--queue", "q", "--dedup-key", "sync", "--supersede")).stdout).toBe("enqueued v1 in queue q\n");
    expect((await s.run("enqueue", "v2", "--queue", "q", "--dedup-key", "sync", "--supersede")).stdout).toBe("enqueued v2 in queue q; cancelled v1, which it supersedes\n");
    const before = await s.snapshot();
    expect(Object.keys(before).sort()).toEqual(["pay-1", "save-1", "v1", "v2"]);
    const refused = await s.run("enqueue", "x", "--queue", "q", "--dedup-key", "k");
    expect(refused).toEqual({
      code: 2,
      stdout: "",
      stderr: "fencelease: invalid_request: --dedup-key takes exactly one of --dedup-ttl-ms (a window), --debounce-ms (a debounce) or supersede: true, got none\n",
    });
    expect(await s.snapshot()).toEqual(before);
  });

  test("enqueue-many names the line that is wrong, exits 2 and sends nothing", async () => {
    await using s = await serving();
    const bad = await s.runWithInput('{"id":"a"}\nnot json\n', "enqueue-many", "q");
    expect(bad).toEqual({ code: 2, stdout: "", stderr: "fencelease: line 2 is not JSON: not json (see fencelease --help)\n" });
    const noId = await s.runWithInput('{"id":"a"}\n[1]\n', "enqueue-many", "q");
    expect(noId.stderr).toMatch(/^fencelease: line 2 must be a JSON object with a string "id"/);
    const refused = await s.runWithInput('{"id":"a","maxAttempts":0}\n', "enqueue-many", "q");
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain("jobs.0.maxAttempts must be at least 1");
    expect(await s.snapshot()).toEqual({});
  });

  test("control characters in what the server answers reach the terminal escaped, never raw", async () => {
    await using s = await serving();
    await s.run("enqueue", "job-1");
    await s.run("claim", "job-1", "--owner", "A", "--ttl-ms", "60000");
    await s.run("fail", "job-1", "--owner", "A", "--fence", "1", "--error", "boom\u001b[2J\nforged line");
    const events = await s.run("events", "job-1");
    expect(events.stdout).not.toMatch(/[\u0000-\u0009\u000b-\u001f]/);
    expect(events.stdout).toContain("failed A/1: boom\\u001b[2J\\u000aforged line\n");
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
    const leased = await s.run("delete", "job-1");
    expect(leased).toMatchObject({ code: 4, stdout: "" });
    expect(leased.stderr).toMatch(/^fencelease: refused, conflict \(leased\): job "job-1" is leased; .+\n$/);
    expect(await s.snapshot()).toEqual(before);
  });

  test("step records a step under the lease, answers one recorded already as it was recorded, and refuses a stale lease (exit 4) or no name (exit 2)", async () => {
    await using s = await serving();
    await s.run("enqueue", "job-1");
    await s.run("claim", "job-1", "--owner", "A", "--ttl-ms", "60000");
    expect(await s.run("step", "job-1", "charge", "--owner", "A", "--fence", "1", "--result", '{"charge":"ch_1"}')).toEqual({ code: 0, stdout: "recorded step charge of job-1 with fence 1\n", stderr: "" });
    const again = await s.run("step", "job-1", "charge", "--owner", "A", "--fence", "1", "--result", '"other"');
    expect(again).toMatchObject({ code: 0, stderr: "" });
    expect(again.stdout).toMatch(/^step charge of job-1 was recorded already, with fence 1 at \S+Z: \{"charge":"ch_1"\}\n$/);
    const json = await s.run("step", "job-1", "charge", "--owner", "A", "--fence", "1", "--result", "1", "--json");
    expect(JSON.parse(json.stdout)).toMatchObject({ recorded: false, step: { name: "charge", result: { charge: "ch_1" }, fence: 1 } });
    const before = await s.snapshot();
    const stale = await s.run("step", "job-1", "email", "--owner", "B", "--fence", "1", "--result", "1");
    expect(stale).toMatchObject({ code: 4, stdout: "" });
    expect(stale.stderr).toMatch(/^fencelease: refused, stale_lease \(not_owner\): /);
    expect(await s.run("step", "job-1", "--owner", "A", "--fence", "1", "--result", "1")).toEqual({ code: 2, stdout: "", stderr: "fencelease: step needs the step's name after a job id (see fencelease --help)\n" });
    expect(await s.snapshot()).toEqual(before);
  });

  test("fails a job until it is dead, retries it and deletes it, in words and in JSON", async () => {
    await using s = await serving();
    await s.run("enqueue", "job-1", "--max-attempts", "2");
    await s.run("claim", "job-1", "--owner", "A", "--ttl-ms", "60000");
    const failed = await s.run("fail", "job-1", "--owner", "A", "--fence", "1", "--error", "disk full", "--retry-in-ms", "0");
    expect(failed).toMatchObject({ code: 0, stdout: expect.stringMatching(/^failed job-1: attempt 1 of 2; due again at \S+Z\n$/), stderr: "" });
    expect((await s.snapshot())["job-1"]).toMatchObject({ owner: null, fence: 1, attempts: 1, last_error: "disk full", dead: 0 });
    await s.run("claim", "job-1", "--owner", "B", "--ttl-ms", "60000");
    expect((await s.run("fail", "job-1", "--owner", "B", "--fence", "2", "--error", "disk full again")).stdout).toBe("failed job-1: dead after 2 of 2 attempts\n");
    expect((await s.snapshot())["job-1"]).toMatchObject({ owner: null, fence: 2, attempts: 2, last_error: "disk full again", dead: 1, done: 1 });
    expect(await s.run("retry", "job-1")).toEqual({ code: 0, stdout: "retried job-1: queued again with its attempts reset; its fence stays 2\n", stderr: "" });
    expect((await s.snapshot())["job-1"]).toMatchObject({ owner: null, fence: 2, attempts: 0, dead: 0, done: 0 });
    await s.run("enqueue", "job-2");
    expect(await s.run("delete", "job-1")).toEqual({ code: 0, stdout: "deleted job-1\n", stderr: "" });
    const deleted = await s.run("delete", "job-2", "--json");
    expect(JSON.parse(deleted.stdout)).toEqual({ deleted: true });
    expect(await s.snapshot()).toEqual({});
  });

  test("a failed attempt in JSON is the job as the server answers it", async () => {
    await using s = await serving();
    await s.run("enqueue", "job-1", "--max-attempts", "1");
    await s.run("claim", "job-1", "--owner", "A", "--ttl-ms", "60000");
    const dead = await s.run("fail", "job-1", "--owner", "A", "--fence", "1", "--error", "bad input", "--json");
    expect(JSON.parse(dead.stdout)).toMatchObject({ job: { id: "job-1", status: "dead", attempts: 1, maxAttempts: 1, lastError: "bad input", owner: null } });
    const retried = await s.run("retry", "job-1", "--json");
    expect(JSON.parse(retried.stdout)).toMatchObject({ job: { id: "job-1", status: "queued", attempts: 0, fence: 1 } });
  });

  test("list, events, check-lease and stats read back one line each, and as the server's JSON; reading changes nothing", async () => {
    await using s = await serving();
    await s.run("enqueue", "a b", "--queue", "q");
    await s.run("enqueue", "job-1", "--queue", "q");
    await s.run("enqueue", "later", "--queue", "r", "--delay-ms", "600000");
    await s.run("claim", "job-1", "--owner", "A", "--ttl-ms", "600000");
    expect((await s.run("complete", "job-1", "--owner", "B", "--fence", "1", "--result", "1")).code).toBe(4);
    const before = await s.snapshot();

    expect(await s.run("list")).toEqual({
      code: 0,
      stdout: ["a b    queued     q  fence 0", "job-1  leased     q  fence 1  owner A", "later  scheduled  r  fence 0", ""].join("\n"),
      stderr: "",
    });
    expect((await s.run("list", "--queue", "q", "--limit", "1")).stdout).toBe("a b  queued  q  fence 0\nmore: --cursor 'a b'\n");
    const page = JSON.parse((await s.run("list", "--queue", "q", "--limit", "1", "--cursor", "a b", "--json")).stdout);
    expect(page).toMatchObject({ jobs: [{ id: "job-1", status: "leased", owner: "A" }], nextCursor: null });
    expect((await s.run("list", "--status", "scheduled")).stdout).toBe("later  scheduled  r  fence 0\n");
    expect((await s.run("list", "--queue", "none")).stdout).toBe("no jobs\n");

    const events = await s.run("events", "job-1");
    expect(events.stdout.trim().split("\n")).toEqual([
      expect.stringMatching(/^\S+Z {2}enqueued$/),
      expect.stringMatching(/^\S+Z {2}claimed A\/1$/),
      expect.stringMatching(/^\S+Z {2}refused complete: presented B\/1, current A\/1$/),
    ]);
    const first = (await s.run("events", "job-1", "--limit", "1")).stdout.trim().split("\n");
    expect(first).toEqual([expect.stringMatching(/^\S+Z {2}enqueued$/), expect.stringMatching(/^more: --cursor \d+$/)]);
    const rest = JSON.parse((await s.run("events", "job-1", "--cursor", first[1]!.split(" ").at(-1)!, "--json")).stdout);
    expect(rest).toMatchObject({ events: [{ kind: "claimed", owner: "A", fence: 1 }, { kind: "refused", action: "complete", owner: "B", fence: 1, currentOwner: "A", currentFence: 1 }], nextCursor: null });
    expect((await s.run("events", "nope")).stdout).toBe("no events for nope\n");

    expect(await s.run("check-lease", "job-1", "--owner", "A", "--fence", "1")).toMatchObject({ code: 0, stdout: expect.stringMatching(/^A\/1 is the current lease of job-1, until \S+Z\n$/) });
    expect(await s.run("check-lease", "job-1", "--owner", "B", "--fence", "1")).toEqual({
      code: 4,
      stdout: "B/1 is not the current lease of job-1: not_owner, the job's fence is 1, and that lease is another owner's, or was given back or ended\n",
      stderr: "",
    });
    const check = await s.run("check-lease", "job-1", "--owner", "A", "--fence", "2", "--json");
    expect({ code: check.code, answer: JSON.parse(check.stdout) }).toEqual({ code: 4, answer: { current: false, fence: 1, until: expect.any(Number), reason: "not_owner" } });

    const stats = await s.run("stats");
    expect(stats.stdout.trim().split("\n")).toEqual([
      expect.stringMatching(/^q: queued 1, scheduled 0, leased 1, done 0, dead 0, cancelled 0; oldest due \d+ ms ago; refused 1 in the last hour, 1 ever$/),
      "r: queued 0, scheduled 1, leased 0, done 0, dead 0, cancelled 0; none due; refused 0 in the last hour, 0 ever",
    ]);
    expect(JSON.parse((await s.run("stats", "--json")).stdout)).toMatchObject({ queues: [{ queue: "q", refused: { total: 1 } }, { queue: "r", jobs: { scheduled: 1 } }] });
    expect(await s.snapshot()).toEqual(before);
  });

  test("get prints the job's times as ISO, as claim does; --run-at takes one back; a --priority may be negative", async () => {
    await using s = await serving();
    expect((await s.run("enqueue", "job-1", "--run-at", "2030-01-02T03:04:05.678Z", "--priority", "-2")).code).toBe(0);
    expect(await s.store.get("job-1")).toMatchObject({ runAt: Date.UTC(2030, 0, 2, 3, 4, 5, 678), priority: -2 });
    const lines = (await s.run("get", "job-1")).stdout.split("\n");
    expect(lines).toContain("runAt       2030-01-02T03:04:05.678Z");
    expect(lines).toContain("until       none"); // never leased
    expect(lines).toContainEqual(expect.stringMatching(/^createdAt   \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/));
    expect(lines).toContainEqual(expect.stringMatching(/^updatedAt   \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/));
    expect(JSON.parse((await s.run("get", "job-1", "--json")).stdout)).toMatchObject({ runAt: Date.UTC(2030, 0, 2, 3, 4, 5, 678), until: 0 }); // the API's ms
    await s.run("enqueue", "job-2", "--run-at", "2030-01-02T04:04:05+01:00");
    expect(await s.store.get("job-2")).toMatchObject({ runAt: Date.UTC(2030, 0, 2, 3, 4, 5) });
  });

  test("check-lease says why a lease is not current: expired and when, superseded, done; --json carries the reason", async () => {
    await using s = await serving();
    await s.run("enqueue", "job-1");
    const claimed = JSON.parse((await s.run("claim", "job-1", "--owner", "A", "--ttl-ms", "100", "--json")).stdout);
    await new Promise((resolve) => setTimeout(resolve, 150));
    expect(await s.run("check-lease", "job-1", "--owner", "A", "--fence", "1")).toEqual({
      code: 4,
      stdout: `A/1 is not the current lease of job-1: expired, it ran out at ${new Date(claimed.until).toISOString()}\n`,
      stderr: "",
    });
    await s.run("claim", "job-1", "--owner", "B", "--ttl-ms", "60000");
    expect((await s.run("check-lease", "job-1", "--owner", "A", "--fence", "1")).stdout).toBe("A/1 is not the current lease of job-1: superseded, a newer lease took the job; its fence is 2\n");
    await s.run("complete", "job-1", "--owner", "B", "--fence", "2", "--result", "1");
    const done = await s.run("check-lease", "job-1", "--owner", "B", "--fence", "2", "--json");
    expect({ code: done.code, answer: JSON.parse(done.stdout) }).toEqual({ code: 4, answer: { current: false, fence: 2, until: expect.any(Number), reason: "done" } });
    expect((await s.run("check-lease", "job-1", "--owner", "B", "--fence", "2")).stdout).toBe("B/2 is not the current lease of job-1: done, the job is done\n");
  });

  test.each([
    ["an unknown job", 3, ["get", "nope"], /not_found/],
    ["a missing --owner", 2, ["claim", "job-1", "--ttl-ms", "1000"], /--owner is required/],
    ["a --ttl-ms that is not a number", 2, ["claim", "job-1", "--owner", "A", "--ttl-ms", "soon"], /--ttl-ms must be a whole number/],
    ["a --ttl-ms the server refuses", 2, ["claim", "job-1", "--owner", "A", "--ttl-ms", "0"], /^fencelease: invalid_request: --ttl-ms must be at least 1\n$/],
    ["a --result that is not JSON", 2, ["complete", "job-1", "--owner", "A", "--fence", "1", "--result", "done"], /--result must be JSON/],
    ["an unknown option", 2, ["get", "job-1", "--colour", "red"], /^fencelease: unknown option --colour \(see fencelease --help\)\n$/],
    ["an option short of its name", 2, ["claim", "job-1", "--owner", "A", "--ttl", "1000"], /^fencelease: unknown option --ttl; did you mean --ttl-ms\? \(see fencelease --help\)\n$/],
    ["an option as the API names it", 2, ["claim", "job-1", "--owner", "A", "--ttlMs", "1000"], /^fencelease: unknown option --ttlMs; did you mean --ttl-ms\?/],
    ["an option with one dash", 2, ["claim", "job-1", "--owner", "A", "-ttl-ms", "1000"], /^fencelease: unknown option -ttl-ms; did you mean --ttl-ms\?/],
    ["an option that begins two", 2, ["enqueue", "job-2", "--max", "3"], /^fencelease: unknown option --max; did you mean --max-attempts or --max-leased or --max-leased-per-key or --max-in-flight\?/],
    ["a typo in an option", 2, ["claim", "job-1", "--ownr", "A", "--ttl-ms", "1000"], /^fencelease: unknown option --ownr; did you mean --owner\?/],
    ["an option without its value", 2, ["claim", "job-1", "--owner", "--ttl-ms", "1000"], /^fencelease: --owner needs a value, got the option --ttl-ms \(see fencelease --help\)\n$/],
    ["an option without its value at the end", 2, ["claim", "job-1", "--ttl-ms", "1000", "--owner"], /^fencelease: --owner needs a value \(see/],
    ["a value for --json", 2, ["get", "job-1", "--json=yes"], /^fencelease: --json takes no value, got "yes"/],
    ["a --wait past the server's most", 2, ["claim-next", "q", "--owner", "A", "--ttl-ms", "1000", "--wait", "40000"], /^fencelease: invalid_request: --wait must be at most 30000\n$/],
    ["a --run-at that is no time", 2, ["enqueue", "job-2", "--run-at", "tomorrow"], /^fencelease: --run-at must be ms since the epoch or an ISO time with its zone/],
    ["a --run-at without its zone", 2, ["enqueue", "job-2", "--run-at", "2026-12-01T09:00:00"], /^fencelease: --run-at must be ms since the epoch or an ISO time with its zone/],
    ["an unknown command", 2, ["frobnicate", "job-1"], /unknown command "frobnicate"/],
    ["a command without its id", 2, ["get"], /get needs a job id/],
    ["events without its id", 2, ["events"], /events needs a job id/],
    ["a list given an id", 2, ["list", "job-1"], /unexpected argument "job-1"/],
    ["stats given an argument", 2, ["stats", "now"], /unexpected argument "now"/],
    ["a list of an unknown status", 2, ["list", "--status", "zombie"], /status must be one or more of queued, scheduled, leased, done, dead/],
    ["a fail without --error", 2, ["fail", "job-1", "--owner", "A", "--fence", "1"], /--error is required/],
    ["a fail without a lease", 4, ["fail", "job-1", "--owner", "A", "--fence", "1", "--error", "x"], /^fencelease: refused, stale_lease \(not_owner\)/],
    ["a retry of a job that is not dead", 4, ["retry", "job-1"], /^fencelease: refused, conflict \(queued\): only a dead job can be retried/],
    ["a delete of an unknown job", 3, ["delete", "nope"], /not_found/],
    ["a check-lease of an unknown job", 3, ["check-lease", "nope", "--owner", "A", "--fence", "1"], /not_found/],
    ["a command named like an object's property", 2, ["toString", "job-1"], /unknown command "toString"/],
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

  test("a --url or FENCELEASE_URL without its scheme exits 2 with one line that says what to write, and sends nothing", async () => {
    await using s = await serving();
    const bare = s.server.url.replace("http://", "");
    expect(await cli(["enqueue", "job-1", "--url", bare, "--token", "t"])).toEqual({
      code: 2,
      stdout: "",
      stderr: `fencelease: --url (or FENCELEASE_URL) must be an absolute http:// or https:// URL, such as http://127.0.0.1:8787, got "${bare}"; did you mean http://${bare}? (see fencelease --help)\n`,
    });
    expect(await cli(["demo"], { FENCELEASE_URL: bare })).toMatchObject({ code: 2, stderr: expect.stringMatching(/^fencelease: --url \(or FENCELEASE_URL\) must be an absolute/) });
    expect(await s.snapshot()).toEqual({});
  });

  test("migrate applies the migrations once", async () => {
    const url = freshUrl();
    const names = [...(await readMigrations()).map((migration) => migration.name), EDITED_MIGRATIONS.name].sort();
    expect(names.slice(0, 2)).toEqual(["0001_jobs.sql", "0002_lifecycle.sql"]);
    expect(await cli(["migrate"], { DATABASE_URL: url })).toEqual({ code: 0, stdout: `${url}: applied ${names.join(", ")}\n`, stderr: "" });
    expect((await cli(["migrate"], { DATABASE_URL: url })).stdout).toBe(`${url}: up to date\n`);
  });

  test("serve and migrate refuse a database on which an applied migration was edited since: one line naming the file, exit 1, nothing changed", async () => {
    const url = freshUrl();
    expect((await cli(["migrate"], { DATABASE_URL: url })).code).toBe(0);
    const client = createClient({ url });
    onTestFinished(() => client.close());
    // As if the file had been edited after this database applied it: the recorded text is not the file's.
    await client.execute("UPDATE migration_checksums SET sha256 = '0123456789ab' || substr(sha256, 13) WHERE name = '0013_bucket_follows_clock.sql'");
    const before = (await client.execute("SELECT * FROM d1_migrations")).rows.length;
    for (const command of [["serve"], ["migrate"]]) {
      const ran = await cli(command, { DATABASE_URL: url, FENCELEASE_AUTH: "off", PORT: "0" });
      expect(ran.code).toBe(1);
      expect(ran.stderr).toMatch(/^fencelease: migrations\/0013_bucket_follows_clock\.sql was applied to this database as a text whose SHA-256 is 0123456789ab…/);
      expect(ran.stderr.trim().split("\n")).toHaveLength(1);
    }
    expect((await client.execute("SELECT * FROM d1_migrations")).rows.length).toBe(before);
  });

  test("--help prints the usage and exits 0; no command prints it to stderr and exits 2", async () => {
    expect(await cli(["--help"])).toMatchObject({ code: 0, stdout: expect.stringContaining("Usage: fencelease <command>") });
    expect(await cli([])).toMatchObject({ code: 2, stderr: expect.stringContaining("Usage: fencelease <command>") });
  });

  test("-h prints the usage as --help does, and --version the package's version; both exit 0", async () => {
    const version = JSON.parse(readFileSync("package.json", "utf8")).version;
    expect(await cli(["-h"])).toEqual(await cli(["--help"]));
    expect(await cli(["--version"])).toEqual({ code: 0, stdout: `fencelease ${version}\n`, stderr: "" });
    expect(await cli(["-x"])).toMatchObject({ code: 2, stderr: "fencelease: unknown option -x (see fencelease --help)\n" });
  });

  test("a server that wants a token, given none, exits 6 with a line that names --token and FENCELEASE_TOKEN, not an HTTP header", async () => {
    await using s = await serving();
    expect(await cli(["stats", "--url", s.server.url], { FENCELEASE_TOKEN: "" })).toEqual({
      code: 6,
      stdout: "",
      stderr: "fencelease: unauthorized: no token was sent: give one with --token T, or set FENCELEASE_TOKEN\n",
    });
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
