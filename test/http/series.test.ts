import { describe, expect, test } from "vitest";
import { freshApp } from "../fresh-app.ts";

// GET /v1/queues/{queue}/series on the real app (docs/operations.md#series):
// what a queue did, step by step, from the calls of a known mix; refused
// ranges and parameters name what is wrong; a token sees its queues only.

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const TTL = 30_000;
/** When the test begins (the app's clock is set to it), and its minute: the series' steps start at whole minutes. */
const T = Date.UTC(2026, 0, 1) + 30_000;
const M = T - (T % MINUTE);

/** An app whose queue q had, in its first minute, 3 jobs enqueued, 1 completed and 1 failed, and in its second 1 completed and a refused stale write; and queue other 1 job. */
async function withHistory() {
  const fresh = await freshApp();
  const { call, clock } = fresh;
  clock.now = T;
  await call("POST", "/v1/queues/q/jobs", { jobs: [{ id: "a" }, { id: "b" }, { id: "c" }] });
  await call("POST", "/v1/jobs", { id: "x", queue: "other" });
  clock.now = T + 1_000;
  expect((await call("POST", "/v1/queues/q/claim", { owner: "A", ttlMs: TTL, limit: 3 })).status).toBe(200);
  clock.now = T + 3_000;
  expect((await call("POST", "/v1/jobs/a/complete", { owner: "A", fence: 1, result: "ok" })).status).toBe(200);
  expect((await call("POST", "/v1/jobs/b/fail", { owner: "A", fence: 1, error: "boom", retryInMs: 0 })).status).toBe(200);
  clock.now = M + MINUTE + 1_000;
  expect((await call("POST", "/v1/jobs/b/claim", { owner: "B", ttlMs: TTL })).status).toBe(200);
  expect((await call("POST", "/v1/jobs/b/complete", { owner: "A", fence: 1, result: "late" })).status).toBe(409);
  expect((await call("POST", "/v1/jobs/b/complete", { owner: "B", fence: 2, result: "ok" })).status).toBe(200);
  return fresh;
}

const ZERO = { count: 0, p50: null, p90: null, p99: null };

describe("GET /v1/queues/:queue/series", () => {
  test("answers a point a minute with the queue's counts and quantiles, zeros where nothing happened, and none of another queue's", async () => {
    const { call, snapshot } = await withHistory();
    const before = await snapshot();
    const answer = await call("GET", `/v1/queues/q/series?from=${M}&to=${M + 2 * MINUTE}`);
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ queue: "q", step: MINUTE, from: M, to: M + 2 * MINUTE, keptFrom: M + MINUTE - 24 * HOUR });
    expect(answer.body.points).toEqual([
      { at: M, enqueued: 3, completed: 1, failed: 1, expired: 0, dead: 0, refused: 0, wait: { count: 1, p50: 1_750, p90: 2_350, p99: 2_485 }, run: { count: 1, p50: 1_750, p90: 2_350, p99: 2_485 } },
      { at: M + MINUTE, enqueued: 0, completed: 1, failed: 0, expired: 0, dead: 0, refused: 1, wait: expect.objectContaining({ count: 1 }), run: { count: 1, p50: 3, p90: 5, p99: 5 } },
      { at: M + 2 * MINUTE, enqueued: 0, completed: 0, failed: 0, expired: 0, dead: 0, refused: 0, wait: ZERO, run: ZERO },
    ]);
    const other = await call("GET", `/v1/queues/other/series?from=${M}&to=${M}`);
    expect(other.body.points).toEqual([{ at: M, enqueued: 1, completed: 0, failed: 0, expired: 0, dead: 0, refused: 0, wait: ZERO, run: ZERO }]);
    expect(await snapshot()).toEqual(before);
  });

  test("by default answers the last 60 minutes up to now; a step of an hour reads the hours", async () => {
    const { call, clock } = await withHistory();
    const recent = await call("GET", "/v1/queues/q/series");
    expect(recent.body).toMatchObject({ step: MINUTE, from: M + MINUTE - 59 * MINUTE, to: clock.now });
    expect(recent.body.points).toHaveLength(60);
    expect(recent.body.points.slice(-2).map((point: { completed: number }) => point.completed)).toEqual([1, 1]);
    const hours = await call("GET", `/v1/queues/q/series?step=${HOUR}&from=${T - HOUR}`);
    expect(hours.body.points.map(({ enqueued, completed, failed, refused }: Record<string, number>) => ({ enqueued, completed, failed, refused })).at(-1))
      .toEqual({ enqueued: 3, completed: 2, failed: 1, refused: 1 });
  });

  test("a bad range or parameter is a 400 naming it, and changes nothing", async () => {
    const { call, snapshot } = await withHistory();
    const before = await snapshot();
    const refused: [string, RegExp][] = [
      ["step=30000", /step must be a whole number of minutes/],
      ["step=0", /step.*must be at least 1/],
      ["step=abc", /step.*must be a whole number/],
      [`from=${T}&to=${T - MINUTE}`, /from .* must not be after to/],
      [`from=${T - 2 * 24 * HOUR}&to=${T}`, /points; at most 1440: ask for a shorter range or a longer step/],
      ["from=-5", /from.*must be milliseconds since the epoch/],
      ["color=red", /unknown query parameter "color"/],
    ];
    for (const [search, message] of refused) {
      const { status, body } = await call("GET", `/v1/queues/q/series?${search}`);
      expect(status, search).toBe(400);
      expect(body.error.code, search).toBe("invalid_request");
      expect(body.error.message, search).toMatch(message);
    }
    expect(await snapshot()).toEqual(before);
  });

  test("a token limited to one queue reads that queue's series and is refused another's", async () => {
    const { call } = await withHistory();
    const { token } = (await call("POST", "/v1/tokens", { role: "reader", queues: ["other"] })).body;
    const as = { Authorization: `Bearer ${token}` };
    expect((await call("GET", "/v1/queues/other/series", undefined, as)).status).toBe(200);
    const refused = await call("GET", "/v1/queues/q/series", undefined, as);
    expect(refused.status).toBe(403);
    expect(refused.body.error.code).toBe("forbidden");
  });
});
