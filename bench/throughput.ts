// Our side of the BullMQ comparison (./versus-bullmq.ts): a batch enqueue and
// the worker runner through LeaseClient as a user calls it, over HTTP against
// the server in a process of its own (auth on), or in-process on a store of
// the bench's own process. One call is one run on a fresh database (and
// server), measured once; each checks its own work and throws if a job is
// lost or processed twice.
import { type HeldLease, LeaseClient, runWorker, type WorkerHandle } from "../src/client/index.ts";
import { openStore } from "../src/runtime/node/open.ts";
import { withStallCheck } from "./peer/bullmq.ts";
import { freshDatabase } from "./db.ts";
import { startServerProcess } from "./http-load.ts";
import { sleep } from "./measure.ts";

export type Run = { opsPerSec: number; jobs: number; seconds: number };

/** How our side reaches fencelease: over HTTP to a server process, or in-process to a store of this process. */
export type Transport = "http" | "in-process";

/** A client over `transport` on a fresh database, and how to stop what it runs on. */
async function ours(transport: Transport): Promise<{ client: LeaseClient; stop: () => Promise<void> }> {
  const url = await freshDatabase(0);
  if (transport === "in-process") {
    const store = await openStore({ url, migrations: false });
    return { client: new LeaseClient({ store }), stop: async () => store.close() };
  }
  const server = await startServerProcess(url);
  return { client: new LeaseClient({ baseUrl: server.url, token: server.token }), stop: server.stop };
}

// ---- enqueue-many ------------------------------------------------------------------

/** Jobs `<prefix>-<from>`..`<prefix>-<from + count - 1>`, each with the payload `{ n }`. */
const newJobs = (prefix: string, from: number, count: number) => Array.from({ length: count }, (_, k) => ({ id: `${prefix}-${from + k}`, payload: { n: from + k } }));

/** Enqueues all jobs in calls of `perCall`, one after the other; throws unless each call created every one of its jobs. */
async function enqueueAll(client: LeaseClient, queue: string, jobs: number, perCall: number): Promise<void> {
  for (let from = 0; from < jobs; from += perCall) {
    const batch = newJobs(queue, from, Math.min(perCall, jobs - from));
    const answer = await client.enqueueMany(queue, batch);
    const created = answer.filter((job, k) => job.created && job.id === batch[k]!.id).length;
    if (answer.length !== batch.length || created !== batch.length) throw new Error(`enqueue-many: ${created} of ${batch.length} jobs created in one call`);
  }
}

/** A queue's jobs by status, from GET /v1/stats. */
async function countsOf(client: LeaseClient, queue: string): Promise<Record<string, number>> {
  return (await client.queues.stats()).find((stats) => stats.queue === queue)?.jobs ?? {};
}

async function expectCounts(client: LeaseClient, queue: string, expected: Record<string, number>, what: string): Promise<void> {
  const counts = await countsOf(client, queue);
  const wrong = Object.entries({ ...counts, ...expected }).filter(([status]) => (counts[status] ?? 0) !== (expected[status] ?? 0));
  if (wrong.length > 0) throw new Error(`${what}: ${JSON.stringify(counts)} jobs by status, expected ${JSON.stringify(expected)}`);
}

/**
 * `jobs` jobs with the payload `{ n: i }` through `client.enqueueMany(queue,
 * jobs)` (POST /v1/queues/{queue}/jobs, or the store's enqueueMany
 * in-process), `perCall` per call, one call after the other, into a fresh
 * queue on a fresh database: jobs per second over the whole enqueue. One call
 * of `perCall` jobs to another queue warms the connection and the server
 * first, outside the clock (the BullMQ side gets the same).
 */
export async function enqueueManyRun(jobs = 20_000, perCall = 1_000, transport: Transport = "http"): Promise<Run> {
  const { client, stop } = await ours(transport);
  try {
    await enqueueAll(client, "bench-warm-up", perCall, perCall);
    const start = performance.now();
    await enqueueAll(client, "bench", jobs, perCall);
    const seconds = (performance.now() - start) / 1000;
    await expectCounts(client, "bench", { queued: jobs }, "enqueue-many");
    return { opsPerSec: jobs / seconds, jobs, seconds };
  } finally {
    await stop();
  }
}

// ---- worker runner -----------------------------------------------------------------

/**
 * `jobs` jobs with the payload `{ n: i }` enqueued through enqueueMany into a
 * fresh database (outside the clock), then ONE
 * `runWorker(client, { queue, owner: "bench", concurrency, ttlMs: 30_000 })`
 * over `transport`, its handler answering `{ ok: true }` at once. The clock
 * runs from the runWorker call until the queue's stats count every job done
 * (polled once the handler has been called for the last job), so the last
 * completes are inside it. Jobs per second.
 */
export async function workerRunnerRun(jobs = 20_000, concurrency = 32, transport: Transport = "http"): Promise<Run> {
  const { client, stop } = await ours(transport);
  let runner: WorkerHandle | undefined;
  try {
    await enqueueAll(client, "bench", jobs, 1_000);
    await expectCounts(client, "bench", { queued: jobs }, "worker runner, before");
    const seen = new Uint8Array(jobs); // how often the handler got each payload n
    let calls = 0;
    let strange = 0; // calls for no job of ours, or for one already handled
    let reached!: () => void;
    const allCalled = new Promise<void>((resolve) => (reached = resolve));
    const handler = async ({ job }: HeldLease) => {
      const n = (job.payload as { n?: unknown } | null)?.n;
      if (typeof n !== "number" || n < 0 || n >= jobs || seen[n]!++ > 0) strange++;
      if (++calls === jobs) reached();
      return { ok: true };
    };

    const start = performance.now();
    runner = runWorker(client, { queue: "bench", owner: "bench", concurrency, ttlMs: 30_000 }, handler);
    await withStallCheck(allCalled, () => calls, "worker runner");
    let done = 0;
    let polling = true;
    const allDone = (async () => {
      while (polling && (done = (await countsOf(client, "bench")).done ?? 0) < jobs) await sleep(2);
    })();
    try {
      await withStallCheck(allDone, () => done, "worker runner, the last completes");
    } finally {
      polling = false;
    }
    const seconds = (performance.now() - start) / 1000;

    await runner.stop();
    runner = undefined;
    await expectCounts(client, "bench", { done: jobs }, "worker runner, after");
    if (calls !== jobs || strange > 0) throw new Error(`worker runner: ${calls} handler calls for ${jobs} jobs, ${strange} of them again or for a job not ours`);
    return { opsPerSec: jobs / seconds, jobs, seconds };
  } finally {
    await runner?.stop();
    await stop();
  }
}
