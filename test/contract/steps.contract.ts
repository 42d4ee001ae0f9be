import { describe, expect, test } from "vitest";
import { InvalidArgument, LeaseLost, NotFound, StepLimit } from "../../src/store/errors.ts";
import { MAX_STEP_BYTES, MAX_STEPS } from "../../src/store/sql/steps.ts";
import type { FreshStorage } from "./storage.contract.ts";

// Fenced steps (issue 30, migrations/0036) over the store, run on every
// driver like the store contract: a step is recorded under the current lease
// only, once per job and name, within the job's limits, and every later lease
// is handed the job's steps; a stale lease records nothing. Each test starts
// on a fresh, empty database, with a bystander that must not change.

const HOUR = 3_600_000;
const T = 100 * HOUR; // the test clock
const TTL = 30_000;

/** The steps table as stored, in key order. */
const STEPS_SQL = "SELECT job_id, name, result, fence, at FROM steps ORDER BY job_id, name";

/** Expects `write` to be refused as LeaseLost with `reason` and the job's fence `currentFence`. */
async function refusedAsStale(write: Promise<unknown>, reason: string, currentFence: number): Promise<void> {
  const error = await write.catch((caught: unknown) => caught);
  expect(error).toBeInstanceOf(LeaseLost);
  expect(error).toMatchObject({ code: "stale_lease", reason, currentFence });
}

/** Registers the steps contract for one driver. */
export function stepsContract(freshStore: () => Promise<FreshStorage>): void {
  /** job-1 (queue q) leased by A (fence 1, until T + TTL), and a bystander of q leased by Z with a step of its own. */
  async function leasedByA() {
    const fresh = await freshStore();
    const { store } = fresh;
    await store.enqueue("job-1", { queue: "q", now: T });
    await store.enqueue("bystander", { queue: "q", now: T });
    await store.claim("job-1", { owner: "A", ttlMs: TTL, now: T });
    await store.claim("bystander", { owner: "Z", ttlMs: HOUR, now: T });
    await store.step("bystander", "charge", { owner: "Z", fence: 1, result: "theirs", now: T });
    return fresh;
  }

  describe("step", () => {
    test("records a step under the current lease: the answer, the row of steps, and the job's counts of steps and bytes", async () => {
      const { store, rows, snapshot } = await leasedByA();
      const before = await snapshot();
      const answer = await store.step("job-1", "charge", { owner: "A", fence: 1, result: { charge: "ch_1", amount: 120 }, now: T + 5 });
      expect(answer).toEqual({ recorded: true, step: { name: "charge", result: { charge: "ch_1", amount: 120 }, fence: 1, at: T + 5 } });
      expect(await rows(STEPS_SQL)).toEqual([
        { job_id: "bystander", name: "charge", result: '"theirs"', fence: 1, at: T },
        { job_id: "job-1", name: "charge", result: '{"charge":"ch_1","amount":120}', fence: 1, at: T + 5 },
      ]);
      const after = await snapshot();
      // Only the counts change: the lease, its time and its history are the row's as they were.
      expect(after["job-1"]).toEqual({ ...before["job-1"], step_count: 1, step_bytes: '{"charge":"ch_1","amount":120}'.length });
      expect(after.bystander).toEqual(before.bystander);
      expect((await store.get("job-1", { now: T + 6 })).steps).toEqual({ charge: { result: { charge: "ch_1", amount: 120 }, fence: 1, at: T + 5 } });
      expect((await store.events("job-1")).items.map((event) => event.kind)).toEqual(["enqueued", "claimed"]);
    });

    test("a step recorded by lease 2 is handed to lease 3 and refused to lease 1, which stores nothing", async () => {
      const { store, rows } = await leasedByA();
      // Lease 1 (A) stalls past its end; lease 2 (B) takes the job over and records the charge.
      const [second] = await store.claimNext("q", { owner: "B", ttlMs: TTL, now: T + TTL });
      expect(second).toMatchObject({ fence: 2, job: { id: "job-1", steps: {} } });
      expect(await store.step("job-1", "charge", { owner: "B", fence: 2, result: "ch_2", now: T + TTL + 1 })).toMatchObject({ recorded: true });
      // Lease 1 wakes up: its charge, and a step lease 2 has not recorded, are both refused.
      await refusedAsStale(store.step("job-1", "charge", { owner: "A", fence: 1, result: "ch_1", now: T + TTL + 2 }), "superseded", 2);
      await refusedAsStale(store.step("job-1", "email", { owner: "A", fence: 1, result: "sent", now: T + TTL + 3 }), "superseded", 2);
      expect(await rows("SELECT name, result, fence FROM steps WHERE job_id = 'job-1'")).toEqual([{ name: "charge", result: '"ch_2"', fence: 2 }]);
      // Each refusal is in the job's history, as a stale complete's is.
      const refused = (await store.events("job-1")).items.filter((event) => event.kind === "refused");
      expect(refused.map(({ action, owner, fence, currentOwner, currentFence }) => ({ action, owner, fence, currentOwner, currentFence }))).toEqual([
        { action: "step", owner: "A", fence: 1, currentOwner: "B", currentFence: 2 },
      ]);
      expect(refused[0]!.count).toBe(2); // the same stale lease refused again counts once more

      // Lease 2 ends without completing; lease 3 is handed the charge lease 2 recorded, and records what follows.
      await store.fail("job-1", { owner: "B", fence: 2, error: "mail server down", retryInMs: 0, now: T + TTL + 4 });
      const third = await store.claim("job-1", { owner: "C", ttlMs: TTL, now: T + TTL + 5 });
      expect(third.job.steps).toEqual({ charge: { result: "ch_2", fence: 2, at: T + TTL + 1 } });
      expect(await store.step("job-1", "email", { owner: "C", fence: 3, result: null, now: T + TTL + 6 })).toEqual({ recorded: true, step: { name: "email", result: null, fence: 3, at: T + TTL + 6 } });
      const done = await store.complete("job-1", { owner: "C", fence: 3, result: "ok", now: T + TTL + 7 });
      expect(done.job.steps).toEqual({ charge: { result: "ch_2", fence: 2, at: T + TTL + 1 }, email: { result: null, fence: 3, at: T + TTL + 6 } });
    });

    test("a step recorded already answers the stored result, recorded false, and changes nothing; a stale caller is refused all the same", async () => {
      const { store, rows, snapshot } = await leasedByA();
      await store.step("job-1", "charge", { owner: "A", fence: 1, result: { charge: "ch_1" }, now: T + 1 });
      const [stored, before] = [await rows(STEPS_SQL), await snapshot()];
      const again = await store.step("job-1", "charge", { owner: "A", fence: 1, result: { charge: "ch_other" }, now: T + 2 });
      expect(again).toEqual({ recorded: false, step: { name: "charge", result: { charge: "ch_1" }, fence: 1, at: T + 1 } });
      expect(await rows(STEPS_SQL)).toEqual(stored);
      expect(await snapshot()).toEqual(before);
      expect((await store.events("job-1")).items.map((event) => event.kind)).toEqual(["enqueued", "claimed"]); // no refusal

      // Recorded by an earlier lease: answered to the current one as stored; refused to a stale one.
      await store.release("job-1", { owner: "A", fence: 1, now: T + 3 });
      await store.claim("job-1", { owner: "B", ttlMs: TTL, now: T + 4 });
      expect(await store.step("job-1", "charge", { owner: "B", fence: 2, result: "x", now: T + 5 })).toMatchObject({ recorded: false, step: { result: { charge: "ch_1" }, fence: 1 } });
      await refusedAsStale(store.step("job-1", "charge", { owner: "A", fence: 1, result: { charge: "ch_1" }, now: T + 6 }), "superseded", 2);
      expect(await rows(STEPS_SQL)).toEqual(stored);
    });

    test("refuses an expired, a cancelled, a done and another owner's lease with the reason a complete gets, and stores nothing", async () => {
      const { store, rows } = await leasedByA();
      const stored = await rows(STEPS_SQL);
      await refusedAsStale(store.step("job-1", "s", { owner: "A", fence: 1, result: 1, now: T + TTL }), "expired", 1); // at until: expired
      await refusedAsStale(store.step("job-1", "s", { owner: "B", fence: 1, result: 1, now: T + 1 }), "not_owner", 1);
      await refusedAsStale(store.step("job-1", "s", { owner: "A", fence: 2, result: 1, now: T + 1 }), "not_owner", 1);
      expect(await store.step("job-1", "s", { owner: "A", fence: 1, result: 1, now: T + TTL - 1 })).toMatchObject({ recorded: true }); // a ms before until: current
      await store.cancel("job-1", { by: "ops", now: T + TTL - 1 });
      await refusedAsStale(store.step("job-1", "t", { owner: "A", fence: 1, result: 1, now: T + TTL - 1 }), "cancelled", 1);
      await refusedAsStale(store.step("job-1", "s", { owner: "A", fence: 1, result: 1, now: T + TTL - 1 }), "cancelled", 1); // recorded, but the lease is not current
      await store.enqueue("done", { queue: "q", now: T });
      await store.claim("done", { owner: "A", ttlMs: TTL, now: T });
      await store.complete("done", { owner: "A", fence: 1, result: "r", now: T + 1 });
      await refusedAsStale(store.step("done", "s", { owner: "A", fence: 1, result: 1, now: T + 2 }), "done", 1);
      expect(await rows(STEPS_SQL)).toEqual([...stored, { job_id: "job-1", name: "s", result: "1", fence: 1, at: T + TTL - 1 }]);
      await expect(store.step("nope", "s", { owner: "A", fence: 1, result: 1, now: T })).rejects.toBeInstanceOf(NotFound);
    });

    test(`refuses a step past ${MAX_STEPS} steps or ${MAX_STEP_BYTES} bytes of results, changing nothing; exactly at the limits is accepted`, async () => {
      const { store, rows, snapshot } = await leasedByA();
      // 62 small steps, then one that takes the bytes exactly to the limit.
      for (let i = 0; i < MAX_STEPS - 2; i++) await store.step("job-1", `s-${i}`, { owner: "A", fence: 1, result: i % 10, now: T + 1 });
      const used = MAX_STEPS - 2; // each result is one byte
      const fill = "x".repeat(MAX_STEP_BYTES - used - 2); // a string's JSON text: its quotes, 2 bytes more
      expect(await store.step("job-1", "big", { owner: "A", fence: 1, result: fill, now: T + 2 })).toMatchObject({ recorded: true });
      expect((await snapshot())["job-1"]).toMatchObject({ step_count: MAX_STEPS - 1, step_bytes: MAX_STEP_BYTES });
      let before = [await rows(STEPS_SQL), await snapshot()];
      const tooLarge = await store.step("job-1", "one-more-byte", { owner: "A", fence: 1, result: 1, now: T + 3 }).catch((caught: unknown) => caught);
      expect(tooLarge).toBeInstanceOf(StepLimit);
      expect(tooLarge).toMatchObject({ code: "steps_too_large", limit: MAX_STEP_BYTES, details: { limit: MAX_STEP_BYTES } });
      expect((tooLarge as Error).message).toBe(`the results of the steps of job "job-1" would take ${MAX_STEP_BYTES + 1} bytes as JSON, over the ${MAX_STEP_BYTES} a job may; nothing was stored: keep a large result elsewhere and record where it is`);
      expect([await rows(STEPS_SQL), await snapshot()]).toEqual(before);

      // The 64th step within the bytes, on another job whose results are small: accepted; the 65th is refused.
      await store.enqueue("many", { queue: "q", now: T });
      await store.claim("many", { owner: "A", ttlMs: TTL, now: T });
      for (let i = 0; i < MAX_STEPS; i++) await store.step("many", `s-${i}`, { owner: "A", fence: 1, result: i, now: T + 1 });
      before = [await rows(STEPS_SQL), await snapshot()];
      const tooMany = await store.step("many", "s-64", { owner: "A", fence: 1, result: 0, now: T + 2 }).catch((caught: unknown) => caught);
      expect(tooMany).toBeInstanceOf(StepLimit);
      expect(tooMany).toMatchObject({ code: "too_many_steps", limit: MAX_STEPS });
      expect((tooMany as Error).message).toBe(`job "many" has recorded ${MAX_STEPS} steps, the most a job may; nothing was stored: make fewer, larger steps`);
      expect([await rows(STEPS_SQL), await snapshot()]).toEqual(before);
      // A step recorded already is still answered at the limit; a stale lease is still told it is stale.
      expect(await store.step("many", "s-63", { owner: "A", fence: 1, result: 0, now: T + 3 })).toMatchObject({ recorded: false, step: { result: 63 } });
      await refusedAsStale(store.step("many", "s-64", { owner: "B", fence: 1, result: 0, now: T + 3 }), "not_owner", 1);
      expect(Object.keys((await store.get("many", { now: T + 4 })).steps)).toHaveLength(MAX_STEPS);
    });

    test.each([
      ["an empty name", "", 1, "name must be a non-empty string of printable text"],
      ["a name with a control character", "a\nb", 1, "name must be a non-empty string of printable text"],
      ["the name .", ".", 1, 'name must not be "." or ".."'],
      ["a name of 129 bytes", `${"é".repeat(64)}x`, 1, "name must be at most 128 bytes of UTF-8, got 129"],
      ["no result", "s", undefined, "result is required: any JSON value (null for none)"],
      ["a result JSON cannot carry", "s", () => 1, "result must be a JSON value"],
      ["a result with NaN", "s", { n: Number.NaN }, "result must not hold NaN or Infinity"],
    ])("refuses %s with InvalidArgument before the database is touched", async (_, name, result, message) => {
      const { store, rows, snapshot } = await leasedByA();
      const before = [await rows(STEPS_SQL), await snapshot()];
      const error = await store.step("job-1", name, { owner: "A", fence: 1, result, now: T + 1 }).catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(InvalidArgument);
      expect((error as Error).message).toContain(message);
      expect([await rows(STEPS_SQL), await snapshot()]).toEqual(before);
    });

    test("takes a name of exactly 128 bytes, in characters of two bytes", async () => {
      const { store } = await leasedByA();
      expect(await store.step("job-1", "é".repeat(64), { owner: "A", fence: 1, result: true, now: T + 1 })).toMatchObject({ recorded: true, step: { name: "é".repeat(64) } });
    });
  });

  describe("the steps handed back", () => {
    test("every lease and every read of the job carries its steps: claim, claim-next, the next of a complete or fail, get and list", async () => {
      const { store } = await freshStore();
      await store.enqueueMany("q", { jobs: [{ id: "a" }, { id: "b" }, { id: "c" }, { id: "d" }], now: T });
      const recordIn = async (id: string, owner: string, fence: number) => store.step(id, "first", { owner, fence, result: { id }, now: T + 1 });
      for (const id of ["a", "b", "c", "d"]) {
        await store.claim(id, { owner: "A", ttlMs: TTL, now: T });
        await recordIn(id, "A", 1);
        await store.release(id, { owner: "A", fence: 1, now: T + 2 });
      }
      const stepOf = (id: string) => ({ first: { result: { id }, fence: 1, at: T + 1 } });
      expect((await store.claim("a", { owner: "B", ttlMs: TTL, now: T + 3 })).job.steps).toEqual(stepOf("a"));
      const [b] = await store.claimNext("q", { owner: "B", ttlMs: TTL, now: T + 3 });
      expect(b!.job).toMatchObject({ id: "b", steps: stepOf("b") });
      const completed = await store.complete("a", { owner: "B", fence: 2, result: "r", next: { limit: 1, ttlMs: TTL }, now: T + 4 });
      expect(completed.job.steps).toEqual(stepOf("a"));
      expect(completed.leases.map((lease) => [lease.job.id, lease.job.steps])).toEqual([["c", stepOf("c")]]);
      const failed = await store.fail("b", { owner: "B", fence: 2, error: "x", retryInMs: HOUR, next: { limit: 1, ttlMs: TTL }, now: T + 5 });
      expect(failed.job.steps).toEqual(stepOf("b"));
      expect(failed.leases.map((lease) => [lease.job.id, lease.job.steps])).toEqual([["d", stepOf("d")]]);
      expect((await store.get("c", { now: T + 6 })).steps).toEqual(stepOf("c"));
      expect((await store.list({ queue: "q", now: T + 6 })).items.map((job) => [job.id, job.steps])).toEqual(["a", "b", "c", "d"].map((id) => [id, stepOf(id)]));
      const released = await store.release("c", { owner: "B", fence: 2, now: T + 7 });
      expect(released.steps).toEqual(stepOf("c"));
      expect((await store.cancel("c", { now: T + 8 })).job.steps).toEqual(stepOf("c"));
    });

    test("a job without steps is handed {}, and a retried dead job keeps the steps it recorded", async () => {
      const { store } = await freshStore();
      const { job } = await store.enqueue("j", { queue: "q", maxAttempts: 1, now: T });
      expect(job.steps).toEqual({});
      expect((await store.claim("j", { owner: "A", ttlMs: TTL, now: T })).job.steps).toEqual({});
      await store.step("j", "charge", { owner: "A", fence: 1, result: "ch_1", now: T + 1 });
      expect((await store.fail("j", { owner: "A", fence: 1, error: "x", now: T + 2 })).job.status).toBe("dead");
      expect((await store.retry("j", { now: T + 3 })).steps).toEqual({ charge: { result: "ch_1", fence: 1, at: T + 1 } });
      expect((await store.claim("j", { owner: "B", ttlMs: TTL, now: T + 4 })).job.steps).toEqual({ charge: { result: "ch_1", fence: 1, at: T + 1 } });
    });
  });

  describe("steps go with their job", () => {
    test("a purged job's steps are deleted with it, and its id enqueued again starts with none", async () => {
      const { store, rows } = await leasedByA();
      await store.step("job-1", "charge", { owner: "A", fence: 1, result: "ch_1", now: T + 1 });
      await store.complete("job-1", { owner: "A", fence: 1, result: "ok", now: T + 2 });
      expect(await store.purge({ retentionMs: HOUR, now: T + 2 + HOUR })).toBe(1);
      expect(await rows(STEPS_SQL)).toEqual([{ job_id: "bystander", name: "charge", result: '"theirs"', fence: 1, at: T }]);
      const { created, job } = await store.enqueue("job-1", { queue: "q", now: T + 2 * HOUR });
      expect(created).toBe(true);
      expect(job.steps).toEqual({});
      const lease = await store.claim("job-1", { owner: "B", ttlMs: TTL, now: T + 2 * HOUR });
      expect(lease.job.steps).toEqual({});
      expect(await store.step("job-1", "charge", { owner: "B", fence: lease.fence, result: "ch_new", now: T + 2 * HOUR + 1 })).toMatchObject({ recorded: true });
    });

    test("a deleted job's steps are deleted with it, and a job without steps deletes none of another's", async () => {
      const { store, rows } = await leasedByA();
      await store.step("job-1", "charge", { owner: "A", fence: 1, result: "ch_1", now: T + 1 });
      await store.release("job-1", { owner: "A", fence: 1, now: T + 2 });
      await store.enqueue("plain", { queue: "q", now: T });
      await store.delete("plain", { now: T + 3 });
      expect(await rows("SELECT count(*) AS n FROM steps")).toEqual([{ n: 2 }]);
      await store.delete("job-1", { now: T + 3 });
      expect(await rows(STEPS_SQL)).toEqual([{ job_id: "bystander", name: "charge", result: '"theirs"', fence: 1, at: T }]);
      expect((await store.enqueue("job-1", { queue: "q", now: T + 4 })).job.steps).toEqual({});
    });
  });
}
