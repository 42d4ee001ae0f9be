import { describe, expect, test } from "vitest";
import { freshApp, T } from "../fresh-app.ts";

// The schedule routes on the real app over a fresh database, the app's clock
// moved by hand. Firing is the maintenance's (test/store/maintenance.test.ts); here
// a fire is asked of the store directly, to see what a put leads to.

const nightly = { queue: "reports", cron: "0 3 * * *", timezone: "Europe/Paris", payload: { kind: "nightly" }, priority: 1, maxAttempts: 4 };
const NEXT_3_PARIS = Date.UTC(1970, 0, 1, 2, 0); // T is 1970-01-01T00:16:40Z; 03:00 in Paris (UTC+1) is 02:00Z

describe("PUT /v1/schedules/:name", () => {
  test("creates a schedule: 201 with the schedule, its next fire the first after the server's now", async () => {
    const { call } = await freshApp();
    const answer = await call("PUT", "/v1/schedules/nightly", nightly);
    expect(answer).toMatchObject({ status: 201 });
    expect(answer.body).toEqual({
      name: "nightly", queue: "reports", cron: "0 3 * * *", everyMs: null, timezone: "Europe/Paris", payload: { kind: "nightly" },
      priority: 1, maxAttempts: 4, key: null, nextFireAt: NEXT_3_PARIS, lastFireAt: null, lastFireTaken: false, createdAt: T, updatedAt: T,
    });
  });

  test("replaces an existing one: 200, createdAt kept; a fire then enqueues the job as replaced", async () => {
    const { call, clock, store } = await freshApp();
    await call("PUT", "/v1/schedules/nightly", nightly);
    clock.now = T + 5_000;
    const answer = await call("PUT", "/v1/schedules/nightly", { queue: "other", everyMs: 60_000 });
    expect(answer).toMatchObject({ status: 200, body: { name: "nightly", queue: "other", cron: null, everyMs: 60_000, timezone: null, payload: null, createdAt: T, updatedAt: T + 5_000, nextFireAt: T + 60_000 } });
    expect((await store.schedules.fireDue({ now: T + 60_000 })).jobs).toEqual([{ id: `nightly@${new Date(T + 60_000).toISOString()}`, queue: "other" }]);
    expect((await call("GET", `/v1/jobs/${encodeURIComponent(`nightly@${new Date(T + 60_000).toISOString()}`)}`)).body).toMatchObject({ queue: "other", runAt: T + 60_000 });
  });

  const refusals: [string, string, Record<string, unknown>, RegExp][] = [
    ["a bad cron expression", "nightly", { queue: "q", cron: "0 25 * * *" }, /^cron "0 25 \* \* \*" is not a cron expression \(Invalid value for hour: 25\); give five fields/],
    ["a cron with seconds", "nightly", { queue: "q", cron: "0 0 3 * * *" }, /^cron .* give five fields/],
    ["a cron that never fires", "nightly", { queue: "q", cron: "0 0 31 2 *" }, /^cron "0 0 31 2 \*" never fires/],
    ["an unknown timezone", "nightly", { queue: "q", cron: "0 3 * * *", timezone: "Mars/Olympus" }, /^timezone "Mars\/Olympus" is not a time zone this server knows; give an IANA name/],
    ["both cron and everyMs", "nightly", { queue: "q", cron: "0 3 * * *", everyMs: 60_000 }, /^give cron or everyMs, not both$/],
    ["neither cron nor everyMs", "nightly", { queue: "q" }, /^give cron \(a cron expression/],
    ["everyMs under 1000", "nightly", { queue: "q", everyMs: 999 }, /^everyMs must be at least 1000/],
    ["a timezone with everyMs", "nightly", { queue: "q", everyMs: 60_000, timezone: "UTC" }, /^timezone goes with cron only/],
    ["a name with @", "night@ly", { queue: "q", everyMs: 60_000 }, /^name must not contain "@"/],
    ["a name too long for its jobs' ids", "x".repeat(231), { queue: "q", everyMs: 60_000 }, /^name must be at most 230 bytes/],
    ["a name with a control character", "night\u0007ly", { queue: "q", everyMs: 60_000 }, /^name must not contain control characters/],
    ["no queue", "nightly", { everyMs: 60_000 }, /^queue is required/],
    ["an unknown field", "nightly", { queue: "q", everyMs: 60_000, every: 5 }, /^unknown field "every"/],
    ["a cron that is not a string", "nightly", { queue: "q", cron: 5 }, /^cron must be a string/],
  ];
  for (const [what, name, body, message] of refusals) {
    test(`${what}: 400 invalid_request naming the field, and nothing changes`, async () => {
      const { call } = await freshApp();
      await call("PUT", "/v1/schedules/nightly", nightly);
      const before = (await call("GET", "/v1/schedules")).body;
      const answer = await call("PUT", `/v1/schedules/${encodeURIComponent(name)}`, body);
      expect(answer.status).toBe(400);
      expect(answer.body.error.code).toBe("invalid_request");
      expect(answer.body.error.message).toMatch(message);
      expect((await call("GET", "/v1/schedules")).body).toEqual(before);
    });
  }
});

describe("GET /v1/schedules, GET and DELETE /v1/schedules/:name", () => {
  test("lists the schedules by name and reads one", async () => {
    const { call } = await freshApp();
    expect((await call("GET", "/v1/schedules")).body).toEqual({ schedules: [] });
    for (const name of ["weekly", "hourly", "nightly"]) await call("PUT", `/v1/schedules/${name}`, { queue: "q", everyMs: 3_600_000 });
    const listed = await call("GET", "/v1/schedules");
    expect(listed.status).toBe(200);
    expect(listed.body.schedules.map((schedule: { name: string }) => schedule.name)).toEqual(["hourly", "nightly", "weekly"]);
    expect(await call("GET", "/v1/schedules/nightly")).toMatchObject({ status: 200, body: listed.body.schedules[1] });
  });

  test("an unknown name: GET and DELETE answer 404 not_found naming it", async () => {
    const { call } = await freshApp();
    for (const method of ["GET", "DELETE"]) {
      expect(await call(method, "/v1/schedules/nope")).toMatchObject({ status: 404, body: { error: { code: "not_found", message: 'no schedule has the name "nope"' } } });
    }
  });

  test("DELETE answers 204 with no body; the schedule is gone and never fires, its jobs stay", async () => {
    const { call, store } = await freshApp();
    await call("PUT", "/v1/schedules/beat", { queue: "q", everyMs: 1_000 });
    await store.schedules.fireDue({ now: T + 1_000 });
    const answer = await call("DELETE", "/v1/schedules/beat");
    expect(answer).toMatchObject({ status: 204, body: "" });
    expect((await call("GET", "/v1/schedules")).body).toEqual({ schedules: [] });
    expect(await store.schedules.fireDue({ now: T + 10_000 })).toEqual({ jobs: [], taken: [], skipped: [], nextFireAt: null });
    expect((await call("GET", "/v1/jobs")).body.jobs.map((job: { id: string }) => job.id)).toEqual([`beat@${new Date(T + 1_000).toISOString()}`]);
  });
});

describe("a schedule's fires cannot be taken by a client", () => {
  const fireId = `beat@${new Date(T + 60_000).toISOString()}`;

  test("POST /v1/jobs and POST /v1/queues/:queue/jobs with an id shaped as a fire answer 400 invalid_request saying why, and enqueue nothing", async () => {
    const { call, snapshot } = await freshApp();
    await call("PUT", "/v1/schedules/beat", { queue: "q", everyMs: 60_000 });
    const one = await call("POST", "/v1/jobs", { id: fireId, queue: "q" });
    expect(one).toMatchObject({ status: 400, body: { error: { code: "invalid_request" } } });
    expect(one.body.error.message).toBe(
      `id ${JSON.stringify(fireId)} has the shape of a schedule's fire ({name}@{ISO time}), which only the fires of schedule "beat" may take; give the job another id`,
    );
    const many = await call("POST", "/v1/queues/q/jobs", { jobs: [{ id: "fine" }, { id: fireId }] });
    expect(many).toMatchObject({ status: 400, body: { error: { code: "invalid_request" } } });
    expect(many.body.error.message).toMatch(/^jobs\[1\]\.id ".*" has the shape of a schedule's fire/);
    expect(await snapshot()).toEqual({});
  });

  test("GET /v1/schedules/:name says whether its last fire found its id taken", async () => {
    const { call, store, exec } = await freshApp();
    await call("PUT", "/v1/schedules/beat", { queue: "q", everyMs: 60_000 });
    await exec(`INSERT INTO jobs (id, queue, created_at, updated_at) VALUES ('${fireId}', 'q', ${T}, ${T})`); // a job of that id from before
    expect(await store.schedules.fireDue({ now: T + 60_000 })).toMatchObject({ jobs: [], taken: [{ name: "beat", id: fireId }] });
    expect((await call("GET", "/v1/schedules/beat")).body).toMatchObject({ lastFireAt: T + 60_000, lastFireTaken: true });
  });
});
