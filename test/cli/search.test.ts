import { describe, expect, test } from "vitest";
import { serving } from "./process.ts";

// `list` with the filters and `jobs bulk`, against a server in a process of its own (docs/search.md).

describe("search from the command line", () => {
  test("list takes the filters: statuses comma-separated, an id prefix, error text, times as ISO or ms", async () => {
    await using s = await serving();
    for (const id of ["inv-1", "inv-2", "mail-1"]) expect((await s.run("enqueue", id, "--queue", id.startsWith("inv") ? "invoices" : "mail", "--max-attempts", "1")).code).toBe(0);
    expect((await s.run("claim", "inv-1", "--owner", "W", "--ttl-ms", "60000")).code).toBe(0);
    expect((await s.run("fail", "inv-1", "--owner", "W", "--fence", "1", "--error", "card declined")).code).toBe(0);
    expect((await s.run("list", "--status", "dead,queued", "--id-prefix", "inv")).stdout).toBe("inv-1  dead    invoices  fence 1\ninv-2  queued  invoices  fence 0\n");
    expect((await s.run("list", "--error", "declined", "--finished-from", "2000-01-01T00:00:00Z")).stdout).toBe("inv-1  dead  invoices  fence 1\n");
    expect((await s.run("list", "--created-to", "0")).stdout).toBe("no jobs\n");
    expect(await s.run("list", "--created-from", "2")).toMatchObject({ code: 0 });
    expect(await s.run("list", "--status", "dead,zombie")).toMatchObject({ code: 2, stderr: expect.stringContaining("invalid_request: --status must be one or more of queued") });
  });

  test("jobs bulk goes on call after call, a progress line each on stderr; --dry-run only counts", async () => {
    await using s = await serving();
    const jobs = Array.from({ length: 1_500 }, (_, i) => JSON.stringify({ id: `job-${String(i).padStart(4, "0")}` })).join("\n");
    expect((await s.runWithInput(jobs, "enqueue-many", "q")).code).toBe(0);
    expect((await s.run("enqueue", "other", "--queue", "elsewhere")).code).toBe(0);
    const dry = await s.run("jobs", "bulk", "cancel", "--queue", "q", "--dry-run");
    expect(dry).toEqual({
      code: 0,
      stdout: "1500 matched; would cancel up to 1500; skipped none\n",
      stderr: "cancel (dry run): 1000 matched, 0 changed, skipped none; going on after job-0999\ncancel (dry run): 1500 matched, 0 changed, skipped none; done\n",
    });
    const cancelled = await s.run("jobs", "bulk", "cancel", "--queue", "q", "--status", "queued", "--limit", "1200", "--reason", "bad deploy", "--json");
    expect(JSON.parse(cancelled.stdout)).toEqual({ matched: 1200, changed: 1200, skipped: {}, nextCursor: "job-1199" });
    expect(cancelled.stderr.split("\n").filter(Boolean)).toHaveLength(2);
    expect(await s.run("jobs", "bulk", "delete", "--queue", "q")).toMatchObject({ code: 0, stdout: "1500 matched; 1200 deleted; skipped 300 not_finished\n" });
    expect((await s.run("list")).stdout).toMatch(/^job-1200 /);
    expect((await s.run("list", "--queue", "elsewhere")).stdout).toBe("other  queued  elsewhere  fence 0\n");
    expect(await s.run("jobs", "bulk", "purge")).toMatchObject({ code: 2, stderr: expect.stringContaining("jobs bulk needs an action: retry, cancel or delete") });
  });
});
