import { createExecutionContext, env, SELF } from "cloudflare:test";
import { afterEach, beforeEach, describe, expect, test, vi } from "vitest";
import worker from "../../src/worker.ts";
import type { ErrorBody } from "../../src/http/errors.ts";
import { firstRow, housekeeping, MODE, rows } from "./storage-mode.ts";

// The Worker's API in either storage mode (vitest.config.ts runs this file in both).
// T is ahead of the real clock: an object's alarm is armed for the test's times
// and so never rings by itself; the test rings it (housekeeping).
const T = Date.UTC(2031, 0, 1);
const TTL = 30_000;
const DAY = 24 * 60 * 60 * 1000;
const TOKEN = "worker-test-token"; // FENCELEASE_TOKENS in vitest.config.ts

function call(method: string, path: string, body?: unknown): Promise<Response> {
  return SELF.fetch(`https://fencelease.test${path}`, {
    method,
    headers: { Authorization: `Bearer ${TOKEN}`, "Content-Type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
}

/** Arrays nested `depth` levels around 1, as JSON text. */
const nestedText = (depth: number) => `${"[".repeat(depth)}1${"]".repeat(depth)}`;

async function row(id: string, queue = "default") {
  return firstRow(queue, "SELECT owner, until, fence, done, result FROM jobs WHERE id = ?", id);
}

// The Worker reads the runtime's clock; the test moves it by hand.
beforeEach(() => {
  vi.useFakeTimers({ toFake: ["Date"] });
  vi.setSystemTime(T);
});
afterEach(() => vi.useRealTimers());

describe(`the Worker in ${MODE} mode`, () => {
  test("the note's story: A's late complete is refused and B's result stays", async () => {
    expect((await call("POST", "/v1/jobs", { id: "invoice-42" })).status).toBe(201);
    expect(await (await call("POST", "/v1/jobs/invoice-42/claim", { owner: "A", ttlMs: TTL })).json()).toMatchObject({ fence: 1 });
    vi.setSystemTime(T + TTL); // A stalls past its lease
    expect(await (await call("POST", "/v1/jobs/invoice-42/claim", { owner: "B", ttlMs: TTL })).json()).toMatchObject({ fence: 2 });
    expect((await call("POST", "/v1/jobs/invoice-42/complete", { owner: "B", fence: 2, result: "paid by B" })).status).toBe(200);

    const late = await call("POST", "/v1/jobs/invoice-42/complete", { owner: "A", fence: 1, result: "paid by A" });
    expect(late.status).toBe(409);
    expect(((await late.json()) as ErrorBody).error).toMatchObject({ code: "stale_lease", details: { reason: "superseded", currentFence: 2 } });
    expect(await row("invoice-42")).toEqual({ owner: "B", until: T + 2 * TTL, fence: 2, done: 1, result: '"paid by B"' });
  });

  test("a worker's round trips: enqueue 1,000 jobs in one call, renew and complete them by the hundred, each completion taking the next jobs", async () => {
    const jobs = Array.from({ length: 1_000 }, (_, i) => ({ id: `bulk-${String(i).padStart(4, "0")}`, payload: { n: i } }));
    const enqueued = (await (await call("POST", "/v1/queues/bulk/jobs", { jobs })).json()) as { jobs: { created: boolean }[] };
    expect(enqueued.jobs.filter((job) => job.created)).toHaveLength(1_000);
    type Lease = { fence: number; job: { id: string } };
    let held = ((await (await call("POST", "/v1/queues/bulk/claim", { owner: "W", ttlMs: TTL, limit: 100 })).json()) as { leases: Lease[] }).leases;
    let done = 0;
    while (held.length > 0) {
      const renewed = (await (await call("POST", "/v1/leases/renew", { owner: "W", ttlMs: TTL, leases: held.map((lease) => ({ id: lease.job.id, fence: lease.fence })) })).json()) as { leases: { until?: number }[] };
      expect(renewed.leases.every((lease) => lease.until === T + TTL)).toBe(true);
      const answer = await call("POST", "/v1/leases/complete", { owner: "W", leases: held.map((lease) => ({ id: lease.job.id, fence: lease.fence, result: lease.job.id })), next: { queue: "bulk", limit: 100, ttlMs: TTL } });
      expect(answer.status).toBe(200);
      const body = (await answer.json()) as { completed: { done?: true }[]; leases: Lease[] };
      expect(body.completed.every((completion) => completion.done === true)).toBe(true);
      done += body.completed.length;
      held = body.leases;
    }
    expect(done).toBe(1_000);
    const counts = await firstRow("bulk", "SELECT count(*) AS n, sum(result = json_quote(id)) AS right FROM jobs WHERE queue = 'bulk' AND done = 1 AND fence = 1");
    expect(counts).toEqual({ n: 1_000, right: 1_000 });
  });

  test("32 concurrent claims of one job: exactly one 200, 31 409s", async () => {
    await call("POST", "/v1/jobs", { id: "contended" });
    const responses = await Promise.all(
      Array.from({ length: 32 }, (_, i) => call("POST", "/v1/jobs/contended/claim", { owner: `w${i}`, ttlMs: TTL })),
    );
    const statuses = responses.map((response) => response.status);
    expect(statuses.filter((status) => status === 200)).toHaveLength(1);
    expect(statuses.filter((status) => status === 409)).toHaveLength(31);
    expect(await row("contended")).toMatchObject({ owner: `w${statuses.indexOf(200)}`, fence: 1 });
  });

  test("the housekeeping (the cron; a queue's alarm) ends expired leases, keeps their fences, purges old finished jobs, and leaves the rest alone", async () => {
    vi.setSystemTime(T - 8 * DAY); // finished more than RETENTION_MS (7 days) ago
    await call("POST", "/v1/jobs", { id: "finished-long-ago" });
    await call("POST", "/v1/jobs/finished-long-ago/claim", { owner: "A", ttlMs: TTL });
    await call("POST", "/v1/jobs/finished-long-ago/complete", { owner: "A", fence: 1, result: 1 });
    vi.setSystemTime(T);
    for (const id of ["expired", "live", "done"]) await call("POST", "/v1/jobs", { id });
    await call("POST", "/v1/jobs/expired/claim", { owner: "A", ttlMs: 1_000 });
    await call("POST", "/v1/jobs/live/claim", { owner: "A", ttlMs: TTL });
    await call("POST", "/v1/jobs/done/claim", { owner: "A", ttlMs: 1_000 });
    await call("POST", "/v1/jobs/done/complete", { owner: "A", fence: 1, result: 1 });
    const live = await row("live");
    const done = await row("done");

    vi.setSystemTime(T + 1_000);
    await housekeeping(T + 1_000, ["default"]);

    expect(await row("expired")).toEqual({ owner: null, until: 0, fence: 1, done: 0, result: null });
    expect(await row("live")).toEqual(live);
    expect(await row("done")).toEqual(done);
    expect(await row("finished-long-ago")).toBeNull();
    const next = await call("POST", "/v1/jobs/expired/claim", { owner: "B", ttlMs: TTL });
    expect(await next.json()).toMatchObject({ fence: 2 });
    const events = (await (await call("GET", "/v1/jobs/expired/events")).json()) as { events: { kind: string }[] };
    expect(events.events.map((event) => event.kind)).toEqual(["enqueued", "claimed", "expired", "claimed"]);
  });

  test("with no token configured it fails closed: 503, naming the secret to set", async () => {
    const ctx = createExecutionContext();
    const response = await worker.fetch(
      new Request("https://fencelease.test/v1/jobs/x", { headers: { Authorization: "Bearer anything" } }) as never,
      { ...env, FENCELEASE_TOKENS: undefined },
      ctx,
    );
    expect(response.status).toBe(503);
    expect(((await response.json()) as ErrorBody).error.message).toContain("wrangler secret put FENCELEASE_TOKENS");
    expect((await SELF.fetch("https://fencelease.test/v1/jobs/x")).status).toBe(401); // and with one, a token is needed
  });

  test("with auth off (npm run dev) it answers this machine only: a foreign Host or a cross-site Origin is 403", async () => {
    const devEnv = { ...env, FENCELEASE_TOKENS: undefined, FENCELEASE_AUTH: "off" };
    const ask = (url: string, headers: Record<string, string> = {}) => worker.fetch(new Request(url, { headers }) as never, devEnv, createExecutionContext());
    expect((await ask("http://127.0.0.1:8787/v1/jobs/x")).status).toBe(404);
    expect((await ask("http://rebound.example:8787/v1/jobs/x")).status).toBe(403);
    const crossSite = await ask("http://localhost:8787/v1/jobs/x", { Origin: "https://evil.example" });
    expect(crossSite.status).toBe(403);
    expect(((await crossSite.json()) as ErrorBody).error.code).toBe("forbidden");
  });

  test("a payload integer beyond 2^53 is refused with 400 naming the field, as on Node", async () => {
    const response = await SELF.fetch("https://fencelease.test/v1/jobs", {
      method: "POST",
      headers: { Authorization: `Bearer ${TOKEN}`, "Content-Type": "application/json" },
      body: '{"id":"big","payload":{"order":12345678901234567891}}',
    });
    expect(response.status).toBe(400);
    expect(((await response.json()) as ErrorBody).error.message).toMatch(/^payload\.order is a number that cannot be kept exactly/);
    expect(await row("big")).toBeNull();
  });

  test("one depth for JSON, as on Node: a body nested 500,000 levels is refused as it is read, a payload nested 65 is refused naming it, one nested 64 is kept", async () => {
    const send = (body: string) => SELF.fetch("https://fencelease.test/v1/jobs", { method: "POST", headers: { Authorization: `Bearer ${TOKEN}`, "Content-Type": "application/json" }, body });
    const deep = await send(`{"id":"depth-500000","queue":"depth","payload":${nestedText(500_000)}}`);
    expect(deep.status).toBe(400);
    expect(((await deep.json()) as ErrorBody).error).toEqual({
      code: "invalid_request",
      message: "the body must nest at most 68 levels of arrays and objects (a payload, result or progress at most 64); flatten it, or send its deep part as a string",
    });
    const over = await send(`{"id":"depth-65","queue":"depth","payload":${nestedText(65)}}`);
    expect(over.status).toBe(400);
    expect(((await over.json()) as ErrorBody).error.message).toBe("payload must nest at most 64 levels of arrays and objects; flatten it, or send its deep part as a string");
    expect(await row("depth-500000", "depth")).toBeNull();
    expect(await row("depth-65", "depth")).toBeNull();
    expect((await send(`{"id":"depth-64","queue":"depth","payload":${nestedText(64)}}`)).status).toBe(201);
    expect(((await (await call("GET", "/v1/jobs/depth-64")).json()) as { payload: unknown }).payload).toEqual(JSON.parse(nestedText(64)));
  });

  test("a job stored nested deeper before the limit, beside an object with a numeric key: its reads, the page and a claim of 2 answer 200 with its payload as text, and the claim holds", async () => {
    expect((await call("POST", "/v1/jobs", { id: "stored-deep", queue: "old", payload: 1 })).status).toBe(201);
    expect((await call("POST", "/v1/jobs", { id: "stored-numeric", queue: "old", payload: { 1: "one" } })).status).toBe(201);
    const deep = nestedText(100_000);
    await rows("old", "UPDATE jobs SET payload = ?1 WHERE id = 'stored-deep'", deep); // as an earlier version stored it

    const read = await call("GET", "/v1/jobs/stored-deep");
    expect(read.status).toBe(200);
    expect(((await read.json()) as { payload: unknown }).payload).toBe(deep);
    const page = await call("GET", "/v1/jobs?queue=old");
    expect(page.status).toBe(200);
    expect(((await page.json()) as { jobs: { id: string }[] }).jobs.map((job) => job.id)).toEqual(["stored-deep", "stored-numeric"]);
    const claim = await call("POST", "/v1/queues/old/claim", { owner: "A", ttlMs: TTL, limit: 2 });
    expect(claim.status).toBe(200);
    const leases = ((await claim.json()) as { leases: { fence: number; job: { id: string; payload: unknown } }[] }).leases;
    expect(leases.map((lease) => lease.job.id)).toEqual(["stored-deep", "stored-numeric"]);
    expect(leases[0]!.job.payload).toBe(deep);
    const { fence } = leases[0]!; // the fence floor, which other tests of this file may have raised, plus one
    expect(await row("stored-deep", "old")).toMatchObject({ owner: "A", fence });
    expect((await call("POST", "/v1/jobs/stored-deep/complete", { owner: "A", fence, result: "read" })).status).toBe(200);
  });

  test("a queue's limits put with no body at all are 400 the body is required, and stay, as on Node", async () => {
    expect((await call("PUT", "/v1/queues/limited", { maxLeased: 3 })).status).toBe(200);
    const bare = await SELF.fetch("https://fencelease.test/v1/queues/limited", { method: "PUT", headers: { Authorization: `Bearer ${TOKEN}` } });
    expect(bare.status).toBe(400);
    expect(((await bare.json()) as ErrorBody).error.message).toBe("the body is required: send it as JSON, with the header Content-Type: application/json");
    expect(((await (await call("GET", "/v1/queues/limited")).json()) as { maxLeased: number }).maxLeased).toBe(3);
  });

  test("a queue path with a malformed % escape (%ZZ, %, %E0%A4%A) names the queue of that very text, as on Node; a body's queue of a lone surrogate is 400", async () => {
    for (const queue of ["%ZZ", "%", "%E0%A4%A"]) {
      const response = await call("POST", `/v1/queues/${queue}/jobs`, { jobs: [{ id: `escaped-${queue}` }] });
      expect(response.status, queue).toBe(200);
      expect(await response.json()).toEqual({ jobs: [{ id: `escaped-${queue}`, created: true }] });
      expect(await (await call("GET", `/v1/jobs/${encodeURIComponent(`escaped-${queue}`)}`)).json()).toMatchObject({ queue, status: "queued" });
    }
    const surrogate = await SELF.fetch("https://fencelease.test/v1/jobs", {
      method: "POST",
      headers: { Authorization: `Bearer ${TOKEN}`, "Content-Type": "application/json" },
      body: '{"id":"lone","queue":"\\ud800"}',
    });
    expect(surrogate.status).toBe(400);
    expect(((await surrogate.json()) as ErrorBody).error).toEqual({ code: "invalid_request", message: "queue must be well-formed text without NUL characters" });
    expect((await call("GET", "/v1/jobs/lone")).status).toBe(404);
    const next = await SELF.fetch("https://fencelease.test/v1/leases/complete", {
      method: "POST",
      headers: { Authorization: `Bearer ${TOKEN}`, "Content-Type": "application/json" },
      body: '{"owner":"W","leases":[],"next":{"queue":"\\ud800","ttlMs":1000}}',
    });
    expect(next.status).toBe(400);
  });

  test("healthz answers while the storage does", async () => {
    expect(await (await SELF.fetch("https://fencelease.test/healthz")).json()).toEqual({ ok: true });
  });
});
