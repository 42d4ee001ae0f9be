// The peer: BullMQ on a Redis of our own (./redis.ts), doing what our
// enqueue-many and worker runner do. One call of a scenario is one run on a
// fresh queue in a flushed Redis, measured once; the caller interleaves the
// runs with ours and takes the median. Each run checks its own work: it throws
// if a job is lost, processed twice, or fails. BullMQ's defaults throughout
// (completed jobs are kept, as we keep done jobs).
import { type ConnectionOptions, type Job, Queue, Worker } from "bullmq";
import { redisCommand } from "./redis.ts";

/** Where the Redis is: the `connection` of every Queue and Worker here (each opens and closes its own). */
export type PeerConnection = { host: string; port: number };

export type PeerRun = { opsPerSec: number; jobs: number; seconds: number };

/** A fresh start: nothing of an earlier run left in Redis. */
async function flush(connection: PeerConnection): Promise<void> {
  const answer = await redisCommand(connection.port, "FLUSHALL");
  if (answer !== "+OK") throw new Error(`FLUSHALL answered ${answer}`);
}

const options = (connection: PeerConnection): { connection: ConnectionOptions } => ({ connection: { host: connection.host, port: connection.port } });

/** Jobs `from`..`from + count - 1`, each named "bench" with the payload `{ n }`. */
const batch = (from: number, count: number) => Array.from({ length: count }, (_, k) => ({ name: "bench", data: { n: from + k } }));

/** Adds `jobs` jobs in addBulk calls of `perCall`, one call after the other. */
async function addAll(queue: Queue, jobs: number, perCall: number): Promise<void> {
  for (let from = 0; from < jobs; from += perCall) {
    const count = Math.min(perCall, jobs - from);
    const added = await queue.addBulk(batch(from, count));
    if (added.length !== count) throw new Error(`bullmq addBulk: ${added.length} of ${count} jobs added`);
  }
}

/** Throws unless the queue's counts are exactly `expected` (every other state 0). */
async function expectCounts(queue: Queue, expected: Record<string, number>, what: string): Promise<void> {
  const counts = await queue.getJobCounts("waiting", "active", "completed", "failed", "delayed", "prioritized", "paused", "waiting-children");
  const wrong = Object.entries(counts).filter(([state, n]) => n !== (expected[state] ?? 0));
  if (wrong.length > 0) throw new Error(`${what}: counts ${JSON.stringify(counts)}, expected ${JSON.stringify(expected)}`);
}

/**
 * `jobs` jobs with the payload `{ n: i }` through `Queue.addBulk`, `perCall`
 * per call, one call after the other: jobs per second over the whole enqueue.
 * One call of `perCall` jobs to another queue warms the connection and Redis's
 * script cache first, outside the clock (our enqueue-many gets the same).
 */
export async function bullmqEnqueue(connection: PeerConnection, jobs = 20_000, perCall = 1_000): Promise<PeerRun> {
  await flush(connection);
  const warm = new Queue("bench-warm-up", options(connection));
  try {
    await addAll(warm, perCall, perCall);
  } finally {
    await warm.close();
  }
  await flush(connection);
  const queue = new Queue("bench-enqueue", options(connection));
  try {
    await queue.waitUntilReady();
    const start = performance.now();
    await addAll(queue, jobs, perCall);
    const seconds = (performance.now() - start) / 1000;
    await expectCounts(queue, { waiting: jobs }, "bullmq addBulk");
    return { opsPerSec: jobs / seconds, jobs, seconds };
  } finally {
    await queue.close();
  }
}

/**
 * `jobs` jobs enqueued first (outside the clock), then ONE Worker with
 * `concurrency` whose processor answers `{ ok: true }` at once. The clock runs
 * from the Worker's construction (it starts at once: `autorun` is on by
 * default) until its `completed` event has fired for every job, which BullMQ
 * emits after the job is moved to completed in Redis. Jobs per second.
 */
export async function bullmqWorker(connection: PeerConnection, jobs = 20_000, concurrency = 32): Promise<PeerRun> {
  await flush(connection);
  const name = "bench-worker";
  const queue = new Queue(name, options(connection));
  let worker: Worker | undefined;
  try {
    await addAll(queue, jobs, 1_000);
    await expectCounts(queue, { waiting: jobs }, "bullmq worker, before");

    const seen = new Uint8Array(jobs); // how often the processor got each payload n
    let calls = 0;
    let twice = 0;
    let completed = 0;
    let finish!: () => void;
    let fail!: (error: Error) => void;
    const allCompleted = new Promise<void>((resolve, reject) => ((finish = resolve), (fail = reject)));
    const processor = async (job: Job<{ n: number }>) => {
      calls++;
      if (seen[job.data.n]!++ > 0) twice++;
      return { ok: true };
    };

    const start = performance.now();
    worker = new Worker(name, processor, { ...options(connection), concurrency });
    worker.on("completed", () => {
      if (++completed === jobs) finish();
    });
    worker.on("failed", (job, error) => fail(new Error(`bullmq worker: job ${job?.id} failed: ${error.message}`)));
    worker.on("error", (error) => fail(new Error(`bullmq worker: ${error.message}`)));
    await withStallCheck(allCompleted, () => completed, "bullmq worker");
    const seconds = (performance.now() - start) / 1000;

    await worker.close();
    worker = undefined;
    await expectCounts(queue, { completed: jobs }, "bullmq worker, after");
    if (calls !== jobs || twice > 0 || seen.some((times) => times !== 1)) {
      throw new Error(`bullmq worker: ${calls} processor calls for ${jobs} jobs, ${twice} of them again for a job already processed`);
    }
    return { opsPerSec: jobs / seconds, jobs, seconds };
  } finally {
    await worker?.close(true);
    await queue.close();
  }
}

/** Waits for `done`; throws if `progress()` stands still for 30 s (a job lost: the count never gets there). */
export async function withStallCheck(done: Promise<void>, progress: () => number, what: string): Promise<void> {
  let last = progress();
  let timer: NodeJS.Timeout | undefined;
  const stalled = new Promise<never>((_, reject) => {
    timer = setInterval(() => {
      const now = progress();
      if (now === last) reject(new Error(`${what}: stuck at ${now} for 30 s; a job was lost`));
      last = now;
    }, 30_000);
  });
  try {
    await Promise.race([done, stalled]);
  } finally {
    clearInterval(timer);
  }
}
