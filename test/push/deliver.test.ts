import { describe, expect, test } from "vitest";
import { verifyPush } from "../../src/client/verify-push.ts";
import { deliver, MAX_ANSWER_BYTES, type Post, retryAfterMs } from "../../src/push/deliver.ts";
import { pushNetwork } from "../../src/runtime/node/push-network.ts";
import type { Lease } from "../../src/store/job.ts";
import type { PushTarget } from "../../src/store/push.ts";
import { PUSH_OWNER, PUSH_SETTLE_MS } from "../../src/store/sql/claim-next.ts";
import type { LeaseStore } from "../../src/store/store.ts";
import { freshStore } from "../fresh-db.ts";
import { type Answer, answerWith, neverAnswer, startEndpoint } from "./endpoint.ts";

// One delivery against real HTTP endpoints on 127.0.0.1, each answering one
// way: the answer decides the lease through the same fenced complete and fail
// as a worker's, and the delivery is in the job's history.

/** A store with queue "mail" pushed to `answer`, one job in it claimed for push, and a clock the test may move. */
async function pushedJobWith(answer: Answer, options: { timeoutMs?: number; now?: number; post?: Post } = {}) {
  const endpoint = await startEndpoint(answer);
  const fresh = await freshStore();
  const clock = { now: options.now ?? Date.now() };
  const { store } = fresh;
  const { secret } = await store.push.put("mail", { url: endpoint.url, timeoutMs: options.timeoutMs ?? 5_000, now: clock.now });
  await store.enqueue("job-1", { queue: "mail", payload: { to: "ada@example.com" }, maxAttempts: 3, now: clock.now });
  await store.enqueue("bystander", { queue: "mail", priority: -1, now: clock.now });
  const { leases, target } = await store.push.claim("mail", { limit: 1, now: clock.now });
  const run = () => deliver(leases[0]!, target!, { store, clock: () => clock.now, post: options.post });
  return { ...fresh, endpoint, clock, secret: secret!, lease: leases[0]! as Lease, target: target! as PushTarget, run };
}

/** The job's history, in short. */
async function history(store: LeaseStore, id = "job-1") {
  return (await store.events(id)).items.map(({ kind, action, owner, fence, httpStatus, error }) => ({ kind, action, owner, fence, httpStatus, error }));
}

// Each delivery goes out through the runtime's fetch (the Worker's), and
// through the Node server's own POST (src/runtime/node/push-network.ts).
const POSTS: [string, Post | undefined][] = [["fetch", undefined], ["the Node server's post", pushNetwork("allow").post]];

describe.each(POSTS)("a delivery through %s", (_name, post) => {
  const pushedJob: typeof pushedJobWith = (answer, options = {}) => pushedJobWith(answer, { ...options, post });

  /** Answered 200 with `body`, which cannot be the result: the job is done all the same, its result null, and `error` recorded with the delivery. */
  async function doneWithResultNull(body: string, error: string) {
    const { run, store, clock } = await pushedJob(answerWith(200, body));
    expect(await run()).toMatchObject({ outcome: "success", status: 200, error, written: "completed" });
    expect(await store.get("job-1", { now: clock.now })).toMatchObject({ status: "done", result: "null", attempts: 1 });
    expect((await history(store)).slice(2)).toEqual([
      { kind: "pushed", action: "success", owner: PUSH_OWNER, fence: 1, httpStatus: 200, error },
      { kind: "completed", action: null, owner: PUSH_OWNER, fence: 1, httpStatus: null, error: null },
    ]);
  }

  test("POSTs the job as the API shows it, with the lease in headers, signed with the queue's secret", async () => {
    const { run, endpoint, secret, lease, clock } = await pushedJob(answerWith(200, { sent: true }));
    await run();
    const [request] = endpoint.received;
    expect(request!.headers).toMatchObject({
      "content-type": "application/json",
      "fencelease-job-id": "job-1",
      "fencelease-queue": "mail",
      "fencelease-owner": PUSH_OWNER,
      "fencelease-fence": "1",
      "fencelease-until": String(clock.now + 5_000 + PUSH_SETTLE_MS),
      "fencelease-attempt": "1",
      "webhook-timestamp": String(Math.floor(clock.now / 1000)),
    });
    expect(request!.headers["webhook-id"]).toMatch(/^msg_[\w-]{24}$/);
    expect(JSON.parse(request!.body)).toEqual({ ...lease.job, payload: { to: "ada@example.com" }, owner: PUSH_OWNER, fence: 1, status: "leased" });
    const verified = await verifyPush({ headers: request!.headers, body: request!.body }, secret, { now: clock.now });
    expect(verified).toMatchObject({ owner: PUSH_OWNER, fence: 1, until: lease.until, attempt: 1, job: { id: "job-1", payload: { to: "ada@example.com" } } });
  });

  test("answered 2xx at once: the job is done with the answer's body as its result, and the delivery is in its history", async () => {
    const { run, store, clock } = await pushedJob(answerWith(200, { sent: true, id: 7 }));
    const report = await run();
    expect(report).toMatchObject({ id: "job-1", fence: 1, outcome: "success", status: 200, error: null, written: "completed" });
    expect(await store.get("job-1", { now: clock.now })).toMatchObject({ status: "done", result: '{"sent":true,"id":7}', owner: PUSH_OWNER, fence: 1 });
    expect(await history(store)).toEqual([
      { kind: "enqueued", action: null, owner: null, fence: null, httpStatus: null, error: null },
      { kind: "claimed", action: null, owner: PUSH_OWNER, fence: 1, httpStatus: null, error: null },
      { kind: "pushed", action: "success", owner: PUSH_OWNER, fence: 1, httpStatus: 200, error: null },
      { kind: "completed", action: null, owner: PUSH_OWNER, fence: 1, httpStatus: null, error: null },
    ]);
    expect((await store.get("bystander", { now: clock.now }))?.status).toBe("queued");
  });

  test("answered slowly, within the timeout: done, and the time it took is recorded", async () => {
    const { run, store, clock } = await pushedJob(answerWith(201, "", {}, 300), { timeoutMs: 5_000 });
    const report = await run();
    expect(report).toMatchObject({ outcome: "success", status: 201, written: "completed" });
    expect(report.durationMs).toBeGreaterThanOrEqual(290);
    expect(await store.get("job-1", { now: clock.now })).toMatchObject({ status: "done", result: "null" }); // an empty body: null
    const [pushed] = (await store.events("job-1")).items.filter((event) => event.kind === "pushed");
    expect(pushed!.durationMs).toBe(report.durationMs);
  });

  test("a body that is not JSON is kept as a JSON string", async () => {
    const { run, store, clock } = await pushedJob(answerWith(200, "sent to ada"));
    await run();
    expect((await store.get("job-1", { now: clock.now }))?.result).toBe('"sent to ada"');
  });

  test("answered 2xx with JSON that a result sent through the API may not be: done all the same, its result null, why said in the delivery's error", async () => {
    const cases = [
      { body: `${"[".repeat(100_000)}1${"]".repeat(100_000)}`, unfit: "nests more than 64 levels of arrays and objects" },
      { body: `${"[".repeat(65)}1${"]".repeat(65)}`, unfit: "nests more than 64 levels of arrays and objects" },
      { body: '{"order":{"ids":[1,12345678901234567891]}}', unfit: "holds a number that cannot be kept exactly (at order.ids.1)" },
      { body: "1e400", unfit: "holds a number that cannot be kept exactly" },
    ];
    for (const { body, unfit } of cases) await doneWithResultNull(body, `the endpoint answered 200 with JSON that ${unfit}, which a result may not: the job is done with the result null`);
  });

  test("answered 2xx with JSON nested 64 levels, or with brackets that are not JSON: kept as a result sent through the API would be", async () => {
    const deepest = `${"[".repeat(64)}1${"]".repeat(64)}`;
    for (const [body, result] of [[deepest, deepest], ["[".repeat(1_000), JSON.stringify("[".repeat(1_000))]]) {
      const { run, store, clock } = await pushedJob(answerWith(200, body));
      expect(await run()).toMatchObject({ outcome: "success", error: null, written: "completed" });
      expect((await store.get("job-1", { now: clock.now })).result).toBe(result);
    }
  });

  test("answered 2xx with a body over 1 MiB: done all the same, its result null, the cut said in the delivery's error", async () => {
    await doneWithResultNull("x".repeat(MAX_ANSWER_BYTES + 1), `the endpoint answered 200 with a body over ${MAX_ANSWER_BYTES} bytes, too large for a result: the job is done with the result null`);
  });

  test("answered 2xx whose body then breaks off, or never ends: done with the result null, the status kept, the break said", async () => {
    const broken = await pushedJob((_request, response) => {
      response.writeHead(200, { "content-type": "application/json", "content-length": "100" });
      response.write('{"sent":');
      setTimeout(() => response.destroy(), 50);
    });
    const report = await broken.run();
    expect(report).toMatchObject({ outcome: "success", status: 200, written: "completed" });
    expect(report.error).toMatch(/^the endpoint answered 200, but its body broke off \(.+\): the job is done with the result null$/);
    expect(await broken.store.get("job-1", { now: broken.clock.now })).toMatchObject({ status: "done", result: "null" });
    expect((await history(broken.store))[2]).toMatchObject({ kind: "pushed", action: "success", httpStatus: 200, error: report.error });

    const endless = await pushedJob((_request, response) => {
      response.writeHead(201, { "content-type": "application/json" });
      response.write('{"sent":');
    }, { timeoutMs: 300 });
    expect(await endless.run()).toMatchObject({
      outcome: "success",
      status: 201,
      error: "the endpoint answered 201, but its body did not end within 300 ms: the job is done with the result null",
      written: "completed",
    });
    expect(await endless.store.get("job-1", { now: endless.clock.now })).toMatchObject({ status: "done", result: "null" });
  });

  test("answered 500 whose body breaks off: the lease fails with the status kept", async () => {
    const { run, store, clock } = await pushedJob((_request, response) => {
      response.writeHead(500, { "content-length": "100", "retry-after": "9" });
      response.write("data");
      setTimeout(() => response.destroy(), 50);
    });
    expect(await run()).toMatchObject({ outcome: "failure", status: 500, error: "the endpoint answered 500", written: "failed" });
    expect((await store.get("job-1", { now: clock.now }))?.runAt).toBe(clock.now + 9_000);
  });

  test("answered 500: the lease fails with the answer quoted, due again after the backoff", async () => {
    const { run, store, clock } = await pushedJob(answerWith(500, "database down"));
    const report = await run();
    expect(report).toMatchObject({ outcome: "failure", status: 500, error: "the endpoint answered 500: database down", written: "failed" });
    const job = await store.get("job-1", { now: clock.now });
    expect(job).toMatchObject({ status: "scheduled", owner: null, fence: 1, attempts: 1, lastError: "the endpoint answered 500: database down" });
    expect(job!.runAt - clock.now).toBeGreaterThanOrEqual(500); // the first backoff: 1 s times a jitter in [0.5, 1)
    expect(job!.runAt - clock.now).toBeLessThanOrEqual(1_000);
    expect((await history(store)).slice(2)).toEqual([
      { kind: "pushed", action: "failure", owner: PUSH_OWNER, fence: 1, httpStatus: 500, error: "the endpoint answered 500: database down" },
      { kind: "failed", action: null, owner: PUSH_OWNER, fence: 1, httpStatus: null, error: "the endpoint answered 500: database down" },
    ]);
  });

  test("answered with Retry-After: due again exactly then, in seconds or as an HTTP date", async () => {
    const seconds = await pushedJob(answerWith(503, "", { "retry-after": "7" }));
    expect(await seconds.run()).toMatchObject({ outcome: "failure", status: 503, error: "the endpoint answered 503", written: "failed" });
    expect((await seconds.store.get("job-1", { now: seconds.clock.now }))?.runAt).toBe(seconds.clock.now + 7_000);

    const T = Date.UTC(2026, 0, 1, 12);
    const dated = await pushedJob(answerWith(429, "", { "retry-after": new Date(T + 90_000).toUTCString() }), { now: T });
    expect(await dated.run()).toMatchObject({ outcome: "failure", status: 429, written: "failed" });
    expect((await dated.store.get("job-1", { now: T }))?.runAt).toBe(T + 90_000);
  });

  test("never answered: a timeout fails the lease once the timeout has passed", async () => {
    const { run, store, clock } = await pushedJob(neverAnswer, { timeoutMs: 300 });
    const started = performance.now();
    const report = await run();
    expect(performance.now() - started).toBeGreaterThanOrEqual(290);
    expect(report).toMatchObject({ outcome: "timeout", status: null, error: "the endpoint did not answer within 300 ms", written: "failed" });
    expect(await store.get("job-1", { now: clock.now })).toMatchObject({ status: "scheduled", lastError: "the endpoint did not answer within 300 ms" });
  });

  test("unreachable (nothing listens) and redirected: each fails the lease, saying why", async () => {
    const closed = await pushedJob(answerWith(200));
    await closed.endpoint.close();
    expect(await closed.run()).toMatchObject({ outcome: "unreachable", status: null, error: "the endpoint could not be reached: ECONNREFUSED", written: "failed" });

    const moved = await pushedJob(answerWith(302, "", { location: "https://elsewhere.example/" }));
    expect(await moved.run()).toMatchObject({ outcome: "failure", status: 302, written: "failed" });
    expect((await moved.store.get("job-1", { now: moved.clock.now }))?.status).toBe("scheduled");
  });

  test("a failure on the last attempt makes the job dead", async () => {
    const { run, store, endpoint, clock, target } = await pushedJob(answerWith(500, "no"));
    expect((await run()).written).toBe("failed");
    for (const written of ["failed", "dead"]) {
      clock.now += 3_600_000; // past any backoff
      const [lease] = (await store.push.claim("mail", { limit: 1, now: clock.now })).leases;
      expect(lease?.job.id).toBe("job-1");
      expect((await deliver(lease!, target, { store, clock: () => clock.now, post })).written).toBe(written);
    }
    expect(endpoint.received).toHaveLength(3);
    expect(await store.get("job-1", { now: clock.now })).toMatchObject({ status: "dead", attempts: 3 });
  });

  test("answered 202: the lease is left to the endpoint, which completes it later with the fence it was given", async () => {
    const { run, store, clock, endpoint } = await pushedJob(answerWith(202));
    expect(await run()).toMatchObject({ outcome: "accepted", status: 202, error: null, written: "left" });
    expect(await store.get("job-1", { now: clock.now })).toMatchObject({ status: "leased", owner: PUSH_OWNER, fence: 1 });
    const headers = endpoint.received[0]!.headers;
    const owner = decodeURIComponent(headers["fencelease-owner"] as string);
    const fence = Number(headers["fencelease-fence"]);
    expect(await store.renew("job-1", { owner, fence, ttlMs: 60_000, now: clock.now + 1 })).toEqual({ until: clock.now + 1 + 60_000 });
    expect((await store.complete("job-1", { owner, fence, result: '"later"', now: clock.now + 2 })).changed).toBe(true);
    expect((await history(store)).slice(2).map((event) => [event.kind, event.action, event.httpStatus])).toEqual([
      ["pushed", "accepted", 202],
      ["renewed", null, null],
      ["completed", null, null],
    ]);
  });

  test("answered 2xx after its lease was retaken: the completion is refused and recorded as a stale write, and the new lease keeps the job", async () => {
    let retake: () => Promise<void> = async () => {};
    const { run, store, clock } = await pushedJob(async (request, response) => {
      await retake();
      await answerWith(200, { sent: true })(request, response);
    }, { now: Date.UTC(2026, 0, 1, 12) });
    retake = async () => {
      clock.now += 5_000 + PUSH_SETTLE_MS; // the push lease has run out
      expect((await store.claim("job-1", { owner: "worker-b", ttlMs: 60_000, now: clock.now })).fence).toBe(2);
    };
    const report = await run();
    expect(report).toMatchObject({ outcome: "success", status: 200, written: "refused" });
    expect(await store.get("job-1", { now: clock.now })).toMatchObject({ status: "leased", owner: "worker-b", fence: 2, result: null });
    const events = (await store.events("job-1")).items;
    expect(events.map((event) => [event.kind, event.action, event.owner, event.fence])).toEqual([
      ["enqueued", null, null, null],
      ["claimed", null, PUSH_OWNER, 1],
      ["expired", null, PUSH_OWNER, 1],
      ["claimed", null, "worker-b", 2],
      ["pushed", "success", PUSH_OWNER, 1],
      ["refused", "complete", PUSH_OWNER, 1],
    ]);
    expect(events.at(-1)).toMatchObject({ currentOwner: "worker-b", currentFence: 2 });
    expect((await store.stats({ now: clock.now })).find((stats) => stats.queue === "mail")?.refused.total).toBe(1);
  });

  test("an endpoint that checks the signature takes the real delivery, and refuses a tampered body and an old timestamp", async () => {
    const { run, store, clock, endpoint, secret } = await pushedJob(async (request, response) => {
      try {
        await verifyPush({ headers: request.headers, body: request.body }, secret);
        await answerWith(200, { verified: true })(request, response);
      } catch (error) {
        await answerWith(401, (error as Error).message)(request, response);
      }
    });
    expect(await run()).toMatchObject({ outcome: "success", written: "completed" });
    expect((await store.get("job-1", { now: clock.now }))?.result).toBe('{"verified":true}');

    // The same delivery sent again with a byte changed, then as it was but signed long ago: both refused.
    const { headers, body } = endpoint.received[0]!;
    const send = (changed: Record<string, string>, text: string) =>
      fetch(endpoint.url, { method: "POST", headers: { ...(headers as Record<string, string>), ...changed }, body: text });
    const tampered = await send({}, body.replace("ada@example.com", "eve@example.com"));
    expect(tampered.status).toBe(401);
    expect(await tampered.text()).toMatch(/no signature of the delivery matches/);
    const old = await send({ "webhook-timestamp": String(Math.floor(Date.now() / 1000) - 301) }, body);
    expect(old.status).toBe(401);
    expect(await old.text()).toMatch(/more than 300 s/);
  });
});

describe("Retry-After", () => {
  test("reads whole seconds and HTTP dates, never below 0 nor above a day; anything else is no hint", () => {
    const now = Date.UTC(2026, 0, 1);
    expect(retryAfterMs("120", now)).toBe(120_000);
    expect(retryAfterMs(" 0 ", now)).toBe(0);
    expect(retryAfterMs(new Date(now + 2_000).toUTCString(), now)).toBe(2_000);
    expect(retryAfterMs(new Date(now - 2_000).toUTCString(), now)).toBe(0);
    expect(retryAfterMs("999999999", now)).toBe(24 * 3_600_000);
    expect(retryAfterMs(null, now)).toBeUndefined();
    expect(retryAfterMs("soon", now)).toBeUndefined();
    expect(retryAfterMs("-5", now)).toBeUndefined();
  });
});
