import { expect, test, vi } from "vitest";
import { freshApp } from "../fresh-app.ts";

// What the API answers of JSON values stored before their depth was checked
// (docs/limits.md): an earlier version took a payload, a progress or a push
// result nested thousands of levels deep, which JSON.parse reads but which no
// answer could then be written with. Every read answers 200, the value shown
// as its text; nothing answers 500.

const TTL = 30_000;
const DEEP = `${"[".repeat(100_000)}1${"]".repeat(100_000)}`;

test("a job whose payload, progress and result were stored nested 100,000 deep is read as their text by every route, beside a numeric key", async () => {
  const { call, rows } = await freshApp();
  await call("POST", "/v1/jobs", { id: "deep", queue: "old" });
  await call("POST", "/v1/jobs", { id: "done", queue: "old" });
  await call("POST", "/v1/jobs", { id: "numeric", queue: "old", payload: { 1: "one" } });
  await call("POST", "/v1/jobs/done/claim", { owner: "A", ttlMs: TTL });
  await call("POST", "/v1/jobs/done/renew", { owner: "A", fence: 1, ttlMs: TTL, progress: 1 });
  await call("POST", "/v1/jobs/done/complete", { owner: "A", fence: 1, result: 1 });
  // As an earlier version stored them.
  await rows("UPDATE jobs SET payload = ?1 WHERE id = 'deep'", [DEEP]);
  await rows("UPDATE jobs SET payload = ?1, progress = ?1, result = ?1 WHERE id = 'done'", [DEEP]);
  const logged = vi.spyOn(console, "error");
  try {
    expect(await call("GET", "/v1/jobs/done")).toMatchObject({ status: 200, body: { payload: DEEP, progress: DEEP, result: DEEP } });
    expect(await call("GET", "/v1/jobs/done?waitMs=10")).toMatchObject({ status: 200, body: { result: DEEP } });
    const page = await call("GET", "/v1/jobs?queue=old");
    expect(page.status).toBe(200);
    expect(page.body.jobs.map((job: { id: string; payload: unknown }) => [job.id, job.payload])).toEqual([["deep", DEEP], ["done", DEEP], ["numeric", { 1: "one" }]]);
    const claimed = await call("POST", "/v1/queues/old/claim", { owner: "B", ttlMs: TTL, limit: 2 });
    expect(claimed.status).toBe(200);
    expect(claimed.body.leases.map((lease: { job: { id: string; payload: unknown } }) => [lease.job.id, lease.job.payload])).toEqual([["deep", DEEP], ["numeric", { 1: "one" }]]);
    expect((await call("GET", "/v1/jobs/done/events")).status).toBe(200);
    expect(logged).not.toHaveBeenCalled();
  } finally {
    logged.mockRestore();
  }
});
