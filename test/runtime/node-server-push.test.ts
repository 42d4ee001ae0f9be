import { describe, expect, test } from "vitest";
import { verifyPush } from "../../src/client/index.ts";
import { openStore, type RunningServer, type ServerConfig, serverConfigFromEnv, startServer } from "../../src/node.ts";
import { PUSH_OWNER } from "../../src/store/sql/claim-next.ts";
import { freshUrl } from "../fresh-db.ts";
import { answerWith, neverAnswer, type Received, startEndpoint } from "../push/endpoint.ts";

// Push delivery in the Node server, end to end over HTTP: a queue given an
// endpoint has its jobs claimed by the server's dispatcher and POSTed there,
// woken by the same wait room as the long polls. The endpoints are real HTTP
// servers on 127.0.0.1.

const TOKEN = "push-test-token";

/**
 * A server on a fresh file whose room's re-check is far off: what arrives
 * within ms was rung, not re-checked. It pushes to private addresses: the
 * test endpoints listen on 127.0.0.1.
 */
function running(options: Partial<ServerConfig> = {}): Promise<RunningServer> {
  return startServer({ host: "127.0.0.1", port: 0, databaseUrl: freshUrl(), auth: { tokens: [TOKEN] }, recheckMs: 60_000, maintainEveryMs: 0, pushPrivate: "allow", ...options });
}

/** Calls the server's API with the token; answers the status and the JSON body (null for none). */
async function call(server: RunningServer, method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
  const response = await fetch(`${server.url}${path}`, {
    method,
    headers: { Authorization: `Bearer ${TOKEN}`, ...(body !== undefined && { "Content-Type": "application/json" }) },
    ...(body !== undefined && { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  return { status: response.status, body: text === "" ? null : JSON.parse(text) };
}

/** Waits until `ready` holds, checking every 10 ms, for at most `ms`. */
async function until(ready: () => boolean | Promise<boolean>, ms = 5_000): Promise<void> {
  const deadline = performance.now() + ms;
  while (!(await ready())) {
    if (performance.now() > deadline) throw new Error(`not within ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** The id of the job a request delivered. */
const jobOf = (request: Received) => decodeURIComponent(request.headers["fencelease-job-id"] as string);

describe("push in the Node server", () => {
  test("a job enqueued into a pushed queue is POSTed within milliseconds, signed, and done with the answer as its result", async () => {
    const server = await running();
    try {
      const endpoint = await startEndpoint(answerWith(200, { sent: true }));
      const put = await call(server, "PUT", "/v1/queues/mail/push", { url: endpoint.url, timeoutMs: 2_000 });
      expect(put.status).toBe(201);
      expect(put.body).toMatchObject({ queue: "mail", url: endpoint.url, timeoutMs: 2_000, maxInFlight: 10, secret: expect.stringMatching(/^whsec_/) });
      const enqueuedAt = performance.now();
      expect((await call(server, "POST", "/v1/jobs", { id: "job-1", queue: "mail", payload: { to: "ada" } })).status).toBe(201);
      const done = await call(server, "GET", "/v1/jobs/job-1?waitMs=5000");
      expect(done.body).toMatchObject({ status: "done", result: { sent: true }, owner: PUSH_OWNER, fence: 1 });
      const [request] = endpoint.received;
      expect(request!.at - enqueuedAt).toBeLessThan(500); // rung by the enqueue: the room's re-check is a minute away
      const verified = await verifyPush({ headers: request!.headers, body: request!.body }, put.body.secret);
      expect(verified).toMatchObject({ owner: PUSH_OWNER, fence: 1, job: { id: "job-1", payload: { to: "ada" } } });

      const events = (await call(server, "GET", "/v1/jobs/job-1/events")).body.events;
      expect(events.map((event: any) => [event.kind, event.action, event.httpStatus])).toEqual([
        ["enqueued", null, null], ["claimed", null, null], ["pushed", "success", 200], ["completed", null, null],
      ]);
      const metrics = await (await fetch(`${server.url}/metrics`, { headers: { Authorization: `Bearer ${TOKEN}` } })).text();
      expect(metrics).toContain('fencelease_push_deliveries_total{queue="mail",outcome="success"} 1');
      expect(metrics).toContain('fencelease_push_deliveries_total{queue="mail",outcome="failure"} 0');
      expect(metrics).toContain('fencelease_push_in_flight{queue="mail"} 0');
    } finally {
      await server.stop();
    }
  });

  test("with no OpenTelemetry SDK, a job enqueued with a trace context is POSTed with its traceparent and tracestate as W3C headers; one without, with neither", async () => {
    const server = await running();
    try {
      const endpoint = await startEndpoint(answerWith(200));
      await call(server, "PUT", "/v1/queues/mail/push", { url: endpoint.url });
      const traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
      const tracestate = "congo=t61rcWkgMzE";
      await call(server, "POST", "/v1/queues/mail/jobs", { jobs: [{ id: "traced", traceparent, tracestate }, { id: "plain" }] });
      await until(() => endpoint.received.length === 2);
      const sent = Object.fromEntries(endpoint.received.map((request) => [jobOf(request), [request.headers.traceparent, request.headers.tracestate]]));
      expect(sent).toEqual({ traced: [traceparent, tracestate], plain: [undefined, undefined] });
    } finally {
      await server.stop();
    }
  });

  test("jobs already queued are pushed as soon as the queue is given an endpoint, at most maxInFlight at once", async () => {
    const server = await running();
    try {
      let open = 0;
      let most = 0;
      const endpoint = await startEndpoint(async (request, response) => {
        most = Math.max(most, ++open);
        await new Promise((resolve) => setTimeout(resolve, 150));
        open--;
        await answerWith(200, { id: jobOf(request) })(request, response);
      });
      const jobs = Array.from({ length: 7 }, (_, i) => ({ id: `job-${i + 1}` }));
      expect((await call(server, "POST", "/v1/queues/mail/jobs", { jobs })).status).toBe(200);
      expect((await call(server, "PUT", "/v1/queues/mail/push", { url: endpoint.url, maxInFlight: 2 })).status).toBe(201);
      await until(async () => (await call(server, "GET", "/v1/stats")).body.queues[0].jobs.done === 7);
      expect(most).toBe(2);
      expect(endpoint.received.map(jobOf).sort()).toEqual(jobs.map((job) => job.id).sort());
      for (const { id } of jobs) expect((await call(server, "GET", `/v1/jobs/${id}`)).body).toMatchObject({ status: "done", result: { id }, attempts: 1 });
    } finally {
      await server.stop();
    }
  });

  test("a failed delivery is sent again when its Retry-After ends, by the timer of the next due job", async () => {
    const server = await running();
    try {
      let calls = 0;
      const endpoint = await startEndpoint((request, response) => (++calls === 1 ? answerWith(503, "busy", { "retry-after": "1" }) : answerWith(200, "ok"))(request, response));
      await call(server, "PUT", "/v1/queues/mail/push", { url: endpoint.url });
      await call(server, "POST", "/v1/jobs", { id: "job-1", queue: "mail" });
      const done = await call(server, "GET", "/v1/jobs/job-1?waitMs=10000");
      expect(done.body).toMatchObject({ status: "done", result: "ok", fence: 2, attempts: 2 });
      const [first, second] = endpoint.received;
      expect(second!.at - first!.at).toBeGreaterThanOrEqual(950);
      expect(second!.at - first!.at).toBeLessThan(1_900);
      expect(second!.headers["fencelease-fence"]).toBe("2");
      expect(second!.headers["fencelease-attempt"]).toBe("2");
      const events = (await call(server, "GET", "/v1/jobs/job-1/events")).body.events;
      expect(events.filter((event: any) => event.kind === "pushed").map((event: any) => [event.fence, event.action, event.httpStatus, event.error])).toEqual([
        [1, "failure", 503, "the endpoint answered 503: busy"],
        [2, "success", 200, null],
      ]);
    } finally {
      await server.stop();
    }
  });

  test("a 202 keeps its slot until the endpoint completes the lease through the API with the fence it was given", async () => {
    const server = await running();
    try {
      const endpoint = await startEndpoint(answerWith(202));
      await call(server, "PUT", "/v1/queues/mail/push", { url: endpoint.url, maxInFlight: 1 });
      await call(server, "POST", "/v1/queues/mail/jobs", { jobs: [{ id: "job-1" }, { id: "job-2", priority: -1 }] });
      await until(() => endpoint.received.length === 1);
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(endpoint.received.map(jobOf)).toEqual(["job-1"]); // job-2 waits for the slot
      expect((await call(server, "GET", "/v1/jobs/job-2")).body.status).toBe("queued");
      const { headers } = endpoint.received[0]!;
      const lease = { owner: decodeURIComponent(headers["fencelease-owner"] as string), fence: Number(headers["fencelease-fence"]) };
      expect((await call(server, "POST", "/v1/jobs/job-1/renew", { ...lease, ttlMs: 60_000 })).status).toBe(200);
      expect((await call(server, "POST", "/v1/jobs/job-1/complete", { ...lease, result: "mailed" })).status).toBe(200);
      await until(() => endpoint.received.length === 2);
      expect(jobOf(endpoint.received[1]!)).toBe("job-2");
    } finally {
      await server.stop();
    }
  });

  test("rotate answers a new secret, deliveries carry both until the next; DELETE stops pushing and leaves the jobs queued", async () => {
    const server = await running();
    try {
      const endpoint = await startEndpoint(answerWith(200));
      const first = (await call(server, "PUT", "/v1/queues/mail/push", { url: endpoint.url })).body.secret;
      const rotated = await call(server, "POST", "/v1/queues/mail/push/rotate");
      expect(rotated.status).toBe(200);
      expect(rotated.body).toMatchObject({ rotating: true, secret: expect.stringMatching(/^whsec_/) });
      await call(server, "POST", "/v1/jobs", { id: "job-1", queue: "mail" });
      await until(() => endpoint.received.length === 1);
      const { headers, body } = endpoint.received[0]!;
      expect((headers["webhook-signature"] as string).split(" ")).toHaveLength(2);
      for (const secret of [first, rotated.body.secret]) expect((await verifyPush({ headers, body }, secret)).job.id).toBe("job-1");
      expect((await call(server, "GET", "/v1/queues/mail/push")).body).not.toHaveProperty("secret");

      expect((await call(server, "DELETE", "/v1/queues/mail/push")).status).toBe(204);
      await call(server, "POST", "/v1/jobs", { id: "job-2", queue: "mail" });
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(endpoint.received).toHaveLength(1);
      expect((await call(server, "GET", "/v1/jobs/job-2")).body.status).toBe("queued");
      expect((await call(server, "GET", "/v1/queues/mail/push")).status).toBe(404);
    } finally {
      await server.stop();
    }
  });

  test("two servers on one database deliver each lease once, and hold maxInFlight between them", async () => {
    const databaseUrl = freshUrl();
    const [one, two] = [await running({ databaseUrl }), await running({ databaseUrl })];
    try {
      let open = 0;
      let most = 0;
      const endpoint = await startEndpoint(async (request, response) => {
        most = Math.max(most, ++open);
        await new Promise((resolve) => setTimeout(resolve, 40));
        open--;
        await answerWith(200, "ok")(request, response);
      });
      await call(one, "PUT", "/v1/queues/mail/push", { url: endpoint.url, maxInFlight: 3 });
      await call(two, "PUT", "/v1/queues/mail/push", { url: endpoint.url, maxInFlight: 3 }); // the second server learns of it at once too
      const jobs = Array.from({ length: 24 }, (_, i) => ({ id: `job-${i}` }));
      await call(one, "POST", "/v1/queues/mail/jobs", { jobs: jobs.slice(0, 12) });
      await call(two, "POST", "/v1/queues/mail/jobs", { jobs: jobs.slice(12) });
      await until(async () => (await call(one, "GET", "/v1/stats")).body.queues[0].jobs.done === 24, 15_000);
      const delivered = endpoint.received.map((request) => `${jobOf(request)}@${request.headers["fencelease-fence"]}`);
      expect(delivered.sort()).toEqual(jobs.map(({ id }) => `${id}@1`).sort()); // each job once, with its first lease
      expect(most).toBeLessThanOrEqual(3);
      expect(most).toBeGreaterThan(1);
    } finally {
      await Promise.all([one.stop(), two.stop()]);
    }
  });

  test("a stop cuts a delivery without an answer after the grace and gives its lease back, its attempt with it", async () => {
    const databaseUrl = freshUrl();
    const server = await running({ shutdownGraceMs: 200, databaseUrl });
    const endpoint = await startEndpoint(neverAnswer);
    await call(server, "PUT", "/v1/queues/mail/push", { url: endpoint.url, timeoutMs: 60_000 });
    await call(server, "POST", "/v1/jobs", { id: "job-1", queue: "mail" });
    await until(() => endpoint.received.length === 1);
    const stopping = performance.now();
    await server.stop();
    expect(performance.now() - stopping).toBeLessThan(5_000);
    const store = await openStore({ url: databaseUrl });
    try {
      expect(await store.get("job-1")).toMatchObject({ status: "queued", owner: null, fence: 1, attempts: 0 });
      expect((await store.events("job-1")).items.map((event) => event.kind)).toEqual(["enqueued", "claimed", "released"]);
    } finally {
      store.close();
    }
  });
});

describe("push to private addresses in the Node server", () => {
  test("with tokens, by default: a put of a private IP is a 400 that says how to allow it, and writes nothing; an endpoint put elsewhere is not delivered to, saying why", async () => {
    const databaseUrl = freshUrl();
    const endpoint = await startEndpoint(answerWith(200, "ok"));
    // Put by a process that may push within its network (its own store): this server may not.
    const other = await openStore({ url: databaseUrl });
    await other.push.put("mail", { url: endpoint.url, timeoutMs: 2_000 });
    other.close();
    const server = await running({ databaseUrl, pushPrivate: undefined }); // FENCELEASE_PUSH_PRIVATE unset
    try {
      for (const url of [endpoint.url, "http://10.0.0.1/", "http://[::1]:9/", "http://169.254.169.254/latest/meta-data/", "http://localhost:3000/"]) {
        const refused = await call(server, "PUT", "/v1/queues/news/push", { url });
        expect(refused.status, url).toBe(400);
        expect(refused.body.error.code).toBe("invalid_request");
        expect(refused.body.error.message).toMatch(/^url ".+" points to a [a-z-]+ address, which this server does not push to \(FENCELEASE_PUSH_PRIVATE=deny\): .+FENCELEASE_PUSH_PRIVATE=allow/);
      }
      expect((await call(server, "GET", "/v1/queues/news/push")).status).toBe(404);
      expect((await call(server, "PUT", "/v1/queues/news/push", { url: "https://news.example/push" })).status).toBe(201); // a public name is taken

      await call(server, "POST", "/v1/jobs", { id: "job-1", queue: "mail" });
      const pushed = async () => (await call(server, "GET", "/v1/jobs/job-1/events")).body.events.filter((event: any) => event.kind === "pushed");
      await until(async () => (await pushed()).length === 1);
      const error = "the endpoint could not be reached: 127.0.0.1 is a loopback address, which this server does not push to (FENCELEASE_PUSH_PRIVATE=deny)";
      expect((await pushed()).map((event: any) => [event.action, event.httpStatus, event.error])).toEqual([["unreachable", null, error]]);
      expect((await call(server, "GET", "/v1/jobs/job-1")).body).toMatchObject({ status: "scheduled", attempts: 1, lastError: error });
      expect(endpoint.received).toEqual([]);
    } finally {
      await server.stop();
    }
  });

  test("with auth off (local development, loopback only), by default: it pushes to 127.0.0.1", async () => {
    const server = await running({ auth: "off", pushPrivate: undefined });
    try {
      const endpoint = await startEndpoint(answerWith(200, { sent: true }));
      expect((await call(server, "PUT", "/v1/queues/mail/push", { url: endpoint.url })).status).toBe(201);
      await call(server, "POST", "/v1/jobs", { id: "job-1", queue: "mail" });
      expect((await call(server, "GET", "/v1/jobs/job-1?waitMs=5000")).body).toMatchObject({ status: "done", result: { sent: true } });
    } finally {
      await server.stop();
    }
  });

  test("FENCELEASE_PUSH_PRIVATE is allow or deny; anything else stops the start, naming it", () => {
    expect(serverConfigFromEnv({ FENCELEASE_PUSH_PRIVATE: "allow" }).pushPrivate).toBe("allow");
    expect(serverConfigFromEnv({ FENCELEASE_PUSH_PRIVATE: "deny" }).pushPrivate).toBe("deny");
    expect(serverConfigFromEnv({}).pushPrivate).toBeUndefined(); // the default: by auth
    expect(() => serverConfigFromEnv({ FENCELEASE_PUSH_PRIVATE: "yes" })).toThrow("FENCELEASE_PUSH_PRIVATE must be allow or deny, got yes");
  });
});
