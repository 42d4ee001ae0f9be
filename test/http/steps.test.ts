import { describe, expect, test } from "vitest";
import { freshApp, T } from "../fresh-app.ts";

// POST /v1/jobs/{id}/steps/{name} (issue 30): 201 for a step recorded now,
// 200 for one recorded before, 409 stale_lease for any lease but the current
// one, 413 past a job's limits, 400 for a bad name or body; and every job the
// API answers carries its steps.

const TTL = 30_000;
const STEPS_SQL = "SELECT job_id, name, result, fence, at FROM steps ORDER BY job_id, name";

/** job-1 leased by A (fence 1), and what is stored then. */
async function leasedByA() {
  const fresh = await freshApp();
  await fresh.call("POST", "/v1/jobs", { id: "job-1", queue: "q" });
  await fresh.call("POST", "/v1/jobs/job-1/claim", { owner: "A", ttlMs: TTL });
  return fresh;
}

describe("POST /v1/jobs/:id/steps/:name", () => {
  test("201 recorded true for a new step; 200 recorded false with the stored result for the same step sent again", async () => {
    const { call, rows, clock } = await leasedByA();
    const first = await call("POST", "/v1/jobs/job-1/steps/charge", { owner: "A", fence: 1, result: { charge: "ch_1" } });
    expect(first).toMatchObject({ status: 201, body: { recorded: true, step: { name: "charge", result: { charge: "ch_1" }, fence: 1, at: T } } });
    clock.now += 5;
    const again = await call("POST", "/v1/jobs/job-1/steps/charge", { owner: "A", fence: 1, result: { charge: "ch_2" } });
    expect(again).toMatchObject({ status: 200, body: { recorded: false, step: { name: "charge", result: { charge: "ch_1" }, fence: 1, at: T } } });
    expect(await rows(STEPS_SQL)).toEqual([{ job_id: "job-1", name: "charge", result: '{"charge":"ch_1"}', fence: 1, at: T }]);
  });

  test("409 stale_lease with the reason and the current fence for any other lease, even for a step recorded; nothing stored", async () => {
    const { call, rows, clock } = await leasedByA();
    await call("POST", "/v1/jobs/job-1/steps/charge", { owner: "A", fence: 1, result: 1 });
    clock.now += TTL; // A's lease ends; B takes the job over
    expect((await call("POST", "/v1/jobs/job-1/claim", { owner: "B", ttlMs: TTL })).body.job.steps).toEqual({ charge: { result: 1, fence: 1, at: T } });
    const stored = await rows(STEPS_SQL);
    for (const step of ["charge", "email"]) {
      const stale = await call("POST", `/v1/jobs/job-1/steps/${step}`, { owner: "A", fence: 1, result: 2 });
      expect(stale).toEqual({
        status: 409,
        headers: expect.anything(),
        body: { error: { code: "stale_lease", message: 'the lease on job "job-1" is no longer yours (superseded); the current fence is 2', details: { reason: "superseded", currentFence: 2 } } },
      });
    }
    expect(await rows(STEPS_SQL)).toEqual(stored);
  });

  test("404 not_found for an unknown job", async () => {
    const { call } = await freshApp();
    expect(await call("POST", "/v1/jobs/nope/steps/charge", { owner: "A", fence: 1, result: 1 })).toMatchObject({ status: 404, body: { error: { code: "not_found" } } });
  });

  test("413 too_many_steps past 64 steps and steps_too_large past 65,536 bytes, with details.limit; nothing stored", async () => {
    const { call, rows } = await leasedByA();
    for (let i = 0; i < 64; i++) expect((await call("POST", `/v1/jobs/job-1/steps/s-${i}`, { owner: "A", fence: 1, result: i })).status).toBe(201);
    const stored = await rows(STEPS_SQL);
    const tooMany = await call("POST", "/v1/jobs/job-1/steps/s-64", { owner: "A", fence: 1, result: 0 });
    expect(tooMany).toMatchObject({ status: 413, body: { error: { code: "too_many_steps", message: 'job "job-1" has recorded 64 steps, the most a job may; nothing was stored: make fewer, larger steps', details: { limit: 64 } } } });

    await call("POST", "/v1/jobs", { id: "job-2", queue: "q" });
    await call("POST", "/v1/jobs/job-2/claim", { owner: "A", ttlMs: TTL });
    const tooLarge = await call("POST", "/v1/jobs/job-2/steps/report", { owner: "A", fence: 1, result: "x".repeat(65_535) });
    expect(tooLarge).toMatchObject({ status: 413, body: { error: { code: "steps_too_large", details: { limit: 65_536 } } } });
    expect(tooLarge.body.error.message).toContain("would take 65537 bytes as JSON, over the 65536 a job may");
    expect(await rows(STEPS_SQL)).toEqual(stored);
    expect((await call("POST", "/v1/jobs/job-2/steps/report", { owner: "A", fence: 1, result: "x".repeat(65_534) })).status).toBe(201);
  });

  test.each([
    ["a name of 129 bytes", `/v1/jobs/job-1/steps/${"n".repeat(129)}`, { owner: "A", fence: 1, result: 1 }, "name must be at most 128 bytes of UTF-8"],
    ["a name with a control character", "/v1/jobs/job-1/steps/a%0Ab", { owner: "A", fence: 1, result: 1 }, "name must not contain control characters"],
    ["no result", "/v1/jobs/job-1/steps/charge", { owner: "A", fence: 1 }, "result is required: any JSON value"],
    ["no fence", "/v1/jobs/job-1/steps/charge", { owner: "A", result: 1 }, "fence is required"],
    ["an unknown field", "/v1/jobs/job-1/steps/charge", { owner: "A", fence: 1, result: 1, ttlMs: 5 }, 'unknown field "ttlMs"'],
  ])("400 invalid_request for %s, and nothing stored", async (_, path, body, message) => {
    const { call, rows } = await leasedByA();
    const answer = await call("POST", path, body);
    expect(answer).toMatchObject({ status: 400, body: { error: { code: "invalid_request" } } });
    expect(answer.body.error.message).toContain(message);
    expect(await rows(STEPS_SQL)).toEqual([]);
  });

  test("a name with any printable character, sent encoded, is the step's name as given", async () => {
    const { call } = await leasedByA();
    const name = "charge/€ 1?";
    expect(await call("POST", `/v1/jobs/job-1/steps/${encodeURIComponent(name)}`, { owner: "A", fence: 1, result: 1 })).toMatchObject({ status: 201, body: { step: { name } } });
    expect((await call("GET", "/v1/jobs/job-1")).body.steps).toEqual({ [name]: { result: 1, fence: 1, at: T } });
  });
});

describe("the steps on every job answered", () => {
  test("GET /v1/jobs/:id, the list, a claim-next and a complete's next each carry the job's steps; a job without steps {}", async () => {
    const { call, clock } = await leasedByA();
    await call("POST", "/v1/jobs", { id: "job-2", queue: "q" });
    await call("POST", "/v1/jobs/job-1/steps/charge", { owner: "A", fence: 1, result: "ch_1" });
    const steps = { charge: { result: "ch_1", fence: 1, at: T } };
    expect((await call("GET", "/v1/jobs/job-1")).body.steps).toEqual(steps);
    expect((await call("GET", "/v1/jobs?queue=q")).body.jobs.map((job: { steps: unknown }) => job.steps)).toEqual([steps, {}]);
    await call("POST", "/v1/jobs/job-1/release", { owner: "A", fence: 1 });
    clock.now += 1;
    const [lease] = (await call("POST", "/v1/queues/q/claim", { owner: "B", ttlMs: TTL })).body.leases;
    expect(lease.job).toMatchObject({ id: "job-1", steps });
    const done = await call("POST", "/v1/jobs/job-1/complete", { owner: "B", fence: 2, result: "ok", next: { limit: 1, ttlMs: TTL } });
    expect(done.body.job.steps).toEqual(steps);
    expect(done.body.leases.map((taken: { job: { id: string; steps: unknown } }) => [taken.job.id, taken.job.steps])).toEqual([["job-2", {}]]);
  });
});
