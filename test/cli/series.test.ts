import { describe, expect, test } from "vitest";
import { serving } from "./process.ts";

// The series command against a real server: what a queue did, a line a step
// that had anything in it, in words and in JSON. Jobs are written through the
// store at times of the test's choosing, within the minutes' 24 hours.

const MINUTE = 60_000;

describe("the series command", () => {
  test("series prints a line a busy step: its counts and its completed jobs' wait and run p50/p99", async () => {
    await using s = await serving();
    const start = Date.now() - (Date.now() % MINUTE) - 10 * MINUTE;
    await s.store.enqueueMany("mail", { jobs: [{ id: "a" }, { id: "b" }], now: start });
    await s.store.claimNext("mail", { owner: "A", ttlMs: 5 * MINUTE, limit: 2, now: start + 1_000 });
    await s.store.complete("a", { owner: "A", fence: 1, result: "1", now: start + 3_000 });
    await s.store.fail("b", { owner: "A", fence: 1, error: "boom", now: start + 2 * MINUTE });
    const range = ["--from", String(start), "--to", String(start + 3 * MINUTE - 1)];
    expect(await s.run("series", "mail", ...range)).toEqual({
      code: 0,
      stdout: [
        "step                      enqueued  completed  failed  expired  dead  refused  wait p50/p99  run p50/p99",
        `${new Date(start).toISOString()}  2         1          0       0        0     0        1.8s/2.5s     1.8s/2.5s`,
        `${new Date(start + 2 * MINUTE).toISOString()}  0         0          1       0        0     0        -/-           -/-`,
        "",
      ].join("\n"),
      stderr: "",
    });
    const json = JSON.parse((await s.run("series", "mail", ...range, "--json")).stdout);
    expect(json).toMatchObject({ queue: "mail", step: MINUTE, from: start });
    expect(json.points.map((point: { completed: number; failed: number }) => [point.completed, point.failed])).toEqual([[1, 0], [0, 0], [0, 1]]);
    expect(await s.run("series", "empty")).toMatchObject({ code: 0, stdout: expect.stringMatching(/^nothing happened in empty from \S+ to \S+\n$/) });
  });

  test("series needs a queue, and a step that is not whole minutes is exit 2 naming it", async () => {
    await using s = await serving();
    expect(await s.run("series")).toMatchObject({ code: 2, stdout: "", stderr: "fencelease: series needs a queue (see fencelease --help)\n" });
    expect(await s.run("series", "mail", "--step", "1000")).toMatchObject({ code: 2, stdout: "", stderr: expect.stringContaining("step must be a whole number of minutes") });
  });
});
