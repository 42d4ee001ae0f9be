import { describe, expect, test } from "vitest";
import { InvalidArgument, LeaseLost, NotClaimable, NotFound, WrongStatus } from "../../src/store/errors.ts";
import type { LeaseStore } from "../../src/store/store.ts";
import type { FreshStore } from "./store.contract.ts";
import { noteVerbs } from "../../src/store/note.ts";

// Cancel (issue 13) over the store, run on every driver like the store
// contract: a cancelled job is final, its holder's writes are refused with
// reason cancelled, and nothing claims it again. Each test starts on a fresh,
// empty database, with a bystander that must not change.

const HOUR = 3_600_000;
const T = 100 * HOUR; // the test clock
const TTL = 30_000;

/** The kinds of a job's events, oldest first. */
async function kinds(store: LeaseStore, id: string): Promise<string[]> {
  return (await store.events(id, { limit: 1000 })).items.map((event) => event.kind);
}

/** Expects `write` to be refused as LeaseLost with reason cancelled and the job's fence. */
async function refusedAsCancelled(write: Promise<unknown>, currentFence: number): Promise<void> {
  const error = await write.catch((caught: unknown) => caught);
  expect(error).toBeInstanceOf(LeaseLost);
  expect(error).toMatchObject({ reason: "cancelled", currentFence, code: "stale_lease" });
}

/** Registers the cancel contract for one driver. */
export function cancelContract(freshStore: () => Promise<FreshStore>): void {
  /** job-1 (queue q) and a bystander (queue q), both queued at T. */
  async function twoJobs() {
    const fresh = await freshStore();
    await fresh.store.enqueue("job-1", { queue: "q", now: T });
    await fresh.store.enqueue("bystander", { queue: "q", now: T });
    return fresh;
  }

  /** job-1 leased by A (fence 1, until T + TTL), and a bystander queued. */
  async function leasedByA() {
    const fresh = await twoJobs();
    expect(await noteVerbs(fresh.store).claim("job-1", "A", T, TTL)).toBe(1);
    return fresh;
  }

  describe("cancel", () => {
    test("cancels a queued job: final, recorded with who and why, and the bystander untouched", async () => {
      const { store, snapshot } = await twoJobs();
      const before = await snapshot();
      const { changed, job } = await store.cancel("job-1", { by: "ops", reason: "customer asked", now: T + 5 });
      expect(changed).toBe(true);
      expect(job).toMatchObject({ id: "job-1", status: "cancelled", done: false, owner: null, fence: 0, result: null, updatedAt: T + 5 });
      const after = await snapshot();
      expect(after["job-1"]).toEqual({ ...before["job-1"], done: 1, cancelled: 1, last_event: "cancelled", updated_at: T + 5 });
      expect(after.bystander).toEqual(before.bystander);
      const events = (await store.events("job-1")).items;
      expect(events.map((event) => event.kind)).toEqual(["enqueued", "cancelled"]);
      expect(events[1]).toMatchObject({ kind: "cancelled", owner: "ops", fence: 0, error: "customer asked", at: T + 5, currentOwner: null, currentFence: null });
    });

    test("cancels a scheduled job, and claim-next never hands it out, not even once it is due", async () => {
      const { store } = await freshStore();
      await store.enqueue("job-1", { queue: "q", runAt: T + HOUR, now: T });
      expect((await store.cancel("job-1", { by: "ops", now: T + 1 })).job.status).toBe("cancelled");
      expect(await store.claimNext("q", { owner: "A", ttlMs: TTL, limit: 5, now: T + HOUR })).toEqual([]);
      expect(await store.nextClaimableAt("q", { now: T + 1 })).toBeNull();
      expect((await store.get("job-1", { now: T + 2 * HOUR }))!.status).toBe("cancelled");
    });

    test("cancels a leased job keeping owner, until and fence; the holder's renew, complete, fail and release are each refused with reason cancelled", async () => {
      const { store, snapshot } = await leasedByA();
      const { job } = await store.cancel("job-1", { by: "ops", reason: "wrong invoice", now: T + 10 });
      expect(job).toMatchObject({ status: "cancelled", owner: "A", until: T + TTL, fence: 1, attempts: 1, done: false });
      const cancelled = await snapshot();
      expect(cancelled["job-1"]).toMatchObject({ owner: "A", until: T + TTL, fence: 1, done: 1, dead: 0, cancelled: 1 });

      expect(await noteVerbs(store).renew("job-1", "A", 1, T + 11, TTL)).toBe(false);
      expect(await noteVerbs(store).complete("job-1", "A", 1, T + 11, "late")).toBe(false);
      expect(await noteVerbs(store).fail("job-1", "A", 1, T + 11, "late")).toBe(false);
      expect(await noteVerbs(store).release("job-1", "A", 1, T + 11)).toBe(false);
      await refusedAsCancelled(store.renew("job-1", { owner: "A", fence: 1, ttlMs: TTL, now: T + 12 }), 1);
      await refusedAsCancelled(store.complete("job-1", { owner: "A", fence: 1, result: "late", now: T + 12 }), 1);
      await refusedAsCancelled(store.fail("job-1", { owner: "A", fence: 1, error: "late", next: { limit: 1, ttlMs: TTL }, now: T + 12 }), 1);
      await refusedAsCancelled(store.release("job-1", { owner: "A", fence: 1, now: T + 12 }), 1);

      expect(await snapshot()).toEqual(cancelled); // still cancelled, fence unchanged, the bystander not taken by fail's next
      const refusals = (await store.events("job-1", { limit: 100 })).items.filter((event) => event.kind === "refused");
      expect(refusals.map((event) => [event.action, event.count])).toEqual([["renew", 2], ["complete", 2], ["fail", 2], ["release", 2]]);
      expect(refusals.every((event) => event.currentOwner === "A" && event.currentFence === 1)).toBe(true);
    });

    test("cancels a job whose lease expired and was not yet ended: the cron leaves it, nobody takes it over", async () => {
      const { store, snapshot } = await leasedByA();
      expect((await store.cancel("job-1", { by: "ops", now: T + TTL + 1 })).changed).toBe(true);
      const cancelled = await snapshot();
      expect(await store.expire({ now: T + TTL + 2 })).toHaveLength(0);
      expect((await store.claimNext("q", { owner: "B", ttlMs: TTL, limit: 5, now: T + TTL + 2 })).map((lease) => lease.job.id)).toEqual(["bystander"]);
      expect(await noteVerbs(store).claim("job-1", "B", T + TTL + 2, TTL)).toBeNull();
      await refusedAsCancelled(store.renew("job-1", { owner: "A", fence: 1, ttlMs: TTL, now: T + TTL + 3 }), 1);
      expect((await snapshot())["job-1"]).toEqual(cancelled["job-1"]);
      expect(await kinds(store, "job-1")).toEqual(["enqueued", "claimed", "cancelled", "refused"]);
    });

    test("claim by id is NotClaimable cancelled, and changes nothing", async () => {
      const { store, snapshot } = await twoJobs();
      await store.cancel("job-1", { by: "ops", now: T });
      const before = await snapshot();
      const refused = store.claim("job-1", { owner: "A", ttlMs: TTL, now: T + 1 });
      await expect(refused).rejects.toBeInstanceOf(NotClaimable);
      await expect(refused).rejects.toMatchObject({ reason: "cancelled" });
      expect(await store.claimNext("q", { owner: "A", ttlMs: TTL, limit: 5, now: T + 1 })).toHaveLength(1); // the bystander only
      expect((await snapshot())["job-1"]).toEqual(before["job-1"]);
    });

    test("a second cancel answers changed: false and changes nothing, not even updatedAt or the events", async () => {
      const { store, snapshot } = await leasedByA();
      const first = await store.cancel("job-1", { by: "ops", reason: "first", now: T + 1 });
      const before = await snapshot();
      const again = await store.cancel("job-1", { by: "someone-else", reason: "second", now: T + 2 });
      expect(again).toEqual({ changed: false, job: first.job });
      expect(await snapshot()).toEqual(before);
      expect(await kinds(store, "job-1")).toEqual(["enqueued", "claimed", "cancelled"]);
    });

    test("a done or a dead job is WrongStatus conflict, and nothing changes", async () => {
      const { store, snapshot } = await freshStore();
      await store.enqueue("done", { now: T });
      await store.enqueue("dead", { maxAttempts: 1, now: T });
      await store.claim("done", { owner: "A", ttlMs: TTL, now: T });
      await store.complete("done", { owner: "A", fence: 1, result: "r", now: T + 1 });
      await store.claim("dead", { owner: "A", ttlMs: TTL, now: T });
      await store.fail("dead", { owner: "A", fence: 1, error: "x", now: T + 1 });
      const before = await snapshot();
      for (const [id, status] of [["done", "done"], ["dead", "dead"]]) {
        const error = await store.cancel(id!, { by: "ops", now: T + 2 }).catch((caught: unknown) => caught);
        expect(error).toBeInstanceOf(WrongStatus);
        expect(error).toMatchObject({ code: "conflict", status });
        expect((error as Error).message).toContain(`job "${id}" is ${status}`);
      }
      expect(await snapshot()).toEqual(before);
      expect(await kinds(store, "done")).toEqual(["enqueued", "claimed", "completed"]);
    });

    test("an unknown id is NotFound and creates nothing", async () => {
      const { store, snapshot } = await freshStore();
      await expect(store.cancel("nope", { by: "ops", now: T })).rejects.toBeInstanceOf(NotFound);
      expect(await snapshot()).toEqual({});
    });

    test.each([
      ["an empty by", { by: "" }],
      ["a by with a control character", { by: "ops\n" }],
      ["a reason that is not a string", { by: "ops", reason: 7 }],
      ["a reason over 1024 bytes", { by: "ops", reason: "é".repeat(513) }],
    ])("refuses %s with InvalidArgument and changes nothing", async (_, cancel) => {
      const { store, snapshot } = await twoJobs();
      const before = await snapshot();
      await expect(store.cancel("job-1", { ...cancel as { by: string }, now: T })).rejects.toBeInstanceOf(InvalidArgument);
      expect(await snapshot()).toEqual(before);
    });

    test("a reason of null is no reason, as none given", async () => {
      const { store } = await twoJobs();
      expect((await store.cancel("job-1", { by: "ops", reason: null as unknown as string, now: T })).changed).toBe(true);
      expect((await store.events("job-1")).items.at(-1)).toMatchObject({ kind: "cancelled", error: null });
    });

    test("a reason of exactly 1024 bytes is kept", async () => {
      const { store } = await twoJobs();
      await store.cancel("job-1", { by: "ops", reason: "é".repeat(512), now: T });
      expect((await store.events("job-1")).items.at(-1)!.error).toBe("é".repeat(512));
    });

    test("renewMany and completeMany refuse a cancelled lease with reason cancelled, and take the others", async () => {
      const { store } = await twoJobs();
      const held = await store.claimNext("q", { owner: "A", ttlMs: TTL, limit: 2, now: T });
      const [first, second] = held.map((lease) => ({ id: lease.job.id, fence: lease.fence }));
      await store.cancel(first!.id, { by: "ops", now: T + 1 });
      const renewed = await store.renewMany({ owner: "A", ttlMs: TTL, leases: [first!, second!], now: T + 2 });
      expect(renewed[1]).toEqual({ id: second!.id, until: T + 2 + TTL });
      expect(renewed[0]).toMatchObject({ id: first!.id, error: { reason: "cancelled", currentFence: 1 } });
      const { completed } = await store.completeMany({ owner: "A", leases: [{ ...first!, result: "a" }, { ...second!, result: "b" }], now: T + 3 });
      expect(completed[1]).toEqual({ id: second!.id, done: true });
      expect(completed[0]).toMatchObject({ id: first!.id, error: { reason: "cancelled" } });
      expect((await store.get(first!.id, { now: T + 3 }))!.status).toBe("cancelled");
    });

    test("a stale holder of an older lease is told superseded, the holder of the cancelled one cancelled", async () => {
      const { store } = await leasedByA();
      expect(await noteVerbs(store).claim("job-1", "B", T + TTL, TTL)).toBe(2); // A's lease ran out; B took over
      await store.cancel("job-1", { by: "ops", now: T + TTL + 1 });
      await expect(store.renew("job-1", { owner: "A", fence: 1, ttlMs: TTL, now: T + TTL + 2 })).rejects.toMatchObject({ reason: "superseded", currentFence: 2 });
      await refusedAsCancelled(store.renew("job-1", { owner: "B", fence: 2, ttlMs: TTL, now: T + TTL + 2 }), 2);
    });

    test("cancelling a leased job frees its slot of the queue's maxLeased at once", async () => {
      const { store } = await twoJobs();
      await store.queues.set("q", { maxLeased: 1, now: T });
      await store.claim("job-1", { owner: "A", ttlMs: TTL, now: T });
      expect(await store.claimNext("q", { owner: "B", ttlMs: TTL, limit: 1, now: T + 1 })).toEqual([]);
      await store.cancel("job-1", { by: "ops", now: T + 2 });
      expect((await store.claimNext("q", { owner: "B", ttlMs: TTL, limit: 1, now: T + 3 })).map((lease) => lease.job.id)).toEqual(["bystander"]);
    });

    test("stats count cancelled jobs per queue, and the list filters by status cancelled", async () => {
      const { store } = await twoJobs();
      await store.enqueue("job-2", { queue: "q", now: T });
      await store.enqueue("elsewhere", { queue: "other", now: T });
      await store.claim("job-2", { owner: "A", ttlMs: TTL, now: T });
      await store.cancel("job-1", { by: "ops", now: T + 1 });
      await store.cancel("job-2", { by: "ops", now: T + 1 });
      const stats = await store.stats({ now: T + 2 });
      expect(stats.find((s) => s.queue === "q")!.jobs).toEqual({ queued: 1, scheduled: 0, leased: 0, done: 0, dead: 0, cancelled: 2 });
      expect(stats.find((s) => s.queue === "other")!.jobs.cancelled).toBe(0);
      expect((await store.list({ status: "cancelled", now: T + 2 })).items.map((job) => job.id)).toEqual(["job-1", "job-2"]);
      expect((await store.list({ status: "queued", now: T + 2 })).items.map((job) => job.id)).toEqual(["bystander", "elsewhere"]);
    });

    test("the purge removes a cancelled job exactly at the retention age, with its events", async () => {
      const { store, snapshot } = await leasedByA();
      await store.cancel("job-1", { by: "ops", now: T + 1 });
      expect(await store.purge({ retentionMs: HOUR, now: T + 1 + HOUR - 1 })).toBe(0);
      expect(await store.purge({ retentionMs: HOUR, now: T + 1 + HOUR })).toBe(1);
      expect(Object.keys(await snapshot())).toEqual(["bystander"]);
      expect((await store.events("job-1")).items).toEqual([]);
      expect((await store.stats({ now: T + 1 + HOUR })).find((s) => s.queue === "q")!.jobs.cancelled).toBe(0);
      await store.enqueue("job-1", { queue: "q", now: T + 2 * HOUR });
      expect(await noteVerbs(store).claim("job-1", "C", T + 2 * HOUR, TTL)).toBe(2); // above the fence it had
    });

    test("a cancelled job can be deleted, and is not retried", async () => {
      const { store } = await twoJobs();
      await store.cancel("job-1", { by: "ops", now: T });
      await expect(store.retry("job-1", { now: T + 1 })).rejects.toMatchObject({ code: "conflict", status: "cancelled" });
      await store.delete("job-1", { now: T + 1 });
      expect(await noteVerbs(store).state("job-1", T + 1)).toBeNull();
    });

    test("a plain UPDATE that would make a cancelled job not done is refused by the schema", async () => {
      const { store, exec, snapshot } = await twoJobs();
      await store.cancel("job-1", { by: "ops", now: T });
      const before = await snapshot();
      await expect(exec("UPDATE jobs SET done = 0 WHERE id = 'job-1'")).rejects.toThrow();
      expect(await snapshot()).toEqual(before);
    });
  });

  describe("progress", () => {
    test("an accepted renew stores it; a renew without progress keeps it; the job shows it as JSON", async () => {
      const { store, snapshot } = await leasedByA();
      expect((await store.renew("job-1", { owner: "A", fence: 1, ttlMs: TTL, progress: { done: 3, of: 10 }, now: T + 1 })).until).toBe(T + 1 + TTL);
      expect((await snapshot())["job-1"]!.progress).toBe('{"done":3,"of":10}');
      expect((await store.renew("job-1", { owner: "A", fence: 1, ttlMs: TTL, now: T + 2 })).until).toBe(T + 2 + TTL);
      expect((await store.get("job-1", { now: T + 2 }))!.progress).toEqual({ done: 3, of: 10 });
      expect((await store.renew("job-1", { owner: "A", fence: 1, ttlMs: TTL, progress: 0.5, now: T + 3 })).until).toBe(T + 3 + TTL);
      expect((await store.get("job-1", { now: T + 3 })).progress).toBe(0.5);
      expect((await store.get("bystander", { now: T + 3 }))!.progress).toBeNull();
      expect((await store.list({ now: T + 3 })).items.map((job) => job.progress)).toEqual([null, 0.5]);
      expect((await store.renew("job-1", { owner: "A", fence: 1, ttlMs: TTL, progress: null, now: T + 4 })).until).toBe(T + 4 + TTL); // null is a report too: it clears it
      expect((await store.get("job-1", { now: T + 4 }))!.progress).toBeNull();
    });

    test("a refused renew stores nothing: a zombie's, an expired lease's, a cancelled lease's", async () => {
      const { store, snapshot } = await leasedByA();
      await store.renew("job-1", { owner: "A", fence: 1, ttlMs: TTL, progress: "A at 10%", now: T + 1 });
      await expect(store.renew("job-1", { owner: "A", fence: 1, ttlMs: TTL, progress: "A expired", now: T + 1 + TTL })).rejects.toBeInstanceOf(LeaseLost); // at now == until
      expect(await noteVerbs(store).claim("job-1", "B", T + 1 + TTL, TTL)).toBe(2);
      await store.renew("job-1", { owner: "B", fence: 2, ttlMs: TTL, progress: "B at 50%", now: T + 2 + TTL });
      const before = await snapshot();
      await expect(store.renew("job-1", { owner: "A", fence: 1, ttlMs: TTL, progress: "zombie A", now: T + 3 + TTL })).rejects.toBeInstanceOf(LeaseLost);
      await expect(store.renew("job-1", { owner: "A", fence: 2, ttlMs: TTL, progress: "A with B's fence", now: T + 3 + TTL })).rejects.toBeInstanceOf(LeaseLost);
      expect((await store.renewMany({ owner: "A", ttlMs: TTL, leases: [{ id: "job-1", fence: 1, progress: "zombie A again" }], now: T + 3 + TTL }))[0]).toHaveProperty("error");
      expect((await snapshot())["job-1"]).toEqual(before["job-1"]);
      await store.cancel("job-1", { by: "ops", now: T + 4 + TTL });
      await refusedAsCancelled(store.renew("job-1", { owner: "B", fence: 2, ttlMs: TTL, progress: "B after cancel", now: T + 5 + TTL }), 2);
      expect((await store.get("job-1", { now: T + 5 + TTL }))!.progress).toBe("B at 50%");
    });

    test("the renewed event of a lease carries the latest progress, its renews still one event", async () => {
      const { store } = await leasedByA();
      await store.renew("job-1", { owner: "A", fence: 1, ttlMs: TTL, progress: { step: 1 }, now: T + 1 });
      await store.renew("job-1", { owner: "A", fence: 1, ttlMs: TTL, progress: { step: 2 }, now: T + 2 });
      await store.renew("job-1", { owner: "A", fence: 1, ttlMs: TTL, now: T + 3 }); // none reported: the job's stays
      const renewed = (await store.events("job-1")).items.filter((event) => event.kind === "renewed");
      expect(renewed).toEqual([expect.objectContaining({ owner: "A", fence: 1, count: 3, at: T + 1, lastAt: T + 3, progress: { step: 2 } })]);
      const others = (await store.events("job-1")).items.filter((event) => event.kind !== "renewed");
      expect(others.map((event) => event.progress)).toEqual([null, null]);
    });

    test("a progress with the fields of a push delivery is a worker's progress: its renewed event has no delivery status or time", async () => {
      const { store } = await leasedByA();
      await store.renew("job-1", { owner: "A", fence: 1, ttlMs: TTL, progress: { httpStatus: 503, durationMs: 120 }, now: T + 1 });
      const renewed = (await store.events("job-1")).items.find((event) => event.kind === "renewed");
      expect(renewed).toMatchObject({ kind: "renewed", progress: { httpStatus: 503, durationMs: 120 }, httpStatus: null, durationMs: null });
    });

    test("renewMany stores each lease's own progress, and none for a lease that carries none", async () => {
      const { store } = await twoJobs();
      await store.enqueue("job-3", { queue: "q", now: T });
      const held = await store.claimNext("q", { owner: "A", ttlMs: TTL, limit: 3, now: T });
      const leases = held.map((lease, i) => ({ id: lease.job.id, fence: lease.fence, ...(i < 2 && { progress: [lease.job.id, i] }) }));
      expect((await store.renewMany({ owner: "A", ttlMs: TTL, leases, now: T + 1 })).every((outcome) => "until" in outcome)).toBe(true);
      const progress = Object.fromEntries((await store.list({ now: T + 1 })).items.map((job) => [job.id, job.progress]));
      expect(progress).toEqual({ [held[0]!.job.id]: [held[0]!.job.id, 0], [held[1]!.job.id]: [held[1]!.job.id, 1], [held[2]!.job.id]: null });
    });

    test("stays on the job after the lease ends, for the next lease to read", async () => {
      const { store } = await leasedByA();
      await store.renew("job-1", { owner: "A", fence: 1, ttlMs: TTL, progress: { page: 7 }, now: T + 1 });
      await store.fail("job-1", { owner: "A", fence: 1, error: "crash", retryInMs: 0, now: T + 2 });
      const lease = (await store.claimNext("q", { owner: "B", ttlMs: TTL, limit: 2, now: T + 3 })).find((taken) => taken.job.id === "job-1");
      expect(lease!.job).toMatchObject({ id: "job-1", fence: 2, progress: { page: 7 } });
      await store.complete("job-1", { owner: "B", fence: 2, result: "ok", now: T + 4 });
      expect((await store.get("job-1", { now: T + 4 }))!.progress).toEqual({ page: 7 });
    });

    test("at most 4096 bytes as JSON: exactly 4096 is stored, 4097 is InvalidArgument naming progress, and nothing changes", async () => {
      const { store, snapshot } = await leasedByA();
      const largest = "x".repeat(4094); // its JSON text, with the quotes, is 4096 bytes
      expect((await store.renew("job-1", { owner: "A", fence: 1, ttlMs: TTL, progress: largest, now: T + 1 })).until).toBe(T + 1 + TTL);
      const before = await snapshot();
      for (const tooLarge of ["x".repeat(4095), "é".repeat(2048), { list: Array.from({ length: 2000 }, (_, i) => i) }]) {
        const error = await store.renew("job-1", { owner: "A", fence: 1, ttlMs: TTL, progress: tooLarge, now: T + 2 }).catch((caught: unknown) => caught);
        expect(error).toBeInstanceOf(InvalidArgument);
        expect((error as Error).message).toMatch(/^progress must be at most 4096 bytes as JSON/);
        await expect(store.renewMany({ owner: "A", ttlMs: TTL, leases: [{ id: "job-1", fence: 1, progress: tooLarge }], now: T + 2 })).rejects.toBeInstanceOf(InvalidArgument);
      }
      await expect(store.renew("job-1", { owner: "A", fence: 1, ttlMs: TTL, progress: Number.NaN, now: T + 2 })).rejects.toBeInstanceOf(InvalidArgument);
      await expect(store.renew("job-1", { owner: "A", fence: 1, ttlMs: TTL, progress: () => 1, now: T + 2 })).rejects.toBeInstanceOf(InvalidArgument);
      expect(await snapshot()).toEqual(before);
    });
  });
}
