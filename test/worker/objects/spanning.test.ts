import { SELF } from "cloudflare:test";
import { describe, expect, test } from "vitest";
import type { ErrorBody } from "../../../src/http/errors.ts";
import { TRANSACTIONS_HEADER } from "../../../src/runtime/cloudflare/spanning.ts";
import { byCodePoint } from "../../../src/store/search.ts";
import { rows } from "../storage-mode.ts";

// The calls that span queues in objects mode: each queue answers its part in
// its own object, and the Worker puts the parts together as one database
// would have answered. Each test uses queues of its own (the listings cover
// every queue of the file, so they look only at their own).

const TOKEN = "worker-test-token"; // FENCELEASE_TOKENS in vitest.config.ts
const TTL = 60_000;

function call(method: string, path: string, body?: unknown): Promise<Response> {
  return SELF.fetch(`https://fencelease.test${path}`, {
    method,
    headers: { Authorization: `Bearer ${TOKEN}`, "Content-Type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
}

async function json<T = Record<string, unknown>>(response: Promise<Response>): Promise<T> {
  return (await (await response).json()) as T;
}

type Lease = { fence: number; job: { id: string; queue: string } };

async function claimAll(queue: string, owner = "W", limit = 10): Promise<Lease[]> {
  return (await json<{ leases: Lease[] }>(call("POST", `/v1/queues/${queue}/claim`, { owner, ttlMs: TTL, limit }))).leases;
}

describe("what spans queues", () => {
  test("GET /v1/queues/{queue}/keys is answered by the queue's object, and /v1/stats carries each queue's top keys", async () => {
    await call("PUT", "/v1/queues/sp-keys", { maxLeasedPerKey: 1 });
    await call("POST", "/v1/queues/sp-keys/jobs", { jobs: [{ id: "sp-keys-a1", key: "A" }, { id: "sp-keys-a2", key: "A" }, { id: "sp-keys-b1", key: "B" }] });
    await call("POST", "/v1/queues/sp-keys-other/jobs", { jobs: [{ id: "sp-keys-o1", key: "A" }] });
    expect((await claimAll("sp-keys")).map((lease) => lease.job.id).sort()).toEqual(["sp-keys-a1", "sp-keys-b1"]);
    const response = await call("GET", "/v1/queues/sp-keys/keys");
    expect(response.status).toBe(200);
    expect(((await response.json()) as { keys: unknown[] }).keys).toEqual([
      { key: "A", waiting: 1, leased: 1, heldBack: "key_full" },
      { key: "B", waiting: 0, leased: 1, heldBack: null },
    ]);
    const { queues } = await json<{ queues: { queue: string; topKeys: unknown[] }[] }>(call("GET", "/v1/stats"));
    expect(queues.filter((stats) => stats.queue.startsWith("sp-keys")).map(({ queue, topKeys }) => ({ queue, topKeys }))).toEqual([
      { queue: "sp-keys", topKeys: [{ key: "A", waiting: 1 }] },
      { queue: "sp-keys-other", topKeys: [{ key: "A", waiting: 1 }] },
    ]);
  });

  test("GET /v1/queues/{queue}/series is answered by the queue's object, with that queue's counts only", async () => {
    await call("POST", "/v1/queues/sp-series/jobs", { jobs: [{ id: "sp-series-1" }, { id: "sp-series-2" }] });
    await call("POST", "/v1/queues/sp-series-other/jobs", { jobs: [{ id: "sp-series-o1" }] });
    const [lease] = await claimAll("sp-series", "W", 1);
    expect((await call("POST", `/v1/jobs/${lease!.job.id}/complete`, { owner: "W", fence: lease!.fence, result: "ok" })).status).toBe(200);
    const response = await call("GET", "/v1/queues/sp-series/series?step=3600000");
    expect(response.status).toBe(200);
    const { points } = (await response.json()) as { points: { enqueued: number; completed: number; run: { count: number } }[] };
    expect(points).toHaveLength(60);
    expect(points.at(-1)).toMatchObject({ enqueued: 2, completed: 1, run: { count: 1 } });
    expect(points.slice(0, -1).every((point) => point.enqueued === 0)).toBe(true);
    const refused = await call("GET", "/v1/queues/sp-series/series?step=1000");
    expect(refused.status).toBe(400);
    expect(((await refused.json()) as ErrorBody).error.code).toBe("invalid_request");
  });

  test("GET /v1/stats, /metrics and GET /v1/queues answer for every queue, by name", async () => {
    await call("POST", "/v1/queues/sp-st-b/jobs", { jobs: [{ id: "sp-st-b1" }, { id: "sp-st-b2" }] });
    await call("POST", "/v1/queues/sp-st-a/jobs", { jobs: [{ id: "sp-st-a1" }] });
    await call("PUT", "/v1/queues/sp-st-c", { maxLeased: 3 });
    await claimAll("sp-st-b");
    const { queues } = await json<{ queues: { queue: string; jobs: Record<string, number> }[] }>(call("GET", "/v1/stats"));
    const mine = queues.filter((stats) => stats.queue.startsWith("sp-st-"));
    expect(mine.map((stats) => [stats.queue, stats.jobs.queued, stats.jobs.leased])).toEqual([["sp-st-a", 1, 0], ["sp-st-b", 0, 2], ["sp-st-c", 0, 0]]); // a queue with settings only too, as on D1
    expect(queues.map((stats) => stats.queue)).toEqual([...queues.map((stats) => stats.queue)].sort(byCodePoint));

    const metrics = await (await call("GET", "/metrics")).text();
    expect(metrics).toContain('fencelease_jobs{queue="sp-st-a",status="queued"} 1');
    expect(metrics).toContain('fencelease_jobs{queue="sp-st-b",status="leased"} 2');

    const listed = (await json<{ queues: { queue: string; maxLeased: number | null }[] }>(call("GET", "/v1/queues"))).queues.filter((settings) => settings.queue.startsWith("sp-st-"));
    expect(listed.map((settings) => [settings.queue, settings.maxLeased])).toEqual([["sp-st-a", null], ["sp-st-b", null], ["sp-st-c", 3]]);
  });

  test("GET /v1/jobs without a queue pages through every queue's jobs in id order, each once, with a status filter", async () => {
    const ids = ["sp-ls-05", "sp-ls-01", "sp-ls-09", "sp-ls-03", "sp-ls-07", "sp-ls-02", "sp-ls-08", "sp-ls-04", "sp-ls-06"];
    await Promise.all(ids.map((id, i) => call("POST", "/v1/jobs", { id, queue: `sp-ls-q${i % 3}` })));
    const seen: { id: string; queue: string }[] = [];
    let cursor = "sp-ls-";
    for (let pages = 0; pages < 20; pages++) {
      const page = await json<{ jobs: { id: string; queue: string }[]; nextCursor: string | null }>(call("GET", `/v1/jobs?limit=2&cursor=${cursor}`));
      seen.push(...page.jobs.filter((job) => job.id.startsWith("sp-ls-")));
      if (page.nextCursor === null || !page.nextCursor.startsWith("sp-ls-")) break;
      expect(page.jobs).toHaveLength(2);
      cursor = page.nextCursor;
    }
    expect(seen.map((job) => job.id)).toEqual([...ids].sort());
    expect(seen.find((job) => job.id === "sp-ls-04")?.queue).toBe("sp-ls-q1");
    const queued = await json<{ jobs: { id: string }[] }>(call("GET", "/v1/jobs?status=leased&cursor=sp-ls-&limit=50"));
    expect(queued.jobs.filter((job) => job.id.startsWith("sp-ls-"))).toEqual([]);
    const one = await json<{ jobs: { id: string }[] }>(call("GET", "/v1/jobs?queue=sp-ls-q2"));
    expect(one.jobs.map((job) => job.id)).toEqual(["sp-ls-02", "sp-ls-06", "sp-ls-09"]);
    const bad = await call("GET", "/v1/jobs?limit=0");
    expect(bad.status).toBe(400);
  });

  test("completeMany over leases of three queues: one transaction per queue, said in the answer, each completion in its place, and next taken from a fourth", async () => {
    for (const queue of ["sp-cm-a", "sp-cm-b", "sp-cm-c"]) await call("POST", `/v1/queues/${queue}/jobs`, { jobs: [{ id: `${queue}-1` }, { id: `${queue}-2` }] });
    await call("POST", "/v1/jobs", { id: "sp-cm-next-1", queue: "sp-cm-next" });
    const leases = [...(await claimAll("sp-cm-a")), ...(await claimAll("sp-cm-b")), ...(await claimAll("sp-cm-c"))];
    const presented = [...leases.map((lease) => ({ id: lease.job.id, fence: lease.fence, result: lease.job.id })), { id: "sp-cm-nobody", fence: 1, result: 0 }];
    presented.push(presented.splice(1, 1)[0]!); // out of queue order
    const response = await call("POST", "/v1/leases/complete", { owner: "W", leases: presented, next: { queue: "sp-cm-next", limit: 5, ttlMs: TTL } });
    expect(response.status).toBe(200);
    expect(response.headers.get(TRANSACTIONS_HEADER)).toBe("4");
    const body = (await response.json()) as { completed: { id: string; done?: true; error?: { code: string } }[]; leases: Lease[] };
    expect(body.completed.map((outcome) => outcome.id)).toEqual(presented.map((lease) => lease.id));
    expect(body.completed.filter((outcome) => outcome.done)).toHaveLength(6);
    expect(body.completed.find((outcome) => outcome.id === "sp-cm-nobody")).toMatchObject({ error: { code: "not_found" } });
    expect(body.leases.map((lease) => lease.job.id)).toEqual(["sp-cm-next-1"]);
    for (const queue of ["sp-cm-a", "sp-cm-b", "sp-cm-c"]) expect(await rows(queue, "SELECT count(*) AS n FROM jobs WHERE done = 1 AND result = json_quote(id)")).toEqual([{ n: 2 }]);

    const again = await json<{ completed: { done?: true }[] }>(call("POST", "/v1/leases/complete", { owner: "W", leases: presented.filter((lease) => lease.id !== "sp-cm-nobody") }));
    expect(again.completed.every((outcome) => outcome.done)).toBe(true); // the same completions again: answered again
  });

  test("renewMany over leases of two queues: each renewed or refused alone, in order", async () => {
    for (const queue of ["sp-rm-a", "sp-rm-b"]) await call("POST", "/v1/jobs", { id: `${queue}-1`, queue });
    const [a] = await claimAll("sp-rm-a");
    const [b] = await claimAll("sp-rm-b");
    const response = await call("POST", "/v1/leases/renew", { owner: "W", ttlMs: 2 * TTL, leases: [{ id: b!.job.id, fence: b!.fence }, { id: a!.job.id, fence: a!.fence + 1 }] });
    expect(response.headers.get(TRANSACTIONS_HEADER)).toBe("2");
    const { leases } = (await response.json()) as { leases: { id: string; until?: number; error?: { code: string } }[] };
    expect(leases[0]).toMatchObject({ id: "sp-rm-b-1" });
    expect(leases[0]!.until).toBeGreaterThan(Date.now() + TTL);
    expect(leases[1]).toMatchObject({ id: "sp-rm-a-1", error: { code: "stale_lease" } });
  });

  test("a many-lease body the app refuses is refused as a whole: nothing is written in any queue", async () => {
    for (const queue of ["sp-bad-a", "sp-bad-b"]) await call("POST", "/v1/jobs", { id: `${queue}-1`, queue });
    const [a] = await claimAll("sp-bad-a");
    const [b] = await claimAll("sp-bad-b");
    const refused = await call("POST", "/v1/leases/complete", { owner: "W", leases: [{ id: a!.job.id, fence: a!.fence, result: 1 }, { id: b!.job.id, fence: b!.fence }] });
    expect(refused.status).toBe(400);
    expect(((await refused.json()) as ErrorBody).error.message).toContain("leases.1.result");
    expect(await rows("sp-bad-a", "SELECT done FROM jobs")).toEqual([{ done: 0 }]);
    expect(await rows("sp-bad-b", "SELECT done FROM jobs")).toEqual([{ done: 0 }]);
    expect((await call("POST", "/v1/leases/renew", { owner: "W", ttlMs: TTL, leases: "no" })).status).toBe(400);
  });

  test("schedules live in their queue's object: put, listed with the others, read, moved to another queue, deleted", async () => {
    expect((await call("PUT", "/v1/schedules/sp-sc", { queue: "sp-sc-a", everyMs: 3_600_000 })).status).toBe(201);
    expect((await call("PUT", "/v1/schedules/sp-sc-other", { queue: "sp-sc-b", cron: "0 * * * *" })).status).toBe(201);
    const names = async () => (await json<{ schedules: { name: string; queue: string }[] }>(call("GET", "/v1/schedules"))).schedules.filter((schedule) => schedule.name.startsWith("sp-sc"));
    expect((await names()).map((schedule) => [schedule.name, schedule.queue])).toEqual([["sp-sc", "sp-sc-a"], ["sp-sc-other", "sp-sc-b"]]);
    expect(await json(call("GET", "/v1/schedules/sp-sc"))).toMatchObject({ queue: "sp-sc-a", everyMs: 3_600_000 });
    expect((await call("PUT", "/v1/schedules/sp-sc", { queue: "sp-sc-b", everyMs: 3_600_000 })).status).toBe(201); // created where it moved to
    expect(await rows("sp-sc-a", "SELECT name FROM schedules")).toEqual([]);
    expect((await names()).map((schedule) => [schedule.name, schedule.queue])).toEqual([["sp-sc", "sp-sc-b"], ["sp-sc-other", "sp-sc-b"]]);
    expect((await call("DELETE", "/v1/schedules/sp-sc")).status).toBe(204);
    expect((await call("GET", "/v1/schedules/sp-sc")).status).toBe(404);
    expect((await call("DELETE", "/v1/schedules/sp-sc")).status).toBe(404);
    const missingQueue = await call("PUT", "/v1/schedules/sp-sc", { everyMs: 3_600_000 });
    expect(missingQueue.status).toBe(400);
  });

  test("POST /v1/jobs/bulk goes to the object of its filter's queue; without one it is 400, naming filter.queue; a bulk delete lets go of the ids", async () => {
    await call("POST", "/v1/queues/sp-bulk/jobs", { jobs: [{ id: "sp-bulk-1" }, { id: "sp-bulk-2" }, { id: "sp-bulk-3" }] });
    await call("POST", "/v1/queues/sp-bulk-other/jobs", { jobs: [{ id: "sp-bulk-other-1" }] });
    const [held] = await claimAll("sp-bulk", "W", 1);
    expect(await json(call("POST", "/v1/jobs/bulk", { action: "cancel", filter: { queue: "sp-bulk", idPrefix: "sp-bulk-" } }))).toEqual({ matched: 3, changed: 3, skipped: {}, nextCursor: null });
    const late = await call("POST", `/v1/jobs/${held!.job.id}/complete`, { owner: "W", fence: held!.fence, result: "late" });
    expect(late.status).toBe(409);
    expect(((await late.json()) as ErrorBody).error).toMatchObject({ code: "stale_lease", details: { reason: "cancelled" } });
    expect((await json<{ jobs: { status: string }[] }>(call("GET", "/v1/jobs?queue=sp-bulk-other"))).jobs.map((job) => job.status)).toEqual(["queued"]);

    const noQueue = await call("POST", "/v1/jobs/bulk", { action: "delete", filter: { status: "cancelled" } });
    expect(noQueue.status).toBe(400);
    expect(((await noQueue.json()) as ErrorBody).error).toMatchObject({ code: "invalid_request", message: expect.stringMatching(/^filter\.queue is required in objects mode/) });
    expect((await call("POST", "/v1/jobs/bulk", { action: "delete", filter: { queue: 7 } })).status).toBe(400);

    expect(await json(call("POST", "/v1/jobs/bulk", { action: "delete", filter: { queue: "sp-bulk" } }))).toEqual({ matched: 3, changed: 3, skipped: {}, nextCursor: null });
    expect(await json(call("POST", "/v1/jobs", { id: "sp-bulk-1", queue: "sp-bulk-other" }))).toMatchObject({ created: true, job: { queue: "sp-bulk-other" } });
  });
});
