import { env, listDurableObjectIds, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, test, vi } from "vitest";
import { ADMIN, callAs } from "../call-as.ts";
import { NO_QUEUE } from "../../../src/runtime/cloudflare/queue-object.ts";
import { queueObject } from "../storage-mode.ts";
import { NO_KEY_LIMITS } from "../../contract/queues.contract.ts";

// A queue's object costs nothing unless it holds something (issue 28): a call
// refused by the token, and a read of a queue that holds nothing, are answered
// by the object that holds none, exactly as the queue's own would answer them,
// and make no object; an object left holding nothing lets its storage go.

/** How many queues' objects exist, the one that holds none (NO_QUEUE) aside. */
async function queueObjects(): Promise<number> {
  const none = env.QUEUES!.idFromName(NO_QUEUE).toString();
  return (await listDurableObjectIds(env.QUEUES as never)).filter((id) => id.toString() !== none).length;
}

describe("a call that writes nothing makes no queue object", () => {
  test("50 calls refused with 403, on 10 queues the token may not see, make no object; each answers as the queue's own object would", async () => {
    const reader = (await callAs(ADMIN, "POST", "/v1/tokens", { role: "reader", queues: ["refused-mine"] })).body.token;
    const before = await queueObjects();
    for (let i = 0; i < 10; i++) {
      const queue = `refused-${i}`;
      const refusals = [
        await callAs(reader, "GET", `/v1/queues/${queue}`),
        await callAs(reader, "POST", `/v1/queues/${queue}/jobs`, { jobs: [{ id: `${queue}-1` }] }),
        await callAs(reader, "POST", "/v1/jobs", { id: `${queue}-2`, queue }),
        await callAs(reader, "POST", `/v1/queues/${queue}/claim`, { owner: "W", ttlMs: 1000 }),
        await callAs(reader, "PUT", `/v1/schedules/${queue}`, { queue, everyMs: 60_000 }),
      ];
      expect(refusals.map((answer) => answer.status)).toEqual([403, 403, 403, 403, 403]);
      expect(refusals[1]!.body.error.message).toBe(`this token (reader for refused-mine) may not enqueue into ${queue}: that needs a producer or admin token for ${queue}`);
    }
    expect(await queueObjects()).toBe(before);
  });

  test("reads of queues that hold nothing make no object, and answer as an empty queue does", async () => {
    const before = await queueObjects();
    for (let i = 0; i < 10; i++) {
      const queue = `unused-${i}`;
      expect(await callAs(ADMIN, "GET", `/v1/queues/${queue}`)).toEqual({ status: 200, body: { queue, paused: false, maxLeased: null, ratePerSecond: null, burst: null, ...NO_KEY_LIMITS } });
      expect(await callAs(ADMIN, "GET", `/v1/jobs?queue=${queue}`)).toEqual({ status: 200, body: { jobs: [], nextCursor: null } });
      expect((await callAs(ADMIN, "GET", `/v1/queues/${queue}/push`)).status).toBe(404);
    }
    expect(await queueObjects()).toBe(before);
    // A queue that holds something is read from its object.
    await callAs(ADMIN, "POST", "/v1/queues/used-once/jobs", { jobs: [{ id: "used-once-1" }] });
    expect((await callAs(ADMIN, "GET", "/v1/jobs?queue=used-once")).body.jobs).toMatchObject([{ id: "used-once-1" }]);
    expect(await callAs(ADMIN, "PUT", "/v1/queues/used-once", { maxLeased: 2 })).toMatchObject({ status: 200 });
    expect((await callAs(ADMIN, "GET", "/v1/queues/used-once")).body).toMatchObject({ maxLeased: 2 });
  });
});

/** The tables a queue's object keeps now, and whether the registry lists its queue. */
async function kept(queue: string): Promise<{ tables: number; listed: boolean }> {
  const tables = await runInDurableObject(queueObject(queue), (_object, state) => state.storage.sql.exec("SELECT count(*) AS n FROM sqlite_master WHERE type = 'table' AND substr(name, 1, 4) <> '_cf_'").one().n as number);
  const registry = env.DIRECTORY!.get(env.DIRECTORY!.idFromName("queues")) as unknown as { hasQueue(queue: string): Promise<boolean> };
  return { tables, listed: await registry.hasQueue(queue) };
}

describe("an object that holds nothing lets its storage go", () => {
  test("a claim, with or without waitMs, and a refused write, on a queue never used: answered, and nothing is kept", async () => {
    expect(await callAs(ADMIN, "POST", "/v1/queues/let-claim/claim", { owner: "W", ttlMs: 1000 })).toEqual({ status: 200, body: { leases: [] } });
    expect(await kept("let-claim")).toEqual({ tables: 0, listed: false });
    expect(await callAs(ADMIN, "POST", "/v1/queues/let-wait/claim", { owner: "W", ttlMs: 1000, waitMs: 50 })).toMatchObject({ status: 200, body: { leases: [] } });
    expect(await kept("let-wait")).toEqual({ tables: 0, listed: false });
    expect(await callAs(ADMIN, "PUT", "/v1/queues/let-bad", { maxLeased: 0 })).toMatchObject({ status: 400 });
    expect(await kept("let-bad")).toEqual({ tables: 0, listed: false });
  });

  test("a queue whose last job is deleted and whose history is purged lets go; used again, its fences go on above the old", async () => {
    const T = Date.now();
    await callAs(ADMIN, "POST", "/v1/queues/let-used/jobs", { jobs: [{ id: "let-used-1" }] });
    expect((await callAs(ADMIN, "POST", "/v1/queues/let-used/claim", { owner: "W", ttlMs: 1000 })).body.leases).toMatchObject([{ fence: 1 }]);
    await callAs(ADMIN, "POST", "/v1/jobs/let-used-1/release", { owner: "W", fence: 1 });
    expect((await callAs(ADMIN, "DELETE", "/v1/jobs/let-used-1")).status).toBe(200);
    expect(await kept("let-used")).toMatchObject({ listed: true }); // the deleted job's history is kept for the retention
    vi.useFakeTimers({ toFake: ["Date"] });
    try {
      vi.setSystemTime(T + 8 * 24 * 60 * 60 * 1000); // past the retention of wrangler.objects.toml (7 days)
      expect(await runDurableObjectAlarm(queueObject("let-used"))).toBe(true);
      expect(await kept("let-used")).toEqual({ tables: 0, listed: false });
      expect(await callAs(ADMIN, "GET", "/v1/queues")).toMatchObject({ status: 200 });
      expect((await callAs(ADMIN, "GET", "/v1/queues")).body.queues.map((settings: { queue: string }) => settings.queue)).not.toContain("let-used");
      await callAs(ADMIN, "POST", "/v1/queues/let-used/jobs", { jobs: [{ id: "let-used-1" }] });
      expect((await callAs(ADMIN, "POST", "/v1/queues/let-used/claim", { owner: "W", ttlMs: 1000 })).body.leases).toMatchObject([{ fence: 2, job: { id: "let-used-1" } }]);
      expect(await kept("let-used")).toMatchObject({ listed: true });
    } finally {
      vi.useRealTimers();
    }
  });

  test("a queue whose jobs finished over several minutes lets go once they are purged, its series with it", async () => {
    const T = Date.now();
    vi.useFakeTimers({ toFake: ["Date"] });
    try {
      vi.setSystemTime(T);
      await callAs(ADMIN, "POST", "/v1/queues/let-charted/jobs", { jobs: [{ id: "let-charted-1" }, { id: "let-charted-2" }] });
      const { leases } = (await callAs(ADMIN, "POST", "/v1/queues/let-charted/claim", { owner: "W", ttlMs: 600_000, limit: 2 })).body;
      expect((await callAs(ADMIN, "POST", `/v1/jobs/${leases[0].job.id}/complete`, { owner: "W", fence: 1, result: "ok" })).status).toBe(200);
      vi.setSystemTime(T + 61_000); // a later minute: the first one ends, into the queue's series
      expect((await callAs(ADMIN, "POST", `/v1/jobs/${leases[1].job.id}/complete`, { owner: "W", fence: 1, result: "ok" })).status).toBe(200);
      const series = await runInDurableObject(queueObject("let-charted"), (_object, state) => state.storage.sql.exec("SELECT count(*) AS n FROM queue_series").one().n);
      expect(series).toBe(2); // the minute and its hour
      vi.setSystemTime(T + 8 * 24 * 60 * 60 * 1000);
      expect(await runDurableObjectAlarm(queueObject("let-charted"))).toBe(true);
      expect(await kept("let-charted")).toEqual({ tables: 0, listed: false });
    } finally {
      vi.useRealTimers();
    }
  });
});
