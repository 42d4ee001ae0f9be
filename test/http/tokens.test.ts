import { createHash } from "node:crypto";
import { createClient } from "@libsql/client";
import { describe, expect, test, vi } from "vitest";
import { authFromEnv } from "../../src/index.ts";
import { Hono } from "hono";
import { createApp } from "../../src/index.ts";
import { errorResponse } from "../../src/http/errors.ts";
import { bearerAuth } from "../../src/http/middleware/auth.ts";
import type { TokenInfo } from "../../src/store/tokens.ts";
import { Revocations } from "../../src/wait/revocations.ts";
import { freshApp, T, TOKEN } from "../fresh-app.ts";

// The token routes, and what a token made through them is let do: its
// secret shown once and stored as its SHA-256, a revoke that takes effect at
// once (and, through another process's cache, within its bound), prefixes,
// and what a token that may not see a queue learns of it.

const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });

describe("POST /v1/tokens", () => {
  test("makes a token: 201 with its secret, which works at once and is stored only as its SHA-256", async () => {
    const { call, rows } = await freshApp();
    const answer = await call("POST", "/v1/tokens", { role: "worker", queues: ["invoices", "mail-*"], name: "invoice workers" });
    expect(answer.status).toBe(201);
    expect(answer.body).toEqual({ id: expect.stringMatching(/^tok_[0-9a-f]{16}$/), token: expect.stringMatching(/^fl_[\w-]{43}$/), role: "worker", queues: ["invoices", "mail-*"], name: "invoice workers", createdAt: T });
    const { id, token } = answer.body;
    expect(await rows("SELECT * FROM tokens")).toEqual([
      { id, hash: createHash("sha256").update(token).digest("hex"), role: "worker", queues: '["invoices","mail-*"]', name: "invoice workers", created_at: T },
    ]);
    expect((await call("GET", "/v1/tokens/self", undefined, bearer(token))).body).toEqual({ id, name: "invoice workers", role: "worker", queues: ["invoices", "mail-*"] });
  });

  test("the secret is never shown again: not by the list, not by self, and no other field holds it", async () => {
    const { call } = await freshApp();
    const { token, id } = (await call("POST", "/v1/tokens", { role: "reader", queues: ["*"] })).body;
    const list = await call("GET", "/v1/tokens");
    expect(list).toMatchObject({ status: 200, body: { tokens: [{ id, name: null, role: "reader", queues: ["*"], createdAt: T }] } });
    expect(Object.keys(list.body.tokens[0]).sort()).toEqual(["createdAt", "id", "name", "queues", "role"]);
    const self = await call("GET", "/v1/tokens/self", undefined, bearer(token));
    for (const answer of [list, self]) expect(JSON.stringify(answer.body)).not.toContain(token.slice(3));
  });

  test("two tokens made alike get different ids and secrets", async () => {
    const { call } = await freshApp();
    const [a, b] = [(await call("POST", "/v1/tokens", { role: "reader", queues: ["*"] })).body, (await call("POST", "/v1/tokens", { role: "reader", queues: ["*"] })).body];
    expect(a.id).not.toBe(b.id);
    expect(a.token).not.toBe(b.token);
  });

  test('a "*" among the queues is every queue, and a name given twice is kept once', async () => {
    const { call } = await freshApp();
    expect((await call("POST", "/v1/tokens", { role: "reader", queues: ["a", "*"] })).body.queues).toEqual(["*"]);
    expect((await call("POST", "/v1/tokens", { role: "reader", queues: ["a", "b", "a"] })).body.queues).toEqual(["a", "b"]);
  });

  test.each([
    ["an unknown role", { role: "root", queues: ["*"] }, /^role must be one of admin, producer, worker, reader$/],
    ["no role", { queues: ["*"] }, /^role /],
    ["no queues", { role: "reader" }, /^queues /],
    ["an empty queue list", { role: "reader", queues: [] }, /^queues must name at least one queue, or \["\*"\] for every queue$/],
    ["a * inside a name", { role: "reader", queues: ["a*b"] }, /^queues\[0\] may have a \* only at its end \(a prefix, such as "mail-\*"\), got "a\*b"$/],
    ["an empty name", { role: "reader", queues: [""] }, /^queues\.0 must not be empty$/],
    ["more than 100 queues", { role: "reader", queues: Array.from({ length: 101 }, (_, i) => `q${i}`) }, /^queues must name at most 100 queues$/],
    ["an unknown field", { role: "reader", queues: ["*"], expires: 5 }, /unknown field "expires"/],
  ])("%s: 400 invalid_request naming it, and no token is made", async (_, body, says) => {
    const { call, rows } = await freshApp();
    const answer = await call("POST", "/v1/tokens", body);
    expect(answer.status).toBe(400);
    expect(answer.body.error).toMatchObject({ code: "invalid_request", message: expect.stringMatching(says) });
    expect(await rows("SELECT * FROM tokens")).toEqual([]);
  });
});

describe("who may manage tokens", () => {
  test.each(["admin", "producer", "worker", "reader"])("%s for some queues: may not make, list or revoke tokens (403), and nothing changes", async (role) => {
    const { call, rows } = await freshApp();
    const { token } = (await call("POST", "/v1/tokens", { role, queues: ["invoices"] })).body;
    const before = await rows("SELECT * FROM tokens");
    const message = `this token (${role} for invoices) may not manage tokens: that needs an admin token for every queue`;
    for (const [method, path, body] of [["POST", "/v1/tokens", { role: "admin", queues: ["*"] }], ["GET", "/v1/tokens"], ["DELETE", `/v1/tokens/${before[0]!.id}`]] as const) {
      const answer = await call(method, path, body, bearer(token));
      expect(answer, `${method} ${path}`).toMatchObject({ status: 403, body: { error: { code: "forbidden", message } } });
    }
    expect(await rows("SELECT * FROM tokens")).toEqual(before);
  });

  test("an admin token for every queue may, as the configured tokens may", async () => {
    const { call } = await freshApp();
    const { token } = (await call("POST", "/v1/tokens", { role: "admin", queues: ["*"], name: "ops" })).body;
    const made = await call("POST", "/v1/tokens", { role: "reader", queues: ["*"] }, bearer(token));
    expect(made.status).toBe(201);
    expect((await call("GET", "/v1/tokens", undefined, bearer(token))).body.tokens).toHaveLength(2);
    expect((await call("DELETE", `/v1/tokens/${made.body.id}`, undefined, bearer(token))).status).toBe(200);
  });

  test("a refusal names the token by its name when it has one", async () => {
    const { call } = await freshApp();
    const { token } = (await call("POST", "/v1/tokens", { role: "reader", queues: ["invoices", "mail-*"], name: "dashboard" })).body;
    const answer = await call("POST", "/v1/jobs", { id: "x", queue: "mail-eu" }, bearer(token));
    expect(answer.body.error.message).toBe('this token "dashboard" (reader for invoices, mail-*) may not enqueue into mail-eu: that needs a producer or admin token for mail-eu');
  });
});

describe("DELETE /v1/tokens/:id", () => {
  test("revokes at once: the next request with the token is 401, the row is gone", async () => {
    const { call, rows } = await freshApp();
    const { token, id } = (await call("POST", "/v1/tokens", { role: "reader", queues: ["*"] })).body;
    expect((await call("GET", "/v1/stats", undefined, bearer(token))).status).toBe(200); // now cached
    expect(await call("DELETE", `/v1/tokens/${id}`)).toMatchObject({ status: 200, body: { revoked: true } });
    const after = await call("GET", "/v1/stats", undefined, bearer(token));
    expect(after).toMatchObject({ status: 401, body: { error: { code: "unauthorized", message: "the bearer token is not valid (or was revoked)" } } });
    expect(await rows("SELECT * FROM tokens")).toEqual([]);
  });

  test("an unknown id: 404 not_found, and nothing changes", async () => {
    const { call, rows } = await freshApp();
    await call("POST", "/v1/tokens", { role: "reader", queues: ["*"] });
    const before = await rows("SELECT * FROM tokens");
    expect(await call("DELETE", "/v1/tokens/tok_0000000000000000")).toMatchObject({ status: 404, body: { error: { code: "not_found", message: 'no token has the id "tok_0000000000000000"' } } });
    expect(await rows("SELECT * FROM tokens")).toEqual(before);
  });

  test("a revoke through another server on the same database takes effect here once the token cache's time has passed", async () => {
    const { call, url, clock } = await freshApp();
    const { token, id } = (await call("POST", "/v1/tokens", { role: "reader", queues: ["*"] })).body;
    const { openStore } = await import("../../src/node.ts");
    const otherStore = await openStore({ url });
    const other = createApp({ store: otherStore, auth: { tokens: [TOKEN] }, clock: () => clock.now, tokenCacheMs: 5_000 });
    try {
      const stats = async () => (await other.request("/v1/stats", { headers: bearer(token) })).status;
      expect(await stats()).toBe(200); // the other server now trusts it for 5 s
      expect((await call("DELETE", `/v1/tokens/${id}`)).status).toBe(200);
      clock.now += 4_999;
      expect(await stats()).toBe(200);
      clock.now += 1;
      expect(await stats()).toBe(401);
    } finally {
      otherStore.close();
    }
  });
});

describe("a revoke ends the token's waiting calls", () => {
  /** An app whose Revocations the test can watch, and a worker token for queue q. */
  async function watchedApp(recheckMs?: number) {
    const found: { find?: (secret: string) => Promise<TokenInfo | null> } = {};
    const revocations = new Revocations((secret) => found.find!(secret), { recheckMs });
    const fresh = await freshApp({ revocations });
    found.find = (secret) => fresh.store.tokens.find(secret);
    const { token, id } = (await fresh.call("POST", "/v1/tokens", { role: "worker", queues: ["q"] })).body;
    return { ...fresh, revocations, token, id };
  }

  test("through this server: a waiting claim and a job's long poll answer 401 at once, and a job enqueued after the revoke stays queued", async () => {
    const { call, revocations, token, id } = await watchedApp();
    await call("POST", "/v1/jobs", { id: "read-me", queue: "q", delayMs: 60_000 });
    const started = performance.now();
    const claiming = call("POST", "/v1/queues/q/claim", { owner: "W", ttlMs: 30_000, waitMs: 10_000 }, bearer(token));
    const reading = call("GET", "/v1/jobs/read-me?waitMs=10000", undefined, bearer(token));
    await vi.waitFor(() => expect(revocations.watching).toBe(2));
    expect((await call("DELETE", `/v1/tokens/${id}`)).status).toBe(200);
    await call("POST", "/v1/jobs", { id: "after", queue: "q", payload: { secret: 1 } });
    const revoked = { code: "unauthorized", message: "the bearer token was revoked while this call waited; nothing was handed out" };
    expect(await claiming).toMatchObject({ status: 401, body: { error: revoked } });
    expect(await reading).toMatchObject({ status: 401, body: { error: revoked } });
    expect(performance.now() - started).toBeLessThan(5_000);
    expect(revocations.watching).toBe(0);
    expect((await call("GET", "/v1/jobs/after")).body).toMatchObject({ status: "queued", attempts: 0, fence: 0 });
    expect((await call("POST", "/v1/queues/q/claim", { owner: "V", ttlMs: 30_000 })).body.leases).toMatchObject([{ fence: 1, job: { id: "after" } }]);
  });

  test("a waiting claim of another token, and one of the same token that ends before the revoke, are left as they are", async () => {
    const { call, revocations, token, id } = await watchedApp();
    const other = (await call("POST", "/v1/tokens", { role: "worker", queues: ["q"] })).body.token;
    expect((await call("POST", "/v1/queues/q/claim", { owner: "W", ttlMs: 30_000, waitMs: 1 }, bearer(token))).body).toMatchObject({ leases: [] });
    const waiting = call("POST", "/v1/queues/q/claim", { owner: "O", ttlMs: 30_000, waitMs: 10_000 }, bearer(other));
    await vi.waitFor(() => expect(revocations.watching).toBe(1));
    expect((await call("DELETE", `/v1/tokens/${id}`)).status).toBe(200);
    await call("POST", "/v1/jobs", { id: "for-other", queue: "q" });
    expect((await waiting).body.leases).toMatchObject([{ fence: 1, job: { id: "for-other" } }]);
  });

  test("through another server on the same database: a waiting claim here answers 401 at its next look at the token", async () => {
    const { call, url, token, id } = await watchedApp();
    const { openStore } = await import("../../src/node.ts");
    const otherStore = await openStore({ url });
    const revocations = new Revocations((secret) => otherStore.tokens.find(secret), { recheckMs: 100 });
    const other = createApp({ store: otherStore, auth: { tokens: [TOKEN] }, revocations });
    try {
      const started = performance.now();
      const waiting = other.request("/v1/queues/q/claim", { method: "POST", headers: { ...bearer(token), "Content-Type": "application/json" }, body: JSON.stringify({ owner: "W", ttlMs: 30_000, waitMs: 10_000 }) });
      await vi.waitFor(() => expect(revocations.watching).toBe(1));
      expect((await call("DELETE", `/v1/tokens/${id}`)).status).toBe(200);
      const answer = await waiting;
      expect(answer.status).toBe(401);
      expect(performance.now() - started).toBeLessThan(5_000);
      await call("POST", "/v1/jobs", { id: "later", queue: "q" });
      expect((await call("GET", "/v1/jobs/later")).body).toMatchObject({ status: "queued", fence: 0 });
    } finally {
      otherStore.close();
    }
  });
});

describe("GET /v1/tokens/self", () => {
  test("a configured token, and every caller with auth off, is admin for every queue, with no id or name", async () => {
    const { call } = await freshApp();
    expect((await call("GET", "/v1/tokens/self")).body).toEqual({ id: null, name: null, role: "admin", queues: ["*"] });
    const off = await freshApp({ auth: authFromEnv({ FENCELEASE_AUTH: "off" }) });
    expect((await (await off.app.request("http://127.0.0.1/v1/tokens/self")).json())).toEqual({ id: null, name: null, role: "admin", queues: ["*"] });
  });

  test("no token: 401, as everywhere", async () => {
    const { app } = await freshApp();
    expect((await app.request("/v1/tokens/self")).status).toBe(401);
  });
});

describe("queue names and prefixes", () => {
  test('"mail-*" covers every queue starting with mail-, and no other', async () => {
    const { call } = await freshApp();
    const { token } = (await call("POST", "/v1/tokens", { role: "producer", queues: ["invoices", "mail-*"] })).body;
    for (const [queue, status] of [["invoices", 201], ["mail-", 201], ["mail-eu", 201], ["mail-eu-west", 201], ["mail", 403], ["mailx", 403], ["invoices-2", 403], ["Invoices", 403]] as const) {
      expect((await call("POST", "/v1/jobs", { id: `job-${queue}`, queue }, bearer(token))).status, queue).toBe(status);
    }
  });

  test("an enqueue with no queue goes to default, which the token must cover", async () => {
    const { call } = await freshApp();
    const { token } = (await call("POST", "/v1/tokens", { role: "producer", queues: ["invoices"] })).body;
    expect((await call("POST", "/v1/jobs", { id: "x" }, bearer(token))).body.error.message).toBe("this token (producer for invoices) may not enqueue into default: that needs a producer or admin token for default");
  });

  test("a queue name that is not plain is quoted in a refusal", async () => {
    const { call } = await freshApp();
    const { token } = (await call("POST", "/v1/tokens", { role: "reader", queues: ["my queue"] })).body;
    expect((await call("POST", "/v1/queues/my%20queue/pause", undefined, bearer(token))).body.error.message).toBe('this token (reader for "my queue") may not manage "my queue": that needs an admin token for "my queue"');
  });
});

describe("what a token learns of queues it may not see", () => {
  test("listing jobs without a queue pages through its queues' jobs only: full pages, and a cursor that never names another queue's job", async () => {
    const { call } = await freshApp();
    await call("POST", "/v1/queues/mail/jobs", { jobs: [{ id: "a" }, { id: "c" }, { id: "e" }] });
    await call("POST", "/v1/queues/invoices/jobs", { jobs: [{ id: "b" }, { id: "d" }] });
    await call("POST", "/v1/queues/mail-eu/jobs", { jobs: [{ id: "f" }] });
    await call("POST", "/v1/queues/mail/claim", { owner: "W", ttlMs: 30_000, limit: 2 }); // a and c are leased
    const { token } = (await call("POST", "/v1/tokens", { role: "reader", queues: ["invoices", "mail-*"] })).body;
    const seen: unknown[] = [];
    for (let cursor = ""; ; ) {
      const page = await call("GET", `/v1/jobs?limit=1${cursor}`, undefined, bearer(token));
      seen.push(page.body.jobs.map((job: { id: string }) => job.id), page.body.nextCursor);
      if (page.body.nextCursor === null) break;
      cursor = `&cursor=${page.body.nextCursor}`;
    }
    expect(seen).toEqual([["b"], "b", ["d"], "d", ["f"], null]);
    // Nor does a status: a and c, of mail, are the only leased jobs.
    expect((await call("GET", "/v1/jobs?limit=1&status=leased", undefined, bearer(token))).body).toEqual({ jobs: [], nextCursor: null });
  });

  test("a job's events of a queue the token may not see: an empty page whose cursor says nothing of its history", async () => {
    const { call } = await freshApp();
    await call("POST", "/v1/jobs", { id: "m1", queue: "mail" });
    await call("POST", "/v1/jobs/m1/claim", { owner: "W", ttlMs: 30_000 });
    await call("POST", "/v1/jobs/m1/complete", { owner: "W", fence: 1, result: 1 });
    expect((await call("GET", "/v1/jobs/m1/events?limit=1")).body.nextCursor).toBe("1");
    const { token } = (await call("POST", "/v1/tokens", { role: "reader", queues: ["invoices"] })).body;
    for (const query of ["limit=1", "limit=1&cursor=1", "limit=2"]) {
      expect((await call("GET", `/v1/jobs/m1/events?${query}`, undefined, bearer(token))).body, query).toEqual({ events: [], nextCursor: null });
    }
  });

  test("an enqueue of an id taken in another queue: 409 conflict that shows nothing of that job, and nothing changes", async () => {
    const { call, snapshot } = await freshApp();
    await call("POST", "/v1/jobs", { id: "secret-1", queue: "payroll", payload: { salary: 1 } });
    const { token } = (await call("POST", "/v1/tokens", { role: "producer", queues: ["invoices"] })).body;
    const before = await snapshot();
    const answer = await call("POST", "/v1/jobs", { id: "secret-1", queue: "invoices" }, bearer(token));
    expect(answer).toMatchObject({ status: 409, body: { error: { code: "conflict", message: 'the id "secret-1" is taken by a job in a queue this token may not see; nothing changed: choose another id' } } });
    expect(JSON.stringify(answer.body)).not.toMatch(/payroll|salary/);
    expect(await snapshot()).toEqual(before);
  });

  test("a schedule put over a name taken in another queue: 409 conflict, and the schedule stays", async () => {
    const { call } = await freshApp();
    await call("PUT", "/v1/schedules/nightly", { queue: "payroll", cron: "0 3 * * *" });
    const { token } = (await call("POST", "/v1/tokens", { role: "admin", queues: ["invoices"] })).body;
    const answer = await call("PUT", "/v1/schedules/nightly", { queue: "invoices", everyMs: 60_000 }, bearer(token));
    expect(answer).toMatchObject({ status: 409, body: { error: { code: "conflict", message: 'the schedule name "nightly" is taken by a schedule of a queue this token may not see; nothing changed: choose another name' } } });
    expect((await call("GET", "/v1/schedules/nightly")).body).toMatchObject({ queue: "payroll", cron: "0 3 * * *" });
  });

  test("a many-lease call decides each lease alone: those of other queues are unknown jobs, the others go through", async () => {
    const { call } = await freshApp();
    for (const [id, queue] of [["i1", "invoices"], ["m1", "mail"], ["i2", "invoices"]]) {
      await call("POST", "/v1/jobs", { id, queue });
      await call("POST", `/v1/jobs/${id}/claim`, { owner: "W", ttlMs: 30_000 });
    }
    const { token } = (await call("POST", "/v1/tokens", { role: "worker", queues: ["invoices"] })).body;
    const leases = ["i1", "m1", "i2"].map((id) => ({ id, fence: 1, result: id }));
    const answer = await call("POST", "/v1/leases/complete", { owner: "W", leases }, bearer(token));
    expect(answer.body.completed).toEqual([{ id: "i1", done: true }, { id: "m1", error: { code: "not_found", message: 'no job has the id "m1"' } }, { id: "i2", done: true }]);
    expect((await call("GET", "/v1/jobs/m1")).body).toMatchObject({ status: "leased", done: false });
  });

  test("a many-lease call's next must be a queue the token works: 403 naming it, and nothing completes", async () => {
    const { call } = await freshApp();
    await call("POST", "/v1/jobs", { id: "i1", queue: "invoices" });
    await call("POST", "/v1/jobs/i1/claim", { owner: "W", ttlMs: 30_000 });
    const { token } = (await call("POST", "/v1/tokens", { role: "worker", queues: ["invoices"] })).body;
    const answer = await call("POST", "/v1/leases/complete", { owner: "W", leases: [{ id: "i1", fence: 1, result: 1 }], next: { queue: "mail", limit: 1, ttlMs: 30_000 } }, bearer(token));
    expect(answer).toMatchObject({ status: 403, body: { error: { message: "this token (worker for invoices) may not work the jobs of mail: that needs a worker or admin token for mail" } } });
    expect((await call("GET", "/v1/jobs/i1")).body.status).toBe("leased");
  });

  test("a long poll on a job of another queue is 404 at once, not a wait", async () => {
    const { call } = await freshApp();
    await call("POST", "/v1/jobs", { id: "m1", queue: "mail" });
    const { token } = (await call("POST", "/v1/tokens", { role: "reader", queues: ["invoices"] })).body;
    const started = performance.now();
    expect((await call("GET", "/v1/jobs/m1?waitMs=5000", undefined, bearer(token))).status).toBe(404);
    expect(performance.now() - started).toBeLessThan(2_000);
  });
});

describe("bearerAuth without a token lookup", () => {
  test("lets only the configured tokens in, each for everything: a token made through the API is 401 there", async () => {
    const { call } = await freshApp();
    const { token } = (await call("POST", "/v1/tokens", { role: "admin", queues: ["*"] })).body;
    const app = new Hono();
    app.onError(errorResponse);
    app.use(bearerAuth({ tokens: [TOKEN] }));
    app.get("/who", (c) => c.json(c.get("permit").grant));
    expect(await (await app.request("/who", { headers: bearer(TOKEN) })).json()).toEqual({ id: null, name: null, role: "admin", queues: ["*"] });
    expect((await app.request("/who", { headers: bearer(token) })).status).toBe(401);
  });
});

describe("when the tokens cannot be read", () => {
  test("a configured token is still let in; a token made through the API is not, and nothing says it was valid", async () => {
    const { call, url } = await freshApp();
    const { token } = (await call("POST", "/v1/tokens", { role: "reader", queues: ["*"] })).body;
    const sql = createClient({ url });
    await sql.execute("DROP TABLE tokens");
    sql.close();
    expect((await call("GET", "/v1/stats")).status).toBe(200);
    const logged = console.error;
    console.error = () => {};
    try {
      expect((await call("GET", "/v1/stats", undefined, bearer(token))).status).toBe(500);
    } finally {
      console.error = logged;
    }
  });
});
