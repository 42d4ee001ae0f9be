import { describe, expect, test } from "vitest";
import { InvalidArgument, LeaseLost, NotFound } from "../../src/store/errors.ts";
import type { LeaseStore } from "../../src/store/store.ts";
import type { FreshStore } from "./store.contract.ts";
import { noteVerbs } from "../../src/store/note.ts";

// The verbs that carry many jobs, or take the next jobs with a completion
// (issue 9), run on every driver like the store contract. Each lease is still
// decided alone by the same rule, so the tests check the same boundaries.

const T = 1_000_000;
const TTL = 30_000;

/** The kinds of a job's events, oldest first. */
async function kinds(store: LeaseStore, id: string): Promise<string[]> {
  return (await store.events(id, { limit: 1000 })).items.map((event) => event.kind);
}

/** Registers the many-job contract for one driver. */
export function manyContract(freshStore: () => Promise<FreshStore>): void {
  /** In queue q: job-1 and job-2 leased by A (fence 1); due-1 and due-2 queued; later scheduled; in queue other: elsewhere. */
  async function twoLeasedAndMoreDue() {
    const fresh = await freshStore();
    const { store } = fresh;
    await store.enqueueMany("q", { jobs: [{ id: "job-1" }, { id: "job-2" }], now: T });
    expect((await store.claimNext("q", { owner: "A", ttlMs: TTL, limit: 2, now: T })).map((lease) => lease.job.id)).toEqual(["job-1", "job-2"]);
    await store.enqueueMany("q", { jobs: [{ id: "due-2", priority: 0 }, { id: "due-1", priority: 5 }, { id: "later", runAt: T + 1_000 }], now: T + 1 });
    await store.enqueue("elsewhere", { queue: "other", now: T });
    return { ...fresh, before: await fresh.snapshot() };
  }

  describe("enqueueMany", () => {
    test("inserts every new job with its fields, in one call, and answers created for each in order", async () => {
      const { store, snapshot } = await freshStore();
      const answer = await store.enqueueMany("mail", { jobs: [
        { id: "b", payload: { to: "ada" }, priority: 3, maxAttempts: 2 },
        { id: "a", runAt: T + 500 },
      ], now: T });
      expect(answer).toEqual([{ id: "b", created: true }, { id: "a", created: true }]);
      const rows = await snapshot();
      expect(rows.b).toMatchObject({ queue: "mail", payload: '{"to":"ada"}', priority: 3, run_at: T, max_attempts: 2, fence: 0, owner: null, created_at: T });
      expect(rows.a).toMatchObject({ queue: "mail", payload: null, priority: 0, run_at: T + 500, max_attempts: 25, fence: 0, created_at: T });
      expect(await kinds(store, "a")).toEqual(["enqueued"]);
    });

    test("leaves an existing id untouched, above all a lease in progress, and creates only the first of a repeated id", async () => {
      const { store, snapshot } = await freshStore();
      await store.enqueue("old", { queue: "q", payload: 1, now: T });
      expect(await noteVerbs(store).claim("old", "A", T, TTL)).toBe(1);
      const before = await snapshot();
      const answer = await store.enqueueMany("other", { jobs: [{ id: "old", payload: 2 }, { id: "new", payload: "first" }, { id: "new", payload: "second" }], now: T + 1 });
      expect(answer).toEqual([{ id: "old", created: false }, { id: "new", created: true }, { id: "new", created: false }]);
      const after = await snapshot();
      expect(after.old).toEqual(before.old);
      expect(after.new).toMatchObject({ payload: '"first"', queue: "other" });
    });

    test("a deleted id enqueued again starts above every fence it had", async () => {
      const { store } = await freshStore();
      await store.enqueue("job-1", { now: T });
      await store.claim("job-1", { owner: "A", ttlMs: TTL, now: T });
      await store.release("job-1", { owner: "A", fence: 1, now: T + 1 });
      await store.delete("job-1", { now: T + 2 });
      expect(await store.enqueueMany("default", { jobs: [{ id: "job-1" }], now: T + 3 })).toEqual([{ id: "job-1", created: true }]);
      expect(await noteVerbs(store).claim("job-1", "B", T + 3, TTL)).toBe(2);
    });

    test("a bad job refuses the whole call before the database is touched", async () => {
      const { store, snapshot } = await freshStore();
      await expect(store.enqueueMany("q", { jobs: [{ id: "fine" }, { id: "" }], now: T })).rejects.toBeInstanceOf(InvalidArgument);
      await expect(store.enqueueMany("q", { jobs: [{ id: "fine", maxAttempts: 0 }], now: T })).rejects.toThrow("jobs[0].maxAttempts must be a positive safe integer, got 0");
      await expect(store.enqueueMany("", { jobs: [{ id: "fine" }], now: T })).rejects.toBeInstanceOf(InvalidArgument);
      expect(await snapshot()).toEqual({});
    });
  });

  describe("complete and fail with next", () => {
    test("a complete with next also leases the next due jobs of the job's queue to the same owner, in claim order", async () => {
      const { store, snapshot, before } = await twoLeasedAndMoreDue();
      const { job, leases } = await store.complete("job-1", { owner: "A", fence: 1, result: '"r"', next: { limit: 5, ttlMs: 2 * TTL }, now: T + 2 });
      expect(job).toMatchObject({ id: "job-1", status: "done", result: '"r"' });
      expect(leases.map((lease) => [lease.job.id, lease.fence, lease.until, lease.job.owner])).toEqual([
        ["due-1", 1, T + 2 + 2 * TTL, "A"],
        ["due-2", 1, T + 2 + 2 * TTL, "A"],
      ]);
      const after = await snapshot();
      for (const untouched of ["job-2", "later", "elsewhere"]) expect(after[untouched]).toEqual(before[untouched]);
      expect(await kinds(store, "due-1")).toEqual(["enqueued", "claimed"]);
    });

    test("takes at most limit jobs, and none when none is due", async () => {
      const { store } = await twoLeasedAndMoreDue();
      expect((await store.complete("job-1", { owner: "A", fence: 1, result: "r", next: { limit: 1, ttlMs: TTL }, now: T + 2 })).leases.map((lease) => lease.job.id)).toEqual(["due-1"]);
      expect((await store.complete("job-2", { owner: "A", fence: 1, result: "r", next: { limit: 1, ttlMs: TTL }, now: T + 2 })).leases.map((lease) => lease.job.id)).toEqual(["due-2"]);
      expect((await store.complete("due-1", { owner: "A", fence: 1, result: "r", next: { limit: 3, ttlMs: TTL }, now: T + 3 })).leases).toEqual([]);
    });

    test("a refused complete takes nothing and changes nothing but its refusal record", async () => {
      const { store, snapshot, before } = await twoLeasedAndMoreDue();
      await expect(store.complete("job-1", { owner: "B", fence: 1, result: "r", next: { limit: 5, ttlMs: TTL }, now: T + 2 })).rejects.toMatchObject({ reason: "not_owner" });
      await expect(store.complete("job-1", { owner: "A", fence: 1, result: "r", next: { limit: 5, ttlMs: TTL }, now: T + TTL })).rejects.toMatchObject({ reason: "expired" });
      await expect(store.complete("nope", { owner: "A", fence: 1, result: "r", next: { limit: 5, ttlMs: TTL }, now: T + 2 })).rejects.toBeInstanceOf(NotFound);
      expect(await snapshot()).toEqual(before);
      expect(await kinds(store, "job-1")).toEqual(["enqueued", "claimed", "refused", "refused"]);
    });

    test("the same completion sent again answers the job again, changed false, and takes nothing with next", async () => {
      const { store, snapshot } = await twoLeasedAndMoreDue();
      const first = await store.complete("job-1", { owner: "A", fence: 1, result: "r", next: { limit: 1, ttlMs: TTL }, now: T + 2 });
      expect(first.leases.map((lease) => lease.job.id)).toEqual(["due-1"]);
      const taken = await snapshot();
      for (const now of [T + 2, T + 3]) {
        const again = await store.complete("job-1", { owner: "A", fence: 1, result: "r", next: { limit: 1, ttlMs: TTL }, now });
        expect(again).toMatchObject({ job: { status: "done", updatedAt: T + 2 }, leases: [], changed: false });
      }
      expect(await snapshot()).toEqual(taken); // due-2 still waits; nothing recorded
      expect(await kinds(store, "job-1")).toEqual(["enqueued", "claimed", "completed"]);
    });

    test("a fail with next ends the lease as a failed attempt and leases the next due jobs; a refused fail takes nothing", async () => {
      const { store, snapshot, before } = await twoLeasedAndMoreDue();
      await expect(store.fail("job-1", { owner: "B", fence: 1, error: "no", next: { limit: 5, ttlMs: TTL }, now: T + 2 })).rejects.toBeInstanceOf(LeaseLost);
      expect(await snapshot()).toEqual(before);
      const { job, leases } = await store.fail("job-1", { owner: "A", fence: 1, error: "boom", retryInMs: 0, next: { limit: 5, ttlMs: TTL }, now: T + 2 });
      expect(job).toMatchObject({ status: "leased", owner: "A", fence: 2, lastError: "boom" }); // due at once, so taken again
      expect(leases.map((lease) => [lease.job.id, lease.fence])).toEqual([["due-1", 1], ["due-2", 1], ["job-1", 2]]);
    });
  });

  describe("renewMany", () => {
    test("extends each current lease, refuses each stale one with its reason, and says NotFound for an unknown id", async () => {
      const { store, snapshot } = await twoLeasedAndMoreDue();
      await store.complete("job-2", { owner: "A", fence: 1, result: "r", now: T + 2 });
      const mid = await snapshot();
      const answer = await store.renewMany({ owner: "A", ttlMs: TTL, leases: [{ id: "job-1", fence: 1 }, { id: "job-2", fence: 1 }, { id: "due-1", fence: 1 }, { id: "nope", fence: 1 }], now: T + 3 });
      expect(answer).toEqual([
        { id: "job-1", until: T + 3 + TTL },
        { id: "job-2", error: expect.objectContaining({ code: "stale_lease", reason: "done", currentFence: 1 }) },
        { id: "due-1", error: expect.objectContaining({ code: "stale_lease", reason: "not_owner", currentFence: 0 }) },
        { id: "nope", error: expect.any(NotFound) },
      ]);
      const after = await snapshot();
      expect(after["job-1"]).toMatchObject({ until: T + 3 + TTL, renews: 1 });
      for (const id of ["job-2", "due-1", "later", "elsewhere"]) expect(after[id]).toEqual(mid[id]);
      const refusals = (await store.events("due-1")).items.filter((event) => event.kind === "refused");
      expect(refusals).toEqual([expect.objectContaining({ action: "renew", owner: "A", fence: 1, currentOwner: null, currentFence: 0, at: T + 3 })]);
    });

    test("at now == until a lease has expired and stays expired; one millisecond before, it is renewed", async () => {
      const { store } = await twoLeasedAndMoreDue();
      const answer = await store.renewMany({ owner: "A", ttlMs: TTL, leases: [{ id: "job-1", fence: 1 }], now: T + TTL - 1 });
      expect(answer).toEqual([{ id: "job-1", until: T + TTL - 1 + TTL }]);
      const late = await store.renewMany({ owner: "A", ttlMs: TTL, leases: [{ id: "job-2", fence: 1 }], now: T + TTL });
      expect(late).toEqual([{ id: "job-2", error: expect.objectContaining({ reason: "expired", currentFence: 1 }) }]);
      expect(await store.get("job-2", { now: T + TTL })).toMatchObject({ until: T + TTL, owner: "A" });
    });

    test("a superseded fence is refused even while its owner holds the newer lease", async () => {
      const { store } = await twoLeasedAndMoreDue();
      await store.release("job-1", { owner: "A", fence: 1, now: T + 1 });
      expect(await noteVerbs(store).claim("job-1", "A", T + 1, TTL)).toBe(2);
      const answer = await store.renewMany({ owner: "A", ttlMs: TTL, leases: [{ id: "job-1", fence: 1 }], now: T + 2 });
      expect(answer).toEqual([{ id: "job-1", error: expect.objectContaining({ reason: "superseded", currentFence: 2 }) }]);
    });

    // The read of the refused and their record are skipped when the UPDATE
    // changed one row for each lease presented; these are the calls that
    // change fewer, or as many rows elsewhere, and must still be read in full.
    test("every lease of a call refused: each is recorded once and answered with its reason", async () => {
      const { store } = await twoLeasedAndMoreDue();
      const answer = await store.renewMany({ owner: "B", ttlMs: TTL, leases: [{ id: "job-1", fence: 1 }, { id: "job-2", fence: 1 }], now: T + 2 });
      expect(answer).toEqual([
        { id: "job-1", error: expect.objectContaining({ reason: "not_owner", currentFence: 1 }) },
        { id: "job-2", error: expect.objectContaining({ reason: "not_owner", currentFence: 1 }) },
      ]);
      for (const id of ["job-1", "job-2"]) expect(await kinds(store, id)).toEqual(["enqueued", "claimed", "refused"]);
    });
  });

  describe("completeMany", () => {
    test("completes each current lease, answers the same completion again as done, and refuses the rest, each alone", async () => {
      const { store, snapshot } = await twoLeasedAndMoreDue();
      await store.complete("job-2", { owner: "A", fence: 1, result: '"two"', now: T + 2 });
      const mid = await snapshot();
      const { completed, leases } = await store.completeMany({ owner: "A", leases: [
        { id: "job-1", fence: 1, result: '"one"' },
        { id: "job-2", fence: 1, result: '"two"' },
        { id: "due-1", fence: 1, result: '"stale"' },
        { id: "nope", fence: 1, result: "1" },
      ], now: T + 3 });
      expect(completed).toEqual([
        { id: "job-1", done: true },
        { id: "job-2", done: true },
        { id: "due-1", error: expect.objectContaining({ code: "stale_lease", reason: "not_owner" }) },
        { id: "nope", error: expect.any(NotFound) },
      ]);
      expect(leases).toEqual([]);
      const after = await snapshot();
      expect(after["job-1"]).toMatchObject({ done: 1, result: '"one"', owner: "A", fence: 1, updated_at: T + 3 });
      expect(after["job-2"]).toEqual(mid["job-2"]);
      expect(after["due-1"]).toEqual(mid["due-1"]);
      expect(await kinds(store, "job-2")).toEqual(["enqueued", "claimed", "completed"]);
      expect(await kinds(store, "due-1")).toEqual(["enqueued", "refused"]);
    });

    test("a different result for a done job is refused and the stored result stays", async () => {
      const { store } = await twoLeasedAndMoreDue();
      await store.complete("job-1", { owner: "A", fence: 1, result: '"first"', now: T + 2 });
      const { completed } = await store.completeMany({ owner: "A", leases: [{ id: "job-1", fence: 1, result: '"second"' }], now: T + 3 });
      expect(completed).toEqual([{ id: "job-1", error: expect.objectContaining({ reason: "done" }) }]);
      expect(await store.get("job-1", { now: T + 3 })).toMatchObject({ result: '"first"' });
    });

    test("every lease of a call accepted records no refusal; the same call again, all done already, records none either", async () => {
      const { store } = await twoLeasedAndMoreDue();
      const completions = [{ id: "job-1", fence: 1, result: "1" }, { id: "job-2", fence: 1, result: "2" }];
      expect((await store.completeMany({ owner: "A", leases: completions, now: T + 2 })).completed).toEqual([{ id: "job-1", done: true }, { id: "job-2", done: true }]);
      expect((await store.completeMany({ owner: "A", leases: completions, now: T + 3 })).completed).toEqual([{ id: "job-1", done: true }, { id: "job-2", done: true }]);
      for (const id of ["job-1", "job-2"]) expect(await kinds(store, id)).toEqual(["enqueued", "claimed", "completed"]);
    });

    test("every lease of a call refused: each is recorded once and answered with its reason", async () => {
      const { store, snapshot } = await twoLeasedAndMoreDue();
      const before = await snapshot();
      const { completed } = await store.completeMany({ owner: "B", leases: [{ id: "job-1", fence: 1, result: "1" }, { id: "job-2", fence: 1, result: "2" }], now: T + 2 });
      expect(completed).toEqual([
        { id: "job-1", error: expect.objectContaining({ reason: "not_owner", currentFence: 1 }) },
        { id: "job-2", error: expect.objectContaining({ reason: "not_owner", currentFence: 1 }) },
      ]);
      expect(await snapshot()).toEqual(before);
      for (const id of ["job-1", "job-2"]) expect(await kinds(store, id)).toEqual(["enqueued", "claimed", "refused"]);
    });

    test("a lease given twice in one call (a stale and a current fence of one job) is InvalidArgument for renewMany and completeMany, and changes nothing", async () => {
      const { store, snapshot } = await freshStore();
      await store.enqueue("job-1", { now: T });
      await store.claim("job-1", { owner: "A", ttlMs: 1, now: T });
      await store.claim("job-1", { owner: "A", ttlMs: TTL, now: T + 1 });
      const before = await snapshot();
      const twice = [{ id: "job-1", fence: 1 }, { id: "job-1", fence: 2 }];
      const refused = { name: "InvalidArgument", message: 'leases[1].id repeats the id "job-1"; each id may come once' };
      await expect(store.renewMany({ owner: "A", ttlMs: TTL, leases: twice, now: T + 2 })).rejects.toMatchObject(refused);
      await expect(store.completeMany({ owner: "A", leases: twice.map((lease) => ({ ...lease, result: "r" })), now: T + 2 })).rejects.toMatchObject(refused);
      expect(await snapshot()).toEqual(before);
    });

    test("with next, the same transaction leases the next due jobs of the named queue", async () => {
      const { store, snapshot, before } = await twoLeasedAndMoreDue();
      const { completed, leases, ended } = await store.completeMany({ owner: "A", leases: [{ id: "job-1", fence: 1, result: "1" }, { id: "job-2", fence: 1, result: "2" }], next: { queue: "q", limit: 3, ttlMs: TTL }, now: T + 2 });
      expect(completed).toEqual([{ id: "job-1", done: true }, { id: "job-2", done: true }]);
      expect(ended).toEqual(["q"]); // two leases of q ended: q once
      expect(leases.map((lease) => [lease.job.id, lease.fence, lease.job.owner])).toEqual([["due-1", 1, "A"], ["due-2", 1, "A"]]);
      const after = await snapshot();
      expect(after.later).toEqual(before.later);
      expect(after.elsewhere).toEqual(before.elsewhere);
    });
  });
}
