import { env, SELF } from "cloudflare:test";
import { describe, expect, test } from "vitest";

// Tokens on the Worker, on D1: the same routes and rules as on Node
// (test/http/tokens.test.ts and permits.test.ts), through the Worker's fetch.

const ADMIN = "worker-test-token"; // FENCELEASE_TOKENS in vitest.config.ts

async function call(token: string, method: string, path: string, body?: unknown) {
  const response = await SELF.fetch(`https://fencelease.test${path}`, {
    method,
    headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as any };
}

async function sha256(text: string): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text)));
  return Array.from(digest, (byte) => byte.toString(16).padStart(2, "0")).join("");
}

describe("tokens on the Worker", () => {
  test("a worker token for invoices works invoices, is refused mail and enqueue, and is gone once revoked", async () => {
    const made = await call(ADMIN, "POST", "/v1/tokens", { role: "worker", queues: ["invoices"], name: "billing" });
    expect(made.status).toBe(201);
    const { id, token } = made.body;
    expect(await env.DB.prepare("SELECT hash FROM tokens WHERE id = ?").bind(id).first()).toEqual({ hash: await sha256(token) });

    await call(ADMIN, "POST", "/v1/queues/invoices/jobs", { jobs: [{ id: "inv-1" }] });
    await call(ADMIN, "POST", "/v1/queues/mail/jobs", { jobs: [{ id: "mail-1" }] });
    const claimed = await call(token, "POST", "/v1/queues/invoices/claim", { owner: "W", ttlMs: 30_000 });
    expect(claimed.body.leases).toMatchObject([{ fence: 1, job: { id: "inv-1" } }]);
    expect(await call(token, "POST", "/v1/jobs/inv-1/complete", { owner: "W", fence: 1, result: "paid" })).toMatchObject({ status: 200, body: { job: { status: "done" } } });

    expect(await call(token, "POST", "/v1/jobs/mail-1/claim", { owner: "W", ttlMs: 30_000 })).toMatchObject({ status: 404, body: { error: { code: "not_found" } } });
    expect(await call(token, "POST", "/v1/jobs", { id: "inv-2", queue: "invoices" })).toMatchObject({
      status: 403,
      body: { error: { code: "forbidden", message: 'this token "billing" (worker for invoices) may not enqueue into invoices: that needs a producer or admin token for invoices' } },
    });
    expect((await call(token, "GET", "/v1/stats")).body.queues.map((stats: { queue: string }) => stats.queue)).toEqual(["invoices"]);

    expect(await call(ADMIN, "DELETE", `/v1/tokens/${id}`)).toMatchObject({ status: 200, body: { revoked: true } });
    expect((await call(token, "GET", "/v1/stats")).status).toBe(401);
    expect(await env.DB.prepare("SELECT count(*) AS n FROM tokens").first()).toEqual({ n: 0 });
  });

  test("GET /v1/tokens lists without secrets; only an admin for every queue may", async () => {
    const { token } = (await call(ADMIN, "POST", "/v1/tokens", { role: "admin", queues: ["mail-*"] })).body;
    const list = await call(ADMIN, "GET", "/v1/tokens");
    expect(list.body.tokens).toMatchObject([{ role: "admin", queues: ["mail-*"], name: null }]);
    expect(JSON.stringify(list.body)).not.toContain(token);
    expect((await call(token, "GET", "/v1/tokens")).status).toBe(403);
  });
});
