import { SELF } from "cloudflare:test";
import { describe, expect, test } from "vitest";
import { rows } from "../storage-mode.ts";

// Concurrent claimers through the Worker in objects mode: every claim of a
// queue is decided in that queue's one object, one statement at a time, so
// each job has one winner and the queue's limits hold however many ask at once.

const TOKEN = "worker-test-token"; // FENCELEASE_TOKENS in vitest.config.ts
const TTL = 60_000;

type Lease = { fence: number; job: { id: string } };

function call(method: string, path: string, body?: unknown): Promise<Response> {
  return SELF.fetch(`https://fencelease.test${path}`, {
    method,
    headers: { Authorization: `Bearer ${TOKEN}`, "Content-Type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
}

async function claims(queue: string, count: number, body: Record<string, unknown> = {}): Promise<{ leases: Lease[]; retryAfterMs?: number }[]> {
  const responses = await Promise.all(Array.from({ length: count }, (_, i) => call("POST", `/v1/queues/${queue}/claim`, { owner: `w${i}`, ttlMs: TTL, ...body })));
  expect(responses.map((response) => response.status).every((status) => status === 200)).toBe(true);
  return Promise.all(responses.map((response) => response.json() as Promise<{ leases: Lease[]; retryAfterMs?: number }>));
}

describe("concurrent claimers in objects mode", () => {
  test("60 claimers of 3 jobs each, 40 jobs: every job leased exactly once, at fence 1", async () => {
    const jobs = Array.from({ length: 40 }, (_, i) => ({ id: `rc-one-${i}` }));
    await call("POST", "/v1/queues/rc-one/jobs", { jobs });
    const leases = (await claims("rc-one", 60, { limit: 3 })).flatMap((answer) => answer.leases);
    expect(leases).toHaveLength(40);
    expect(new Set(leases.map((lease) => lease.job.id)).size).toBe(40);
    expect(leases.every((lease) => lease.fence === 1)).toBe(true);
    expect(await rows("rc-one", "SELECT count(*) AS n FROM jobs WHERE owner IS NOT NULL AND fence = 1 AND attempts = 1")).toEqual([{ n: 40 }]);
  });

  test("32 claims by id of one job and 32 claim-nexts of its queue at once: one winner", async () => {
    await call("POST", "/v1/jobs", { id: "rc-single", queue: "rc-single" });
    const byId = Array.from({ length: 32 }, (_, i) => call("POST", "/v1/jobs/rc-single/claim", { owner: `id${i}`, ttlMs: TTL }));
    const byQueue = claims("rc-single", 32);
    const statuses = (await Promise.all(byId)).map((response) => response.status);
    const taken = (await byQueue).flatMap((answer) => answer.leases);
    expect(statuses.filter((status) => status === 200).length + taken.length).toBe(1);
    expect(statuses.filter((status) => status !== 200).every((status) => status === 409)).toBe(true);
  });

  test("maxLeased holds however many claim at once", async () => {
    await call("POST", "/v1/queues/rc-full/jobs", { jobs: Array.from({ length: 20 }, (_, i) => ({ id: `rc-full-${i}` })) });
    await call("PUT", "/v1/queues/rc-full", { maxLeased: 3 });
    const leases = (await claims("rc-full", 30, { limit: 2 })).flatMap((answer) => answer.leases);
    expect(leases).toHaveLength(3);
    expect(await rows("rc-full", "SELECT count(*) AS n FROM jobs WHERE owner IS NOT NULL")).toEqual([{ n: 3 }]);
  });

  test("the rate limit holds however many claim at once: a burst of 5, then each told when the next token is due", async () => {
    await call("POST", "/v1/queues/rc-rate/jobs", { jobs: Array.from({ length: 20 }, (_, i) => ({ id: `rc-rate-${i}` })) });
    await call("PUT", "/v1/queues/rc-rate", { ratePerSecond: 0.01, burst: 5 }); // one token per 100 s after the burst
    const answers = await claims("rc-rate", 30);
    expect(answers.flatMap((answer) => answer.leases)).toHaveLength(5);
    const refused = answers.filter((answer) => answer.leases.length === 0);
    expect(refused).toHaveLength(25);
    expect(refused.every((answer) => (answer.retryAfterMs ?? 0) > 90_000)).toBe(true);
  });
});
