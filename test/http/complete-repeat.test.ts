import { expect, test } from "vitest";
import { freshApp } from "../fresh-app.ts";

// The same completion sent again answers 200 again (docs/http-api.md); with
// `next`, the repeat must lease nothing more: it is most often a resend after a
// lost answer, and the caller would never hear of what it took.

test("the same completion with next sent again takes nothing more", async () => {
  const { call } = await freshApp();
  for (const id of ["a", "b", "c"]) await call("POST", "/v1/jobs", { id, queue: "q" });
  await call("POST", "/v1/jobs/a/claim", { owner: "w", ttlMs: 10_000 });
  const completion = { owner: "w", fence: 1, result: 1, next: { limit: 1, ttlMs: 10_000 } };
  const first = await call("POST", "/v1/jobs/a/complete", completion);
  const again = await call("POST", "/v1/jobs/a/complete", completion);
  expect(first.body.leases.map((lease: any) => lease.job.id)).toEqual(["b"]);
  expect(again.status).toBe(200);
  expect(again.body.leases.map((lease: any) => lease.job.id)).toEqual([]);
  expect((await call("GET", "/v1/jobs/c")).body.status).toBe("queued");
});
