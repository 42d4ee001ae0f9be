import { describe, expect, test } from "vitest";
import { InvalidRequestError, LeaseLostError, runWorker, type WorkerHandle, withLease } from "../../src/client/index.ts";
import { served, TRANSPORTS } from "./transports.ts";

// The client's steps (issue 30) over HTTP and in-process: client.step, and
// the `step` of a withLease or runWorker handler, which skips a step an
// earlier lease recorded and, once its lease is lost, throws LeaseLostError
// and leaves the job uncompleted. The server's clock is the test's, moved by
// hand past a lease's end; the leases are a minute long on the real clock, so
// no heartbeat of the client's own ends one.

const T = Date.UTC(2026, 0, 1);
const TTL = 60_000;

/** A served world whose server (or in-process calls) read `clock.now`. */
async function world(transport: (typeof TRANSPORTS)[number]) {
  const clock = { now: T };
  const s = await served(transport, { clock: () => clock.now });
  return Object.assign(s, { clock });
}

/** The steps as stored, in key order. */
async function stepRows(s: Awaited<ReturnType<typeof world>>) {
  return (await s.rows("SELECT job_id, name, result, fence FROM steps ORDER BY job_id, name")).map((row) => ({ ...row }));
}

describe.each(TRANSPORTS)("client.step, %s", (transport) => {
  test("answers recorded true, then recorded false with the stored result; a stale lease is LeaseLostError; past a limit InvalidRequestError", async () => {
    await using s = await world(transport);
    await s.client.enqueue({ id: "job-1" });
    const { fence } = await s.client.claim("job-1", { owner: "A", ttlMs: TTL });
    expect(await s.client.step("job-1", "charge", { owner: "A", fence, result: { charge: "ch_1" } })).toEqual({ recorded: true, step: { name: "charge", result: { charge: "ch_1" }, fence: 1, at: T } });
    expect(await s.client.step("job-1", "charge", { owner: "A", fence, result: { charge: "ch_2" } })).toEqual({ recorded: false, step: { name: "charge", result: { charge: "ch_1" }, fence: 1, at: T } });
    const stale = await s.client.step("job-1", "email", { owner: "B", fence, result: 1 }).catch((error: unknown) => error);
    expect(stale).toBeInstanceOf(LeaseLostError);
    expect(stale).toMatchObject({ status: 409, code: "stale_lease", reason: "not_owner", currentFence: 1 });
    const tooLarge = await s.client.step("job-1", "big", { owner: "A", fence, result: "x".repeat(70_000) }).catch((error: unknown) => error);
    expect(tooLarge).toBeInstanceOf(InvalidRequestError);
    expect(tooLarge).toMatchObject({ status: 413, code: "steps_too_large", details: { limit: 65_536 } });
    expect(await stepRows(s)).toEqual([{ job_id: "job-1", name: "charge", result: '{"charge":"ch_1"}', fence: 1 }]);
  });
});

describe.each(TRANSPORTS)("step in a withLease handler, %s", (transport) => {
  test("after a takeover, a step the earlier lease recorded is answered as recorded and not run again; the next step runs and the job completes", async () => {
    await using s = await world(transport);
    await s.client.enqueue({ id: "job-1" });
    // Lease 1 charged, recorded it, and died before its email.
    await s.other.claim("job-1", { owner: "crashed", ttlMs: TTL });
    await s.other.step("job-1", "charge", { owner: "crashed", fence: 1, result: { charge: "ch_1" } });
    s.clock.now += TTL;
    const runs: string[] = [];
    const done = await withLease(s.client, "job-1", async ({ step, fence }) => {
      const charge = await step("charge", () => (runs.push("charge"), { charge: "ch_again" }));
      const email = await step("email", async () => (runs.push("email"), undefined)); // nothing to record: null
      return { charge, email, fence };
    }, { owner: "A", ttlMs: TTL });
    expect(runs).toEqual(["email"]);
    expect(done).toMatchObject({ status: "done", fence: 2, result: { charge: { charge: "ch_1" }, email: null, fence: 2 } });
    expect(done!.steps).toEqual({ charge: { result: { charge: "ch_1" }, fence: 1, at: T }, email: { result: null, fence: 2, at: T + TTL } });
  });

  test("a step refused as stale throws LeaseLostError, aborts the signal, and nothing is completed, even when the handler catches it", async () => {
    await using s = await world(transport);
    await s.client.enqueue({ id: "job-1" });
    const charges: number[] = [];
    let seen: { caught: unknown; aborted: boolean } | undefined;
    const outcome = await withLease(s.client, "job-1", async ({ step, fence, signal }) => {
      // The worker stalls past its lease; another takes the job over meanwhile.
      s.clock.now += TTL;
      await s.other.claim("job-1", { owner: "B", ttlMs: TTL });
      const caught = await step("charge", () => charges.push(fence)).catch((error: unknown) => error);
      seen = { caught, aborted: signal.aborted };
      return "done anyway";
    }, { owner: "A", ttlMs: TTL }).catch((error: unknown) => error);
    expect(charges).toEqual([1]); // it ran: the provider's idempotency key (job id + step name) makes a second run of it harmless
    expect(seen!.caught).toBeInstanceOf(LeaseLostError);
    expect(seen!.caught).toMatchObject({ reason: "superseded", currentFence: 2 });
    expect(seen!.aborted).toBe(true);
    expect(outcome).toBe(seen!.caught);
    expect(await stepRows(s)).toEqual([]);
    expect(await s.client.get("job-1")).toMatchObject({ status: "leased", owner: "B", fence: 2, result: null, steps: {} });
    expect((await s.eventRows("job-1")).filter((event) => event.kind === "refused")).toEqual([
      { kind: "refused", action: "step", owner: "A", fence: 1, current_owner: "B", current_fence: 2, error: null },
    ]);
  });

  test("a step called twice by name before the first is recorded runs once; a step that throws is run again by a later call", async () => {
    await using s = await world(transport);
    await s.client.enqueue({ id: "job-1" });
    let runs = 0;
    let failures = 0;
    const done = await withLease(s.client, "job-1", async ({ step }) => {
      const both = await Promise.all([step("charge", async () => ++runs), step("charge", async () => ++runs)]);
      const flaky = () => step("flaky", () => {
        if (failures++ === 0) throw new Error("provider timed out");
        return "ok";
      });
      const first = await flaky().catch((error: Error) => error.message);
      return { both, first, second: await flaky() };
    }, { owner: "A", ttlMs: TTL });
    expect(done!.result).toEqual({ both: [1, 1], first: "provider timed out", second: "ok" });
    expect(runs).toBe(1);
  });
});

describe.each(TRANSPORTS)("step in a runWorker handler, %s", (transport) => {
  /** Runs a worker on queue q until `until` holds, then stops it; with the errors it reported. */
  async function runUntil(s: Awaited<ReturnType<typeof world>>, handler: Parameters<typeof runWorker>[2], until: () => Promise<boolean>) {
    const errors: unknown[] = [];
    const worker: WorkerHandle = runWorker(s.client, { queue: "q", owner: "W", concurrency: 2, ttlMs: TTL, waitMs: 0, idleMs: 10, onError: (error) => errors.push(error) }, handler);
    while (!(await until())) await new Promise((resolve) => setTimeout(resolve, 10));
    await worker.stop();
    return errors;
  }

  test("a job taken over resumes after its last recorded step: the charge is not run again, the email is, and the job completes", async () => {
    await using s = await world(transport);
    await s.client.enqueue({ id: "job-1", queue: "q" });
    await s.other.claim("job-1", { owner: "crashed", ttlMs: TTL });
    await s.other.step("job-1", "charge", { owner: "crashed", fence: 1, result: "ch_1" });
    s.clock.now += TTL;
    const runs: string[] = [];
    const errors = await runUntil(s, async ({ step }) => {
      const charge = await step("charge", () => (runs.push("charge"), "ch_again"));
      const email = await step("email", () => (runs.push("email"), "sent"));
      return `${charge} ${email}`;
    }, async () => (await s.other.get("job-1")).status === "done");
    expect(errors).toEqual([]);
    expect(runs).toEqual(["email"]);
    expect(await s.other.get("job-1")).toMatchObject({ fence: 2, result: "ch_1 sent", steps: { charge: { result: "ch_1", fence: 1 }, email: { result: "sent", fence: 2 } } });
  });

  test("a step refused as stale throws LeaseLostError; the handler's result is dropped, the job left to the new lease, and the loss reported", async () => {
    await using s = await world(transport);
    await s.client.enqueue({ id: "job-1", queue: "q" });
    let caught: unknown;
    const errors = await runUntil(s, async ({ step }) => {
      s.clock.now += TTL;
      await s.other.claim("job-1", { owner: "B", ttlMs: TTL });
      caught = await step("charge", () => "ch_1").catch((error: unknown) => error);
      return "done anyway";
    }, async () => caught !== undefined);
    expect(caught).toBeInstanceOf(LeaseLostError);
    expect(errors).toEqual([caught]);
    expect(await s.other.get("job-1")).toMatchObject({ status: "leased", owner: "B", fence: 2, result: null, steps: {} });
    expect(await stepRows(s)).toEqual([]);
  });
});
