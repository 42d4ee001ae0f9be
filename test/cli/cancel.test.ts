import { describe, expect, test } from "vitest";
import { serving } from "./process.ts";

// cancel, and the status cancelled and a job's progress as the other commands
// print them, against a real server.

describe("the cancel command", () => {
  test("cancels a queued job as cli with a reason, and a second cancel changes nothing", async () => {
    await using s = await serving();
    await s.run("enqueue", "job-1", "--queue", "q");
    await s.run("enqueue", "job-2", "--queue", "q");
    expect(await s.run("cancel", "job-1", "--reason", "not needed")).toEqual({
      code: 0, stdout: "cancelled job-1: it will not run again, and a lease held on it is refused at its next write\n", stderr: "",
    });
    expect(await s.read("/v1/jobs/job-1")).toMatchObject({ status: "cancelled", owner: null });
    expect(await s.read("/v1/jobs/job-2")).toMatchObject({ status: "queued" }); // the bystander
    expect((await s.run("events", "job-1")).stdout.trim().split("\n").at(-1)).toMatch(/^\S+Z {2}cancelled by cli: not needed$/);
    const events = await s.read("/v1/jobs/job-1/events");
    expect(await s.run("cancel", "job-1", "--by", "someone-else")).toMatchObject({ code: 0, stderr: "" }); // again: safe, and changes nothing
    expect(await s.read("/v1/jobs/job-1/events")).toEqual(events);
    expect((await s.run("list", "--status", "cancelled")).stdout).toBe("job-1  cancelled  q  fence 0\n");
    expect((await s.run("stats")).stdout).toMatch(/^q: queued 1, scheduled 0, leased 0, done 0, dead 0, cancelled 1; /);
    expect((await s.run("claim-next", "q", "--owner", "A", "--ttl-ms", "60000")).stdout).toMatch(/^claimed job-2: /);
  });

  test("cancels a leased job by the name --by gives; its holder's next write is refused with reason cancelled, and get shows its progress", async () => {
    await using s = await serving();
    await s.run("enqueue", "job-1");
    await s.run("claim", "job-1", "--owner", "A", "--ttl-ms", "60000");
    expect((await s.run("renew", "job-1", "--owner", "A", "--fence", "1", "--ttl-ms", "60000", "--progress", '{"done":3,"of":10}')).code).toBe(0);
    expect((await s.run("get", "job-1")).stdout).toMatch(/^progress {4}\{"done":3,"of":10\}$/m);
    const cancelled = JSON.parse((await s.run("cancel", "job-1", "--by", "ops", "--json")).stdout);
    expect(cancelled).toMatchObject({ job: { id: "job-1", status: "cancelled", progress: { done: 3, of: 10 } } });
    const refused = await s.run("complete", "job-1", "--owner", "A", "--fence", "1", "--result", '"late"');
    expect(refused).toMatchObject({ code: 4, stdout: "", stderr: expect.stringMatching(/^fencelease: refused, stale_lease \(cancelled\): /) });
    expect(await s.read("/v1/jobs/job-1")).toMatchObject({ status: "cancelled", result: null });
    expect((await s.read("/v1/jobs/job-1/events")).events.find((event: { kind: string }) => event.kind === "cancelled")).toMatchObject({ owner: "ops" });
  });

  test.each([
    ["a cancel of a done job", 4, ["cancel", "done-1"], /^fencelease: refused, conflict \(done\): /],
    ["a cancel of an unknown job", 3, ["cancel", "nope"], /^fencelease: not_found: /],
    ["a cancel without its id", 2, ["cancel"], /cancel needs a job id/],
    ["a cancel by a name with a control character", 2, ["cancel", "done-1", "--by", "o\u0001ps"], /^fencelease: invalid_request: .*by/],
    ["a cancel with a reason over 1 KB", 2, ["cancel", "done-1", "--reason", "x".repeat(1025)], /^fencelease: invalid_request: .*reason/],
  ])("%s exits %i and changes nothing", async (_, code, args, says) => {
    await using s = await serving();
    await s.run("enqueue", "done-1");
    await s.run("claim", "done-1", "--owner", "A", "--ttl-ms", "60000");
    await s.run("complete", "done-1", "--owner", "A", "--fence", "1", "--result", "1");
    const before = await s.snapshot();
    const ran = await s.run(...(args as string[]));
    expect(ran).toMatchObject({ code, stdout: "" });
    expect(ran.stderr).toMatch(says);
    expect(await s.snapshot()).toEqual(before);
  });
});
