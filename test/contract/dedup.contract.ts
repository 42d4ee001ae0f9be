import { describe, expect, test } from "vitest";
import { InvalidArgument, LeaseLost } from "../../src/store/errors.ts";
import type { FreshStorage } from "./storage.contract.ts";

// Once per key (issue 30, migrations/0035): dedup windows, debounce and
// supersede, decided in the enqueue's own transaction. Run on every driver as
// the other contracts are. Each test starts on a fresh, empty database with
// the clock given to each call, and keeps a bystander (another key, or a job
// without one) that must go on as before.

const MINUTE = 60_000;
const T = 1_000_000; // the test clock
const TTL = 30_000;

/** What a call was refused with (or what it answered). */
const refusalOf = (call: Promise<unknown>) => call.catch((error: unknown) => error);

/** Registers the dedup contract for one driver. */
export function dedupContract(freshStore: () => Promise<FreshStorage>): void {
  describe("a dedup window", () => {
    test("64 concurrent enqueues of one dedup key create exactly one job, and each of the others answers it", async () => {
      const { store, snapshot } = await freshStore();
      await store.enqueue("bystander", { queue: "q", dedupKey: "other", dedupTtlMs: MINUTE, now: T });
      const answers = await Promise.all(
        Array.from({ length: 64 }, (_, i) => store.enqueue(`order-${i}`, { queue: "q", dedupKey: "order-7", dedupTtlMs: MINUTE, payload: { i }, now: T + i })),
      );
      const created = answers.filter((answer) => answer.created);
      expect(created).toHaveLength(1);
      const winner = "job" in created[0]! ? created[0].job.id : "";
      for (const answer of answers.filter((answer) => !answer.created)) {
        expect(answer).toMatchObject({ created: false, deduplicated: true, job: { id: winner, dedupKey: "order-7", dedupUntil: T + Number(winner.slice(6)) + MINUTE } });
      }
      expect(Object.keys(await snapshot()).sort()).toEqual(["bystander", winner].sort());
      expect((await store.stats({ now: T + 100 })).find((queue) => queue.queue === "q")).toMatchObject({ jobs: { queued: 2 } });
    });

    test("the window answers the key's job whatever its status, and after the window the key enqueues again", async () => {
      const { store } = await freshStore();
      expect(await store.enqueue("first", { queue: "q", dedupKey: "k", dedupTtlMs: MINUTE, now: T })).toMatchObject({ created: true, job: { id: "first", dedupKey: "k", dedupUntil: T + MINUTE } });
      const lease = await store.claim("first", { owner: "A", ttlMs: TTL, now: T + 1 });
      await store.complete("first", { owner: "A", fence: lease.fence, result: "ok", now: T + 2 });
      expect(await store.enqueue("second", { queue: "q", dedupKey: "k", dedupTtlMs: MINUTE, now: T + MINUTE - 1 })).toMatchObject({ created: false, deduplicated: true, job: { id: "first", status: "done" } });
      expect(await store.enqueue("second", { queue: "q", dedupKey: "k", dedupTtlMs: MINUTE, now: T + MINUTE })).toMatchObject({ created: true, job: { id: "second", dedupUntil: T + 2 * MINUTE } });
      expect(await store.enqueue("third", { queue: "q", dedupKey: "k", dedupTtlMs: 1, now: T + MINUTE + 1 })).toMatchObject({ created: false, deduplicated: true, job: { id: "second" } });
      await expect(store.get("third", { now: T })).rejects.toMatchObject({ code: "not_found" });
    });

    test("a window outlives its job's purge: the enqueue answers the purged job's id, and the cron forgets the key once the window ends", async () => {
      const { store, rows } = await freshStore();
      await store.enqueue("first", { queue: "q", dedupKey: "k", dedupTtlMs: 10 * MINUTE, now: T });
      await store.cancel("first", { now: T + 1 });
      expect(await store.purge({ retentionMs: MINUTE, now: T + 2 * MINUTE })).toBe(1);
      expect(await store.enqueue("second", { queue: "q", dedupKey: "k", dedupTtlMs: MINUTE, now: T + 3 * MINUTE })).toEqual({ created: false, deduplicated: true, id: "first" });
      expect(await rows("SELECT job_id FROM dedup_keys")).toEqual([{ job_id: "first" }]);
      await store.purge({ retentionMs: MINUTE, now: T + 10 * MINUTE });
      expect(await rows("SELECT job_id FROM dedup_keys")).toEqual([]);
      expect(await store.enqueue("second", { queue: "q", dedupKey: "k", dedupTtlMs: MINUTE, now: T + 10 * MINUTE })).toMatchObject({ created: true });
    });

    test("keys are per queue, and an id that exists answers its job untouched, not deduplicated", async () => {
      const { store, snapshot } = await freshStore();
      await store.enqueue("a", { queue: "q", dedupKey: "k", dedupTtlMs: MINUTE, now: T });
      expect(await store.enqueue("b", { queue: "other", dedupKey: "k", dedupTtlMs: MINUTE, now: T })).toMatchObject({ created: true });
      await store.enqueue("c", { queue: "q", now: T });
      const before = await snapshot();
      expect(await store.enqueue("c", { queue: "q", dedupKey: "new", dedupTtlMs: MINUTE, now: T + 1 })).toEqual({ created: false, job: expect.objectContaining({ id: "c", dedupKey: null }) });
      expect(await snapshot()).toEqual(before);
    });

    test("an enqueue whose id exists answers that job, not the key's window held by another, and changes nothing", async () => {
      const { store, snapshot } = await freshStore();
      await store.enqueue("held", { queue: "q", dedupKey: "k", dedupTtlMs: MINUTE, now: T });
      await store.enqueue("other", { queue: "q", now: T });
      const before = await snapshot();
      expect(await store.enqueue("other", { queue: "q", dedupKey: "k", dedupTtlMs: MINUTE, now: T + 1 })).toEqual({ created: false, job: expect.objectContaining({ id: "other", dedupKey: null }) });
      expect(await store.enqueueMany("q", { jobs: [{ id: "other", dedupKey: "k", dedupTtlMs: MINUTE }], now: T + 1 })).toEqual([{ id: "other", created: false }]);
      expect(await snapshot()).toEqual(before);
    });

    test("the job a window answers carries the steps it recorded", async () => {
      const { store } = await freshStore();
      await store.enqueue("pay", { queue: "q", dedupKey: "k", dedupTtlMs: MINUTE, now: T });
      const lease = await store.claim("pay", { owner: "A", ttlMs: TTL, now: T });
      await store.step("pay", "charge", { owner: "A", fence: lease.fence, result: "ch_1", now: T + 1 });
      expect(await store.enqueue("pay-again", { queue: "q", dedupKey: "k", dedupTtlMs: MINUTE, now: T + 2 })).toMatchObject({
        deduplicated: true,
        job: { id: "pay", steps: { charge: { result: "ch_1", fence: lease.fence, at: T + 1 } } },
      });
    });

    test("enqueueMany gives a key to the first job of the call that is created: one whose id exists, or came before, does not take it", async () => {
      const { store, snapshot } = await freshStore();
      await store.enqueue("a", { queue: "q", now: T });
      const answers = await store.enqueueMany("q", {
        jobs: [
          { id: "a", dedupKey: "k", dedupTtlMs: MINUTE },
          { id: "b", dedupKey: "k", dedupTtlMs: MINUTE },
          { id: "c", dedupKey: "k2", dedupTtlMs: MINUTE },
          { id: "c", dedupKey: "k3", dedupTtlMs: MINUTE },
          { id: "d", dedupKey: "k3", dedupTtlMs: MINUTE },
          { id: "e", dedupKey: "k", dedupTtlMs: MINUTE },
        ],
        now: T,
      });
      expect(answers).toEqual([
        { id: "a", created: false },
        { id: "b", created: true },
        { id: "c", created: true },
        { id: "c", created: false },
        { id: "d", created: true },
        { id: "e", created: false, deduplicated: true, duplicateOf: "b" },
      ]);
      expect(Object.keys(await snapshot()).sort()).toEqual(["a", "b", "c", "d"]);
    });

    test("enqueueMany dedups each job against the windows and against the jobs before it in the call", async () => {
      const { store, snapshot } = await freshStore();
      await store.enqueue("held", { queue: "q", dedupKey: "k1", dedupTtlMs: MINUTE, now: T });
      const answers = await store.enqueueMany("q", {
        jobs: [
          { id: "m1", dedupKey: "k1", dedupTtlMs: MINUTE },
          { id: "m2", dedupKey: "k2", dedupTtlMs: MINUTE },
          { id: "m3", dedupKey: "k2", dedupTtlMs: MINUTE },
          { id: "m4" },
        ],
        now: T + 1,
      });
      expect(answers).toEqual([
        { id: "m1", created: false, deduplicated: true, duplicateOf: "held" },
        { id: "m2", created: true },
        { id: "m3", created: false, deduplicated: true, duplicateOf: "m2" },
        { id: "m4", created: true },
      ]);
      expect(Object.keys(await snapshot()).sort()).toEqual(["held", "m2", "m4"]);
    });
  });

  describe("a debounce", () => {
    test("enqueues before the first claim move one job and it runs once, with the last payload and priority", async () => {
      const { store, snapshot } = await freshStore();
      await store.enqueue("bystander", { queue: "q", now: T });
      expect(await store.enqueue("save-1", { queue: "q", dedupKey: "doc-9", debounceMs: 1000, payload: { v: 1 }, now: T })).toMatchObject({ created: true, job: { runAt: T + 1000, status: "scheduled" } });
      expect(await store.enqueue("save-2", { queue: "q", dedupKey: "doc-9", debounceMs: 1000, payload: { v: 2 }, priority: 5, now: T + 600 })).toMatchObject({
        created: false,
        debounced: true,
        job: { id: "save-1", payload: { v: 2 }, priority: 5, runAt: T + 1600 },
      });
      expect(await store.claimNext("q", { owner: "A", ttlMs: TTL, limit: 10, now: T + 1599 })).toMatchObject([{ job: { id: "bystander" } }]);
      const [lease, ...more] = await store.claimNext("q", { owner: "A", ttlMs: TTL, limit: 10, now: T + 1600 });
      expect(more).toEqual([]);
      expect(lease!.job).toMatchObject({ id: "save-1", payload: { v: 2 }, attempts: 1 });
      expect(Object.keys(await snapshot()).sort()).toEqual(["bystander", "save-1"]);
    });

    test("an enqueue again of an id that exists changes nothing, not even the key's waiting job: a producer's retry is not a newer edit", async () => {
      const { store, snapshot } = await freshStore();
      await store.enqueue("e1", { queue: "q", dedupKey: "doc", debounceMs: 1000, payload: { v: 1 }, now: T });
      await store.claimNext("q", { owner: "A", ttlMs: TTL, now: T + 1000 });
      expect(await store.enqueue("e2", { queue: "q", dedupKey: "doc", debounceMs: 1000, payload: { v: 2 }, now: T + 1001 })).toMatchObject({ created: true });
      const before = await snapshot();
      expect(await store.enqueue("e1", { queue: "q", dedupKey: "doc", debounceMs: 1000, payload: { v: 1 }, now: T + 1002 })).toMatchObject({ created: false, job: { id: "e1" } });
      expect(await store.enqueue("e2", { queue: "q", dedupKey: "doc", debounceMs: 1000, payload: { v: 3 }, now: T + 1003 })).toEqual({ created: false, job: expect.objectContaining({ id: "e2", payload: { v: 2 } }) });
      expect(await snapshot()).toEqual(before);
    });

    test("debounceMaxMs bounds how late the first enqueue runs, and once claimed the next enqueue starts a new job", async () => {
      const { store } = await freshStore();
      await store.enqueue("save-1", { queue: "q", dedupKey: "doc", debounceMs: 1000, debounceMaxMs: 1500, now: T });
      expect(await store.enqueue("save-2", { queue: "q", dedupKey: "doc", debounceMs: 1000, debounceMaxMs: 1500, now: T + 900 })).toMatchObject({ debounced: true, job: { runAt: T + 1500 } });
      await store.claimNext("q", { owner: "A", ttlMs: TTL, now: T + 1500 });
      expect(await store.enqueue("save-3", { queue: "q", dedupKey: "doc", debounceMs: 1000, payload: "late", now: T + 1501 })).toMatchObject({ created: true, job: { id: "save-3", runAt: T + 2501, payload: "late" } });
      expect((await store.get("save-1", { now: T + 1502 })).status).toBe("leased");
    });
  });

  describe("a supersede", () => {
    test("cancels the key's waiting job and answers it as superseded; a key without a job supersedes nothing", async () => {
      const { store } = await freshStore();
      expect(await store.enqueue("v1", { queue: "q", dedupKey: "doc", supersede: true, now: T })).toMatchObject({ created: true, job: { id: "v1" }, superseded: null });
      expect(await store.enqueue("v2", { queue: "q", dedupKey: "doc", supersede: true, now: T + 1 })).toMatchObject({ created: true, job: { id: "v2" }, superseded: "v1" });
      expect(await store.get("v1", { now: T + 2 })).toMatchObject({ status: "cancelled", supersededBy: "v2" });
      expect((await store.events("v1", { limit: 10 })).items.at(-1)).toMatchObject({ kind: "cancelled", owner: "enqueue", error: 'superseded by job "v2"' });
      expect(await store.claimNext("q", { owner: "A", ttlMs: TTL, limit: 10, now: T + 2 })).toMatchObject([{ job: { id: "v2" } }]);
    });

    test("of a held job, refuses its holder's renew, complete, fail and steps as cancelled, and its lease check says superseded", async () => {
      const { store } = await freshStore();
      await store.enqueue("v1", { queue: "q", dedupKey: "doc", supersede: true, now: T });
      const lease = await store.claim("v1", { owner: "A", ttlMs: TTL, now: T });
      await store.enqueue("v2", { queue: "q", dedupKey: "doc", supersede: true, now: T + 1 });
      // Each write is sent once the one before it was refused: a refusal left unawaited meanwhile would go unhandled.
      for (const write of [
        () => store.complete("v1", { owner: "A", fence: lease.fence, result: "late", now: T + 2 }),
        () => store.renew("v1", { owner: "A", fence: lease.fence, ttlMs: TTL, now: T + 2 }),
        () => store.fail("v1", { owner: "A", fence: lease.fence, error: "x", now: T + 2 }),
        () => store.step("v1", "charge", { owner: "A", fence: lease.fence, result: '"ch_1"', now: T + 2 }),
      ]) {
        const refused = await refusalOf(write());
        expect(refused).toBeInstanceOf(LeaseLost);
        expect(refused).toMatchObject({ code: "stale_lease", reason: "cancelled" });
      }
      expect(await store.leaseCheck("v1", { owner: "A", fence: lease.fence, now: T + 3 })).toEqual({ current: false, fence: lease.fence, until: T + TTL, reason: "cancelled", supersededBy: "v2" });
      expect(await store.get("v1", { now: T + 3 })).toMatchObject({ status: "cancelled", result: null, supersededBy: "v2", steps: {} });
    });

    test("a superseded job retried in bulk is a job like any other again: no supersededBy, and its old holder stays refused", async () => {
      const { store } = await freshStore();
      await store.enqueue("v1", { queue: "q", dedupKey: "doc", supersede: true, now: T });
      const lease = await store.claim("v1", { owner: "A", ttlMs: TTL, now: T });
      await store.enqueue("v2", { queue: "q", dedupKey: "doc", supersede: true, now: T + 1 });
      expect(await store.bulk({ action: "retry", filter: { queue: "q", idPrefix: "v1" }, now: T + 2 })).toMatchObject({ matched: 1, changed: [{ id: "v1", status: "queued" }] });
      expect(await store.get("v1", { now: T + 3 })).toMatchObject({ status: "queued", supersededBy: null });
      expect(await store.leaseCheck("v1", { owner: "A", fence: lease.fence, now: T + 3 })).not.toHaveProperty("supersededBy");
      expect(await refusalOf(store.complete("v1", { owner: "A", fence: lease.fence, result: "late", now: T + 3 }))).toBeInstanceOf(LeaseLost);
    });

    test("an enqueue whose id exists supersedes nothing", async () => {
      const { store, snapshot } = await freshStore();
      await store.enqueue("v1", { queue: "q", dedupKey: "doc", supersede: true, now: T });
      await store.enqueue("v2", { queue: "q", now: T });
      const before = await snapshot();
      expect(await store.enqueue("v2", { queue: "q", dedupKey: "doc", supersede: true, now: T + 1 })).toMatchObject({ created: false, job: { id: "v2" } });
      expect(await snapshot()).toEqual(before);
    });
  });

  describe("bad dedup fields", () => {
    test.each([
      [{ dedupKey: "k" }, "dedupKey takes exactly one of dedupTtlMs (a window), debounceMs (a debounce) or supersede: true, got none"],
      [{ dedupKey: "k", dedupTtlMs: 5, supersede: true }, "got dedupTtlMs and supersede"],
      [{ dedupTtlMs: 5 }, "dedupTtlMs needs a dedupKey"],
      [{ dedupKey: "k", dedupTtlMs: 0 }, "dedupTtlMs must be a whole number of ms from 1 to 2592000000 (30 days), got 0"],
      [{ dedupKey: "k", dedupTtlMs: 2_592_000_001 }, "got 2592000001"],
      [{ dedupKey: "k", debounceMs: 100, debounceMaxMs: 50 }, "debounceMaxMs must be a whole number of ms from 100"],
      [{ dedupKey: "k", debounceMs: 100, delayMs: 5 }, "give no runAt or delayMs with it"],
      [{ dedupKey: "k", debounceMaxMs: 100, dedupTtlMs: 5 }, "debounceMaxMs bounds a debounce"],
      [{ dedupKey: "", dedupTtlMs: 5 }, "dedupKey"],
      [{ dedupKey: "k".repeat(256), dedupTtlMs: 5 }, "at most 255 bytes"],
    ])("%j is refused with a message that names the field, and nothing changes", async (fields, message) => {
      const { store, snapshot } = await freshStore();
      await store.enqueue("bystander", { queue: "q", now: T });
      const before = await snapshot();
      const refused = await refusalOf(store.enqueue("job", { queue: "q", now: T, ...fields }));
      expect(refused).toBeInstanceOf(InvalidArgument);
      expect((refused as Error).message).toContain(message);
      expect(await snapshot()).toEqual(before);
    });

    test("enqueueMany takes a window but refuses a debounce or a supersede, naming the job", async () => {
      const { store, snapshot } = await freshStore();
      const refused = await refusalOf(store.enqueueMany("q", { jobs: [{ id: "a" }, { id: "b", dedupKey: "k", supersede: true }], now: T }));
      expect(refused).toBeInstanceOf(InvalidArgument);
      expect((refused as Error).message).toBe("jobs[1].supersede is for one job at a time: enqueue it with POST /v1/jobs; a call of many jobs takes dedupKey with dedupTtlMs");
      expect(await snapshot()).toEqual({});
    });
  });
}
