import { applyD1Migrations, createExecutionContext, env, waitOnExecutionContext } from "cloudflare:test";
import type { D1Database, D1PreparedStatement, D1Result } from "@cloudflare/workers-types";
import { afterAll, beforeAll, describe, expect, test, vi } from "vitest";
import worker from "../../src/worker.ts";
import costPage from "../../docs/cost.md?raw";
import { BATCH, COST_VERBS, DEDUP_VERBS, expectKeyedLives, KEYED_VERBS, LONG_POLL, SEARCH_VERBS, SERIES_VERBS, STEP_VERBS } from "./cost-verbs.ts";

// What each verb costs on D1, in the rows D1 bills: every query's
// meta.rows_read and meta.rows_written, summed over the verb's HTTP call
// through the Worker (the counting binding below stands in for env.DB). Row
// counts are deterministic, so each verb's count is asserted: a change that
// writes more fails here, and the table in docs/cost.md is this test's table.

type Tally = { queries: number; read: number; written: number };

/**
 * A D1 binding that adds up the rows of every query run through it: as much
 * of D1Database as src/drivers/d1.ts uses (prepare, bind, all, run, batch).
 */
function countingD1(db: D1Database): { db: D1Database; take(): Tally; peek(): Tally } {
  let tally: Tally = { queries: 0, read: 0, written: 0 };
  const add = (result: D1Result) => {
    tally.queries++;
    tally.read += result.meta.rows_read;
    tally.written += result.meta.rows_written;
  };
  const real = new WeakMap<object, D1PreparedStatement>();
  const wrap = (statement: D1PreparedStatement): D1PreparedStatement => {
    const counted = {
      bind: (...values: unknown[]) => wrap(statement.bind(...values)),
      all: async () => {
        const result = await statement.all();
        add(result);
        return result;
      },
      run: async () => {
        const result = await statement.run();
        add(result);
        return result;
      },
    };
    real.set(counted, statement);
    return counted as unknown as D1PreparedStatement;
  };
  const counting = {
    prepare: (sql: string) => wrap(db.prepare(sql)),
    batch: async (statements: D1PreparedStatement[]) => {
      const results = await db.batch(statements.map((statement) => real.get(statement) ?? statement));
      results.forEach(add);
      return results;
    },
  };
  return {
    db: counting as unknown as D1Database,
    peek: () => ({ ...tally }),
    take() {
      const taken = tally;
      tally = { queries: 0, read: 0, written: 0 };
      return taken;
    },
  };
}

const T = Date.UTC(2026, 0, 1);
const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
const TTL = 30_000;
const TOKEN = "worker-test-token"; // FENCELEASE_TOKENS in vitest.config.ts

/** A payload of 60 bytes and a result of 50 bytes as JSON text, the sizes docs/cost.md prices. */
const PAYLOAD = { order: "o".repeat(48) };
const RESULT = { receipt: "r".repeat(36) };

/** A Worker over its own counting binding of `db` (no doorbell: a waiting claim re-checks inside its request). */
function countedWorker(db: D1Database = env.DB) {
  const counter = countingD1(db);
  const workerEnv = { ...env, DB: counter.db, DOORBELL: undefined };
  return {
    take: counter.take,
    peek: counter.peek,
    async call(method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
      const ctx = createExecutionContext();
      const request = new Request(`https://fencelease.test${path}`, {
        method,
        headers: { Authorization: `Bearer ${TOKEN}`, "Content-Type": "application/json" },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const response = await worker.fetch(request as never, workerEnv as never, ctx);
      await waitOnExecutionContext(ctx);
      return { status: response.status, body: await response.json() };
    },
    async cron(time: number): Promise<void> {
      await worker.scheduled({ scheduledTime: time, cron: "* * * * *", noRetry() {} } as never, workerEnv as never);
    },
  };
}

/** Empty tables, as a fresh database has them (the fence floor at 0). */
async function emptyDatabase(): Promise<void> {
  const { results } = await env.DB.prepare(
    "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '_cf_%' AND name NOT IN ('d1_migrations', 'fence_floor')",
  ).all<{ name: string }>();
  await env.DB.batch([...results.map(({ name }) => env.DB.prepare(`DELETE FROM ${name}`)), env.DB.prepare("UPDATE fence_floor SET fence = 0")]);
}

const measured = new Map<string, Tally>();
/** The lines of the keys table (KEYED_VERBS). */
const keyedMeasured = new Map<string, Tally>();
let w: ReturnType<typeof countedWorker>;

/** Runs one call or cron run and keeps its tally under `verb` (in `into`); answers what the call answered. */
async function measure<R>(verb: string, run: () => Promise<R>, into = measured): Promise<R> {
  w.take();
  const answer = await run();
  into.set(verb, w.take());
  return answer;
}

/** measure, for a line of the keys table. */
const measureKeyed = <R>(verb: string, run: () => Promise<R>) => measure(verb, run, keyedMeasured);

/** The lines of the once-per-key table (DEDUP_VERBS). */
const dedupMeasured = new Map<string, Tally>();
/** measure, for a line of the once-per-key table. */
const measureDedup = <R>(verb: string, run: () => Promise<R>) => measure(verb, run, dedupMeasured);

function expectStatus(answer: { status: number; body: unknown }, status: number) {
  expect(answer.status, JSON.stringify(answer.body)).toBe(status);
}

/**
 * A queue as it is in a database in use: it already has a job (one due next
 * year, which no claim, expiry or purge here touches) and a refusal this
 * minute, so that the counts' rows exist and a verb pays only for what it changes.
 */
async function inUse(queue: string): Promise<void> {
  const id = `${queue}-resident`;
  expectStatus(await w.call("POST", "/v1/jobs", { id, queue, payload: PAYLOAD, delayMs: 365 * DAY }), 201);
  expectStatus(await w.call("POST", `/v1/jobs/${id}/complete`, { owner: "Z", fence: 1, result: RESULT }), 409);
}

/** The ids of `n` jobs, `prefix`-000 on. */
const idsOf = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}-${String(i).padStart(3, "0")}`);

/** Whether job `id` waits for its key's turn (migrations/0034's held_back). */
async function heldBack(id: string): Promise<boolean> {
  return (await env.DB.prepare("SELECT held_back FROM jobs WHERE id = ?").bind(id).first<{ held_back: number }>())!.held_back === 1;
}

/**
 * The lines of the keys table: a keyed job's life in a queue with
 * maxLeasedPerKey, on single calls and by the hundred over 10 keys; a job
 * enqueued while its key is full, and let in when the one before it
 * completes; and claims in a queue with keyRatePerSecond.
 */
async function measureKeyedLives(): Promise<void> {
  // A keyed job's life on single calls.
  await emptyDatabase();
  vi.setSystemTime(T);
  await inUse("keyed");
  expectStatus(await w.call("PUT", "/v1/queues/keyed", { maxLeasedPerKey: 2 }), 200);
  const one = await measureKeyed("enqueue, keyed", () => w.call("POST", "/v1/jobs", { id: "k-one", queue: "keyed", key: "tenant-1", payload: PAYLOAD }));
  expect(one).toMatchObject({ status: 201, body: { created: true, job: { key: "tenant-1" } } });
  const [lease] = (await measureKeyed("claim-next, keyed", () => w.call("POST", "/v1/queues/keyed/claim", { owner: "A", ttlMs: TTL }))).body.leases;
  expect(lease).toMatchObject({ fence: 1, job: { id: "k-one" } });
  vi.setSystemTime(T + 1_000);
  expectStatus(await measureKeyed("complete, keyed", () => w.call("POST", "/v1/jobs/k-one/complete", { owner: "A", fence: 1, result: RESULT })), 200);
  vi.setSystemTime(T + 8 * DAY);
  await measureKeyed("purge (cron, one keyed job)", () => w.cron(T + 8 * DAY));
  expect((await w.call("GET", "/v1/jobs/k-one")).status).toBe(404);

  // By the hundred, over 10 keys of 10 jobs (maxLeasedPerKey 10: all let in).
  await emptyDatabase();
  vi.setSystemTime(T);
  await inUse("keyed-many");
  expectStatus(await w.call("PUT", "/v1/queues/keyed-many", { maxLeasedPerKey: 10 }), 200);
  const jobs = idsOf("km", BATCH).map((id, i) => ({ id, key: `tenant-${i % 10}`, payload: PAYLOAD }));
  const enqueued = await measureKeyed(`enqueueMany of ${BATCH} over 10 keys`, () => w.call("POST", "/v1/queues/keyed-many/jobs", { jobs }));
  expect(enqueued.body.jobs.filter((job: { created: boolean }) => job.created)).toHaveLength(BATCH);
  const claimed = (await measureKeyed(`claim-next of ${BATCH}, keyed`, () => w.call("POST", "/v1/queues/keyed-many/claim", { owner: "W", ttlMs: TTL, limit: BATCH }))).body.leases as { fence: number; job: { id: string } }[];
  expect(claimed).toHaveLength(BATCH);
  vi.setSystemTime(T + 2_000);
  const completed = await measureKeyed(`completeMany of ${BATCH}, keyed, with next (none left)`, () =>
    w.call("POST", "/v1/leases/complete", { owner: "W", leases: claimed.map((c) => ({ id: c.job.id, fence: c.fence, result: RESULT })), next: { queue: "keyed-many", limit: BATCH, ttlMs: TTL } }));
  expect(completed.body.leases).toHaveLength(0);
  vi.setSystemTime(T + 8 * DAY);
  await measureKeyed(`purge (cron, ${BATCH} keyed jobs)`, () => w.cron(T + 8 * DAY));

  // Held back: its key has its one job held (maxLeasedPerKey 1), and it is let in when that one completes.
  await emptyDatabase();
  vi.setSystemTime(T);
  await inUse("held");
  expectStatus(await w.call("PUT", "/v1/queues/held", { maxLeasedPerKey: 1 }), 200);
  expectStatus(await w.call("POST", "/v1/jobs", { id: "h-first", queue: "held", key: "tenant-1", payload: PAYLOAD }), 201);
  expectStatus(await w.call("POST", "/v1/jobs/h-first/claim", { owner: "A", ttlMs: TTL }), 200);
  expectStatus(await measureKeyed("enqueue, held back (its key full)", () => w.call("POST", "/v1/jobs", { id: "h-second", queue: "held", key: "tenant-1", payload: PAYLOAD })), 201);
  expect(await heldBack("h-second")).toBe(true);
  vi.setSystemTime(T + 1_000);
  expectStatus(await measureKeyed("complete, letting in the next of its key", () => w.call("POST", "/v1/jobs/h-first/complete", { owner: "A", fence: 1, result: RESULT })), 200);
  expect(await heldBack("h-second")).toBe(false);
  const [letIn] = (await measureKeyed("claim-next of the job let in", () => w.call("POST", "/v1/queues/held/claim", { owner: "A", ttlMs: TTL }))).body.leases;
  expect(letIn).toMatchObject({ fence: 1, job: { id: "h-second" } });

  // A key's token bucket: its first claim inserts the key's row of key_buckets, a later one updates it.
  await emptyDatabase();
  vi.setSystemTime(T);
  await inUse("rated");
  expectStatus(await w.call("PUT", "/v1/queues/rated", { keyRatePerSecond: 10 }), 200);
  expectStatus(await w.call("POST", "/v1/queues/rated/jobs", { jobs: idsOf("r", 2).map((id) => ({ id, key: "tenant-1", payload: PAYLOAD })) }), 200);
  const first = await measureKeyed("claim-next, keyed, with keyRatePerSecond (its key's first claim)", () => w.call("POST", "/v1/queues/rated/claim", { owner: "A", ttlMs: TTL }));
  expect(first.body.leases).toMatchObject([{ job: { id: "r-000" } }]);
  vi.setSystemTime(T + 1_000);
  const later = await measureKeyed("claim-next, keyed, with keyRatePerSecond (a later claim)", () => w.call("POST", "/v1/queues/rated/claim", { owner: "A", ttlMs: TTL }));
  expect(later.body.leases).toMatchObject([{ job: { id: "r-001" } }]);
  expect((await env.DB.prepare("SELECT count(*) AS n FROM key_buckets WHERE queue = 'rated' AND key = 'tenant-1'").first<{ n: number }>())!.n).toBe(1);

  // By the hundred over 10 keys, each key's bucket holding 10 tokens.
  await emptyDatabase();
  vi.setSystemTime(T);
  await inUse("rated-many");
  expectStatus(await w.call("PUT", "/v1/queues/rated-many", { keyRatePerSecond: 10 }), 200);
  expectStatus(await w.call("POST", "/v1/queues/rated-many/jobs", { jobs: idsOf("rm", BATCH).map((id, i) => ({ id, key: `tenant-${i % 10}`, payload: PAYLOAD })) }), 200);
  const rated = await measureKeyed(`claim-next of ${BATCH} over 10 keys, with keyRatePerSecond`, () => w.call("POST", "/v1/queues/rated-many/claim", { owner: "W", ttlMs: TTL, limit: BATCH }));
  expect(rated.body.leases).toHaveLength(BATCH);
}

/** The lines of the search table (SEARCH_VERBS). */
const searchMeasured = new Map<string, Tally>();

/**
 * The lines of the search table: a page of 50 of a queue's queued jobs, and a
 * bulk cancel of 100 of them, in a queue in use (its resident is scheduled,
 * so neither takes it).
 */
async function measureSearch(): Promise<void> {
  await emptyDatabase();
  vi.setSystemTime(T);
  await inUse("found");
  expectStatus(await w.call("POST", "/v1/queues/found/jobs", { jobs: idsOf("found", BATCH).map((id) => ({ id, payload: PAYLOAD })) }), 200);
  const page = await measure(SEARCH_VERBS[0]!, () => w.call("GET", "/v1/jobs?queue=found&status=queued&limit=50"), searchMeasured);
  expect(page.body.jobs).toHaveLength(50);
  const cancelled = await measure(SEARCH_VERBS[1]!, () => w.call("POST", "/v1/jobs/bulk", { action: "cancel", filter: { queue: "found", status: "queued" } }), searchMeasured);
  expect(cancelled.body).toEqual({ matched: BATCH, changed: BATCH, skipped: {}, nextCursor: null });
}

/** The lines of the series table (SERIES_VERBS). */
const seriesMeasured = new Map<string, Tally>();

/**
 * The lines of the series table: in a queue in use, an enqueue a minute
 * later than the queue's last write (it ends that minute), then, after a day
 * of a job enqueued and completed each minute (written straight to the
 * tables: 1,440 calls would take the test a minute), the reads of the last
 * hour by the minute and the last 30 days by the hour.
 */
async function measureSeries(): Promise<void> {
  await emptyDatabase();
  vi.setSystemTime(T);
  await inUse("charted");
  vi.setSystemTime(T + MINUTE);
  expectStatus(await measure(SERIES_VERBS[0]!, () => w.call("POST", "/v1/jobs", { id: "next-minute", queue: "charted", payload: PAYLOAD }), seriesMeasured), 201);
  expect(await env.DB.prepare("SELECT span, minute, enqueued FROM queue_series WHERE queue = 'charted' ORDER BY span").all()).toMatchObject({
    results: [{ span: 1, minute: T / MINUTE, enqueued: 1 }, { span: 60, minute: T / MINUTE, enqueued: 1 }],
  });
  const day = Array.from({ length: 24 * 60 }, (_, i) => T / MINUTE + 2 + i);
  for (let start = 0; start < day.length; start += 90) {
    await env.DB.batch(day.slice(start, start + 90).flatMap((minute) => [
      env.DB.prepare("INSERT INTO queue_series (queue, span, minute, enqueued, completed, wait_7, run_9) VALUES ('charted', 1, ?1, 1, 1, 1, 1)").bind(minute),
      env.DB.prepare(`INSERT INTO queue_series (queue, span, minute, enqueued, completed, wait_7, run_9) VALUES ('charted', 60, ?1 - ?1 % 60, 1, 1, 1, 1)
                      ON CONFLICT DO UPDATE SET enqueued = enqueued + 1, completed = completed + 1, wait_7 = wait_7 + 1, run_9 = run_9 + 1`).bind(minute),
    ]));
  }
  vi.setSystemTime(T + DAY + 2 * MINUTE);
  const hour = await measure(SERIES_VERBS[1]!, () => w.call("GET", "/v1/queues/charted/series"), seriesMeasured);
  expect(hour.body.points).toHaveLength(60);
  const month = await measure(SERIES_VERBS[2]!, () => w.call("GET", `/v1/queues/charted/series?step=${HOUR}&from=${T + DAY - 30 * DAY}`), seriesMeasured);
  expect(month.body.points.reduce((sum: number, point: { completed: number }) => sum + point.completed, 0)).toBe(24 * 60);
}

/**
 * The lines of the once-per-key table: an enqueue that takes a window, one the
 * window turns away, a call of many; a debounce's first enqueue and one that
 * moves its job; a supersede with its key free and one that cancels the job
 * held; and the purge of a job whose window ended with it.
 */
async function measureDedupKeys(): Promise<void> {
  await emptyDatabase();
  vi.setSystemTime(T);
  await inUse("once");
  const window = { queue: "once", dedupKey: "order-7", dedupTtlMs: DAY, payload: PAYLOAD };
  expectStatus(await measureDedup("enqueue with a dedup window", () => w.call("POST", "/v1/jobs", { id: "d-one", ...window })), 201);
  const turnedAway = await measureDedup("enqueue, deduplicated (its window lasts)", () => w.call("POST", "/v1/jobs", { id: "d-two", ...window }));
  expect(turnedAway).toMatchObject({ status: 200, body: { deduplicated: true, job: { id: "d-one" } } });
  const jobs = idsOf("dm", BATCH).map((id) => ({ id, dedupKey: id, dedupTtlMs: DAY, payload: PAYLOAD }));
  const many = await measureDedup(`enqueueMany of ${BATCH} with dedup windows`, () => w.call("POST", "/v1/queues/once/jobs", { jobs }));
  expect(many.body.jobs.filter((job: { created: boolean }) => job.created)).toHaveLength(BATCH);

  const debounce = { queue: "once", dedupKey: "doc-9", debounceMs: 1_000, payload: PAYLOAD };
  expectStatus(await measureDedup("enqueue with a debounce", () => w.call("POST", "/v1/jobs", { id: "b-one", ...debounce })), 201);
  vi.setSystemTime(T + 500);
  const moved = await measureDedup("enqueue, debounced (moves the waiting job)", () => w.call("POST", "/v1/jobs", { id: "b-two", ...debounce }));
  expect(moved).toMatchObject({ status: 200, body: { debounced: true, job: { id: "b-one", runAt: T + 1_500 } } });

  const supersede = { queue: "once", dedupKey: "sync-3", supersede: true, payload: PAYLOAD };
  expectStatus(await measureDedup("enqueue with supersede (the key free)", () => w.call("POST", "/v1/jobs", { id: "s-one", ...supersede })), 201);
  expectStatus(await w.call("POST", "/v1/jobs/s-one/claim", { owner: "A", ttlMs: TTL }), 200);
  const superseding = await measureDedup("enqueue with supersede (cancels the held job)", () => w.call("POST", "/v1/jobs", { id: "s-two", ...supersede }));
  expect(superseding).toMatchObject({ status: 201, body: { superseded: "s-one" } });

  // The window's job finished and purged with its window over: both go in one cron run.
  await emptyDatabase();
  vi.setSystemTime(T);
  await inUse("once-purged");
  expectStatus(await w.call("POST", "/v1/jobs", { id: "p-one", queue: "once-purged", dedupKey: "k", dedupTtlMs: DAY, payload: PAYLOAD }), 201);
  expectStatus(await w.call("POST", "/v1/jobs/p-one/claim", { owner: "A", ttlMs: TTL }), 200);
  expectStatus(await w.call("POST", "/v1/jobs/p-one/complete", { owner: "A", fence: 1, result: RESULT }), 200);
  vi.setSystemTime(T + 8 * DAY);
  await measureDedup("purge (cron, one job and its ended window)", () => w.cron(T + 8 * DAY));
  expect((await env.DB.prepare("SELECT count(*) AS n FROM dedup_keys").first<{ n: number }>())!.n).toBe(0);
}

/** The lines of the steps table (STEP_VERBS). */
const stepMeasured = new Map<string, Tally>();

/**
 * The lines of the steps table: a job's step recorded, sent again, refused
 * to a stale lease; the claim-next that hands the job's two steps to the
 * next lease, and the purge that deletes them with the job.
 */
async function measureSteps(): Promise<void> {
  const measureStep = <R>(verb: string, run: () => Promise<R>) => measure(verb, run, stepMeasured);
  await emptyDatabase();
  vi.setSystemTime(T);
  await inUse("steps");
  expectStatus(await w.call("POST", "/v1/jobs", { id: "s-one", queue: "steps", payload: PAYLOAD }), 201);
  expectStatus(await w.call("POST", "/v1/jobs/s-one/claim", { owner: "A", ttlMs: TTL }), 200);
  expectStatus(await measureStep("step", () => w.call("POST", "/v1/jobs/s-one/steps/charge", { owner: "A", fence: 1, result: RESULT })), 201);
  expectStatus(await w.call("POST", "/v1/jobs/s-one/steps/email", { owner: "A", fence: 1, result: RESULT }), 201);
  expectStatus(await measureStep("step, recorded already", () => w.call("POST", "/v1/jobs/s-one/steps/charge", { owner: "A", fence: 1, result: RESULT })), 200);
  expectStatus(await measureStep("step, refused stale", () => w.call("POST", "/v1/jobs/s-one/steps/charge", { owner: "Z", fence: 1, result: RESULT })), 409);
  expectStatus(await w.call("POST", "/v1/jobs/s-one/release", { owner: "A", fence: 1 }), 200);
  const [lease] = (await measureStep("claim-next of a job with 2 steps", () => w.call("POST", "/v1/queues/steps/claim", { owner: "B", ttlMs: TTL }))).body.leases;
  expect(Object.keys(lease.job.steps)).toEqual(["charge", "email"]);

  // A happy life with 2 steps, as the plain one's (no history stored): its purge deletes its steps too.
  await emptyDatabase();
  vi.setSystemTime(T);
  await inUse("steps");
  expectStatus(await w.call("POST", "/v1/jobs", { id: "s-two", queue: "steps", payload: PAYLOAD }), 201);
  expectStatus(await w.call("POST", "/v1/jobs/s-two/claim", { owner: "A", ttlMs: TTL }), 200);
  for (const step of ["charge", "email"]) expectStatus(await w.call("POST", `/v1/jobs/s-two/steps/${step}`, { owner: "A", fence: 1, result: RESULT }), 201);
  vi.setSystemTime(T + 1_000);
  expectStatus(await w.call("POST", "/v1/jobs/s-two/complete", { owner: "A", fence: 1, result: RESULT }), 200);
  vi.setSystemTime(T + 8 * DAY);
  await measureStep("purge (cron, one job with 2 steps)", () => w.cron(T + 8 * DAY));
  expect((await env.DB.prepare("SELECT count(*) AS n FROM steps").first<{ n: number }>())!.n).toBe(0);
}

beforeAll(async () => {
  vi.useFakeTimers({ toFake: ["Date"] });
  expect(JSON.stringify(PAYLOAD)).toHaveLength(60);
  expect(JSON.stringify(RESULT)).toHaveLength(50);
  w = countedWorker();

  // A job's life on single calls.
  await emptyDatabase();
  vi.setSystemTime(T);
  await inUse("single");
  expectStatus(await measure("enqueue", () => w.call("POST", "/v1/jobs", { id: "one", queue: "single", payload: PAYLOAD })), 201);
  const [lease] = (await measure("claim-next", () => w.call("POST", "/v1/queues/single/claim", { owner: "A", ttlMs: TTL }))).body.leases;
  expect(lease).toMatchObject({ fence: 1, job: { id: "one" } });
  vi.setSystemTime(T + 1_000);
  expectStatus(await measure("complete", () => w.call("POST", "/v1/jobs/one/complete", { owner: "A", fence: 1, result: RESULT })), 200);
  expectStatus(await measure("events (read)", () => w.call("GET", "/v1/jobs/one/events")), 200);
  expectStatus(await measure("stats (read)", () => w.call("GET", "/v1/stats")), 200);
  vi.setSystemTime(T + 8 * DAY);
  await measure("purge (cron, one job)", () => w.cron(T + 8 * DAY));

  // A job's life in batches: 100 enqueued, claimed, renewed and completed by one call each.
  await emptyDatabase();
  vi.setSystemTime(T);
  await inUse("many");
  const jobs = Array.from({ length: BATCH }, (_, i) => ({ id: `many-${String(i).padStart(3, "0")}`, payload: PAYLOAD }));
  expectStatus(await measure(`enqueueMany of ${BATCH}`, () => w.call("POST", "/v1/queues/many/jobs", { jobs })), 200);
  const claimed = (await measure(`claim-next of ${BATCH}`, () => w.call("POST", "/v1/queues/many/claim", { owner: "W", ttlMs: TTL, limit: BATCH }))).body.leases as { fence: number; job: { id: string } }[];
  expect(claimed).toHaveLength(BATCH);
  const held = claimed.map((lease) => ({ id: lease.job.id, fence: lease.fence }));
  vi.setSystemTime(T + 1_000);
  expectStatus(await measure(`renewMany of ${BATCH}`, () => w.call("POST", "/v1/leases/renew", { owner: "W", ttlMs: TTL, leases: held })), 200);
  vi.setSystemTime(T + 2_000);
  const completed = await measure(`completeMany of ${BATCH} with next (none left)`, () =>
    w.call("POST", "/v1/leases/complete", { owner: "W", leases: held.map((lease) => ({ ...lease, result: RESULT })), next: { queue: "many", limit: BATCH, ttlMs: TTL } }));
  expect(completed.body.leases).toHaveLength(0);
  vi.setSystemTime(T + 8 * DAY);
  await measure(`purge (cron, ${BATCH} jobs)`, () => w.cron(T + 8 * DAY));

  // The runner's steady state: completeMany with next hands out the next 100 in the same call.
  await emptyDatabase();
  vi.setSystemTime(T);
  await inUse("loop");
  const twice = Array.from({ length: 2 * BATCH }, (_, i) => ({ id: `loop-${String(i).padStart(3, "0")}`, payload: PAYLOAD }));
  expectStatus(await w.call("POST", "/v1/queues/loop/jobs", { jobs: twice }), 200);
  const first = (await w.call("POST", "/v1/queues/loop/claim", { owner: "W", ttlMs: TTL, limit: BATCH })).body.leases as { fence: number; job: { id: string } }[];
  const handedOn = await measure(`completeMany of ${BATCH} with next (takes ${BATCH})`, () =>
    w.call("POST", "/v1/leases/complete", { owner: "W", leases: first.map((lease) => ({ id: lease.job.id, fence: lease.fence, result: RESULT })), next: { queue: "loop", limit: BATCH, ttlMs: TTL } }));
  expect(handedOn.body.leases).toHaveLength(BATCH);

  // Claim by id, and the other ends of a lease: fail, release, cancel, and the cron's expiry.
  await emptyDatabase();
  vi.setSystemTime(T);
  await inUse("ends");
  for (const id of ["by-id", "failing", "released", "cancelled", "expiring"]) expectStatus(await w.call("POST", "/v1/jobs", { id, queue: "ends", payload: PAYLOAD }), 201);
  expectStatus(await measure("claim (by id)", () => w.call("POST", "/v1/jobs/by-id/claim", { owner: "A", ttlMs: TTL })), 200);
  vi.setSystemTime(T + 1_000);
  expectStatus(await measure("renew", () => w.call("POST", "/v1/jobs/by-id/renew", { owner: "A", fence: 1, ttlMs: TTL })), 200);
  expectStatus(await measure("renew, again in the same lease", () => w.call("POST", "/v1/jobs/by-id/renew", { owner: "A", fence: 1, ttlMs: TTL })), 200);
  expectStatus(await measure("refused stale write", () => w.call("POST", "/v1/jobs/by-id/complete", { owner: "Z", fence: 1, result: RESULT })), 409);
  expectStatus(await measure("refused stale write, repeated", () => w.call("POST", "/v1/jobs/by-id/complete", { owner: "Z", fence: 1, result: RESULT })), 409);
  vi.setSystemTime(T);
  for (const id of ["failing", "released", "expiring"]) expectStatus(await w.call("POST", `/v1/jobs/${id}/claim`, { owner: "A", ttlMs: id === "expiring" ? 1_000 : TTL }), 200);
  expectStatus(await measure("fail (retried later)", () => w.call("POST", "/v1/jobs/failing/fail", { owner: "A", fence: 1, error: "boom" })), 200);
  expectStatus(await measure("release", () => w.call("POST", "/v1/jobs/released/release", { owner: "A", fence: 1 })), 200);
  expectStatus(await measure("cancel (queued)", () => w.call("POST", "/v1/jobs/cancelled/cancel", { reason: "not needed" })), 200);
  vi.setSystemTime(T + 2_000);
  await measure("expiry (cron, one lease)", () => w.cron(T + 2_000)); // by-id's lease runs on
  expect((await w.call("GET", "/v1/jobs/expiring")).body).toMatchObject({ owner: null, fence: 1, status: "queued" });

  // A long poll: the claim waits on an empty queue until a job comes (another Worker's enqueue).
  await emptyDatabase();
  vi.setSystemTime(T);
  await inUse("polled");
  const producer = countedWorker();
  const waiting = measure(LONG_POLL, () => w.call("POST", "/v1/queues/polled/claim", { owner: "A", ttlMs: TTL, waitMs: 5_000 }));
  // Once the claim has looked (a claim-next, then when a job is next due), and sleeps until its re-check a second later.
  while (w.peek().queries < 3) await new Promise((resolve) => setTimeout(resolve, 5));
  expectStatus(await producer.call("POST", "/v1/jobs", { id: "polled", queue: "polled", payload: PAYLOAD }), 201);
  expect((await waiting).body.leases).toHaveLength(1);

  await measureKeyedLives();
  await measureDedupKeys();
  await measureSteps();
  await measureSearch();
  await measureSeries();
}, 90_000);

/** The database file's size, as D1 reports it after a query. */
async function databaseBytes(db: D1Database): Promise<number> {
  return (await db.prepare("SELECT 1").run()).meta.size_after;
}

/** How many bytes each finished job takes in a fresh database, kept with its history: 10,000 jobs, their ids `idLength` characters long. */
async function bytesPerFinishedJob(idLength: number): Promise<number> {
  const db = env.DB_UNMIGRATED;
  await applyD1Migrations(db, env.TEST_MIGRATIONS);
  const fresh = countedWorker(db);
  const before = await databaseBytes(db);
  const JOBS = 10_000;
  const CALL = 100; // the most a claim-next takes
  for (let start = 0; start < JOBS; start += CALL) {
    const jobs = Array.from({ length: CALL }, (_, i) => ({ id: `${idLength}-${String(start + i).padStart(idLength - String(idLength).length - 1, "0")}`, payload: PAYLOAD }));
    expect(jobs[0]!.id).toHaveLength(idLength);
    expectStatus(await fresh.call("POST", `/v1/queues/bytes-${idLength}/jobs`, { jobs }), 200);
    const { leases } = (await fresh.call("POST", `/v1/queues/bytes-${idLength}/claim`, { owner: "worker-1", ttlMs: TTL, limit: CALL })).body as { leases: { fence: number; job: { id: string } }[] };
    expect(leases).toHaveLength(CALL);
    const completed = await fresh.call("POST", "/v1/leases/complete", { owner: "worker-1", leases: leases.map((lease) => ({ id: lease.job.id, fence: lease.fence, result: RESULT })) });
    expectStatus(completed, 200);
  }
  return ((await databaseBytes(db)) - before) / JOBS;
}

afterAll(() => {
  vi.useRealTimers();
});

/** A table of docs/cost.md: each of `verbs`' queries and rows, as measured (in `from`). */
function costTable(verbs: readonly string[] = COST_VERBS, from = measured): string {
  expect([...from.keys()].sort()).toEqual([...verbs].sort());
  const lines = ["| verb | queries | rows read | rows written |", "|---|---:|---:|---:|"];
  for (const verb of verbs) {
    const { queries, read, written } = from.get(verb)!;
    lines.push(`| ${verb} | ${queries} | ${read} | ${written} |`);
  }
  return lines.join("\n");
}

const written = (verb: string) => measured.get(verb)!.written;
const keyedWritten = (verb: string) => keyedMeasured.get(verb)!.written;

/**
 * The most rows a job's life and a few verbs may write (issue 18), and the
 * most bytes a finished job may keep (10-character ids). Batched, a job's
 * life writes 7 rows of its own, and its calls a row each for their queue's
 * counts (enqueueMany, completeMany, the purge) and one for the fence floor.
 * An expiry writes one row more than issue 18's 3: its queue's minute
 * (migrations/0037), as a failure does, off the happy path.
 */
const BUDGET = { singleLife: 11, batchedLifePerJob: 7, batchedLifePerCalls: 4, renew: 2, refusal: 3, expiry: 4, finishedJobBytes: 300 };

describe("what a job costs on D1", () => {
  test("each verb writes the rows of its line in docs/cost.md, and reads no more", () => {
    console.log(costTable());
    expect(costPage).toContain(costTable());
  });

  test("a job's happy life, enqueue, claim, complete and purge, stays within its budget on single calls and in batches", () => {
    const single = written("enqueue") + written("claim-next") + written("complete") + written("purge (cron, one job)");
    const batched = written(`enqueueMany of ${BATCH}`) + written(`claim-next of ${BATCH}`) + written(`completeMany of ${BATCH} with next (none left)`) + written(`purge (cron, ${BATCH} jobs)`);
    expect(costPage).toMatch(new RegExp(`\\| single calls \\| [\\d.]+ \\| ${single} \\|`));
    expect(costPage).toMatch(new RegExp(`\\| batched: ${BATCH} a call \\(enqueueMany, claim-next of ${BATCH}, completeMany\\) \\| [\\d.]+ \\| ${batched / BATCH} \\|`));
    expect(single).toBeLessThanOrEqual(BUDGET.singleLife);
    expect(batched).toBeLessThanOrEqual(BUDGET.batchedLifePerJob * BATCH + BUDGET.batchedLifePerCalls);
  });

  test("a renew, a refused stale write and the cron's expiry of a lease stay within their budgets", () => {
    expect(written("renew")).toBeLessThanOrEqual(BUDGET.renew);
    expect(written("refused stale write")).toBeLessThanOrEqual(BUDGET.refusal);
    expect(written("expiry (cron, one lease)")).toBeLessThanOrEqual(BUDGET.expiry);
  });
});

describe("what a keyed job costs on D1", () => {
  test("each keyed verb writes the rows of its line in docs/cost.md's keys table, and reads no more", () => {
    console.log(costTable(KEYED_VERBS, keyedMeasured));
    expect(costPage).toContain(costTable(KEYED_VERBS, keyedMeasured));
  });

  test("a keyed job's life writes at most 2 rows more than an unkeyed one's, single and batched, held back or with a key rate, as docs/cost.md says", () => {
    expectKeyedLives((verb) => (measured.get(verb) ?? keyedMeasured.get(verb))!.written, costPage);
  });

  test("a claim in a queue with keyRatePerSecond writes one row more a job than a keyed claim: its key's row of key_buckets", () => {
    expect(keyedWritten("claim-next, keyed, with keyRatePerSecond (its key's first claim)")).toBe(keyedWritten("claim-next, keyed") + 1);
    expect(keyedWritten("claim-next, keyed, with keyRatePerSecond (a later claim)")).toBe(keyedWritten("claim-next, keyed") + 1);
    expect(keyedWritten(`claim-next of ${BATCH} over 10 keys, with keyRatePerSecond`)).toBe(keyedWritten(`claim-next of ${BATCH}, keyed`) + BATCH);
  });

  test("a keyed job's purge writes what an unkeyed one's does: its key's entry left with its completion", () => {
    expect(keyedWritten("purge (cron, one keyed job)")).toBe(written("purge (cron, one job)"));
    expect(keyedWritten(`purge (cron, ${BATCH} keyed jobs)`)).toBe(written(`purge (cron, ${BATCH} jobs)`));
  });
});

describe("what once per key costs on D1", () => {
  test("each enqueue with a dedup key writes the rows of its line in docs/cost.md's once-per-key table, and reads no more", () => {
    console.log(costTable(DEDUP_VERBS, dedupMeasured));
    expect(costPage).toContain(costTable(DEDUP_VERBS, dedupMeasured));
  });

  test("a window costs an enqueue two rows more (its key's row and its end's index entry), and an enqueue it turns away writes nothing", () => {
    const dedupWritten = (verb: string) => dedupMeasured.get(verb)!.written;
    expect(dedupWritten("enqueue with a dedup window")).toBe(written("enqueue") + 2);
    expect(dedupWritten("enqueue, deduplicated (its window lasts)")).toBe(0);
    expect(dedupWritten(`enqueueMany of ${BATCH} with dedup windows`)).toBe(written(`enqueueMany of ${BATCH}`) + 2 * BATCH);
    expect(dedupWritten("enqueue with supersede (the key free)")).toBe(written("enqueue") + 1);
    expect(dedupWritten("purge (cron, one job and its ended window)")).toBe(written("purge (cron, one job)") + 1);
  });
});

describe("what a step costs on D1", () => {
  test("each step verb writes the rows of its line in docs/cost.md's steps table, and reads no more", () => {
    console.log(costTable(STEP_VERBS, stepMeasured));
    expect(costPage).toContain(costTable(STEP_VERBS, stepMeasured));
  });

  test("a step writes at most 2 rows; one sent again writes none; a job's steps cost its claim no row written, and its purge one row a step", () => {
    const stepWritten = (verb: string) => stepMeasured.get(verb)!.written;
    expect(stepWritten("step")).toBeLessThanOrEqual(2);
    expect(stepWritten("step, recorded already")).toBe(0);
    expect(stepWritten("step, refused stale")).toBeLessThanOrEqual(BUDGET.refusal);
    expect(stepWritten("claim-next of a job with 2 steps")).toBe(written("claim-next"));
    expect(stepWritten("purge (cron, one job with 2 steps)")).toBe(written("purge (cron, one job)") + 2);
  });
});

describe("what search costs on D1", () => {
  test("a search page and a bulk cancel read and write the rows of their lines in docs/cost.md's search table", () => {
    console.log(costTable(SEARCH_VERBS, searchMeasured));
    expect(costPage).toContain(costTable(SEARCH_VERBS, searchMeasured));
  });

  test("a page writes nothing, and a bulk cancel writes what the cancels of its jobs one by one write, no more", () => {
    expect(searchMeasured.get(SEARCH_VERBS[0]!)!.written).toBe(0);
    expect(searchMeasured.get(SEARCH_VERBS[1]!)!.written).toBeLessThanOrEqual(BATCH * written("cancel (queued)"));
  });
});

describe("what the series cost on D1", () => {
  test("a minute's end and the reads of a queue's series read and write the rows of their lines in docs/cost.md's series table", () => {
    console.log(costTable(SERIES_VERBS, seriesMeasured));
    expect(costPage).toContain(costTable(SERIES_VERBS, seriesMeasured));
  });

  test("a queue's minute ends once, with 3 rows whatever its jobs, and a read of its series writes nothing", () => {
    expect(seriesMeasured.get(SERIES_VERBS[0]!)!.written).toBe(written("enqueue") + 3);
    expect(seriesMeasured.get(SERIES_VERBS[1]!)!.written).toBe(0);
    expect(seriesMeasured.get(SERIES_VERBS[2]!)!.written).toBe(0);
  });
});

describe("what a finished job keeps on D1", () => {
  test("a finished job with a 60-byte payload and a 50-byte result, kept with its history", async () => {
    vi.setSystemTime(T);
    const bytes = { short: Math.round(await bytesPerFinishedJob(10)), uuid: Math.round(await bytesPerFinishedJob(36)) };
    console.log(`bytes per finished job: ${JSON.stringify(bytes)}`);
    expect(costPage).toContain(`| a finished job, kept: 10-character ids | ${bytes.short} bytes |`);
    expect(costPage).toContain(`| a finished job, kept: 36-character ids | ${bytes.uuid} bytes |`);
    expect(bytes.short).toBeLessThanOrEqual(BUDGET.finishedJobBytes);
  }, 120_000);
});
