import { createScheduledController, env, runInDurableObject, SELF } from "cloudflare:test";
import { afterEach, expect, test, vi } from "vitest";
import worker, { type QueueDoorbell } from "../../src/worker.ts";

// The Worker's cron trigger fires the schedules put through its API, on D1.
// The API's clock is set by hand for the puts; the trigger's time is its
// controller's scheduledTime. The times are in the past of the real clock, so
// the jobs fired are due for the claims, which read the real one.

const TOKEN = "worker-test-token"; // FENCELEASE_TOKENS in vitest.config.ts
const MINUTE = 60_000;
const DAY = 24 * 60 * MINUTE;
const T = Date.UTC(2026, 0, 15, 7, 59, 30);
const AT_9_PARIS = Date.UTC(2026, 0, 15, 8, 0); // 09:00 in Paris in winter

function call(method: string, path: string, body?: unknown): Promise<Response> {
  return SELF.fetch(`https://fencelease.test${path}`, {
    method,
    headers: { Authorization: `Bearer ${TOKEN}`, "Content-Type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
}

/** PUTs a schedule with the API's clock at `now`. */
async function putAt(now: number, name: string, body: unknown): Promise<{ nextFireAt: number }> {
  vi.useFakeTimers({ toFake: ["Date"] });
  vi.setSystemTime(now);
  try {
    const answer = await call("PUT", `/v1/schedules/${name}`, body);
    expect(answer.status).toBe(201);
    return (await answer.json()) as { nextFireAt: number };
  } finally {
    vi.useRealTimers();
  }
}

const cron = (scheduledTime: number) => worker.scheduled(createScheduledController({ scheduledTime, cron: "* * * * *" }), env);

async function jobIds(queue: string): Promise<string[]> {
  return (await env.DB.prepare("SELECT id FROM jobs WHERE queue = ? ORDER BY id").bind(queue).all<{ id: string }>()).results.map((row) => row.id);
}

afterEach(() => vi.useRealTimers());

test("the cron trigger fires a schedule at its minute in its time zone, once, and after a gap only its latest missed fire", async () => {
  expect(await putAt(T, "paris", { queue: "cron-paris", cron: "0 9 * * *", timezone: "Europe/Paris", payload: { n: 1 } })).toMatchObject({ nextFireAt: AT_9_PARIS });
  await cron(AT_9_PARIS - 1);
  expect(await jobIds("cron-paris")).toEqual([]);
  await cron(AT_9_PARIS);
  expect(await jobIds("cron-paris")).toEqual(["paris@2026-01-15T08:00:00.000Z"]);
  const job = await (await call("GET", "/v1/jobs/paris@2026-01-15T08:00:00.000Z")).json();
  expect(job).toMatchObject({ queue: "cron-paris", payload: { n: 1 }, runAt: AT_9_PARIS, status: "queued", fence: 0 });
  await cron(AT_9_PARIS + MINUTE);
  expect(await jobIds("cron-paris")).toEqual(["paris@2026-01-15T08:00:00.000Z"]);
  await cron(AT_9_PARIS + 3 * DAY + 5 * MINUTE); // the Worker was not triggered for three days
  expect(await jobIds("cron-paris")).toEqual(["paris@2026-01-15T08:00:00.000Z", "paris@2026-01-18T08:00:00.000Z"]);
  expect(await (await call("GET", "/v1/schedules/paris")).json()).toMatchObject({ lastFireAt: AT_9_PARIS + 3 * DAY, nextFireAt: AT_9_PARIS + 4 * DAY });
});

test("a deleted schedule is not fired by the cron", async () => {
  await putAt(T, "gone", { queue: "cron-gone", everyMs: MINUTE });
  expect((await call("DELETE", "/v1/schedules/gone")).status).toBe(204);
  await cron(T + 10 * MINUTE);
  expect(await jobIds("cron-gone")).toEqual([]);
});

test("a claim waiting on the schedule's queue is rung by the cron's fire", async () => {
  const { nextFireAt } = await putAt(T, "ring", { queue: "cron-ring", everyMs: MINUTE });
  const claimed = call("POST", "/v1/queues/cron-ring/claim", { owner: "w", ttlMs: MINUTE, waitMs: 10_000 });
  const doorbell = env.DOORBELL!.get(env.DOORBELL!.idFromName("cron-ring"));
  for (const started = Date.now(); (await runInDurableObject(doorbell as never, (object: QueueDoorbell) => object.waiting)) !== 1; ) {
    if (Date.now() - started > 10_000) throw new Error("the claim never waited");
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
  await cron(nextFireAt);
  const { leases, waitedMs } = (await (await claimed).json()) as { leases: { job: { id: string } }[]; waitedMs: number };
  expect(leases.map((lease) => lease.job.id)).toEqual([`ring@${new Date(nextFireAt).toISOString()}`]);
  expect(waitedMs).toBeLessThan(5_000); // rung, not found at its deadline
});
