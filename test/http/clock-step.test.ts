import { describe, expect, test } from "vitest";
import { freshApp, T } from "../fresh-app.ts";

// A job enqueued through the API while the server's clock was an hour ahead,
// seen after NTP set the clock back (issue 28): the status the API shows, the
// claims, and the waiting claims that its release wakes.

const HOUR = 3_600_000;
const TTL = 30_000;

/** The ids of the jobs a response lists (`leases` or `jobs`). */
const ids = (items: { id?: string; job?: { id: string } }[]) => items.map((item) => item.job?.id ?? item.id);

describe("a job enqueued while the clock was an hour ahead", () => {
  test("reads queued by the corrected clock and claim-next takes it; a delayed one beside it reads scheduled", async () => {
    const { call, clock } = await freshApp();
    clock.now = T + HOUR;
    expect(await call("POST", "/v1/jobs", { id: "ahead", queue: "q" })).toMatchObject({ status: 201, body: { job: { status: "queued", runAt: T + HOUR } } });
    expect(await call("POST", "/v1/jobs", { id: "delayed", queue: "q", delayMs: 60_000 })).toMatchObject({ status: 201, body: { job: { status: "scheduled" } } });
    clock.now = T;

    expect(await call("GET", "/v1/jobs/ahead")).toMatchObject({ status: 200, body: { status: "queued", runAt: T + HOUR, createdAt: T + HOUR } });
    expect((await call("GET", "/v1/jobs/delayed")).body.status).toBe("scheduled");
    expect(ids((await call("GET", "/v1/jobs?queue=q&status=queued")).body.jobs)).toEqual(["ahead"]);
    expect((await call("GET", "/v1/stats")).body.queues).toEqual([
      { queue: "q", jobs: { queued: 1, scheduled: 1, leased: 0, done: 0, dead: 0, cancelled: 0 }, oldestDueAgeMs: 0, refused: { lastHour: 0, total: 0 }, paused: false, topKeys: [] },
    ]);
    expect((await call("GET", "/metrics")).body).toContain('fencelease_jobs{queue="q",status="queued"} 1');

    const claimed = await call("POST", "/v1/queues/q/claim", { owner: "A", ttlMs: TTL, limit: 5 });
    expect(claimed).toMatchObject({ status: 200, body: { leases: [{ job: { id: "ahead", status: "leased" }, fence: 1, until: T + TTL }] } });
    expect((await call("GET", "/v1/jobs/delayed")).body).toMatchObject({ status: "scheduled", owner: null, fence: 0 });
  });

  test("released after the step, it wakes a claim already waiting, at once", async () => {
    const { call, clock } = await freshApp();
    clock.now = T + HOUR;
    await call("POST", "/v1/jobs", { id: "ahead", queue: "q" });
    clock.now = T;
    expect(ids((await call("POST", "/v1/queues/q/claim", { owner: "A", ttlMs: TTL })).body.leases)).toEqual(["ahead"]);

    const waiting = call("POST", "/v1/queues/q/claim", { owner: "B", ttlMs: TTL, waitMs: 10_000 });
    await new Promise((resolve) => setTimeout(resolve, 50)); // B is waiting
    const released = await call("POST", "/v1/jobs/ahead/release", { owner: "A", fence: 1 });
    expect(released).toMatchObject({ status: 200, body: { job: { status: "queued", owner: null } } });
    const started = Date.now();
    const answer = await waiting;
    expect(Date.now() - started).toBeLessThan(5_000); // woken by the release, not by its waitMs
    expect(answer).toMatchObject({ status: 200, body: { leases: [{ job: { id: "ahead", owner: "B" }, fence: 2 }] } });
  }, 15_000);
});
