// Claim-next behind jobs it must not take (issue 10, item 3): the same claim →
// complete cycle as the claim-next scenario, on a queue that holds, ahead of
// its due jobs in claim order, jobs under long leases and jobs of a higher
// priority scheduled for later. Its cost must not grow with them: each such
// queue must run at least 1 / 1.5 of the plain queue's cycles per second.
//
// `claimNextAhead(options)` runs the five queues and adds their rows to the
// table of bench/measure.ts (the lead wires it into bench/run.ts).
import { createClient } from "@libsql/client";
import { openStore } from "../src/runtime/node/open.ts";
import { freshDatabase, T } from "./db.ts";
import { BASELINES, median, percentile, results, turn } from "./measure.ts";

const TTL = 60_000;
/** A lease, or a schedule, that outlasts the run by far. */
const FAR = 10 * 365 * 24 * 3_600_000;

/** What to build: how many jobs ahead of each kind, how many due jobs kept queued, how many cycles per trial, how many trials. */
export type ClaimNextAheadOptions = { ahead: number; due: number; cycles: number; trials: number };

/** Quick and full sizes, as bench/run.ts picks them. */
export const CLAIM_NEXT_AHEAD_SIZES: Record<"quick" | "full", ClaimNextAheadOptions> = {
  quick: { ahead: 10_000, due: 1_000, cycles: 1_000, trials: 3 },
  full: { ahead: 100_000, due: 1_000, cycles: 5_000, trials: 5 },
};

/** Jobs ahead: leased, scheduled for later, and of one key at its maxLeasedPerKey (one leased, the rest held back), with the due jobs keyed too. */
type Ahead = { leased: number; scheduled: number; fullKey?: number };

/**
 * A queue "bench" of `due` jobs due at T (priority 0), behind `leased` jobs
 * of priority 0 due before them and held by long leases, and `scheduled` jobs
 * of priority 1 due long after T: every one of them comes before the due jobs
 * in the order (priority DESC, run_at, created_at, id).
 */
async function queueBehind(due: number, ahead: Ahead): Promise<string> {
  const url = await freshDatabase(due);
  const client = createClient({ url });
  try {
    const fill = async (count: number, select: string) => {
      if (count === 0) return;
      await client.execute(`WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < ${count - 1})
        INSERT INTO jobs (id, queue, priority, run_at, owner, until, fence, attempts, created_at, updated_at) ${select}`);
    };
    await fill(ahead.leased, `SELECT 'leased-' || i, 'bench', 0, ${T} - 1, 'holder', ${T + FAR}, 1, 1, ${T} - 1, ${T} - 1 FROM n`);
    await fill(ahead.scheduled, `SELECT 'later-' || i, 'bench', 1, ${T + FAR}, NULL, 0, 0, 0, ${T} - 1, ${T} - 1 FROM n`);
    if (ahead.fullKey !== undefined) {
      // Issue 29, item 4: one key with `fullKey` jobs due before the others, at its limit of one lease; each due job of its own key.
      await client.execute(`INSERT INTO queues (queue, updated_at, max_leased_per_key) VALUES ('bench', 0, 1)`);
      await client.execute(`UPDATE jobs SET key = 'key-' || id WHERE queue = 'bench'`);
      await fill(ahead.fullKey, `SELECT 'full-' || i, 'bench', 0, ${T} - 1, CASE WHEN i = 0 THEN 'holder' END, CASE WHEN i = 0 THEN ${T + FAR} ELSE 0 END,
                                        CASE WHEN i = 0 THEN 1 ELSE 0 END, CASE WHEN i = 0 THEN 1 ELSE 0 END, ${T} - 1, ${T} - 1 FROM n`);
      await client.execute(`UPDATE jobs SET key = 'full', held_back = (id <> 'full-0') WHERE id LIKE 'full-%'`);
    }
  } finally {
    client.close();
  }
  return url;
}

/**
 * claimNextAhead measures claimNext → complete through the store on a plain
 * queue of `due` jobs, and on the same queue behind `ahead` leased jobs,
 * `ahead` scheduled higher-priority jobs, and both; each queue is kept at its
 * depth (a cycle's job is replaced, outside the clock, by one at the tail).
 * Trials of the four are interleaved and the median counts. Adds four rows to
 * `results`, each with its target against the plain queue.
 */
export async function claimNextAhead(options: ClaimNextAheadOptions): Promise<void> {
  const n = options.ahead;
  const shapes: { name: string; ahead: Ahead; note: string }[] = [
    { name: "claim-next plain", ahead: { leased: 0, scheduled: 0 }, note: `${options.due.toLocaleString("en")} due jobs and nothing else` },
    { name: `claim-next behind ${n / 1000}k leased`, ahead: { leased: n, scheduled: 0 }, note: `behind ${n.toLocaleString("en")} jobs of the same priority, due earlier, under long leases` },
    { name: `claim-next behind ${n / 1000}k scheduled`, ahead: { leased: 0, scheduled: n }, note: `behind ${n.toLocaleString("en")} jobs of a higher priority, due long after now` },
    { name: `claim-next behind ${n / 1000}k of each`, ahead: { leased: n, scheduled: n }, note: `behind ${n.toLocaleString("en")} leased and ${n.toLocaleString("en")} scheduled jobs` },
    { name: `claim-next behind a full key of ${n / 1000}k`, ahead: { leased: 0, scheduled: 0, fullKey: n }, note: `behind ${n.toLocaleString("en")} jobs of one key at its maxLeasedPerKey (1), due earlier; the due jobs each of its own key` },
  ];
  const queues = [];
  for (const shape of shapes) {
    const started = performance.now();
    const url = await queueBehind(options.due, shape.ahead);
    console.error(`  (${shape.name}: built in ${((performance.now() - started) / 1000).toFixed(1)} s)`);
    queues.push({ ...shape, store: await openStore({ url, migrations: false }), added: 0, trials: [] as { opsPerSec: number; p50Ms: number; p99Ms: number }[] });
  }
  try {
    for (let trial = 0; trial < options.trials; trial++) {
      for (const queue of queues) {
        const latencies: number[] = [];
        for (let i = 0; i < options.cycles; i++) {
          if (i % 100 === 99) await turn();
          const t = performance.now();
          const [lease] = await queue.store.claimNext("bench", { owner: "w", ttlMs: TTL, now: T });
          if (lease === undefined || !lease.job.id.startsWith("job-")) throw new Error(`${queue.name}: claim-next took ${lease?.job.id ?? "nothing"}, not a due job`);
          await queue.store.complete(lease.job.id, { owner: "w", fence: lease.fence, result: '"r"', now: T });
          latencies.push(performance.now() - t);
          const tail = options.due + queue.added++;
          await queue.store.enqueue(`job-${tail}`, { queue: "bench", runAt: T, now: T + tail, ...(queue.ahead.fullKey !== undefined && { key: `key-job-${tail}` }) });
        }
        const busy = latencies.reduce((sum, ms) => sum + ms, 0) / 1000;
        latencies.sort((a, b) => a - b);
        queue.trials.push({ opsPerSec: latencies.length / busy, p50Ms: percentile(latencies, 0.5), p99Ms: percentile(latencies, 0.99) });
      }
    }
  } finally {
    for (const { store } of queues) store.close();
  }
  const plain = queues[0]!.name;
  for (const queue of queues) {
    if (queue.name !== plain) BASELINES[queue.name] = [plain];
    results.push({
      name: queue.name,
      unit: "cycles/s",
      ...median(queue.trials),
      ...(queue.name !== plain && { target: { of: plain, min: 1 / 1.5 } }),
      note: `${queue.note}; claimNext → complete through the store`,
    });
  }
}
