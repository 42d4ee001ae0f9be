import { env, runInDurableObject, SELF } from "cloudflare:test";
import { describe, expect, test, vi } from "vitest";
import { ADMIN, callAs } from "./call-as.ts";
import type { Row } from "../../src/drivers/driver.ts";
import { MODE, rows, waitingIn } from "./storage-mode.ts";

// Tokens on the Worker, in both storage modes: the same routes and rules as on
// Node (test/http/tokens.test.ts and permits.test.ts), through the Worker's
// fetch. The tokens are kept in D1, or in objects mode in the registry (the
// Directory object named queues), which every queue's object shares.

/** The rows of the tokens table, where this mode keeps it. */
async function tokenRows(sql: string, ...args: unknown[]): Promise<Row[]> {
  if (MODE === "d1") return (await env.DB.prepare(sql).bind(...args).all<Row>()).results;
  const registry = env.DIRECTORY!.get(env.DIRECTORY!.idFromName("queues")) as unknown as DurableObjectStub;
  return runInDurableObject(registry, (_object, state) => state.storage.sql.exec(sql, ...args).toArray() as Row[]);
}

async function sha256(text: string): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text)));
  return Array.from(digest, (byte) => byte.toString(16).padStart(2, "0")).join("");
}

describe(`tokens on the Worker (${MODE} mode)`, () => {
  test("a worker token for invoices works invoices, is refused mail and enqueue, and is gone once revoked", async () => {
    const made = await callAs(ADMIN, "POST", "/v1/tokens", { role: "worker", queues: ["invoices"], name: "billing" });
    expect(made.status).toBe(201);
    const { id, token } = made.body;
    expect(await tokenRows("SELECT hash FROM tokens WHERE id = ?", id)).toEqual([{ hash: await sha256(token) }]);

    await callAs(ADMIN, "POST", "/v1/queues/invoices/jobs", { jobs: [{ id: "inv-1" }] });
    await callAs(ADMIN, "POST", "/v1/queues/mail/jobs", { jobs: [{ id: "mail-1" }] });
    const claimed = await callAs(token, "POST", "/v1/queues/invoices/claim", { owner: "W", ttlMs: 30_000 });
    expect(claimed.body.leases).toMatchObject([{ fence: 1, job: { id: "inv-1" } }]);
    expect(await callAs(token, "POST", "/v1/jobs/inv-1/complete", { owner: "W", fence: 1, result: "paid" })).toMatchObject({ status: 200, body: { job: { status: "done" } } });

    expect(await callAs(token, "POST", "/v1/jobs/mail-1/claim", { owner: "W", ttlMs: 30_000 })).toMatchObject({ status: 404, body: { error: { code: "not_found" } } });
    expect(await callAs(token, "POST", "/v1/jobs", { id: "inv-2", queue: "invoices" })).toMatchObject({
      status: 403,
      body: { error: { code: "forbidden", message: 'this token "billing" (worker for invoices) may not enqueue into invoices: that needs a producer or admin token for invoices' } },
    });
    expect((await callAs(token, "GET", "/v1/stats")).body.queues.map((stats: { queue: string }) => stats.queue)).toEqual(["invoices"]);

    expect(await callAs(ADMIN, "DELETE", `/v1/tokens/${id}`)).toMatchObject({ status: 200, body: { revoked: true } });
    expect((await callAs(token, "GET", "/v1/stats")).status).toBe(401);
    expect(await tokenRows("SELECT id FROM tokens WHERE id = ?", id)).toEqual([]);
  });

  test("a worker token records the steps of its queue's leases, each lease handed them; another queue's job is an unknown job, and a reader may record none", async () => {
    const made = [await callAs(ADMIN, "POST", "/v1/tokens", { role: "worker", queues: ["orders"] }), await callAs(ADMIN, "POST", "/v1/tokens", { role: "reader", queues: ["*"] })];
    const [worker, reader] = made.map((answer) => answer.body.token as string) as [string, string];
    await callAs(ADMIN, "POST", "/v1/queues/orders/jobs", { jobs: [{ id: "ord-1" }] });
    await callAs(ADMIN, "POST", "/v1/queues/mail/jobs", { jobs: [{ id: "mail-s" }] });
    await callAs(ADMIN, "POST", "/v1/jobs/mail-s/claim", { owner: "M", ttlMs: 30_000 });
    const [lease] = (await callAs(worker, "POST", "/v1/queues/orders/claim", { owner: "W", ttlMs: 30_000 })).body.leases;
    expect(lease).toMatchObject({ fence: 1, job: { id: "ord-1", steps: {} } });
    const charge = await callAs(worker, "POST", "/v1/jobs/ord-1/steps/charge", { owner: "W", fence: 1, result: { chargeId: "ch_1" } });
    expect(charge).toMatchObject({ status: 201, body: { recorded: true, step: { name: "charge", result: { chargeId: "ch_1" }, fence: 1 } } });
    expect(await callAs(worker, "POST", "/v1/jobs/ord-1/steps/charge", { owner: "W", fence: 1, result: 2 })).toMatchObject({ status: 200, body: { recorded: false, step: { result: { chargeId: "ch_1" } } } });
    expect(await callAs(worker, "POST", "/v1/jobs/ord-1/steps/email", { owner: "X", fence: 1, result: 2 })).toMatchObject({ status: 409, body: { error: { code: "stale_lease", details: { reason: "not_owner", currentFence: 1 } } } });
    expect(await callAs(worker, "POST", "/v1/jobs/mail-s/steps/charge", { owner: "M", fence: 1, result: 1 })).toMatchObject({ status: 404, body: { error: { code: "not_found" } } });
    expect(await callAs(reader, "POST", "/v1/jobs/ord-1/steps/email", { owner: "W", fence: 1, result: 1 })).toMatchObject({ status: 403, body: { error: { code: "forbidden" } } });
    await callAs(worker, "POST", "/v1/jobs/ord-1/release", { owner: "W", fence: 1 });
    const [again] = (await callAs(worker, "POST", "/v1/queues/orders/claim", { owner: "W2", ttlMs: 30_000 })).body.leases;
    expect(again).toMatchObject({ fence: 2, job: { steps: { charge: { result: { chargeId: "ch_1" }, fence: 1 } } } });
    expect(await rows("orders", "SELECT name, fence FROM steps WHERE job_id = 'ord-1'")).toEqual([{ name: "charge", fence: 1 }]);
    expect(await rows("mail", "SELECT name FROM steps WHERE job_id = 'mail-s'")).toEqual([]);
    for (const answer of made) await callAs(ADMIN, "DELETE", `/v1/tokens/${answer.body.id}`); // the tests after list the tokens
  });

  test("GET /v1/tokens lists without secrets; only an admin for every queue may", async () => {
    const { token } = (await callAs(ADMIN, "POST", "/v1/tokens", { role: "admin", queues: ["mail-*"] })).body;
    const list = await callAs(ADMIN, "GET", "/v1/tokens");
    expect(list.body.tokens).toMatchObject([{ role: "admin", queues: ["mail-*"], name: null }]);
    expect(JSON.stringify(list.body)).not.toContain(token);
    expect((await callAs(token, "GET", "/v1/tokens")).status).toBe(403);
  });

  test("a Fencelease-Grant header a caller sends is not believed: the token decides", async () => {
    const { token } = (await callAs(ADMIN, "POST", "/v1/tokens", { role: "reader", queues: ["*"] })).body;
    const forged = encodeURIComponent(JSON.stringify({ id: null, name: null, role: "admin", queues: ["*"] }));
    const response = await SELF.fetch("https://fencelease.test/v1/queues/forged/pause", { method: "POST", headers: { Authorization: `Bearer ${token}`, "Fencelease-Grant": forged } });
    expect(response.status).toBe(403);
    expect(((await callAs(ADMIN, "GET", "/v1/queues/forged")).body as { paused: boolean }).paused).toBe(false);
  });

  test("a worker for one queue completes its leases across a many-lease call; one of another queue is an unknown job there, and stays leased", async () => {
    for (const [id, queue] of [["many-i", "many-invoices"], ["many-m", "many-mail"]]) {
      await callAs(ADMIN, "POST", "/v1/jobs", { id, queue });
      await callAs(ADMIN, "POST", `/v1/jobs/${id}/claim`, { owner: "W", ttlMs: 30_000 });
    }
    const { token } = (await callAs(ADMIN, "POST", "/v1/tokens", { role: "worker", queues: ["many-invoices"] })).body;
    const answer = await callAs(token, "POST", "/v1/leases/complete", { owner: "W", leases: [{ id: "many-i", fence: 1, result: 1 }, { id: "many-m", fence: 1, result: 2 }] });
    expect(answer.body.completed).toMatchObject([{ id: "many-i", done: true }, { id: "many-m", error: { code: "not_found", message: 'no job has the id "many-m"' } }]);
    expect((await callAs(ADMIN, "GET", "/v1/jobs/many-m")).body).toMatchObject({ status: "leased" });
    expect(await callAs(token, "GET", "/v1/jobs/many-m")).toMatchObject({ status: 404 });
  });
});

describe(`what a token learns of queues it may not see, on the Worker (${MODE} mode), as on Node`, () => {
  test("an enqueue of an id held in a queue the token may not see: 409 conflict naming nothing, and the held job is untouched; a reader's is 403 first", async () => {
    await callAs(ADMIN, "POST", "/v1/jobs", { id: "held-1", queue: "payroll", payload: { salary: 1 } });
    const producer = (await callAs(ADMIN, "POST", "/v1/tokens", { role: "producer", queues: ["invoices-held"] })).body.token;
    const answer = await callAs(producer, "POST", "/v1/jobs", { id: "held-1", queue: "invoices-held" });
    expect(answer).toEqual({ status: 409, body: { error: { code: "conflict", message: 'the id "held-1" is taken by a job in a queue this token may not see; nothing changed: choose another id' } } });
    const reader = (await callAs(ADMIN, "POST", "/v1/tokens", { role: "reader", queues: ["invoices-held", "payroll"] })).body.token;
    expect(await callAs(reader, "POST", "/v1/jobs", { id: "held-1", queue: "invoices-held" })).toMatchObject({
      status: 403,
      body: { error: { message: "this token (reader for invoices-held, payroll) may not enqueue into invoices-held: that needs a producer or admin token for invoices-held" } },
    });
    expect((await callAs(ADMIN, "GET", "/v1/jobs/held-1")).body).toMatchObject({ queue: "payroll", payload: { salary: 1 }, status: "queued" });
    expect((await callAs(ADMIN, "GET", "/v1/jobs?queue=invoices-held")).body).toEqual({ jobs: [], nextCursor: null });
  });

  test("a reader pages through its queues' jobs only: the cursor names no other queue's job, by id or status, and a hidden job's events have no cursor", async () => {
    await callAs(ADMIN, "POST", "/v1/queues/cur-mail/jobs", { jobs: [{ id: "cur-a" }, { id: "cur-c" }, { id: "cur-e" }] });
    await callAs(ADMIN, "POST", "/v1/queues/cur-invoices/jobs", { jobs: [{ id: "cur-b" }, { id: "cur-d" }] });
    await callAs(ADMIN, "POST", "/v1/queues/cur-mail-eu/jobs", { jobs: [{ id: "cur-f" }] });
    await callAs(ADMIN, "POST", "/v1/queues/cur-mail/claim", { owner: "W", ttlMs: 30_000, limit: 2 });
    const reader = (await callAs(ADMIN, "POST", "/v1/tokens", { role: "reader", queues: ["cur-invoices", "cur-mail-*"] })).body.token;
    const seen: unknown[] = [];
    for (let cursor = "cur-"; cursor !== null; ) {
      const page = (await callAs(reader, "GET", `/v1/jobs?limit=1&cursor=${cursor}`)).body;
      seen.push(page.jobs.map((job: { id: string }) => job.id), page.nextCursor);
      cursor = page.nextCursor;
    }
    expect(seen).toEqual([["cur-b"], "cur-b", ["cur-d"], "cur-d", ["cur-f"], null]);
    expect((await callAs(reader, "GET", "/v1/jobs?limit=1&status=leased&cursor=cur-")).body).toEqual({ jobs: [], nextCursor: null });
    expect((await callAs(ADMIN, "GET", "/v1/jobs/cur-a/events?limit=1")).body.nextCursor).toBe("1");
    expect((await callAs(reader, "GET", "/v1/jobs/cur-a/events?limit=1")).body).toEqual({ events: [], nextCursor: null });
  });

  test("a schedule name held in a queue the admin may not see: 409 conflict, and the schedule stays where it is, listed and read by every admin who sees its queue", async () => {
    expect((await callAs(ADMIN, "PUT", "/v1/schedules/sched-nightly", { queue: "sched-b", everyMs: 3_600_000 })).status).toBe(201);
    const adminA = (await callAs(ADMIN, "POST", "/v1/tokens", { role: "admin", queues: ["sched-a"] })).body.token;
    const adminB = (await callAs(ADMIN, "POST", "/v1/tokens", { role: "admin", queues: ["sched-b"] })).body.token;
    expect(await callAs(adminA, "PUT", "/v1/schedules/sched-nightly", { queue: "sched-a", everyMs: 60_000 })).toEqual({
      status: 409,
      body: { error: { code: "conflict", message: 'the schedule name "sched-nightly" is taken by a schedule of a queue this token may not see; nothing changed: choose another name' } },
    });
    const listed = (await callAs(ADMIN, "GET", "/v1/schedules")).body.schedules.filter((schedule: { name: string }) => schedule.name.startsWith("sched-"));
    expect(listed).toMatchObject([{ name: "sched-nightly", queue: "sched-b", everyMs: 3_600_000 }]);
    expect(await callAs(adminB, "GET", "/v1/schedules/sched-nightly")).toMatchObject({ status: 200, body: { queue: "sched-b", everyMs: 3_600_000 } });
    expect((await callAs(adminA, "GET", "/v1/schedules/sched-nightly")).status).toBe(404);
    expect(await rows("sched-a", "SELECT name FROM schedules WHERE queue = 'sched-a'")).toEqual([]);
    expect(await rows("sched-b", "SELECT name, every_ms FROM schedules WHERE queue = 'sched-b'")).toEqual([{ name: "sched-nightly", every_ms: 3_600_000 }]);
  });

  test("an admin who manages both queues moves a schedule: one schedule of that name, in its new queue, listed there", async () => {
    await callAs(ADMIN, "PUT", "/v1/schedules/move-nightly", { queue: "move-b", everyMs: 3_600_000 });
    const both = (await callAs(ADMIN, "POST", "/v1/tokens", { role: "admin", queues: ["move-*"] })).body.token;
    expect((await callAs(both, "PUT", "/v1/schedules/move-nightly", { queue: "move-a", everyMs: 60_000 })).body).toMatchObject({ queue: "move-a", everyMs: 60_000 });
    const listed = (await callAs(ADMIN, "GET", "/v1/schedules")).body.schedules.filter((schedule: { name: string }) => schedule.name.startsWith("move-"));
    expect(listed).toMatchObject([{ name: "move-nightly", queue: "move-a" }]);
    expect(await rows("move-b", "SELECT name FROM schedules WHERE queue = 'move-b'")).toEqual([]);
    const onlyB = (await callAs(ADMIN, "POST", "/v1/tokens", { role: "admin", queues: ["move-b"] })).body.token;
    expect(await callAs(onlyB, "PUT", "/v1/schedules/move-nightly", { queue: "move-b", everyMs: 60_000 })).toMatchObject({ status: 409 });
    const reader = (await callAs(ADMIN, "POST", "/v1/tokens", { role: "reader", queues: ["move-*"] })).body.token;
    expect(await callAs(reader, "PUT", "/v1/schedules/move-nightly", { queue: "move-b", everyMs: 60_000 })).toMatchObject({
      status: 403,
      body: { error: { message: "this token (reader for move-*) may not manage move-b: that needs an admin token for move-b" } },
    });
    expect((await callAs(ADMIN, "GET", "/v1/schedules/move-nightly")).body).toMatchObject({ queue: "move-a", everyMs: 60_000 });
  });

  test("a put refused by the store (a bad cron) holds no name: an admin of another queue may take it next", async () => {
    const adminA = (await callAs(ADMIN, "POST", "/v1/tokens", { role: "admin", queues: ["bad-a"] })).body.token;
    const adminB = (await callAs(ADMIN, "POST", "/v1/tokens", { role: "admin", queues: ["bad-b"] })).body.token;
    expect(await callAs(adminA, "PUT", "/v1/schedules/bad-nightly", { queue: "bad-a", cron: "99 * * * *" })).toMatchObject({ status: 400, body: { error: { code: "invalid_request" } } });
    expect(await callAs(adminB, "PUT", "/v1/schedules/bad-nightly", { queue: "bad-b", everyMs: 60_000 })).toMatchObject({ status: 201, body: { queue: "bad-b" } });
    expect((await callAs(ADMIN, "GET", "/v1/schedules/bad-nightly")).body).toMatchObject({ queue: "bad-b" });
  });

  test("two admins of two queues put one new name at once: one schedule, in the queue of the put answered 201, and the other is refused", async () => {
    const admins = await Promise.all(["race-a", "race-b"].map(async (queue) => (await callAs(ADMIN, "POST", "/v1/tokens", { role: "admin", queues: [queue] })).body.token as string));
    const answers = await Promise.all(["race-a", "race-b"].map((queue, i) => callAs(admins[i]!, "PUT", "/v1/schedules/race-nightly", { queue, everyMs: 60_000 })));
    expect(answers.map((answer) => answer.status).sort()).toEqual([201, 409]);
    const winner = answers.find((answer) => answer.status === 201)!.body.queue;
    const listed = (await callAs(ADMIN, "GET", "/v1/schedules")).body.schedules.filter((schedule: { name: string }) => schedule.name.startsWith("race-"));
    expect(listed).toMatchObject([{ name: "race-nightly", queue: winner }]);
    for (const queue of ["race-a", "race-b"]) expect(await rows(queue, `SELECT name FROM schedules WHERE queue = '${queue}'`)).toEqual(queue === winner ? [{ name: "race-nightly" }] : []);
  });

  test("a revoke ends the token's waiting claim and job long poll: 401 at once, and a job enqueued after the revoke stays queued for the next claim", async () => {
    const { token, id } = (await callAs(ADMIN, "POST", "/v1/tokens", { role: "worker", queues: ["revoke-q"] })).body;
    await callAs(ADMIN, "POST", "/v1/jobs", { id: "revoke-read", queue: "revoke-q", delayMs: 60_000 });
    const started = performance.now();
    const reading = callAs(token, "GET", "/v1/jobs/revoke-read?waitMs=10000");
    const claiming = callAs(token, "POST", "/v1/queues/revoke-q/claim", { owner: "W", ttlMs: 30_000, waitMs: 10_000 });
    await vi.waitFor(async () => expect(await waitingIn("revoke-q")).toBeGreaterThanOrEqual(1));
    expect((await callAs(ADMIN, "DELETE", `/v1/tokens/${id}`)).status).toBe(200);
    await callAs(ADMIN, "POST", "/v1/jobs", { id: "revoke-after", queue: "revoke-q", payload: { secret: 1 } });
    expect(await claiming).toMatchObject({ status: 401, body: { error: { code: "unauthorized" } } });
    expect(await reading).toMatchObject({ status: 401, body: { error: { code: "unauthorized" } } });
    expect(performance.now() - started).toBeLessThan(5_000);
    expect((await callAs(ADMIN, "GET", "/v1/jobs/revoke-after")).body).toMatchObject({ status: "queued", fence: 0 });
  });
});
