import { describe, expect, test } from "vitest";
import { type Answer, freshApp } from "../fresh-app.ts";
import type { Role } from "../../src/index.ts";

// Every route of the OpenAPI document, called by a token of every role for the
// queue "invoices": on a job, queue or schedule of invoices (its own) and of
// mail (one it may not see). A role that may act answers as without tokens; one
// that may not is 403 forbidden naming the role and queue it needs; a job or
// schedule of a queue the token may not see is answered as none at all; a list
// leaves out what the token may not see. A refused call changes nothing (every
// table compared). A route missing from the table fails the first test.

const TTL = 30_000;
const ROLES: Role[] = ["admin", "producer", "worker", "reader"];
type Queue = "invoices" | "mail";
type Request = [method: string, path: string, body?: unknown];

/** What a route does, as a permit decides it; "tokens" is only for an admin token for every queue, "open" needs no token, "self" any token. */
type Needs = "read" | "enqueue" | "work" | "manage" | "tokens" | "open" | "self";

type Route = {
  needs: Needs;
  /** The call on the things of `queue`. */
  request: (queue: Queue) => Request;
  /** What a token of invoices gets for the call on mail: 404 (by id, as for none), 403 (a queue it named), or a check of an answer that leaves mail out. */
  unseen?: 403 | 404 | ((answer: Answer) => void);
  /** The status of an allowed call; default 200. */
  ok?: number;
};

const nothingOfMail = (answer: Answer) => {
  expect(answer.status).toBe(200);
  expect(JSON.stringify(answer.body)).not.toContain("mail");
};

/** Every route, by its method and OpenAPI path. */
const ROUTES: Record<string, Route> = {
  "post /v1/jobs": { needs: "enqueue", request: (q) => ["POST", "/v1/jobs", { id: `${q}-new`, queue: q }], unseen: 403, ok: 201 },
  "post /v1/queues/{queue}/jobs": { needs: "enqueue", request: (q) => ["POST", `/v1/queues/${q}/jobs`, { jobs: [{ id: `${q}-new` }] }], unseen: 403 },
  "get /v1/jobs/{id}": { needs: "read", request: (q) => ["GET", `/v1/jobs/${q}-queued`], unseen: 404 },
  "get /v1/jobs": { needs: "read", request: (q) => ["GET", `/v1/jobs?queue=${q}`], unseen: 403 },
  "get /v1/jobs/{id}/events": { needs: "read", request: (q) => ["GET", `/v1/jobs/${q}-leased/events`], unseen: (answer) => expect(answer).toMatchObject({ status: 200, body: { events: [], nextCursor: null } }) },
  "get /v1/jobs/{id}/lease": { needs: "read", request: (q) => ["GET", `/v1/jobs/${q}-leased/lease?owner=W&fence=1`], unseen: 404 },
  "post /v1/jobs/{id}/claim": { needs: "work", request: (q) => ["POST", `/v1/jobs/${q}-queued/claim`, { owner: "X", ttlMs: TTL }], unseen: 404 },
  "post /v1/queues/{queue}/claim": { needs: "work", request: (q) => ["POST", `/v1/queues/${q}/claim`, { owner: "X", ttlMs: TTL }], unseen: 403 },
  "post /v1/jobs/{id}/renew": { needs: "work", request: (q) => ["POST", `/v1/jobs/${q}-leased/renew`, { owner: "W", fence: 1, ttlMs: TTL }], unseen: 404 },
  "post /v1/jobs/{id}/complete": { needs: "work", request: (q) => ["POST", `/v1/jobs/${q}-leased/complete`, { owner: "W", fence: 1, result: "ok" }], unseen: 404 },
  "post /v1/jobs/{id}/steps/{name}": { needs: "work", request: (q) => ["POST", `/v1/jobs/${q}-leased/steps/charge`, { owner: "W", fence: 1, result: "ok" }], unseen: 404, ok: 201 },
  "post /v1/jobs/{id}/release": { needs: "work", request: (q) => ["POST", `/v1/jobs/${q}-leased/release`, { owner: "W", fence: 1 }], unseen: 404 },
  "post /v1/jobs/{id}/fail": { needs: "work", request: (q) => ["POST", `/v1/jobs/${q}-leased/fail`, { owner: "W", fence: 1, error: "no" }], unseen: 404 },
  "post /v1/leases/renew": {
    needs: "work",
    request: (q) => ["POST", "/v1/leases/renew", { owner: "W", ttlMs: TTL, leases: [{ id: `${q}-leased`, fence: 1 }] }],
    unseen: (answer) => expect(answer).toMatchObject({ status: 200, body: { leases: [{ id: "mail-leased", error: { code: "not_found", message: 'no job has the id "mail-leased"' } }] } }),
  },
  "post /v1/leases/complete": {
    needs: "work",
    request: (q) => ["POST", "/v1/leases/complete", { owner: "W", leases: [{ id: `${q}-leased`, fence: 1, result: "ok" }] }],
    unseen: (answer) => expect(answer).toMatchObject({ status: 200, body: { completed: [{ id: "mail-leased", error: { code: "not_found" } }], leases: [] } }),
  },
  "post /v1/jobs/{id}/retry": { needs: "manage", request: (q) => ["POST", `/v1/jobs/${q}-dead/retry`], unseen: 404 },
  "post /v1/jobs/{id}/cancel": { needs: "manage", request: (q) => ["POST", `/v1/jobs/${q}-queued/cancel`, { reason: "test" }], unseen: 404 },
  "post /v1/jobs/bulk": { needs: "manage", request: (q) => ["POST", "/v1/jobs/bulk", { action: "cancel", filter: { queue: q, idPrefix: `${q}-queued` } }], unseen: 403 },
  "delete /v1/jobs/{id}": { needs: "manage", request: (q) => ["DELETE", `/v1/jobs/${q}-queued`], unseen: 404 },
  "post /v1/queues/{queue}/pause": { needs: "manage", request: (q) => ["POST", `/v1/queues/${q}/pause`], unseen: 403 },
  "post /v1/queues/{queue}/resume": { needs: "manage", request: (q) => ["POST", `/v1/queues/${q}/resume`], unseen: 403 },
  "put /v1/queues/{queue}": { needs: "manage", request: (q) => ["PUT", `/v1/queues/${q}`, { maxLeased: 5 }], unseen: 403 },
  "get /v1/queues/{queue}": { needs: "read", request: (q) => ["GET", `/v1/queues/${q}`], unseen: 403 },
  "get /v1/queues/{queue}/keys": { needs: "read", request: (q) => ["GET", `/v1/queues/${q}/keys`], unseen: 403 },
  "get /v1/queues/{queue}/series": { needs: "read", request: (q) => ["GET", `/v1/queues/${q}/series`], unseen: 403 },
  "get /v1/queues": { needs: "read", request: () => ["GET", "/v1/queues"] },
  "put /v1/queues/{queue}/push": { needs: "manage", request: (q) => ["PUT", `/v1/queues/${q}/push`, { url: `https://push.example/${q}`, maxInFlight: 3 }], unseen: 403 },
  "get /v1/queues/{queue}/push": { needs: "read", request: (q) => ["GET", `/v1/queues/${q}/push`], unseen: 403 },
  "get /v1/push": { needs: "read", request: () => ["GET", "/v1/push"] },
  "post /v1/queues/{queue}/push/rotate": { needs: "manage", request: (q) => ["POST", `/v1/queues/${q}/push/rotate`], unseen: 403 },
  "delete /v1/queues/{queue}/push": { needs: "manage", request: (q) => ["DELETE", `/v1/queues/${q}/push`], unseen: 403, ok: 204 },
  "put /v1/schedules/{name}": { needs: "manage", request: (q) => ["PUT", `/v1/schedules/${q}-hourly`, { queue: q, everyMs: 3_600_000 }], unseen: 403, ok: 201 },
  "get /v1/schedules/{name}": { needs: "read", request: (q) => ["GET", `/v1/schedules/${q}-nightly`], unseen: 404 },
  "get /v1/schedules": { needs: "read", request: () => ["GET", "/v1/schedules"] },
  "delete /v1/schedules/{name}": { needs: "manage", request: (q) => ["DELETE", `/v1/schedules/${q}-nightly`], unseen: 404, ok: 204 },
  "get /v1/stats": { needs: "read", request: () => ["GET", "/v1/stats"] },
  "get /metrics": { needs: "read", request: () => ["GET", "/metrics"] },
  "get /healthz": { needs: "open", request: () => ["GET", "/healthz"] },
  "post /v1/tokens": { needs: "tokens", request: () => ["POST", "/v1/tokens", { role: "reader", queues: ["*"] }], ok: 201 },
  "get /v1/tokens": { needs: "tokens", request: () => ["GET", "/v1/tokens"] },
  "delete /v1/tokens/{id}": { needs: "tokens", request: () => ["DELETE", "/v1/tokens/TOKEN_ID"] },
  "get /v1/tokens/self": { needs: "self", request: () => ["GET", "/v1/tokens/self"] },
};

/** The roles that may take each action, as the refusal names them. */
const MAY: Record<"read" | "enqueue" | "work" | "manage", Role[]> = {
  read: ROLES,
  enqueue: ["producer", "admin"],
  work: ["worker", "admin"],
  manage: ["admin"],
};

const DOING = { enqueue: "enqueue into invoices", work: "work the jobs of invoices", manage: "manage invoices" } as const;
const NEEDED = { enqueue: "a producer or admin token", work: "a worker or admin token", manage: "an admin token" } as const;

/**
 * An app whose invoices and mail each hold a queued job, a job leased by W
 * (fence 1), a dead job, a schedule and a push endpoint; and a token of each role for invoices.
 */
async function world() {
  const fresh = await freshApp();
  const { call } = fresh;
  for (const q of ["invoices", "mail"] as const) {
    await call("POST", `/v1/queues/${q}/jobs`, { jobs: [{ id: `${q}-queued` }, { id: `${q}-leased` }, { id: `${q}-dead`, maxAttempts: 1 }] });
    expect((await call("POST", `/v1/jobs/${q}-leased/claim`, { owner: "W", ttlMs: TTL })).status).toBe(200);
    expect((await call("POST", `/v1/jobs/${q}-dead/claim`, { owner: "W", ttlMs: TTL })).status).toBe(200);
    expect((await call("POST", `/v1/jobs/${q}-dead/fail`, { owner: "W", fence: 1, error: "gone" })).body.job.status).toBe("dead");
    expect((await call("PUT", `/v1/schedules/${q}-nightly`, { queue: q, cron: "0 3 * * *" })).status).toBe(201);
    expect((await call("PUT", `/v1/queues/${q}/push`, { url: `https://push.example/${q}` })).status).toBe(201);
  }
  const tokens = {} as Record<Role, string>;
  for (const role of ROLES) tokens[role] = (await call("POST", "/v1/tokens", { role, queues: ["invoices"] })).body.token;
  /** Every row of every table the API writes. */
  async function everything() {
    const tables = ["jobs", "history", "queues", "schedules", "tokens", "push_endpoints"];
    return Object.fromEntries(await Promise.all(tables.map(async (table) => [table, await fresh.rows(`SELECT * FROM ${table} ORDER BY 1, 2`)])));
  }
  const as = (token: string) => async ([method, path, body]: Request) => {
    const sent = path.replace("TOKEN_ID", (await fresh.store.tokens.list())[0]!.id);
    return call(method, sent, body, { Authorization: `Bearer ${token}` });
  };
  return { ...fresh, tokens, everything, as };
}

describe("every route, every role", () => {
  test("the table names every route of the OpenAPI document", async () => {
    const { call } = await freshApp();
    const { body } = await call("GET", "/openapi.json");
    const operations = Object.entries(body.paths as Record<string, object>).flatMap(([path, methods]) => Object.keys(methods).map((method) => `${method} ${path}`));
    expect(operations.sort()).toEqual(Object.keys(ROUTES).sort());
  });

  describe.each(Object.entries(ROUTES).filter(([, route]) => ["read", "enqueue", "work", "manage"].includes(route.needs)))("%s", (_, route) => {
    const action = route.needs as keyof typeof MAY;
    const allowed = MAY[action];
    const refused = ROLES.filter((role) => !allowed.includes(role));

    test.each(allowed)("%s for invoices: allowed on invoices", async (role) => {
      const { as, tokens } = await world();
      const answer = await as(tokens[role])(route.request("invoices"));
      expect(answer.status, JSON.stringify(answer.body)).toBe(route.ok ?? 200);
      if (route.unseen === undefined) nothingOfMail(answer);
    });

    if (refused.length > 0) {
      test.each(refused)("%s for invoices: 403 forbidden on invoices, naming what it needs; nothing changes", async (role) => {
        const { as, tokens, everything } = await world();
        const before = await everything();
        const answer = await as(tokens[role])(route.request("invoices"));
        expect(answer.status).toBe(403);
        expect(answer.body.error.code).toBe("forbidden");
        const manyLeases = route.request("invoices")[1].startsWith("/v1/leases/");
        expect(answer.body.error.message).toBe(
          manyLeases
            ? `this token (${role} for invoices) may not ${route.request("invoices")[1].endsWith("renew") ? "renew" : "complete"} leases: that needs ${NEEDED[action as "work"]}`
            : `this token (${role} for invoices) may not ${DOING[action as keyof typeof DOING]}: that needs ${NEEDED[action as keyof typeof NEEDED]} for invoices`,
        );
        expect(await everything()).toEqual(before);
      });
    }

    if (route.unseen !== undefined) {
      test.each(ROLES)("%s for invoices: learns nothing of mail's and changes nothing there", async (role) => {
        const { as, tokens, everything, call } = await world();
        const before = await everything();
        const [method, path, body] = route.request("mail");
        const answer = await as(tokens[role])([method, path, body]);
        if (path.startsWith("/v1/leases/") && !allowed.includes(role)) expect(answer.status).toBe(403); // its role never may: no job is read
        else if (typeof route.unseen === "function") route.unseen(answer);
        else if (route.unseen === 404) {
          // The very answer an id of nothing gets.
          const id = /mail-\w+/.exec(path)![0];
          const unknown = await call(method, path.replace(id, "no-such-thing"), body);
          expect(answer).toMatchObject({ status: 404, body: JSON.parse(JSON.stringify(unknown.body).replace("no-such-thing", id)) });
        } else {
          expect(answer.status).toBe(403);
          expect(answer.body.error.message).toMatch(new RegExp(`^this token \\(${role} for invoices\\) may not .* mail: that needs .* for mail$`));
        }
        expect(await everything()).toEqual(before);
      });
    }
  });
});
