import { describe, expect, test } from "vitest";
import { freshApp, T } from "../fresh-app.ts";
import { NO_KEY_LIMITS } from "../contract/queues.contract.ts";

// The rate limit over HTTP: PUT and GET of ratePerSecond and burst, claim-next's
// retryAfterMs, a claim by id refused as rate_limited, on the real app with the
// test's clock. Each test builds its own app on a fresh database.

const TTL = 30_000;
const NO_LIMITS = { paused: false, maxLeased: null, ratePerSecond: null, burst: null, ...NO_KEY_LIMITS };

/** An app with `count` jobs q-1… in queue q, and one job in queue other. */
async function withJobs(count: number) {
  const fresh = await freshApp();
  for (let i = 1; i <= count; i++) await fresh.call("POST", "/v1/jobs", { id: `q-${i}`, queue: "q" });
  await fresh.call("POST", "/v1/jobs", { id: "other-1", queue: "other" });
  return fresh;
}

describe("PUT /v1/queues/:queue with a rate limit", () => {
  test("PUT sets ratePerSecond and burst with maxLeased, GET and the list read them back, and {} takes them away", async () => {
    const { call } = await withJobs(1);
    const set = await call("PUT", "/v1/queues/q", { maxLeased: 4, ratePerSecond: 2.5, burst: 10 });
    expect(set).toMatchObject({ status: 200, body: { queue: "q", paused: false, maxLeased: 4, ratePerSecond: 2.5, burst: 10 } });
    expect((await call("GET", "/v1/queues/q")).body).toEqual({ queue: "q", paused: false, maxLeased: 4, ratePerSecond: 2.5, burst: 10, ...NO_KEY_LIMITS });
    expect((await call("GET", "/v1/queues")).body.queues).toEqual([{ queue: "other", ...NO_LIMITS }, { queue: "q", paused: false, maxLeased: 4, ratePerSecond: 2.5, burst: 10, ...NO_KEY_LIMITS }]);
    expect((await call("PUT", "/v1/queues/q", { ratePerSecond: 2.5 })).body).toEqual({ queue: "q", paused: false, maxLeased: null, ratePerSecond: 2.5, burst: 3, ...NO_KEY_LIMITS }); // the default burst
    expect((await call("PUT", "/v1/queues/q", {})).body).toEqual({ queue: "q", ...NO_LIMITS });
  });

  test("bad settings are 400 invalid_request that say what is wrong, and change nothing", async () => {
    const { call } = await withJobs(1);
    await call("PUT", "/v1/queues/q", { ratePerSecond: 2, burst: 4 });
    const burstAlone = await call("PUT", "/v1/queues/q", { burst: 3 });
    expect(burstAlone).toMatchObject({ status: 400, body: { error: { code: "invalid_request" } } });
    expect(burstAlone.body.error.message).toMatch(/burst needs ratePerSecond/);
    const tooFine = await call("PUT", "/v1/queues/q", { ratePerSecond: 0.0001 });
    expect(tooFine).toMatchObject({ status: 400, body: { error: { code: "invalid_request" } } });
    expect(tooFine.body.error.message).toMatch(/multiple of 0\.001/);
    for (const bad of [{ ratePerSecond: 0 }, { ratePerSecond: -1 }, { ratePerSecond: "2" }, { ratePerSecond: 1_000_001 }, { ratePerSecond: 1, burst: 0 }, { ratePerSecond: 1, burst: 1.5 }, { ratePerSecond: 1, rate: 2 }]) {
      const refused = await call("PUT", "/v1/queues/q", bad);
      expect(refused, JSON.stringify(bad)).toMatchObject({ status: 400, body: { error: { code: "invalid_request" } } });
    }
    expect((await call("GET", "/v1/queues/q")).body).toEqual({ queue: "q", paused: false, maxLeased: null, ratePerSecond: 2, burst: 4, ...NO_KEY_LIMITS });
  });
});

describe("claim-next and claim by id on a rate-limited queue", () => {
  test("claim-next stops at the bucket and says retryAfterMs; the token comes at its exact instant", async () => {
    const { call, clock } = await withJobs(5);
    await call("PUT", "/v1/queues/q", { ratePerSecond: 2, burst: 2 });
    const first = await call("POST", "/v1/queues/q/claim", { owner: "A", ttlMs: TTL, limit: 5 });
    expect(first.body.leases).toHaveLength(2);
    expect(first.body.retryAfterMs).toBe(500); // short because of the bucket
    expect((await call("POST", "/v1/queues/q/claim", { owner: "A", ttlMs: TTL })).body).toEqual({ leases: [], retryAfterMs: 500 });
    clock.now = T + 499;
    expect((await call("POST", "/v1/queues/q/claim", { owner: "A", ttlMs: TTL })).body).toEqual({ leases: [], retryAfterMs: 1 });
    clock.now = T + 500;
    const next = await call("POST", "/v1/queues/q/claim", { owner: "A", ttlMs: TTL });
    expect(next.body.leases.map((lease: { job: { id: string } }) => lease.job.id)).toEqual(["q-3"]);
    expect(next.body).not.toHaveProperty("retryAfterMs"); // not short: it took what it asked for
    expect((await call("POST", "/v1/queues/other/claim", { owner: "A", ttlMs: TTL, limit: 5 })).body).toEqual({ leases: [expect.anything()] }); // no rate: no retryAfterMs
  });

  test("a claim by id with no token left is 409 not_claimable rate_limited and changes nothing", async () => {
    const { call, clock, snapshot } = await withJobs(2);
    await call("PUT", "/v1/queues/q", { ratePerSecond: 1, burst: 1 });
    expect((await call("POST", "/v1/jobs/q-1/claim", { owner: "A", ttlMs: TTL })).status).toBe(200);
    const before = await snapshot();
    const refused = await call("POST", "/v1/jobs/q-2/claim", { owner: "A", ttlMs: TTL });
    expect(refused).toMatchObject({ status: 409, body: { error: { code: "not_claimable", details: { reason: "rate_limited" } } } });
    expect(refused.body.error.message).toMatch(/rate limit/);
    expect(await snapshot()).toEqual(before);
    clock.now = T + 1_000;
    expect((await call("POST", "/v1/jobs/q-2/claim", { owner: "A", ttlMs: TTL })).status).toBe(200);
  });

  test("complete's next takes no more than the bucket holds", async () => {
    const { call } = await withJobs(4);
    await call("PUT", "/v1/queues/q", { ratePerSecond: 1, burst: 2 });
    const [lease] = (await call("POST", "/v1/queues/q/claim", { owner: "A", ttlMs: TTL })).body.leases;
    const completed = await call("POST", `/v1/jobs/${lease.job.id}/complete`, { owner: "A", fence: lease.fence, result: 1, next: { limit: 3, ttlMs: TTL } });
    expect(completed.body.leases).toHaveLength(1);
  });

  test("after the server's clock steps back an hour, the next token is due 100 ms later by that clock, not in an hour", async () => {
    const { call, clock } = await withJobs(12); // due at T
    const HOUR = 60 * 60 * 1000;
    const BACK = T + HOUR; // the clock read T + 2 h, then an NTP correction put it an hour back
    clock.now = T + 2 * HOUR;
    await call("PUT", "/v1/queues/q", { ratePerSecond: 10 }); // burst 10
    expect((await call("POST", "/v1/queues/q/claim", { owner: "A", ttlMs: TTL, limit: 11 })).body.leases).toHaveLength(10);
    clock.now = BACK;
    expect((await call("POST", "/v1/queues/q/claim", { owner: "A", ttlMs: TTL })).body).toEqual({ leases: [], retryAfterMs: 100 });
    const byId = await call("POST", "/v1/jobs/q-9/claim", { owner: "B", ttlMs: TTL });
    expect(byId).toMatchObject({ status: 409, body: { error: { details: { reason: "rate_limited" } } } });
    clock.now = BACK + 100;
    const next = await call("POST", "/v1/queues/q/claim", { owner: "A", ttlMs: TTL });
    expect(next.body.leases.map((lease: { job: { id: string }; until: number }) => [lease.job.id, lease.until])).toEqual([["q-8", BACK + 100 + TTL]]);
    clock.now = BACK + 200;
    expect((await call("POST", "/v1/jobs/q-9/claim", { owner: "B", ttlMs: TTL })).status).toBe(200);
  });

  test("a long poll whose next token comes after its waitMs answers at once, with retryAfterMs", async () => {
    const { call } = await withJobs(2);
    await call("PUT", "/v1/queues/q", { ratePerSecond: 0.001, burst: 1 }); // a token every 1000 s
    await call("POST", "/v1/queues/q/claim", { owner: "A", ttlMs: TTL });
    const started = performance.now();
    const answer = await call("POST", "/v1/queues/q/claim", { owner: "A", ttlMs: TTL, waitMs: 5_000 });
    expect(answer.body).toMatchObject({ leases: [], retryAfterMs: 1_000_000 });
    expect(answer.body.waitedMs).toBeLessThan(1_000);
    expect(performance.now() - started).toBeLessThan(1_000); // not held for its 5 s to no purpose
  });
});

describe("the OpenAPI document", () => {
  test("describes the rate limit's settings, retryAfterMs and the rate_limited refusal", async () => {
    const { call } = await freshApp();
    const { body } = await call("GET", "/openapi.json");
    const keySettings = ["maxLeasedPerKey", "keyRatePerSecond", "keyBurst", "orderedByKey", "fairByKey"];
    expect(Object.keys(body.components.schemas.QueueSettings.properties)).toEqual(["queue", "paused", "maxLeased", "ratePerSecond", "burst", ...keySettings]);
    expect(Object.keys(body.components.schemas.QueueSettingsBody.properties)).toEqual(["maxLeased", "ratePerSecond", "burst", ...keySettings]);
    const claimNext = body.paths["/v1/queues/{queue}/claim"].post.responses["200"].content["application/json"].schema;
    expect(JSON.stringify(claimNext)).toContain("retryAfterMs");
    expect(body.paths["/v1/jobs/{id}/claim"].post.responses["409"].description).toContain("rate_limited");
  });
});
