import { applyD1Migrations, createExecutionContext, createScheduledController, env, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { afterAll, expect, test, vi } from "vitest";
import { LeaseClient, runWorker } from "../../../src/client/index.ts";
import type { WorkerEnv } from "../../../src/runtime/cloudflare/env.ts";
import worker, { type QueueObject } from "../../../src/worker.ts";
import { queueObject } from "../storage-mode.ts";
import { billedBetween, meters } from "./meters.ts";

// The bench of the two storage modes, in workerd, in one run (docs/scale.md):
// jobs a second through one queue and through 8 queues at once, by single
// calls (16 claimers, each claim-next one job, complete it) and by the client's worker runner
// (claims of many, completions by the hundred), in D1 mode and in objects
// mode; and the rows each mode writes per job, objects mode's alarm and
// directory included. The Worker is called in this isolate, as the runtime
// calls it, with no network between (workerd's local D1 is a SQLite file, as
// each object's storage is). Timings are printed, never asserted: run it with
//   FENCELEASE_BENCH=1 npx vitest run --project workers-objects test/worker/objects/bench.test.ts --silent=false
// (FENCELEASE_BENCH=quick for a short run; --silent=false, or the passed test's table is not shown). Without it, it is skipped.

const TOKEN = "worker-test-token"; // FENCELEASE_TOKENS in vitest.config.ts
const TTL = 60_000;
const RETENTION = 7 * 24 * 3_600_000;
const quick = env.BENCH === "quick";
const JOBS = quick ? 200 : 500; // per queue
const TRIALS = quick ? 1 : 3; // of each scenario, the modes taking turns; the median counts
const CLAIMERS = 16; // single calls: claimers in all, shared out over the queues, each claim-next then complete
const CONCURRENCY = 100; // the worker runner's jobs in hand per queue

type Mode = "d1" | "objects";
type Trial = { jobsPerSecond: number; rowsPerJob: number };
type Row = { mode: Mode; how: string; queues: number; jobs: number; trials: Trial[] };
const table: Row[] = [];
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

/** Rows written by D1 as its answers count them (meta.rows_written), through the binding the Worker is given. */
function countingD1(db: D1Database, meter: { rowsWritten: number }): D1Database {
  const counted = <T extends D1Result>(result: T) => {
    meter.rowsWritten += result.meta.rows_written ?? 0;
    return result;
  };
  const statement = (prepared: D1PreparedStatement): D1PreparedStatement =>
    new Proxy(prepared, {
      get(target, key) {
        if (key === "bind") return (...args: unknown[]) => statement(target.bind(...args));
        if (key === "all" || key === "run") return async () => counted(await target[key]());
        const value = Reflect.get(target, key, target);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
  return new Proxy(db, {
    get(target, key) {
      if (key === "prepare") return (sql: string) => statement(target.prepare(sql));
      if (key === "batch") return async (statements: D1PreparedStatement[]) => (await target.batch(statements)).map(counted);
      const value = Reflect.get(target, key, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

const d1Meter = { rowsWritten: 0 };
const envs: Record<Mode, WorkerEnv> = {
  // D1 mode with no DOORBELL: no claim here waits, and the rings of its writes would be requests the objects mode does not make.
  d1: { ...env, STORAGE: "d1", DB: countingD1(env.DB, d1Meter) as never, DOORBELL: undefined },
  objects: { ...env, STORAGE: "objects" },
};

/** The Worker of `mode`, called as the runtime calls it. */
function fetcherOf(mode: Mode) {
  return (input: RequestInfo | URL, init?: RequestInit) => worker.fetch(new Request(input, init) as never, envs[mode], createExecutionContext()) as unknown as Promise<Response>;
}

/**
 * The client, for the worker runner. Its calls are few (batches), which
 * matters here: each call's AbortSignal.timeout stays an active timeout of
 * this test's isolate (workerd allows 10,000), so the single calls go without it.
 */
function clientOf(mode: Mode): LeaseClient {
  return new LeaseClient({ baseUrl: "https://bench.test", token: TOKEN, fetch: fetcherOf(mode) as typeof fetch });
}

/** One call of the API as JSON, as a plain client sends it. */
function postOf(mode: Mode) {
  const fetcher = fetcherOf(mode);
  return async <T>(path: string, body: unknown): Promise<T> => {
    const response = await fetcher(`https://bench.test${path}`, { method: "POST", headers: { Authorization: `Bearer ${TOKEN}`, "Content-Type": "application/json" }, body: JSON.stringify(body) });
    if (!response.ok) throw new Error(`${path} answered ${response.status}: ${await response.text()}`);
    return (await response.json()) as T;
  };
}

/** A point to count rows written from, in either mode. */
async function mark(mode: Mode, queues: string[]): Promise<() => Promise<number>> {
  if (mode === "d1") {
    const from = d1Meter.rowsWritten;
    return async () => d1Meter.rowsWritten - from;
  }
  const from = await meters(queues);
  return async () => billedBetween(from, await meters(queues)).rowsWritten;
}

async function enqueue(client: LeaseClient, queue: string): Promise<void> {
  for (let from = 0; from < JOBS; from += 1_000) {
    const jobs = Array.from({ length: Math.min(1_000, JOBS - from) }, (_, k) => ({ id: `${queue}-${from + k}`, payload: { n: from + k } }));
    const answer = await client.enqueueMany(queue, jobs);
    expect(answer.every((job) => job.created)).toBe(true);
  }
}

/** Single calls: `claimers` claimers of the queue, each claim-next one job then complete it, until the queue is empty. */
async function singleCalls(mode: Mode, queue: string, claimers: number): Promise<number> {
  const post = postOf(mode);
  let done = 0;
  await Promise.all(
    Array.from({ length: claimers }, async (_, loop) => {
      for (;;) {
        const { leases } = await post<{ leases: { fence: number; job: { id: string } }[] }>(`/v1/queues/${queue}/claim`, { owner: `w${loop}`, ttlMs: TTL });
        if (leases.length === 0) return;
        await post(`/v1/jobs/${leases[0]!.job.id}/complete`, { owner: `w${loop}`, fence: leases[0]!.fence, result: leases[0]!.job.id });
        done++;
      }
    }),
  );
  return done;
}

/** The worker runner, CONCURRENCY jobs in hand, drained: the batches the client makes of claims and completions. */
async function runner(mode: Mode, queue: string): Promise<number> {
  const client = clientOf(mode);
  let done = 0;
  await runWorker(client, { queue, owner: `runner-${queue}`, concurrency: CONCURRENCY, ttlMs: TTL, waitMs: 0 }, async () => {
    done++;
    return 1;
  }).stop({ drain: true });
  return done;
}

async function measure(mode: Mode, how: string, queueCount: number, trial: number, run: (mode: Mode, queue: string, claimers: number) => Promise<number>): Promise<void> {
  const client = clientOf(mode);
  const queues = Array.from({ length: queueCount }, (_, i) => `bench-${mode}-${how.replace(/\W+/g, "-")}-${queueCount}-${trial}-${i}`);
  for (const queue of queues) await enqueue(client, queue);
  const rowsSince = await mark(mode, queues);
  const started = performance.now();
  const done = (await Promise.all(queues.map((queue) => run(mode, queue, CLAIMERS / queueCount)))).reduce((a, b) => a + b, 0);
  const seconds = (performance.now() - started) / 1000;
  expect(done).toBe(JOBS * queueCount);
  let row = table.find((entry) => entry.mode === mode && entry.how === how && entry.queues === queueCount);
  if (!row) table.push((row = { mode, how, queues: queueCount, jobs: done, trials: [] }));
  row.trials.push({ jobsPerSecond: done / seconds, rowsPerJob: (await rowsSince()) / done });
  console.info(`bench: ${mode}, ${how}, ${queueCount} queue(s), trial ${trial + 1}: ${Math.round(done / seconds)} jobs/s`);
}

/** What a job's whole life writes, per job: enqueued, claimed and completed, purged; and the alarms set meanwhile (objects mode). */
type Life = { enqueue: number; work: number; purge: number; alarms: number | null };

/**
 * A job's whole life in rows written: enqueued (calls of 1,000), claimed and
 * completed by single calls, purged a retention later, by the cron in D1
 * mode, by the queue's alarm in objects mode (its unbinds in the directory
 * included); every object and alarm counted.
 */
async function life(mode: Mode): Promise<Life> {
  const queue = `bench-life-${mode}`;
  let rowsSince = await mark(mode, [queue]);
  const step = async () => {
    const rows = (await rowsSince()) / JOBS;
    rowsSince = await mark(mode, [queue]);
    return rows;
  };
  await enqueue(clientOf(mode), queue);
  const enqueued = await step();
  await singleCalls(mode, queue, CLAIMERS);
  const worked = await step();
  const later = Date.now() + RETENTION + 120_000;
  vi.useFakeTimers({ toFake: ["Date"] });
  vi.setSystemTime(later);
  try {
    if (mode === "d1") await worker.scheduled(createScheduledController({ scheduledTime: later }) as never, envs.d1);
    else expect(await runDurableObjectAlarm(queueObject(queue))).toBe(true);
  } finally {
    vi.useRealTimers();
  }
  const purged = await step();
  const left = mode === "d1" ? await env.DB.prepare("SELECT count(*) AS n FROM jobs WHERE queue = ?").bind(queue).first("n") : await runInDurableObject(queueObject(queue), (_object, state) => state.storage.sql.exec("SELECT count(*) AS n FROM jobs").one().n);
  expect(left).toBe(0);
  const alarms = mode === "d1" ? null : await runInDurableObject(queueObject(queue), async (object: QueueObject) => (await object.meter()).alarmsSet);
  return { enqueue: enqueued, work: worked, purge: purged, alarms };
}

test.skipIf(!env.BENCH)("jobs a second and rows written per job, D1 mode against objects mode", { timeout: 30 * 60_000 }, async () => {
  await applyD1Migrations(env.DB, env.TEST_MIGRATIONS);
  // First, while D1 holds no other job: the cron purges every queue's.
  const lives = { d1: await life("d1"), objects: await life("objects") };
  for (const queues of [1, 8]) {
    for (const [how, run] of [["single calls", singleCalls], ["worker runner", runner]] as const) {
      for (let trial = 0; trial < TRIALS; trial++) for (const mode of ["d1", "objects"] as const) await measure(mode, how, queues, trial, run);
    }
  }
  console.log(
    [
      `${JOBS} jobs a queue; single calls: ${CLAIMERS} claimers in all, shared out over the queues; worker runner: one a queue, concurrency ${CONCURRENCY}; median of ${TRIALS} trials, the modes taking turns`,
      "| how | queues | jobs | D1 jobs/s | objects jobs/s | D1 rows written/job | objects rows written/job |",
      "|---|---:|---:|---:|---:|---:|---:|",
      ...table
        .filter((row) => row.mode === "d1")
        .map((d1) => {
          const objects = table.find((row) => row.mode === "objects" && row.how === d1.how && row.queues === d1.queues)!;
          const rate = (row: Row) => Math.round(median(row.trials.map((trial) => trial.jobsPerSecond)));
          const rows = (row: Row) => median(row.trials.map((trial) => trial.rowsPerJob)).toFixed(2);
          return `| ${d1.how} | ${d1.queues} | ${d1.jobs} | ${rate(d1)} | ${rate(objects)} | ${rows(d1)} | ${rows(objects)} |`;
        }),
      "",
      `A job's life in rows written (${JOBS} jobs, single calls): D1 | objects`,
      `enqueue (calls of 1,000): ${lives.d1.enqueue.toFixed(2)} | ${lives.objects.enqueue.toFixed(2)}`,
      `claim-next + complete: ${lives.d1.work.toFixed(2)} | ${lives.objects.work.toFixed(2)}`,
      `purge (the cron; the alarm): ${lives.d1.purge.toFixed(2)} | ${lives.objects.purge.toFixed(2)}`,
      `in all: ${(lives.d1.enqueue + lives.d1.work + lives.d1.purge).toFixed(2)} | ${(lives.objects.enqueue + lives.objects.work + lives.objects.purge).toFixed(2)} (objects: ${lives.objects.alarms} alarm set, counted)`,
    ].join("\n"),
  );
});

afterAll(() => vi.useRealTimers());
