import { createExecutionContext, env, runInDurableObject, SELF } from "cloudflare:test";
import { describe, expect, test } from "vitest";
import { shardOf } from "../../../src/runtime/cloudflare/directory.ts";
import worker, { type Directory } from "../../../src/worker.ts";
import { rows } from "../storage-mode.ts";

// Ids across queues in objects mode: the directory binds each job id to the
// one queue whose object holds its row, the by-id routes find it there, and a
// fence never repeats for an id, whatever queue it is enqueued in again.

const TOKEN = "worker-test-token"; // FENCELEASE_TOKENS in vitest.config.ts
const TTL = 60_000;

type Call = (method: string, path: string, body?: unknown) => Promise<Response>;

function through(fetcher: (request: Request) => Promise<Response>): Call {
  return (method, path, body) =>
    fetcher(new Request(`https://fencelease.test${path}`, {
      method,
      headers: { Authorization: `Bearer ${TOKEN}`, "Content-Type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    }));
}

/** Calls through the test's Worker, whose isolate remembers the queue of the ids it sees. */
const call = through((request) => SELF.fetch(request));

/** Calls through a Worker that remembers nothing yet (another isolate): it asks the directory. */
const elsewhere = (): Call => {
  const fresh = { ...env };
  return through((request) => worker.fetch(request as never, fresh, createExecutionContext()) as Promise<Response>);
};

async function json<T = Record<string, unknown>>(response: Promise<Response>): Promise<T> {
  return (await (await response).json()) as T;
}

async function claim(via: Call, queue: string, owner = "w"): Promise<{ fence: number; job: { id: string } }> {
  const { leases } = await json<{ leases: { fence: number; job: { id: string } }[] }>(via("POST", `/v1/queues/${queue}/claim`, { owner, ttlMs: TTL }));
  expect(leases).toHaveLength(1);
  return leases[0]!;
}

/** The directory shard's binding of `id`, or null. */
function bindingOf(id: string): Promise<string | null> {
  const stub = env.DIRECTORY!.get(env.DIRECTORY!.idFromName(`ids/${shardOf(id)}`));
  return runInDurableObject(stub as never, async (directory: Directory) => (await directory.locate([id]))[0]?.[1] ?? null);
}

describe("ids across queues", () => {
  test("an id held by one queue is not created in another: the enqueue answers created false with the job where it is", async () => {
    expect((await call("POST", "/v1/jobs", { id: "dir-one", queue: "dir-a", payload: 1 })).status).toBe(201);
    const again = await call("POST", "/v1/jobs", { id: "dir-one", queue: "dir-b", payload: 2 });
    expect(again.status).toBe(200);
    expect(await again.json()).toMatchObject({ created: false, job: { id: "dir-one", queue: "dir-a", payload: 1 } });
    expect(await rows("dir-b", "SELECT id FROM jobs")).toEqual([]);
    expect(await bindingOf("dir-one")).toBe("dir-a");

    const many = await json<{ jobs: { id: string; created: boolean }[] }>(call("POST", "/v1/queues/dir-b/jobs", { jobs: [{ id: "dir-new-1" }, { id: "dir-one" }, { id: "dir-new-2" }] }));
    expect(many.jobs).toEqual([{ id: "dir-new-1", created: true }, { id: "dir-one", created: false }, { id: "dir-new-2", created: true }]);
    expect(await rows("dir-b", "SELECT id FROM jobs ORDER BY id")).toEqual([{ id: "dir-new-1" }, { id: "dir-new-2" }]);
  });

  test("a Worker that has not seen an id finds its job through the directory, for every by-id route", async () => {
    await call("POST", "/v1/jobs", { id: "dir-found", queue: "dir-c" });
    const other = elsewhere();
    expect(await json(other("GET", "/v1/jobs/dir-found"))).toMatchObject({ queue: "dir-c", status: "queued" });
    const lease = await json<{ fence: number }>(elsewhere()("POST", "/v1/jobs/dir-found/claim", { owner: "A", ttlMs: TTL }));
    expect(lease.fence).toBe(1);
    expect(await json(elsewhere()("GET", `/v1/jobs/dir-found/lease?owner=A&fence=1`))).toMatchObject({ current: true, fence: 1 });
    expect((await elsewhere()("POST", "/v1/jobs/dir-found/renew", { owner: "A", fence: 1, ttlMs: TTL })).status).toBe(200);
    expect((await elsewhere()("POST", "/v1/jobs/dir-found/complete", { owner: "A", fence: 1, result: "ok" })).status).toBe(200);
    const events = await json<{ events: { kind: string }[] }>(elsewhere()("GET", "/v1/jobs/dir-found/events"));
    expect(events.events.map((event) => event.kind)).toEqual(["enqueued", "claimed", "renewed", "completed"]);
    const unknown = await elsewhere()("POST", "/v1/jobs/dir-nobody/complete", { owner: "A", fence: 1, result: "ok" });
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toEqual({ error: { code: "not_found", message: 'no job has the id "dir-nobody"' } });
  });

  test("a fence never repeats for an id: deleted from one queue and enqueued into another, its first claim is above every fence it had", async () => {
    await call("POST", "/v1/jobs", { id: "dir-fence", queue: "dir-d", maxAttempts: 5 });
    for (const owner of ["A", "B", "C"]) {
      const lease = await claim(call, "dir-d", owner);
      await call("POST", "/v1/jobs/dir-fence/release", { owner, fence: lease.fence });
    }
    expect((await call("DELETE", "/v1/jobs/dir-fence")).status).toBe(200);
    expect(await bindingOf("dir-fence")).toBeNull();
    expect((await call("POST", "/v1/jobs", { id: "dir-fence", queue: "dir-e" })).status).toBe(201);
    expect((await claim(call, "dir-e")).fence).toBe(4);
    // And back: deleted from dir-e, enqueued into dir-d again, still above.
    await call("POST", "/v1/jobs/dir-fence/release", { owner: "w", fence: 4 });
    expect((await call("DELETE", "/v1/jobs/dir-fence")).status).toBe(200);
    expect((await call("POST", "/v1/jobs", { id: "dir-fence", queue: "dir-d" })).status).toBe(201);
    expect((await claim(call, "dir-d")).fence).toBe(5);
  });

  test("a queue remembered out of date (the job deleted through another Worker and enqueued elsewhere) is corrected by the directory", async () => {
    await call("POST", "/v1/jobs", { id: "dir-moved", queue: "dir-f" });
    expect(await json(call("GET", "/v1/jobs/dir-moved"))).toMatchObject({ queue: "dir-f" }); // remembered: dir-f
    const other = elsewhere();
    expect((await other("DELETE", "/v1/jobs/dir-moved")).status).toBe(200);
    expect((await other("POST", "/v1/jobs", { id: "dir-moved", queue: "dir-g" })).status).toBe(201);
    expect(await json(call("GET", "/v1/jobs/dir-moved"))).toMatchObject({ queue: "dir-g", fence: 0 });
    const lease = await json<{ fence: number }>(call("POST", "/v1/jobs/dir-moved/claim", { owner: "A", ttlMs: TTL }));
    expect(lease.fence).toBe(1);
    const done = await json<{ completed: { id: string; done?: true }[] }>(call("POST", "/v1/leases/complete", { owner: "A", leases: [{ id: "dir-moved", fence: 1, result: 1 }] }));
    expect(done.completed).toEqual([{ id: "dir-moved", done: true }]);
  });

  test("a binding left without its row (a create that never came) is let go when the id is enqueued in another queue", async () => {
    const shard = env.DIRECTORY!.get(env.DIRECTORY!.idFromName(`ids/${shardOf("dir-stale")}`));
    await runInDurableObject(shard as never, (directory: Directory) => directory.bind(["dir-stale"], "dir-h"));
    expect(await bindingOf("dir-stale")).toBe("dir-h");
    const created = await call("POST", "/v1/jobs", { id: "dir-stale", queue: "dir-i" });
    expect(created.status).toBe(201);
    expect(await created.json()).toMatchObject({ job: { queue: "dir-i" } });
    expect(await bindingOf("dir-stale")).toBe("dir-i");
  });

  test("an enqueue that its dedup key turns away leaves its id free, and a call of many keeps each job's answer when another queue holds one of its ids", async () => {
    expect((await call("POST", "/v1/jobs", { id: "dir-pay-1", queue: "dir-once", dedupKey: "order-7", dedupTtlMs: 60_000 })).status).toBe(201);
    const turnedAway = await call("POST", "/v1/jobs", { id: "dir-pay-2", queue: "dir-once", dedupKey: "order-7", dedupTtlMs: 60_000 });
    expect(await turnedAway.json()).toMatchObject({ created: false, deduplicated: true, job: { id: "dir-pay-1" } });
    expect(await bindingOf("dir-pay-2")).toBeNull();
    expect((await call("POST", "/v1/jobs", { id: "dir-pay-2", queue: "dir-other" })).status).toBe(201);

    const many = await json<{ jobs: unknown[] }>(call("POST", "/v1/queues/dir-once/jobs", { jobs: [{ id: "dir-pay-3", dedupKey: "order-7", dedupTtlMs: 60_000 }, { id: "dir-pay-2" }, { id: "dir-pay-4" }] }));
    expect(many.jobs).toEqual([{ id: "dir-pay-3", created: false, deduplicated: true, duplicateOf: "dir-pay-1" }, { id: "dir-pay-2", created: false }, { id: "dir-pay-4", created: true }]);
    expect(await bindingOf("dir-pay-3")).toBeNull();
    expect(await rows("dir-once", "SELECT id FROM jobs ORDER BY id")).toEqual([{ id: "dir-pay-1" }, { id: "dir-pay-4" }]);
  });

  test("an enqueue the app refuses after its id was bound leaves the id free", async () => {
    const response = await SELF.fetch("https://fencelease.test/v1/jobs", {
      method: "POST",
      headers: { Authorization: `Bearer ${TOKEN}`, "Content-Type": "application/json" },
      body: '{"id":"dir-refused","queue":"dir-j","payload":{"n":12345678901234567891}}',
    });
    expect(response.status).toBe(400);
    expect(await bindingOf("dir-refused")).toBeNull();
    expect((await call("POST", "/v1/jobs", { id: "dir-refused", queue: "dir-k" })).status).toBe(201);
  });

  test("concurrent enqueues of the same ids into two queues: each id is created once, in one queue, and bound there", async () => {
    const ids = Array.from({ length: 20 }, (_, i) => `dir-race-${i}`);
    const answers = await Promise.all(
      ids.flatMap((id) => ["dir-race-a", "dir-race-b"].map(async (queue) => ({ queue, body: await json<{ created: boolean; job: { id: string; queue: string } }>(call("POST", "/v1/jobs", { id, queue })) }))),
    );
    const created = answers.filter((answer) => answer.body.created);
    expect(created).toHaveLength(ids.length);
    expect(new Set(created.map((answer) => answer.body.job.id)).size).toBe(ids.length);
    for (const answer of answers) expect(answer.body.job.queue).toBe(created.find((won) => won.body.job.id === answer.body.job.id)!.queue);
    const held = [...(await rows("dir-race-a", "SELECT id FROM jobs")), ...(await rows("dir-race-b", "SELECT id FROM jobs"))].map((row) => row.id);
    expect(held.sort()).toEqual([...ids].sort());
    for (const answer of created) expect(await bindingOf(answer.body.job.id)).toBe(answer.queue);
  });
});
