import { describe, expect, test } from "vitest";
import { freshApp, T } from "../fresh-app.ts";

// The push routes through the real app: what each answers, the secret shown
// only by a create and a rotation, and the refusals that change nothing.

const URL_A = "https://mail.example/push";

describe("the push routes", () => {
  test("PUT creates with the secret (201), a second PUT changes the endpoint and shows no secret (200); GET never shows it", async () => {
    const changed: string[] = [];
    const { call, store } = await freshApp({ push: { changed: (queue) => void changed.push(queue) } });
    const created = await call("PUT", "/v1/queues/mail/push", { url: URL_A });
    expect(created.status).toBe(201);
    expect(created.body).toEqual({
      queue: "mail", url: URL_A, timeoutMs: 10_000, maxInFlight: 10, rotating: false, rotatedAt: null, createdAt: T, updatedAt: T,
      secret: expect.stringMatching(/^whsec_[A-Za-z0-9+/]{43}=$/),
    });
    const replaced = await call("PUT", "/v1/queues/mail/push", { url: "http://127.0.0.1:9/b", timeoutMs: 1_500, maxInFlight: 4 });
    expect(replaced.status).toBe(200);
    expect(replaced.body).toEqual({ queue: "mail", url: "http://127.0.0.1:9/b", timeoutMs: 1_500, maxInFlight: 4, rotating: false, rotatedAt: null, createdAt: T, updatedAt: T });
    expect((await call("GET", "/v1/queues/mail/push")).body).toEqual(replaced.body);
    await call("PUT", "/v1/queues/zip/push", { url: URL_A });
    expect((await call("GET", "/v1/push")).body).toEqual({ endpoints: [replaced.body, expect.objectContaining({ queue: "zip", url: URL_A })] });
    expect((await call("GET", "/v1/push")).body.endpoints[1]).not.toHaveProperty("secret");
    await store.enqueue("job-1", { queue: "mail", now: T });
    expect((await store.push.claim("mail", { limit: 1, now: T })).target?.secrets).toEqual([created.body.secret]); // the secret kept
    expect(changed).toEqual(["mail", "mail", "zip"]);
  });

  test("rotate answers a new secret and marks the settings rotating; unknown queues are 404 for GET, rotate and DELETE", async () => {
    const changed: string[] = [];
    const { call, clock } = await freshApp({ push: { changed: (queue) => void changed.push(queue) } });
    for (const [method, path] of [["GET", "/v1/queues/mail/push"], ["POST", "/v1/queues/mail/push/rotate"], ["DELETE", "/v1/queues/mail/push"]] as const) {
      const refused = await call(method, path);
      expect(refused.status).toBe(404);
      expect(refused.body).toEqual({ error: { code: "not_found", message: 'queue "mail" has no push endpoint' } });
    }
    const { secret } = (await call("PUT", "/v1/queues/mail/push", { url: URL_A })).body;
    clock.now = T + 10;
    const rotated = await call("POST", "/v1/queues/mail/push/rotate");
    expect(rotated.status).toBe(200);
    expect(rotated.body).toMatchObject({ queue: "mail", rotating: true, rotatedAt: T + 10, updatedAt: T + 10, secret: expect.stringMatching(/^whsec_/) });
    expect(rotated.body.secret).not.toBe(secret);
    expect((await call("GET", "/v1/queues/mail/push")).body).not.toHaveProperty("secret");
    expect((await call("DELETE", "/v1/queues/mail/push")).status).toBe(204);
    expect((await call("GET", "/v1/queues/mail/push")).status).toBe(404);
    expect(changed).toEqual(["mail", "mail", "mail"]);
  });

  test("a bad body is a 400 that names the field, and changes nothing", async () => {
    const changed: string[] = [];
    const { call } = await freshApp({ push: { changed: (queue) => void changed.push(queue) } });
    const cases: [unknown, string][] = [
      [{}, "url is required"],
      [{ url: 5 }, "url must be a string"],
      [{ url: URL_A, retries: 3 }, 'unknown field "retries"; the fields are url, timeoutMs, maxInFlight'],
      [{ url: URL_A, timeoutMs: 0 }, "timeoutMs must be at least 1"],
      [{ url: URL_A, timeoutMs: 300_001 }, "timeoutMs must be at most 300000"],
      [{ url: URL_A, maxInFlight: 1.5 }, "maxInFlight must be a whole number"],
      [{ url: URL_A, maxInFlight: 1_001 }, "maxInFlight must be at most 1000"],
      [{ url: "ftp://mail.example/" }, 'url must be an http: or https: URL, got "ftp://mail.example/"'],
      [{ url: "mail.example/push" }, 'url must be an absolute http: or https: URL, got "mail.example/push"'],
      [{ url: "https:mail.example/push" }, 'url must start with http:// or https:// as it is written, got "https:mail.example/push"'],
      [{ url: "https://me:pw@mail.example/" }, "url must not hold a user name or password: each delivery is signed instead (see the secret)"],
    ];
    for (const [body, message] of cases) {
      const refused = await call("PUT", "/v1/queues/mail/push", body);
      expect(refused.status, JSON.stringify(body)).toBe(400);
      expect(refused.body.error).toEqual({ code: "invalid_request", message });
    }
    expect((await call("GET", "/v1/queues/mail/push")).status).toBe(404);
    expect(changed).toEqual([]);
  });

  test("a claim as the push owner is a 400 that says the owner is the server's own, and takes nothing", async () => {
    const { call, store } = await freshApp();
    await store.enqueueMany("mail", { jobs: [{ id: "job-1" }, { id: "job-2" }], now: T });
    const claims: [string, unknown][] = [
      ["/v1/queues/mail/claim", { owner: "push", ttlMs: 60_000 }],
      ["/v1/queues/mail/claim", { owner: "push", ttlMs: 60_000, waitMs: 1_000 }],
      ["/v1/jobs/job-1/claim", { owner: "push", ttlMs: 60_000 }],
    ];
    for (const [path, body] of claims) {
      const refused = await call("POST", path, body);
      expect(refused.status, `${path} ${JSON.stringify(body)}`).toBe(400);
      expect(refused.body.error.code).toBe("invalid_request");
      expect(refused.body.error.message).toMatch(/^owner "push" is the server's own, for the leases of push delivery: .*; name another owner$/);
    }
    for (const id of ["job-1", "job-2"]) expect(await store.get(id, { now: T })).toMatchObject({ status: "queued", fence: 0 });
  });

  test("every push route needs the token", async () => {
    const { app } = await freshApp();
    for (const [method, path] of [["PUT", "/v1/queues/mail/push"], ["GET", "/v1/queues/mail/push"], ["GET", "/v1/push"], ["POST", "/v1/queues/mail/push/rotate"], ["DELETE", "/v1/queues/mail/push"]] as const) {
      expect((await app.request(path, { method })).status).toBe(401);
    }
  });

  test("/metrics counts deliveries by outcome with their time, and the pushed leases in flight, per pushed queue", async () => {
    const { call, store, app } = await freshApp();
    await call("PUT", "/v1/queues/mail/push", { url: URL_A });
    await store.enqueueMany("mail", { jobs: [{ id: "job-1" }, { id: "job-2" }], now: T });
    const [lease] = (await store.push.claim("mail", { limit: 1, now: T })).leases;
    await store.push.record({ lease: lease!, outcome: "failure", status: 500, durationMs: 1_500, error: "the endpoint answered 500", at: T });
    const text = await (await app.request("/metrics", { headers: { Authorization: "Bearer test-token" } })).text();
    expect(text).toContain('fencelease_push_deliveries_total{queue="mail",outcome="failure"} 1');
    expect(text).toContain('fencelease_push_deliveries_total{queue="mail",outcome="success"} 0');
    expect(text).toContain('fencelease_push_delivery_seconds_total{queue="mail",outcome="failure"} 1.5');
    expect(text).toContain('fencelease_push_in_flight{queue="mail"} 1');
  });
});
