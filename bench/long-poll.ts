// The section "long poll" of `npm run bench` (issue 11): how soon a job reaches
// a worker that waits for it, and what an idle worker costs.
//   - enqueue → waiting worker: 100 claims wait on the Node server (in its own
//     process) with waitMs; jobs are enqueued one at a time, each once the
//     worker that took the one before has sent its next waiting claim; the time
//     from just before the enqueue is sent to the waiting claim's answer, with
//     the job's lease in it, arriving. Goal: p50 <= 5 ms.
//   - idle runner: ONE runWorker on an empty queue with its defaults (a long
//     poll of 30 s), the requests it sends counted over a window after its
//     start. Goal: <= 2 requests per minute.
import { LeaseClient, runWorker } from "../src/client/index.ts";
import { freshDatabase } from "./db.ts";
import { jsonClient, startServerProcess } from "./http-load.ts";
import { percentile, results, sleep } from "./measure.ts";

const WAITERS = 100;
const WAIT_MS = 30_000;

/** Runs the section and adds its two results: `jobs` enqueued one by one, and an idle window of `idleSeconds`. */
export async function longPoll(jobs: number, idleSeconds: number): Promise<void> {
  await enqueueToWaiter(jobs);
  await idleRunner(idleSeconds);
}

async function enqueueToWaiter(jobs: number): Promise<void> {
  const server = await startServerProcess(await freshDatabase(0));
  const client = jsonClient(server, WAITERS + 2);
  const arrived = new Map<string, (at: number) => void>(); // job id → who waits for its lease to arrive
  const polling = new Set<number>(); // the waiters whose claim is on the server now
  let stop = false;
  let taken = 0;
  const waiter = async (k: number) => {
    while (!stop) {
      polling.add(k);
      const answer = await client.post("/v1/queues/bench/claim", { owner: `w${k}`, ttlMs: 60_000, waitMs: WAIT_MS }).catch((error: unknown) => {
        if (stop) return null; // the server stopped under it
        throw error;
      });
      const at = performance.now();
      polling.delete(k);
      if (answer === null || (stop && answer.status !== 200)) return;
      if (answer.status !== 200) throw new Error(`claim: ${answer.status} ${JSON.stringify(answer.body)}`);
      for (const lease of answer.body.leases as { job: { id: string } }[]) {
        taken++;
        arrived.get(lease.job.id)?.(at);
      }
    }
  };
  const loops = Array.from({ length: WAITERS }, (_, k) => waiter(k));
  try {
    await sleep(500); // every claim on the server, waiting
    const latencies: number[] = [];
    const start = performance.now();
    for (let i = 0; i < jobs; i++) {
      while (polling.size < WAITERS) await sleep(1); // the last worker is waiting again
      const id = `job-${i}`;
      const reached = new Promise<number>((resolve) => arrived.set(id, resolve));
      const sent = performance.now();
      const enqueued = await client.post("/v1/jobs", { id, queue: "bench" });
      if (enqueued.status !== 201) throw new Error(`enqueue ${id}: ${enqueued.status}`);
      latencies.push((await reached) - sent);
      arrived.delete(id);
    }
    const seconds = (performance.now() - start) / 1000;
    if (taken !== jobs) throw new Error(`long poll: ${taken} leases for ${jobs} jobs`);
    latencies.sort((a, b) => a - b);
    const p50Ms = percentile(latencies, 0.5);
    results.push({
      name: `long poll: enqueue → waiting worker (${WAITERS} waiting)`, unit: "jobs/s", opsPerSec: jobs / seconds, p50Ms, p99Ms: percentile(latencies, 0.99),
      note: `${jobs} jobs, one at a time, ${WAITERS} claims waiting (waitMs ${WAIT_MS}); from the enqueue sent to the lease received; goal p50 <= 5 ms: ${p50Ms <= 5 ? "met" : "MISSED"}`,
    });
    stop = true;
  } finally {
    stop = true;
    await server.stop(); // answers every waiting claim at once, so each loop ends
    client.close();
  }
  await Promise.all(loops);
}

async function idleRunner(idleSeconds: number): Promise<void> {
  const server = await startServerProcess(await freshDatabase(0));
  const sent: number[] = [];
  const counting: typeof fetch = (input, init) => {
    sent.push(performance.now());
    return fetch(input, init);
  };
  const client = new LeaseClient({ baseUrl: server.url, token: server.token, fetch: counting });
  const worker = runWorker(client, { queue: "idle", owner: "idle", concurrency: 8, ttlMs: 30_000 }, async () => "never");
  try {
    await sleep(1_000); // its first claim, then the first long poll, are sent
    const from = performance.now();
    await sleep(idleSeconds * 1_000);
    const requests = sent.filter((at) => at > from).length;
    const perMinute = (requests * 60) / idleSeconds;
    results.push({
      name: "long poll: idle worker runner", unit: "requests/min", opsPerSec: perMinute,
      note: `runWorker's defaults (waitMs ${WAIT_MS}) on an empty queue: ${requests} requests in ${idleSeconds} s after its start; goal <= 2 a minute: ${perMinute <= 2 ? "met" : "MISSED"}`,
    });
  } finally {
    await worker.stop();
    await server.stop();
  }
}
