import { runDurableObjectAlarm, runInDurableObject, SELF } from "cloudflare:test";
import { afterEach, describe, expect, test, vi } from "vitest";
import type { QueueObject } from "../../../src/worker.ts";
import { firstRow, queueObject, rows } from "../storage-mode.ts";

// A queue's alarm in objects mode: what D1 mode's cron does, for one queue, at
// the time it is due. Some tests run on the real clock (the alarm rings by
// itself); the others set the clock ahead of the real one, so that no alarm
// rings but when the test rings it (runDurableObjectAlarm).

const TOKEN = "worker-test-token"; // FENCELEASE_TOKENS in vitest.config.ts
const SECOND = 1_000;
const MINUTE = 60 * SECOND;
const DAY = 24 * 60 * MINUTE;
const T = Date.UTC(2031, 0, 15, 7, 59, 30); // ahead of the real clock
const AT_9_PARIS = Date.UTC(2031, 0, 15, 8, 0); // 09:00 in Paris in winter

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

/** When the alarm of `queue`'s object is armed for, and how often it was set. */
function alarmOf(queue: string): Promise<{ at: number | null; sets: number }> {
  return runInDurableObject(queueObject(queue), async (object: QueueObject) => ({ at: await object.alarmAt(), sets: (await object.meter()).alarmsSet }));
}

/** Runs the alarm handler of `queue`'s object, whether or not one is armed (a repeated alarm). */
function ringAgain(queue: string): Promise<void> {
  return runInDurableObject(queueObject(queue), (object: QueueObject) => object.alarm());
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

afterEach(() => vi.useRealTimers());

describe("a queue's alarm, on the real clock", () => {
  test("a lease nobody renews ends at its until (to the second), not at the next cron minute, and its job is claimable again", async () => {
    await call("POST", "/v1/jobs", { id: "al-expire-1", queue: "al-expire" });
    const [lease] = (await json<{ leases: { fence: number; until: number }[] }>(call("POST", "/v1/queues/al-expire/claim", { owner: "A", ttlMs: 1_000 }))).leases;
    expect((await alarmOf("al-expire")).at).toBe(Math.ceil(lease!.until / SECOND) * SECOND);
    let ended: number | undefined;
    for (const started = Date.now(); Date.now() - started < 5_000; await pause(20)) {
      if ((await firstRow("al-expire", "SELECT owner FROM jobs WHERE id = 'al-expire-1'"))?.owner === null) {
        ended = Date.now();
        break;
      }
    }
    expect(ended).toBeDefined();
    expect(ended! - lease!.until).toBeGreaterThanOrEqual(0);
    expect(ended! - lease!.until).toBeLessThan(2_500); // the next whole second, and the local runtime's alarm delay under load
    const events = await json<{ events: { kind: string }[] }>(call("GET", "/v1/jobs/al-expire-1/events"));
    expect(events.events.map((event) => event.kind)).toEqual(["enqueued", "claimed", "expired"]);
    expect((await alarmOf("al-expire")).at).toBeNull(); // nothing else is due: it is not armed again
    const [next] = (await json<{ leases: { fence: number }[] }>(call("POST", "/v1/queues/al-expire/claim", { owner: "B", ttlMs: MINUTE }))).leases;
    expect(next!.fence).toBe(2);
  });

  test("a schedule fires at its time by the queue's alarm, and a claim waiting on the queue is handed its job", async () => {
    const put = await json<{ nextFireAt: number }>(call("PUT", "/v1/schedules/al-every", { queue: "al-sched", everyMs: SECOND }));
    expect((await alarmOf("al-sched")).at).toBe(put.nextFireAt);
    const started = Date.now();
    const { leases } = await json<{ leases: { job: { id: string; runAt: number } }[] }>(call("POST", "/v1/queues/al-sched/claim", { owner: "w", ttlMs: MINUTE, waitMs: 5_000 }));
    expect(leases.map((lease) => lease.job.id)).toEqual([`al-every@${new Date(put.nextFireAt).toISOString()}`]);
    expect(Date.now() - started).toBeLessThan(3_000);
    await call("DELETE", "/v1/schedules/al-every");
  });
});

describe("a queue's alarm, on a clock set ahead", () => {
  test("ends the leases that ran out and leaves the rest; rung again, it changes nothing", async () => {
    vi.useFakeTimers({ toFake: ["Date"] });
    vi.setSystemTime(T);
    await call("POST", "/v1/queues/al-again/jobs", { jobs: [{ id: "a1" }, { id: "a2" }, { id: "a3", maxAttempts: 1 }] });
    for (const ttlMs of [SECOND, 10 * SECOND, SECOND]) await call("POST", "/v1/queues/al-again/claim", { owner: "A", ttlMs });
    vi.setSystemTime(T + SECOND);
    expect(await runDurableObjectAlarm(queueObject("al-again"))).toBe(true);
    const after = await rows("al-again", "SELECT id, owner, fence, attempts, dead, done FROM jobs ORDER BY id");
    expect(after).toEqual([
      { id: "a1", owner: null, fence: 1, attempts: 1, dead: 0, done: 0 },
      { id: "a2", owner: "A", fence: 1, attempts: 1, dead: 0, done: 0 },
      { id: "a3", owner: null, fence: 1, attempts: 1, dead: 1, done: 1 }, // its last attempt: dead
    ]);
    expect((await alarmOf("al-again")).at).toBe(T + 10 * SECOND); // armed again at the lease still held
    const events = await rows("al-again", "SELECT count(*) AS n FROM events");
    await ringAgain("al-again");
    await ringAgain("al-again");
    expect(await rows("al-again", "SELECT id, owner, fence, attempts, dead, done FROM jobs ORDER BY id")).toEqual(after);
    expect(await rows("al-again", "SELECT count(*) AS n FROM events")).toEqual(events);
  });

  test("is set only when the earliest thing due comes before the one armed: a later lease, a renew or a completion sets nothing", async () => {
    vi.useFakeTimers({ toFake: ["Date"] });
    vi.setSystemTime(T);
    await call("POST", "/v1/queues/al-sets/jobs", { jobs: [{ id: "s1" }, { id: "s2" }, { id: "s3" }] });
    expect(await alarmOf("al-sets")).toEqual({ at: null, sets: 0 }); // nothing due: enqueued jobs need no alarm
    const claim = async (ttlMs: number) => (await json<{ leases: { fence: number; job: { id: string } }[] }>(call("POST", "/v1/queues/al-sets/claim", { owner: "A", ttlMs }))).leases[0]!;
    const s1 = await claim(30 * SECOND);
    expect(await alarmOf("al-sets")).toEqual({ at: T + 30 * SECOND, sets: 1 });
    const s2 = await claim(60 * SECOND);
    expect(await alarmOf("al-sets")).toEqual({ at: T + 30 * SECOND, sets: 1 });
    const s3 = await claim(10 * SECOND);
    expect(await alarmOf("al-sets")).toEqual({ at: T + 10 * SECOND, sets: 2 });
    await call("POST", "/v1/jobs/s3/renew", { owner: "A", fence: s3.fence, ttlMs: 50 * SECOND });
    for (const lease of [s1, s2, s3]) await call("POST", `/v1/jobs/${lease.job.id}/complete`, { owner: "A", fence: lease.fence, result: 1 });
    expect(await alarmOf("al-sets")).toEqual({ at: T + 10 * SECOND, sets: 2 }); // armed early: it will find nothing
    vi.setSystemTime(T + 10 * SECOND);
    await runDurableObjectAlarm(queueObject("al-sets"));
    // The done jobs' purge is due a retention after they finished, to the minute: the one thing left.
    expect(await alarmOf("al-sets")).toEqual({ at: Math.ceil((T + 7 * DAY) / MINUTE) * MINUTE, sets: 3 });
  });

  test("fires a cron schedule at its minute in its time zone, once, and after a gap only its latest missed fire; the fired job is found by its id", async () => {
    vi.useFakeTimers({ toFake: ["Date"] });
    vi.setSystemTime(T);
    const put = await json<{ nextFireAt: number }>(call("PUT", "/v1/schedules/al-paris", { queue: "al-paris", cron: "0 9 * * *", timezone: "Europe/Paris", payload: { n: 1 } }));
    expect(put.nextFireAt).toBe(AT_9_PARIS);
    expect((await alarmOf("al-paris")).at).toBe(AT_9_PARIS);
    const ids = async () => (await rows("al-paris", "SELECT id FROM jobs ORDER BY id")).map((row) => row.id);
    vi.setSystemTime(AT_9_PARIS);
    expect(await runDurableObjectAlarm(queueObject("al-paris"))).toBe(true);
    expect(await ids()).toEqual(["al-paris@2031-01-15T08:00:00.000Z"]);
    expect(await json(call("GET", "/v1/jobs/al-paris@2031-01-15T08:00:00.000Z"))).toMatchObject({ queue: "al-paris", payload: { n: 1 }, runAt: AT_9_PARIS, status: "queued", fence: 0 });
    expect((await alarmOf("al-paris")).at).toBe(AT_9_PARIS + DAY);
    await ringAgain("al-paris");
    expect(await ids()).toEqual(["al-paris@2031-01-15T08:00:00.000Z"]);
    vi.setSystemTime(AT_9_PARIS + 3 * DAY + 5 * MINUTE); // the alarm did not ring for three days
    await ringAgain("al-paris");
    expect(await ids()).toEqual(["al-paris@2031-01-15T08:00:00.000Z", "al-paris@2031-01-18T08:00:00.000Z"]);
    expect(await json(call("GET", "/v1/schedules/al-paris"))).toMatchObject({ lastFireAt: AT_9_PARIS + 3 * DAY, nextFireAt: AT_9_PARIS + 4 * DAY });
    expect((await call("GET", "/v1/jobs/al-paris@2031-01-18T08:00:00.000Z")).status).toBe(200);
  });

  test("purges done jobs a retention after they finished, and the directory forgets their ids", async () => {
    vi.useFakeTimers({ toFake: ["Date"] });
    vi.setSystemTime(T);
    await call("POST", "/v1/jobs", { id: "al-old", queue: "al-purge" });
    const [lease] = (await json<{ leases: { fence: number }[] }>(call("POST", "/v1/queues/al-purge/claim", { owner: "A", ttlMs: MINUTE }))).leases;
    await call("POST", "/v1/jobs/al-old/complete", { owner: "A", fence: lease!.fence, result: 1 });
    vi.setSystemTime(T + 7 * DAY + MINUTE);
    expect(await runDurableObjectAlarm(queueObject("al-purge"))).toBe(true);
    expect(await rows("al-purge", "SELECT id FROM jobs")).toEqual([]);
    expect(await rows("al-purge", "SELECT id FROM unbinds")).toEqual([]); // sent to the directory
    // Unbound: the id may be enqueued in another queue, its first claim above the fence it had.
    expect((await call("POST", "/v1/jobs", { id: "al-old", queue: "al-purge-2" })).status).toBe(201);
    const [again] = (await json<{ leases: { fence: number }[] }>(call("POST", "/v1/queues/al-purge-2/claim", { owner: "B", ttlMs: MINUTE }))).leases;
    expect(again!.fence).toBe(2);
  });

  test("a dedup window longer than its job's retention: the alarm comes back at the window's end, and the key enqueues again", async () => {
    vi.useFakeTimers({ toFake: ["Date"] });
    vi.setSystemTime(T);
    await call("POST", "/v1/jobs", { id: "al-once", queue: "al-window", dedupKey: "order-7", dedupTtlMs: 20 * DAY });
    await call("POST", "/v1/jobs/al-once/cancel", {});
    vi.setSystemTime(T + 7 * DAY + MINUTE);
    expect(await runDurableObjectAlarm(queueObject("al-window"))).toBe(true);
    expect(await rows("al-window", "SELECT id FROM jobs")).toEqual([]);
    expect(await rows("al-window", "SELECT job_id FROM dedup_keys")).toEqual([{ job_id: "al-once" }]);
    expect((await alarmOf("al-window")).at).toBe(Math.ceil((T + 20 * DAY) / MINUTE) * MINUTE);
    vi.setSystemTime(T + 20 * DAY + MINUTE);
    expect(await runDurableObjectAlarm(queueObject("al-window"))).toBe(true);
    expect(await rows("al-window", "SELECT job_id FROM dedup_keys")).toEqual([]);
    expect((await call("POST", "/v1/jobs", { id: "al-twice", queue: "al-window", dedupKey: "order-7", dedupTtlMs: DAY })).status).toBe(201);
  });
});

describe("a queue's alarm that fails", () => {
  test("is logged and armed again ten seconds on, not thrown (the runtime would drop it after six retries); once it can, it does its work", async () => {
    vi.useFakeTimers({ toFake: ["Date"] });
    vi.setSystemTime(T);
    await call("POST", "/v1/jobs", { id: "al-fail-1", queue: "al-fail" });
    await call("POST", "/v1/queues/al-fail/claim", { owner: "A", ttlMs: SECOND });
    const refuse = "CREATE TRIGGER test_refuses_expiry BEFORE UPDATE OF owner ON jobs WHEN new.owner IS NULL BEGIN SELECT RAISE(ABORT, 'the test refuses it'); END";
    await runInDurableObject(queueObject("al-fail"), (_object, state) => state.storage.sql.exec(refuse).toArray());
    vi.setSystemTime(T + SECOND);
    await ringAgain("al-fail"); // the expiry fails
    expect((await alarmOf("al-fail")).at).toBe(T + SECOND + 10 * SECOND);
    expect(await rows("al-fail", "SELECT owner FROM jobs")).toEqual([{ owner: "A" }]); // nothing of the run was kept
    await runInDurableObject(queueObject("al-fail"), (_object, state) => state.storage.sql.exec("DROP TRIGGER test_refuses_expiry").toArray());
    vi.setSystemTime(T + 11 * SECOND);
    expect(await runDurableObjectAlarm(queueObject("al-fail"))).toBe(true);
    expect(await rows("al-fail", "SELECT owner FROM jobs")).toEqual([{ owner: null }]);
  });
});
