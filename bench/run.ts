// `npm run bench`: what a lease costs, measured against the floor. Prints a
// table and writes bench/results.json. Every ratio compares two scenarios of
// this same run, so it holds on a noisy machine; raw, raw+read and store are
// interleaved, trial by trial, and the median trial counts. The last section,
// "peer: BullMQ" (bench/versus-bullmq.ts), sets our enqueue-many and worker
// runner against BullMQ on a redis-server that the bench starts itself; it is
// skipped, and says so, where redis-server is not installed.
//   npm run bench              the full run (a few minutes: it builds a 1,000,000-job database)
//   npm run bench -- --quick   everything small, in well under a minute
//   npm run bench -- --only search   the sections whose name holds "search"
import { availableParallelism, cpus } from "node:os";
import { parseArgs } from "node:util";
import type { Client, InStatement } from "@libsql/client";
import { openStore } from "../src/runtime/node/open.ts";
import * as claimSql from "../src/store/sql/claim-next.ts";
import * as sql from "../src/store/sql/lease.ts";
import { cachedStatements, freshDatabase, rawClient, T } from "./db.ts";
import { jsonClient, startServerProcess } from "./http-load.ts";
import { BASELINES, label, median, percentile, report, results, sleep, timed, turn } from "./measure.ts";
import { longPoll } from "./long-poll.ts";
import { CLAIM_NEXT_AHEAD_SIZES, claimNextAhead } from "./claim-next-ahead.ts";
import { searchPages } from "./search.ts";
import { versusBullmq } from "./versus-bullmq.ts";

const { values: flags } = parseArgs({ options: { quick: { type: "boolean" }, only: { type: "string" } } });
const quick = flags.quick === true;
const size = {
  trials: quick ? 3 : 5,
  cycles: quick ? 2_000 : 20_000, // per trial of raw, raw+read and store
  httpSeconds: quick ? 2 : 8,
  httpConnections: 32,
  queued: quick ? [1_000, 10_000, 100_000] : [1_000, 100_000, 1_000_000],
  claimNextCycles: quick ? 1_000 : 5_000,
  contentionRounds: quick ? 40 : 300,
  claimers: 64,
  peerJobs: quick ? 5_000 : 20_000, // per run of enqueue-many, worker runner and their BullMQ peers
  longPollJobs: quick ? 100 : 500, // enqueued one at a time to 100 waiting claims
  idleSeconds: quick ? 30 : 60, // an idle worker runner's requests counted over this window
};
const TTL = 60_000;
/** The clock id the raw statements write, as a store writes its own (src/store/step-back.ts). */
const BENCH_CLOCK = "bench-clock";

const statements = (built: InStatement | InStatement[]): InStatement[] => [built].flat();

/** A verb's statements as the store sends them: one alone, several as one write batch. */
function send(client: Client, verb: InStatement[]) {
  return verb.length === 1 ? client.execute(verb[0]!) : client.batch(verb, "write");
}

async function expectDone(client: Client, from: number, n: number, what: string): Promise<void> {
  const [row] = (await client.execute({ sql: "SELECT count(*) AS n FROM jobs WHERE done = 1 AND CAST(substr(id, 5) AS INTEGER) BETWEEN ?1 AND ?2", args: [from, from + n - 1] })).rows;
  if (Number(row!.n) !== n) throw new Error(`${what}: ${row!.n} of ${n} jobs done; a cycle did not do what it should`);
}

// ---- raw, raw+read, store -------------------------------------------------------

async function rawStoreScenarios(): Promise<void> {
  const n = size.cycles;
  const url = await freshDatabase(n * size.trials * 4);
  const client = await rawClient(url);
  const store = await openStore({ url, migrations: false });
  const cached = await cachedStatements(url);
  let next = 0;
  const trials: Record<string, ReturnType<typeof timed> extends Promise<infer R> ? R[] : never> = { raw: [], "raw+read": [], store: [], "raw, cached statements": [] };
  try {
    for (let trial = 0; trial < size.trials; trial++) {
      // raw: the claim and complete statements of src/store/sql/lease.ts, built before the clock starts.
      let from = next;
      next += n;
      const claims = Array.from({ length: n }, (_, i) => statements(claimSql.claim(`job-${from + i}`, "w", T, TTL, BENCH_CLOCK)));
      const completes = Array.from({ length: n }, (_, i) => statements(sql.complete(`job-${from + i}`, "w", 1, T, '"r"')));
      trials.raw!.push(await timed(n, async (i) => {
        await send(client, claims[i]!);
        await send(client, completes[i]!);
      }));
      await expectDone(client, from, n, "raw");

      // raw+read: the same, each with a read of the job in the same batch: what reading the job after every write would cost (LeaseStore reads it only after a write that changed nothing).
      from = next;
      next += n;
      const readClaims = Array.from({ length: n }, (_, i) => [...statements(claimSql.claim(`job-${from + i}`, "w", T, TTL, BENCH_CLOCK)), sql.state(`job-${from + i}`, T)]);
      const readCompletes = Array.from({ length: n }, (_, i) => [...statements(sql.complete(`job-${from + i}`, "w", 1, T, '"r"')), sql.state(`job-${from + i}`, T)]);
      trials["raw+read"]!.push(await timed(n, async (i) => {
        await client.batch(readClaims[i]!, "write");
        await client.batch(readCompletes[i]!, "write");
      }));
      await expectDone(client, from, n, "raw+read");

      // store: claim → complete through LeaseStore.
      from = next;
      next += n;
      trials.store!.push(await timed(n, async (i) => {
        const { fence } = await store.claim(`job-${from + i}`, { owner: "w", ttlMs: TTL, now: T });
        await store.complete(`job-${from + i}`, { owner: "w", fence, result: '"r"', now: T });
      }));
      await expectDone(client, from, n, "store");

      // raw, cached statements: raw's statements, each prepared once, on libsql's Database.
      from = next;
      next += n;
      const cachedClaims = Array.from({ length: n }, (_, i) => statements(claimSql.claim(`job-${from + i}`, "w", T, TTL, BENCH_CLOCK)) as { sql: string; args: unknown[] }[]);
      const cachedCompletes = Array.from({ length: n }, (_, i) => statements(sql.complete(`job-${from + i}`, "w", 1, T, '"r"')) as { sql: string; args: unknown[] }[]);
      trials["raw, cached statements"]!.push(await timed(n, async (i) => {
        cached.batch(cachedClaims[i]!);
        cached.batch(cachedCompletes[i]!);
      }));
      await expectDone(client, from, n, "raw, cached statements");
    }
  } finally {
    cached.close();
    store.close();
    client.close();
  }
  const raw = median(trials.raw!);
  results.push({ name: "raw", unit: "cycles/s", ...raw, note: "claim + complete statements of src/store/sql/lease.ts, bare @libsql/client" });
  results.push({ name: "raw+read", unit: "cycles/s", ...median(trials["raw+read"]!), note: "the same, each in one batch with a read of the job, which LeaseStore sends only after a refusal" });
  results.push({ name: "store", unit: "cycles/s", ...median(trials.store!), target: { of: "raw, cached statements", min: 0.8 }, note: "claim → complete through LeaseStore" });
  results.push({ name: "raw, cached statements", unit: "cycles/s", ...median(trials["raw, cached statements"]!), note: "raw's statements prepared once, on the libsql Database under @libsql/client: the floor of the store's file driver" });
  BASELINES["raw+read"] = ["raw"];
  BASELINES["raw, cached statements"] = ["raw"];
  BASELINES.store = ["raw", "raw, cached statements"];
}

// ---- http ----------------------------------------------------------------------------

async function httpScenario(name: string, serverEnv: Record<string, string> = {}): Promise<void> {
  const url = await freshDatabase(quick ? 100_000 : 400_000);
  const server = await startServerProcess(url, serverEnv);
  const client = jsonClient(server, size.httpConnections);
  let next = 0;
  const latencies: number[] = [];
  let counting = false;
  let cycles = 0;
  let stop = false;
  const loop = async (k: number) => {
    const owner = `c${k}`;
    while (!stop) {
      const id = `job-${next++}`;
      const t = performance.now();
      const claimed = await client.post(`/v1/jobs/${id}/claim`, { owner, ttlMs: TTL });
      if (claimed.status !== 200) throw new Error(`claim ${id}: ${claimed.status} ${JSON.stringify(claimed.body)}`);
      const completed = await client.post(`/v1/jobs/${id}/complete`, { owner, fence: claimed.body.fence, result: "r" });
      if (completed.status !== 200) throw new Error(`complete ${id}: ${completed.status} ${JSON.stringify(completed.body)}`);
      if (counting) {
        cycles++;
        latencies.push(performance.now() - t);
      }
    }
  };
  try {
    const loops = Array.from({ length: size.httpConnections }, (_, k) => loop(k));
    await sleep(quick ? 300 : 1000); // warm-up: connections open, code optimized
    counting = true;
    const start = performance.now();
    await sleep(size.httpSeconds * 1000);
    counting = false;
    const seconds = (performance.now() - start) / 1000;
    stop = true;
    await Promise.all(loops);
    latencies.sort((a, b) => a - b);
    results.push({
      name, unit: "cycles/s", opsPerSec: cycles / seconds, p50Ms: percentile(latencies, 0.5), p99Ms: percentile(latencies, 0.99),
      target: { of: "raw", min: 0.5 }, note: `${size.httpConnections} connections, claim by id → complete; latency of the cycle`,
    });
    BASELINES[name] = ["raw", "raw+read"];
  } finally {
    client.close();
    await server.stop();
  }
}

// ---- claim-next -----------------------------------------------------------------------

async function claimNextScenario(): Promise<void> {
  const stores = [];
  for (const queued of size.queued) {
    const started = performance.now();
    const url = await freshDatabase(queued);
    console.error(`  (a database of ${queued.toLocaleString("en")} queued jobs in ${((performance.now() - started) / 1000).toFixed(1)} s)`);
    stores.push({ queued, added: 0, store: await openStore({ url, migrations: false }), trials: [] as Awaited<ReturnType<typeof timed>>[] });
  }
  try {
    for (let round = 0; round < 3; round++) {
      for (const entry of stores) {
        // Each cycle's job is replaced, outside the clock, by one at the tail of the queue, so the depth stays put.
        const latencies: number[] = [];
        for (let i = 0; i < size.claimNextCycles; i++) {
          if (i % 100 === 99) await turn();
          const t = performance.now();
          const [lease] = await entry.store.claimNext("bench", { owner: "w", ttlMs: TTL, now: T });
          await entry.store.complete(lease!.job.id, { owner: "w", fence: lease!.fence, result: '"r"', now: T });
          latencies.push(performance.now() - t);
          const tail = entry.queued + entry.added++;
          await entry.store.enqueue(`job-${tail}`, { queue: "bench", runAt: T, now: T + tail });
        }
        const busy = latencies.reduce((sum, ms) => sum + ms, 0) / 1000;
        latencies.sort((a, b) => a - b);
        entry.trials.push({ opsPerSec: latencies.length / busy, p50Ms: percentile(latencies, 0.5), p99Ms: percentile(latencies, 0.99) });
      }
    }
  } finally {
    for (const { store } of stores) store.close();
  }
  const first = `claim-next ${label(size.queued[0]!)}`;
  for (const { queued, trials } of stores) {
    const name = `claim-next ${label(queued)}`;
    const last = queued === size.queued.at(-1);
    if (name !== first) BASELINES[name] = [first];
    results.push({ name, unit: "cycles/s", ...median(trials), ...(last && { target: { of: first, min: 0.8 } }), note: `${queued.toLocaleString("en")} queued jobs, kept at that depth; claimNext → complete through the store` });
  }
}

// ---- contention ----------------------------------------------------------------------

async function contentionScenario(name: string, serverEnv: Record<string, string> = {}): Promise<void> {
  const server = await startServerProcess(await freshDatabase(0), serverEnv);
  const client = jsonClient(server, size.claimers);
  try {
    const round = async (r: number) => {
      const enqueued = await client.post("/v1/jobs", { id: `round-${r}` });
      if (enqueued.status !== 201) throw new Error(`enqueue round-${r}: ${enqueued.status}`);
      const answers = await Promise.all(Array.from({ length: size.claimers }, (_, k) => client.post(`/v1/jobs/round-${r}/claim`, { owner: `c${k}`, ttlMs: TTL })));
      const winners = answers.filter((answer) => answer.status === 200).length;
      const refused = answers.filter((answer) => answer.status === 409).length;
      if (winners !== 1 || refused !== size.claimers - 1) throw new Error(`round ${r}: ${winners} winners, ${refused} refused of ${size.claimers}`);
    };
    for (let r = 0; r < 10; r++) await round(-1 - r); // warm-up
    const result = await timed(size.contentionRounds, round);
    results.push({ name, unit: "rounds/s", ...result, note: `${size.claimers} concurrent HTTP claims of one fresh job per round (after its enqueue): exactly one winner in each of ${size.contentionRounds} rounds` });
  } finally {
    client.close();
    await server.stop();
  }
}

// ---- the run ---------------------------------------------------------------------------

const machine = { cores: availableParallelism(), cpu: cpus()[0]?.model ?? "unknown", node: process.version };
const started = performance.now();
console.error(`fencelease bench${quick ? " --quick" : ""}: ${machine.cores} cores (${machine.cpu}), Node ${machine.node}`);
for (const [what, scenario] of [
  ["raw, raw+read, store", rawStoreScenarios],
  ["http", () => httpScenario("http")],
  ["http, without group commit", () => httpScenario("http without group-commit", { GROUP_COMMIT: "0" })],
  ["claim-next", claimNextScenario],
  ["claim-next behind leased and scheduled jobs", () => claimNextAhead(CLAIM_NEXT_AHEAD_SIZES[quick ? "quick" : "full"])],
  ["contention", () => contentionScenario(`contention ${size.claimers}`)],
  ["contention, without group commit", () => contentionScenario(`contention ${size.claimers} without group-commit`, { GROUP_COMMIT: "0" })],
  ["long poll", () => longPoll(size.longPollJobs, size.idleSeconds)],
  ["search", () => searchPages(size.queued.at(-1)!, quick ? 100 : 500)],
  ["peer: BullMQ", () => versusBullmq(size.peerJobs)],
] as const) {
  if (flags.only !== undefined && !what.includes(flags.only)) continue; // --only peer: the sections whose name holds "peer"
  console.error(`- ${what}`);
  await scenario();
}

report(machine, quick, (performance.now() - started) / 1000);
process.exit(0);
