import { describe, expect, test } from "vitest";
import { freshApp, T, TOKEN } from "../fresh-app.ts";
import { documentSchemas, servedDocument } from "./document-schemas.ts";
import { NO_KEY_LIMITS } from "../contract/queues.contract.ts";

// The queue controls over HTTP: pause, resume and maxLeased, on the real app.
// Each test builds its own app on a fresh database.

const TTL = 30_000;

/** An app with `count` jobs q-1… in queue q and one job in queue other. */
async function withJobs(count: number) {
  const fresh = await freshApp();
  for (let i = 1; i <= count; i++) await fresh.call("POST", "/v1/jobs", { id: `q-${i}`, queue: "q" });
  await fresh.call("POST", "/v1/jobs", { id: "other-1", queue: "other" });
  return fresh;
}

describe("POST /v1/queues/:queue/pause and /resume", () => {
  test("pause answers the settings; claim-next then takes nothing and a claim by id is 409 not_claimable paused", async () => {
    const { call, snapshot } = await withJobs(2);
    expect(await call("POST", "/v1/queues/q/pause")).toMatchObject({ status: 200, body: { queue: "q", paused: true, maxLeased: null } });
    const before = await snapshot();
    expect((await call("POST", "/v1/queues/q/claim", { owner: "A", ttlMs: TTL, limit: 5 })).body).toEqual({ leases: [] });
    const refused = await call("POST", "/v1/jobs/q-1/claim", { owner: "A", ttlMs: TTL });
    expect(refused).toMatchObject({ status: 409, body: { error: { code: "not_claimable", details: { reason: "paused" } } } });
    expect(await snapshot()).toEqual(before);
    expect((await call("POST", "/v1/queues/other/claim", { owner: "A", ttlMs: TTL })).body.leases).toHaveLength(1); // the bystander
  });

  test("a lease held when the queue was paused is still renewed and completed, and its next takes nothing", async () => {
    const { call } = await withJobs(2);
    const { body } = await call("POST", "/v1/queues/q/claim", { owner: "A", ttlMs: TTL });
    const [lease] = body.leases;
    await call("POST", "/v1/queues/q/pause");
    expect((await call("POST", `/v1/jobs/${lease.job.id}/renew`, { owner: "A", fence: lease.fence, ttlMs: TTL })).status).toBe(200);
    const completed = await call("POST", `/v1/jobs/${lease.job.id}/complete`, { owner: "A", fence: lease.fence, result: 1, next: { limit: 2, ttlMs: TTL } });
    expect(completed).toMatchObject({ status: 200, body: { job: { status: "done" }, leases: [] } });
  });

  test("resume lets claims take the queue's jobs again; stats and metrics show whether a queue is paused", async () => {
    const { call } = await withJobs(1);
    await call("POST", "/v1/queues/q/pause");
    expect((await call("GET", "/v1/stats")).body.queues).toMatchObject([{ queue: "other", paused: false }, { queue: "q", paused: true }]);
    expect((await call("GET", "/metrics")).body).toContain('fencelease_queue_paused{queue="q"} 1');
    expect((await call("GET", "/metrics")).body).toContain('fencelease_queue_paused{queue="other"} 0');
    expect(await call("POST", "/v1/queues/q/resume")).toMatchObject({ status: 200, body: { queue: "q", paused: false } });
    expect((await call("POST", "/v1/queues/q/claim", { owner: "A", ttlMs: TTL })).body.leases).toHaveLength(1);
    expect((await call("GET", "/metrics")).body).toContain('fencelease_queue_paused{queue="q"} 0');
  });

  test("a paused queue without jobs is in stats and metrics with zero counts", async () => {
    const { call } = await freshApp();
    await call("POST", "/v1/queues/idle/pause");
    expect((await call("GET", "/v1/stats")).body.queues).toEqual([
      { queue: "idle", jobs: { queued: 0, scheduled: 0, leased: 0, done: 0, dead: 0, cancelled: 0 }, oldestDueAgeMs: null, refused: { lastHour: 0, total: 0 }, paused: true, topKeys: [] },
    ]);
    const metrics = (await call("GET", "/metrics")).body;
    expect(metrics).toContain('fencelease_queue_paused{queue="idle"} 1');
    expect(metrics).toContain('fencelease_jobs{queue="idle",status="queued"} 0');
    expect(metrics).toContain('fencelease_oldest_due_age_seconds{queue="idle"} 0');
  });

  test("a long poll on a paused queue waits out its waitMs, and a resume wakes it", async () => {
    const { call } = await withJobs(1);
    await call("POST", "/v1/queues/q/pause");
    const waiting = call("POST", "/v1/queues/q/claim", { owner: "A", ttlMs: TTL, waitMs: 5_000 });
    await new Promise((resolve) => setTimeout(resolve, 50));
    await call("POST", "/v1/queues/q/resume");
    expect((await waiting).body.leases.map((lease: { job: { id: string } }) => lease.job.id)).toEqual(["q-1"]);
  });
});

describe("PUT /v1/queues/:queue, GET /v1/queues/:queue and GET /v1/queues", () => {
  test("a queue path with a malformed % escape (%ZZ, %, %E0%A4%A) names the queue of that very text (the Worker in objects mode answers the same)", async () => {
    const { call } = await freshApp();
    for (const queue of ["%ZZ", "%", "%E0%A4%A"]) {
      expect(await call("POST", `/v1/queues/${queue}/jobs`, { jobs: [{ id: `escaped-${queue}` }] })).toMatchObject({ status: 200, body: { jobs: [{ id: `escaped-${queue}`, created: true }] } });
      expect((await call("GET", `/v1/jobs/${encodeURIComponent(`escaped-${queue}`)}`)).body).toMatchObject({ queue, status: "queued" });
    }
    expect(await call("POST", "/v1/jobs", '{"id":"lone","queue":"\\ud800"}')).toMatchObject({ status: 400, body: { error: { message: "queue must be well-formed text without NUL characters" } } });
    expect((await call("GET", "/v1/jobs/lone")).status).toBe(404);
  });
  test("a queue never set is not paused and has no limit; PUT sets maxLeased and GET reads it back", async () => {
    const { call } = await withJobs(1);
    expect((await call("GET", "/v1/queues/q")).body).toEqual({ queue: "q", paused: false, maxLeased: null, ratePerSecond: null, burst: null, ...NO_KEY_LIMITS });
    expect(await call("PUT", "/v1/queues/q", { maxLeased: 2 })).toMatchObject({ status: 200, body: { queue: "q", paused: false, maxLeased: 2, ratePerSecond: null, burst: null } });
    expect((await call("GET", "/v1/queues/q")).body).toEqual({ queue: "q", paused: false, maxLeased: 2, ratePerSecond: null, burst: null, ...NO_KEY_LIMITS });
    expect((await call("GET", "/v1/queues")).body).toEqual({
      queues: [{ queue: "other", paused: false, maxLeased: null, ratePerSecond: null, burst: null, ...NO_KEY_LIMITS }, { queue: "q", paused: false, maxLeased: 2, ratePerSecond: null, burst: null, ...NO_KEY_LIMITS }],
    });
    expect((await call("PUT", "/v1/queues/q", {})).body).toEqual({ queue: "q", paused: false, maxLeased: null, ratePerSecond: null, burst: null, ...NO_KEY_LIMITS });
  });

  test("a PUT with no body at all is 400 the body is required, and keeps every limit; the body {} clears them", async () => {
    const { app, call } = await withJobs(1);
    const limited = { queue: "q", paused: false, maxLeased: 3, ratePerSecond: 2, burst: 4, ...NO_KEY_LIMITS };
    await call("PUT", "/v1/queues/q", { maxLeased: 3, ratePerSecond: 2, burst: 4 });
    for (const headers of [{}, { "Content-Length": "0" }]) {
      const bare = await app.request("/v1/queues/q", { method: "PUT", headers: { Authorization: `Bearer ${TOKEN}`, ...headers } });
      expect(bare.status).toBe(400);
      expect(await bare.json()).toEqual({ error: { code: "invalid_request", message: "the body is required: send it as JSON, with the header Content-Type: application/json" } });
    }
    expect((await call("GET", "/v1/queues/q")).body).toEqual(limited);
    expect((await call("PUT", "/v1/queues/q", {})).body).toEqual({ ...limited, maxLeased: null, ratePerSecond: null, burst: null });
  });

  test("a burst that is a number needs a ratePerSecond that is one, by the server and by the document alike", async () => {
    const { call } = await withJobs(1);
    const valid = documentSchemas(await servedDocument()).body("/v1/queues/{queue}", "put");
    const bodies = [{}, { burst: null }, { ratePerSecond: null, burst: null }, { ratePerSecond: 2 }, { ratePerSecond: 2, burst: null }, { ratePerSecond: 2, burst: 5 }, { burst: 5 }, { burst: 5, ratePerSecond: null }];
    const judged = [];
    for (const body of bodies) judged.push({ body, byDocument: valid(body).valid, byServer: (await call("PUT", "/v1/queues/q", body)).status === 200 });
    expect(judged.filter(({ byDocument, byServer }) => byDocument !== byServer)).toEqual([]);
    expect(judged.filter(({ byServer }) => !byServer).map(({ body }) => body)).toEqual([{ burst: 5 }, { burst: 5, ratePerSecond: null }]);
  });

  test("a maxLeased that is not a positive integer is 400 invalid_request and changes nothing", async () => {
    const { call } = await withJobs(1);
    await call("PUT", "/v1/queues/q", { maxLeased: 3 });
    for (const bad of [0, -1, 1.5, "2", true]) {
      expect((await call("PUT", "/v1/queues/q", { maxLeased: bad })).status).toBe(400);
    }
    expect((await call("PUT", "/v1/queues/q", { maxLeased: 3, other: 1 })).status).toBe(400);
    expect((await call("GET", "/v1/queues/q")).body.maxLeased).toBe(3);
  });

  test("claim-next stops at maxLeased exactly, a claim by id past it is 409 not_claimable full, and an expired lease frees its slot", async () => {
    const { call, clock } = await withJobs(3);
    await call("PUT", "/v1/queues/q", { maxLeased: 2 });
    expect((await call("POST", "/v1/queues/q/claim", { owner: "A", ttlMs: TTL, limit: 5 })).body.leases).toHaveLength(2);
    const refused = await call("POST", "/v1/jobs/q-3/claim", { owner: "B", ttlMs: TTL });
    expect(refused).toMatchObject({ status: 409, body: { error: { code: "not_claimable", details: { reason: "full" } } } });
    expect((await call("POST", "/v1/queues/q/claim", { owner: "B", ttlMs: TTL })).body.leases).toEqual([]);
    clock.now = T + TTL;
    expect((await call("POST", "/v1/queues/q/claim", { owner: "B", ttlMs: TTL, limit: 5 })).body.leases).toHaveLength(2);
  });
});
