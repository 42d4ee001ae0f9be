import { describe, expect, test } from "vitest";
import { serving } from "./process.ts";

// The schedule commands (schedules, schedule put/get/rm) against a real server:
// what they print, in words and in JSON, and the schedules they leave behind.

const ISO = "\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\.\\d{3}Z";

describe("the schedule commands", () => {
  test("schedule put creates and replaces a schedule, schedules lists them with their next fire, schedule rm deletes one", async () => {
    await using s = await serving();
    expect(await s.run("schedules")).toEqual({ code: 0, stdout: "no schedules\n", stderr: "" });
    const nightly = await s.run("schedule", "put", "nightly", "--queue", "reports", "--cron", "0 3 * * *", "--tz", "Europe/Paris", "--payload", '{"kind":"daily"}', "--priority", "2", "--max-attempts", "5");
    expect(nightly).toMatchObject({ code: 0, stderr: "" });
    expect(nightly.stdout).toMatch(new RegExp(`^nightly  queue reports  cron "0 3 \\* \\* \\*" in Europe/Paris  next ${ISO}\\n$`));
    const stored = await s.read("/v1/schedules/nightly");
    expect(stored).toMatchObject({ name: "nightly", queue: "reports", cron: "0 3 * * *", everyMs: null, timezone: "Europe/Paris", payload: { kind: "daily" }, priority: 2, maxAttempts: 5 });
    expect(nightly.stdout).toContain(`next ${new Date(stored.nextFireAt).toISOString()}`);

    const before = Date.now();
    const tick = JSON.parse((await s.run("schedule", "put", "tick", "--queue", "pings", "--every-ms", "60000", "--json")).stdout);
    expect(tick).toMatchObject({ name: "tick", queue: "pings", cron: null, everyMs: 60_000 });
    expect(tick.nextFireAt).toBeGreaterThan(before);

    const listed = await s.run("schedules");
    expect(listed.stdout.trim().split("\n")).toEqual([
      expect.stringMatching(new RegExp(`^nightly  queue reports  cron "0 3 \\* \\* \\*" in Europe/Paris  next ${ISO}$`)),
      expect.stringMatching(new RegExp(`^tick     queue pings    every 60000 ms +next ${ISO}$`)),
    ]);
    expect(JSON.parse((await s.run("schedules", "--json")).stdout).schedules.map((schedule: { name: string }) => schedule.name)).toEqual(["nightly", "tick"]);

    const replaced = await s.run("schedule", "put", "tick", "--queue", "pings", "--every-ms", "5000", "--key", "tenant 1");
    expect(replaced.stdout).toMatch(new RegExp(`^tick  queue pings  every 5000 ms  next ${ISO}  key 'tenant 1'\\n$`));
    expect(await s.read("/v1/schedules/tick")).toMatchObject({ everyMs: 5_000, cron: null, key: "tenant 1" });
    expect(JSON.parse((await s.run("schedule", "get", "nightly", "--json")).stdout)).toEqual(stored);

    expect(await s.run("schedule", "rm", "tick")).toEqual({ code: 0, stdout: "deleted schedule tick; jobs it enqueued stay\n", stderr: "" });
    expect((await s.read("/v1/schedules")).schedules.map((schedule: { name: string }) => schedule.name)).toEqual(["nightly"]);
  });

  test.each([
    ["a put without --queue", 2, ["schedule", "put", "n", "--every-ms", "60000"], /--queue is required/],
    ["a put with both --cron and --every-ms", 2, ["schedule", "put", "n", "--queue", "q", "--cron", "* * * * *", "--every-ms", "60000"], /exactly one of --cron EXPR and --every-ms N/],
    ["a put with neither", 2, ["schedule", "put", "n", "--queue", "q"], /exactly one of --cron EXPR and --every-ms N/],
    ["a --tz without --cron", 2, ["schedule", "put", "n", "--queue", "q", "--every-ms", "60000", "--tz", "UTC"], /--tz goes with --cron/],
    ["a cron expression the server refuses", 2, ["schedule", "put", "n", "--queue", "q", "--cron", "not a cron"], /^fencelease: invalid_request: .*cron/],
    ["a cron of four fields", 2, ["schedule", "put", "n", "--queue", "q", "--cron", "* * * *"], /^fencelease: invalid_request: --cron "\* \* \* \*" has 4 fields; give five fields, minute hour day-of-month month day-of-week, e.g. "0 9 \* \* 1-5"\n$/],
    ["a cron with seconds", 2, ["schedule", "put", "n", "--queue", "q", "--cron", "0 0 3 * * *"], /^fencelease: invalid_request: --cron "0 0 3 \* \* \*" has 6 fields; give five fields/],
    ["a time zone the server does not know", 2, ["schedule", "put", "n", "--queue", "q", "--cron", "0 3 * * *", "--tz", "Mars/Olympus"], /^fencelease: invalid_request: .*Mars\/Olympus/],
    ["an --every-ms under a second", 2, ["schedule", "put", "n", "--queue", "q", "--every-ms", "999"], /^fencelease: invalid_request: --every-ms must be at least 1000/],
    ["a --payload that is not JSON", 2, ["schedule", "put", "n", "--queue", "q", "--every-ms", "60000", "--payload", "hello"], /--payload must be JSON/],
    ["a schedule without what to do", 2, ["schedule"], /schedule needs one of put, get, rm/],
    ["a schedule with an unknown verb", 2, ["schedule", "add", "n"], /schedule needs one of put, get, rm, got "add"/],
    ["a put without its name", 2, ["schedule", "put"], /schedule put needs a schedule name/],
    ["an rm of an unknown schedule", 3, ["schedule", "rm", "nope"], /^fencelease: not_found: /],
    ["a get of an unknown schedule", 3, ["schedule", "get", "nope"], /^fencelease: not_found: /],
  ])("%s exits %i and changes nothing", async (_, code, args, says) => {
    await using s = await serving();
    await s.run("schedule", "put", "kept", "--queue", "q", "--every-ms", "60000");
    const before = await s.read("/v1/schedules");
    const ran = await s.run(...(args as string[]));
    expect(ran).toMatchObject({ code, stdout: "" });
    expect(ran.stderr).toMatch(says);
    expect(ran.stderr.trim().split("\n")).toHaveLength(1);
    expect(await s.read("/v1/schedules")).toEqual(before);
  });
});
