import { describe, expect, test } from "vitest";
import { serving } from "./process.ts";

// The keys command against a real server: a queue's keys with open jobs, a page
// at a time, in words and in JSON. Keyed jobs are enqueued through the store.

describe("the keys command", () => {
  test("keys prints a queue's keys with waiting, leased and why one holds jobs back, and the cursor of the next page", async () => {
    await using s = await serving();
    await s.store.queues.set("mail", { maxLeasedPerKey: 1 });
    await s.store.enqueueMany("mail", { jobs: [{ id: "a-1", key: "acme" }, { id: "a-2", key: "acme" }, { id: "b-1", key: "beta" }, { id: "c-1", key: "corp" }] });
    await s.store.enqueueMany("other", { jobs: [{ id: "o-1", key: "acme" }] });
    await s.run("claim", "a-1", "--owner", "A", "--ttl-ms", "60000");
    expect(await s.run("keys", "mail", "--limit", "2")).toEqual({ code: 0, stdout: "acme  waiting 1  leased 1  key_full\nbeta  waiting 1  leased 0\nmore: --cursor beta\n", stderr: "" });
    expect(await s.run("keys", "mail", "--cursor", "beta")).toEqual({ code: 0, stdout: "corp  waiting 1  leased 0\n", stderr: "" });
    expect(JSON.parse((await s.run("keys", "mail", "--limit", "1", "--json")).stdout)).toEqual({ keys: [{ key: "acme", waiting: 1, leased: 1, heldBack: "key_full" }], nextCursor: "acme" });
    expect(await s.run("keys", "empty")).toEqual({ code: 0, stdout: "no keys with open jobs in empty\n", stderr: "" });
  });

  test("keys needs a queue, and a bad limit is exit 2 naming it", async () => {
    await using s = await serving();
    expect(await s.run("keys")).toMatchObject({ code: 2, stdout: "", stderr: "fencelease: keys needs a queue (see fencelease --help)\n" });
    expect(await s.run("keys", "mail", "--limit", "1001")).toMatchObject({ code: 2, stdout: "", stderr: expect.stringContaining("limit must be at most 1000") });
  });
});
