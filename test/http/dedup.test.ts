import { describe, expect, onTestFinished, test } from "vitest";
import { startServer } from "../../src/node.ts";
import { freshStore } from "../fresh-db.ts";
import { freshApp, T } from "../fresh-app.ts";
import { racers } from "../store/racers.ts";

// Once per key (issue 30) over HTTP: the answers of POST /v1/jobs and
// POST /v1/queues/{queue}/jobs with a dedup key, their status codes, the
// refusals of bad fields, and 64 concurrent enqueues of one key on the Node
// server over a file, and from 4 processes on one file. Each test builds its
// own app on a fresh database.

const MINUTE = 60_000;
const TTL = 30_000;

describe("POST /v1/jobs with a dedup key", () => {
  test("a window: 201 for the first, 200 deduplicated with the holder's job for the next, and its id alone once purged", async () => {
    const { call, clock } = await freshApp();
    expect(await call("POST", "/v1/jobs", { id: "pay-1", queue: "q", dedupKey: "order-7", dedupTtlMs: 10 * MINUTE })).toMatchObject({
      status: 201,
      body: { created: true, job: { id: "pay-1", dedupKey: "order-7", dedupUntil: T + 10 * MINUTE, supersededBy: null } },
    });
    clock.now = T + 1;
    expect(await call("POST", "/v1/jobs", { id: "pay-2", queue: "q", dedupKey: "order-7", dedupTtlMs: 10 * MINUTE })).toMatchObject({
      status: 200,
      body: { created: false, deduplicated: true, job: { id: "pay-1", status: "queued" } },
    });
    expect((await call("POST", "/v1/jobs/pay-1/cancel", {})).status).toBe(200);
    expect((await call("DELETE", "/v1/jobs/pay-1")).status).toBe(200);
    expect(await call("POST", "/v1/jobs", { id: "pay-3", queue: "q", dedupKey: "order-7", dedupTtlMs: MINUTE })).toEqual(
      expect.objectContaining({ status: 200, body: { created: false, deduplicated: true, id: "pay-1" } }),
    );
    expect((await call("GET", "/v1/jobs/pay-3")).status).toBe(404);
  });

  test("a debounce: 200 debounced with the moved job, and the claim gets the last payload", async () => {
    const { call, clock } = await freshApp();
    expect((await call("POST", "/v1/jobs", { id: "save-1", queue: "q", dedupKey: "doc", debounceMs: 500, payload: 1 })).status).toBe(201);
    clock.now = T + 400;
    expect(await call("POST", "/v1/jobs", { id: "save-2", queue: "q", dedupKey: "doc", debounceMs: 500, payload: 2 })).toMatchObject({
      status: 200,
      body: { created: false, debounced: true, job: { id: "save-1", payload: 2, runAt: T + 900 } },
    });
    clock.now = T + 900;
    expect(await call("POST", "/v1/queues/q/claim", { owner: "A", ttlMs: TTL, limit: 5 })).toMatchObject({ status: 200, body: { leases: [{ job: { id: "save-1", payload: 2 } }] } });
  });

  test("a supersede: 201 naming the cancelled job; its holder's complete is 409 stale_lease cancelled, and its lease check says superseded by whom", async () => {
    const { call, clock } = await freshApp();
    await call("POST", "/v1/jobs", { id: "v1", queue: "q", dedupKey: "doc", supersede: true });
    const { fence } = (await call("POST", "/v1/jobs/v1/claim", { owner: "A", ttlMs: TTL })).body;
    clock.now = T + 1;
    expect(await call("POST", "/v1/jobs", { id: "v2", queue: "q", dedupKey: "doc", supersede: true })).toMatchObject({ status: 201, body: { created: true, job: { id: "v2" }, superseded: "v1" } });
    expect(await call("POST", "/v1/jobs/v1/complete", { owner: "A", fence, result: "late" })).toMatchObject({
      status: 409,
      body: { error: { code: "stale_lease", details: { reason: "cancelled", currentFence: fence } } },
    });
    expect(await call("GET", `/v1/jobs/v1/lease?owner=A&fence=${fence}`)).toMatchObject({ status: 200, body: { current: false, reason: "cancelled", supersededBy: "v2" } });
    expect(await call("GET", "/v1/jobs/v1")).toMatchObject({ status: 200, body: { status: "cancelled", result: null, supersededBy: "v2" } });
  });

  test.each([
    [{ dedupKey: "k" }, "dedupKey takes exactly one of dedupTtlMs (a window), debounceMs (a debounce) or supersede: true, got none"],
    [{ dedupKey: "k", dedupTtlMs: 0 }, "must be at least 1 ms"],
    [{ dedupKey: "k", dedupTtlMs: 2_592_000_001 }, "must be at most 2592000000 ms (30 days)"],
    [{ dedupKey: "k", supersede: "yes" }, "must be true or false"],
    [{ debounceMs: 10 }, "debounceMs needs a dedupKey"],
    [{ dedupKey: "k", debounceMs: 10, delayMs: 5 }, "give no runAt or delayMs with it"],
  ])("%j is 400 with a message that says what to change, and nothing is stored", async (fields, message) => {
    const { call, snapshot } = await freshApp();
    const answer = await call("POST", "/v1/jobs", { id: "job", queue: "q", ...fields });
    expect(answer.status).toBe(400);
    expect(answer.body.error.code).toMatch(/^(invalid_argument|bad_request|invalid_request)$/);
    expect(JSON.stringify(answer.body.error)).toContain(message);
    expect(await snapshot()).toEqual({});
  });
});

describe("POST /v1/queues/{queue}/jobs with dedup keys", () => {
  test("answers each job deduplicated with the job that holds its key; a debounce is 400 naming the job", async () => {
    const { call, snapshot } = await freshApp();
    await call("POST", "/v1/jobs", { id: "held", queue: "q", dedupKey: "k1", dedupTtlMs: MINUTE });
    const answer = await call("POST", "/v1/queues/q/jobs", {
      jobs: [
        { id: "a", dedupKey: "k1", dedupTtlMs: MINUTE },
        { id: "b", dedupKey: "k2", dedupTtlMs: MINUTE },
        { id: "c", dedupKey: "k2", dedupTtlMs: MINUTE },
      ],
    });
    expect(answer).toMatchObject({
      status: 200,
      body: { jobs: [{ id: "a", created: false, deduplicated: true, duplicateOf: "held" }, { id: "b", created: true }, { id: "c", created: false, deduplicated: true, duplicateOf: "b" }] },
    });
    const before = await snapshot();
    const refused = await call("POST", "/v1/queues/q/jobs", { jobs: [{ id: "d", dedupKey: "k3", debounceMs: 10 }] });
    expect(refused.status).toBe(400);
    expect(refused.body.error.message).toContain("jobs[0].debounceMs is for one job at a time");
    expect(await snapshot()).toEqual(before);
  });
});

describe("64 concurrent enqueues of one dedup key on the Node server", () => {
  test("create exactly one job; the 63 others answer 200 deduplicated with it", async () => {
    const { url, snapshot } = await freshStore();
    const server = await startServer({ host: "127.0.0.1", port: 0, databaseUrl: url, auth: { tokens: ["race"] } });
    onTestFinished(() => server.stop());
    const answers = await Promise.all(
      Array.from({ length: 64 }, async (_, i) => {
        const response = await fetch(`${server.url}/v1/jobs`, {
          method: "POST",
          headers: { Authorization: "Bearer race", "Content-Type": "application/json" },
          body: JSON.stringify({ id: `charge-${i}`, queue: "pay", dedupKey: "order-7", dedupTtlMs: MINUTE }),
        });
        return { status: response.status, body: (await response.json()) as { created: boolean; job: { id: string } } };
      }),
    );
    const created = answers.filter((answer) => answer.status === 201);
    expect(created).toHaveLength(1);
    const winner = created[0]!.body.job.id;
    expect(answers.filter((answer) => answer.status === 200 && answer.body.job.id === winner)).toHaveLength(63);
    expect(Object.keys(await snapshot())).toEqual([winner]);
  });
});

describe("enqueues of one dedup key from 4 processes on one file", () => {
  test("create exactly one job round after round, each round's key new: 4 x 16 enqueues a key at once", async () => {
    const { url, snapshot } = await freshStore();
    const owners = ["p0", "p1", "p2", "p3"];
    const race = await racers(url, owners, { now: T, ttlMs: TTL });
    for (let round = 0; round < 5; round++) {
      const created = ((await race.all(`enqueue-once pay order-${round} 16`)) as string[][]).flat();
      expect(created, `round ${round}`).toHaveLength(1);
    }
    await race.stop();
    const rows = Object.values(await snapshot());
    expect(rows).toHaveLength(5);
    expect(new Set(rows.map((row) => row.dedup_key))).toEqual(new Set(["order-0", "order-1", "order-2", "order-3", "order-4"]));
  });
});
