// The section "peer: BullMQ" of `npm run bench`: our enqueue-many and worker
// runner (./throughput.ts), over HTTP and in-process, against BullMQ doing the
// same on a Redis of our own (./peer/). One Redis for the section, flushed
// before every peer run; a fresh database (and server) for every run of ours. Three rounds, each pair
// interleaved (ours first in rounds 1 and 3, the peer first in round 2, so
// neither always runs on the warmer machine); the median run counts. Without
// redis-server the peer is skipped and says so; no peer number is ever made up.
import { BASELINES, median, results } from "./measure.ts";
import { bullmqEnqueue, bullmqWorker } from "./peer/bullmq.ts";
import { startRedis } from "./peer/redis.ts";
import { enqueueManyRun, type Run, workerRunnerRun } from "./throughput.ts";

const ROUNDS = 3;
const PER_CALL = 1_000;
const CONCURRENCY = 32;

const names = {
  addBulk: "bullmq addBulk",
  worker: `bullmq worker ${CONCURRENCY}`,
  enqueueMany: "enqueue-many",
  enqueueManyInProcess: "enqueue-many in-process",
  runner: `worker runner ${CONCURRENCY}`,
  runnerInProcess: `worker runner ${CONCURRENCY} in-process`,
};

/** Runs the section and adds its results; `jobs` per run. */
export async function versusBullmq(jobs: number): Promise<void> {
  const redis = await startRedis();
  if (redis === null) console.error("  redis-server not found: the BullMQ peer scenarios are skipped; apt-get install redis-server");
  else console.error(`  (redis-server ${redis.version} on 127.0.0.1:${redis.port}, appendonly, appendfsync everysec)`);

  const trials: Record<string, Run[]> = Object.fromEntries(Object.values(names).map((name) => [name, []]));
  const ours = async (name: string, run: () => Promise<Run>) => {
    trials[name]!.push(await run());
  };
  const peer = async (name: string, run: () => Promise<Run>) => {
    if (redis !== null) trials[name]!.push(await run());
  };
  /** The two runs of a pair, ours first or the peer first. */
  const pair = async (oursFirst: boolean, first: () => Promise<void>, second: () => Promise<void>) => {
    if (oursFirst) {
      await first();
      await second();
    } else {
      await second();
      await first();
    }
  };
  try {
    for (let round = 0; round < ROUNDS; round++) {
      const oursFirst = round % 2 === 0;
      await pair(
        oursFirst,
        async () => {
          await ours(names.enqueueMany, () => enqueueManyRun(jobs, PER_CALL, "http"));
          await ours(names.enqueueManyInProcess, () => enqueueManyRun(jobs, PER_CALL, "in-process"));
        },
        () => peer(names.addBulk, () => bullmqEnqueue(redis!, jobs, PER_CALL)),
      );
      await pair(
        oursFirst,
        async () => {
          await ours(names.runner, () => workerRunnerRun(jobs, CONCURRENCY, "http"));
          await ours(names.runnerInProcess, () => workerRunnerRun(jobs, CONCURRENCY, "in-process"));
        },
        () => peer(names.worker, () => bullmqWorker(redis!, jobs, CONCURRENCY)),
      );
    }
  } finally {
    await redis?.stop();
  }

  const count = jobs.toLocaleString("en");
  const redisNote = redis === null ? "" : `; redis-server ${redis.version} of our own, AOF fsynced every second`;
  const add = (name: string, note: string, target?: { of: string; min: number }) => {
    if (trials[name]!.length === 0) return;
    const { opsPerSec } = median(trials[name]!);
    results.push({ name, unit: "jobs/s", opsPerSec, ...(target && { target }), note: `${note}; median of ${trials[name]!.length} runs` });
    if (target) BASELINES[name] = [target.of];
  };
  const perCall = `${PER_CALL.toLocaleString("en")} per call, one call after the other`;
  add(names.enqueueMany, `${count} jobs {n} through LeaseClient over HTTP (auth on), ${perCall}`, { of: names.addBulk, min: 1.0 });
  add(names.enqueueManyInProcess, `${count} jobs {n} through LeaseClient in-process (a store of the bench's process), ${perCall}`, { of: names.addBulk, min: 1.0 });
  add(names.addBulk, `${count} jobs {n} through Queue.addBulk, ${perCall}${redisNote}`);
  add(names.runner, `${count} queued jobs, one runWorker of concurrency ${CONCURRENCY} over HTTP, handler answers at once; until /v1/stats counts all done`, { of: names.worker, min: 1.0 });
  add(names.runnerInProcess, `${count} queued jobs, one runWorker of concurrency ${CONCURRENCY} in-process, handler answers at once; until the stats count all done`, { of: names.worker, min: 1.5 });
  add(names.worker, `${count} queued jobs, one Worker of concurrency ${CONCURRENCY}, processor answers at once; until all completed (kept, BullMQ's defaults)${redisNote}`);
}
