import { runDurableObjectAlarm, SELF } from "cloudflare:test";
import { afterAll, beforeAll, describe, expect, test, vi } from "vitest";
import costPage from "../../../docs/cost.md?raw";
import { queueObject } from "../storage-mode.ts";
import { type Billed, billedBetween, meters } from "./meters.ts";
import { BATCH, COST_VERBS, DEDUP_VERBS, expectKeyedLives, KEYED_VERBS, LONG_POLL } from "../cost-verbs.ts";

// What each verb costs in objects mode (docs/cost.md, "In objects mode"): the
// requests the objects bill (the queue's object, the directory shards, the
// registry: API requests, RPC calls, alarms) and the rows they write (an
// alarm set counted as one), summed over the verb's HTTP call through the
// Worker, as test/worker/cost.test.ts sums D1's. The same calls as there, the
// cron's purge and expiry done by the queue's alarm. Counts are exact, so the
// table is asserted, its D1 column read from the D1 table above it.

const T = Date.UTC(2031, 0, 1); // ahead of the real clock: no alarm rings but when the test rings it
const DAY = 24 * 60 * 60 * 1000;
const TTL = 30_000;
const TOKEN = "worker-test-token"; // FENCELEASE_TOKENS in vitest.config.ts
const PAYLOAD = { order: "o".repeat(48) };
const RESULT = { receipt: "r".repeat(36) };
const KEYED_QUEUES = ["keyed", "keyed-many", "held", "rated", "rated-many"];
const DEDUP_QUEUES = ["once", "once-purged"];
const QUEUES = ["single", "many", "loop", "ends", "polled", ...KEYED_QUEUES, ...DEDUP_QUEUES];

async function call(method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
  const response = await SELF.fetch(`https://fencelease.test${path}`, {
    method,
    headers: { Authorization: `Bearer ${TOKEN}`, "Content-Type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: response.status, body: await response.json().catch(() => null) };
}

function expectStatus(answer: { status: number; body: unknown }, status: number) {
  expect(answer.status, JSON.stringify(answer.body)).toBe(status);
}

const measured = new Map<string, Billed>();
/** The lines of the keys table in objects mode. */
const keyedMeasured = new Map<string, Billed>();

/** Runs one call (or a ring of an alarm) and keeps what every object billed for it under `verb` (in `into`). */
async function measure<R>(verb: string, run: () => Promise<R>, into = measured): Promise<R> {
  const before = await meters(QUEUES);
  const answer = await run();
  into.set(verb, billedBetween(before, await meters(QUEUES)));
  return answer;
}

/** measure, for a line of the keys table. */
const measureKeyed = <R>(verb: string, run: () => Promise<R>) => measure(verb, run, keyedMeasured);

/** Enqueues `jobs` of `queue` with their keys, in one call: not measured. */
async function enqueueKeyed(queue: string, jobs: { id: string; key: string }[]): Promise<void> {
  expectStatus(await call("POST", `/v1/queues/${queue}/jobs`, { jobs: jobs.map((job) => ({ ...job, payload: PAYLOAD })) }), 200);
}

/** Sets `queue`'s limits: not measured. */
async function setLimits(queue: string, limits: Record<string, unknown>): Promise<void> {
  expectStatus(await call("PUT", `/v1/queues/${queue}`, limits), 200);
}

/** The ids of `n` jobs, `prefix`-000 on. */
const idsOf = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}-${String(i).padStart(3, "0")}`);

/** The keys table's calls, as test/worker/cost.test.ts makes them. */
async function measureKeyedLives(): Promise<void> {
  vi.setSystemTime(T);
  await inUse("keyed");
  await setLimits("keyed", { maxLeasedPerKey: 2 });
  expectStatus(await measureKeyed("enqueue, keyed", () => call("POST", "/v1/jobs", { id: "k-one", queue: "keyed", key: "tenant-1", payload: PAYLOAD })), 201);
  const one = await measureKeyed("claim-next, keyed", () => call("POST", "/v1/queues/keyed/claim", { owner: "A", ttlMs: TTL }));
  expect(one.body.leases).toMatchObject([{ job: { id: "k-one" } }]);
  vi.setSystemTime(T + 1_000);
  expectStatus(await measureKeyed("complete, keyed", () => call("POST", "/v1/jobs/k-one/complete", { owner: "A", fence: one.body.leases[0].fence, result: RESULT })), 200);
  await measureKeyed("purge (cron, one keyed job)", () => alarm("keyed", T + 8 * DAY));

  vi.setSystemTime(T);
  await inUse("keyed-many");
  await setLimits("keyed-many", { maxLeasedPerKey: 10 });
  await measureKeyed(`enqueueMany of ${BATCH} over 10 keys`, () => enqueueKeyed("keyed-many", idsOf("km", BATCH).map((id, i) => ({ id, key: `tenant-${i % 10}` }))));
  const claimed = (await measureKeyed(`claim-next of ${BATCH}, keyed`, () => call("POST", "/v1/queues/keyed-many/claim", { owner: "W", ttlMs: TTL, limit: BATCH }))).body.leases as { fence: number; job: { id: string } }[];
  expect(claimed).toHaveLength(BATCH);
  vi.setSystemTime(T + 2_000);
  const completed = await measureKeyed(`completeMany of ${BATCH}, keyed, with next (none left)`, () =>
    call("POST", "/v1/leases/complete", { owner: "W", leases: claimed.map((c) => ({ id: c.job.id, fence: c.fence, result: RESULT })), next: { queue: "keyed-many", limit: BATCH, ttlMs: TTL } }));
  expect(completed.body.leases).toHaveLength(0);
  await measureKeyed(`purge (cron, ${BATCH} keyed jobs)`, () => alarm("keyed-many", T + 8 * DAY));

  vi.setSystemTime(T);
  await inUse("held");
  await setLimits("held", { maxLeasedPerKey: 1 });
  await enqueueKeyed("held", [{ id: "h-first", key: "tenant-1" }]);
  const first = await call("POST", "/v1/jobs/h-first/claim", { owner: "A", ttlMs: TTL });
  expectStatus(first, 200);
  expectStatus(await measureKeyed("enqueue, held back (its key full)", () => call("POST", "/v1/jobs", { id: "h-second", queue: "held", key: "tenant-1", payload: PAYLOAD })), 201);
  vi.setSystemTime(T + 1_000);
  expectStatus(await measureKeyed("complete, letting in the next of its key", () => call("POST", "/v1/jobs/h-first/complete", { owner: "A", fence: first.body.fence, result: RESULT })), 200);
  const letIn = await measureKeyed("claim-next of the job let in", () => call("POST", "/v1/queues/held/claim", { owner: "A", ttlMs: TTL }));
  expect(letIn.body.leases).toMatchObject([{ job: { id: "h-second" } }]);

  vi.setSystemTime(T);
  await inUse("rated");
  await setLimits("rated", { keyRatePerSecond: 10 });
  await enqueueKeyed("rated", idsOf("r", 2).map((id) => ({ id, key: "tenant-1" })));
  const firstClaim = await measureKeyed("claim-next, keyed, with keyRatePerSecond (its key's first claim)", () => call("POST", "/v1/queues/rated/claim", { owner: "A", ttlMs: TTL }));
  expect(firstClaim.body.leases).toMatchObject([{ job: { id: "r-000" } }]);
  vi.setSystemTime(T + 1_000);
  const later = await measureKeyed("claim-next, keyed, with keyRatePerSecond (a later claim)", () => call("POST", "/v1/queues/rated/claim", { owner: "A", ttlMs: TTL }));
  expect(later.body.leases).toMatchObject([{ job: { id: "r-001" } }]);

  vi.setSystemTime(T);
  await inUse("rated-many");
  await setLimits("rated-many", { keyRatePerSecond: 10 });
  await enqueueKeyed("rated-many", idsOf("rm", BATCH).map((id, i) => ({ id, key: `tenant-${i % 10}` })));
  const rated = await measureKeyed(`claim-next of ${BATCH} over 10 keys, with keyRatePerSecond`, () => call("POST", "/v1/queues/rated-many/claim", { owner: "W", ttlMs: TTL, limit: BATCH }));
  expect(rated.body.leases).toHaveLength(BATCH);
}

/** The lines of the once-per-key table in objects mode. */
const dedupMeasured = new Map<string, Billed>();

/** The once-per-key table's calls, as test/worker/cost.test.ts makes them. */
async function measureDedupKeys(): Promise<void> {
  const measureDedup = <R>(verb: string, run: () => Promise<R>) => measure(verb, run, dedupMeasured);
  vi.setSystemTime(T);
  await inUse("once");
  const window = { queue: "once", dedupKey: "order-7", dedupTtlMs: DAY, payload: PAYLOAD };
  expectStatus(await measureDedup("enqueue with a dedup window", () => call("POST", "/v1/jobs", { id: "d-one", ...window })), 201);
  expect(await measureDedup("enqueue, deduplicated (its window lasts)", () => call("POST", "/v1/jobs", { id: "d-two", ...window }))).toMatchObject({ status: 200, body: { deduplicated: true } });
  const jobs = idsOf("dm", BATCH).map((id) => ({ id, dedupKey: id, dedupTtlMs: DAY, payload: PAYLOAD }));
  expectStatus(await measureDedup(`enqueueMany of ${BATCH} with dedup windows`, () => call("POST", "/v1/queues/once/jobs", { jobs })), 200);
  const debounce = { queue: "once", dedupKey: "doc-9", debounceMs: 1_000, payload: PAYLOAD };
  expectStatus(await measureDedup("enqueue with a debounce", () => call("POST", "/v1/jobs", { id: "b-one", ...debounce })), 201);
  vi.setSystemTime(T + 500);
  expect(await measureDedup("enqueue, debounced (moves the waiting job)", () => call("POST", "/v1/jobs", { id: "b-two", ...debounce }))).toMatchObject({ status: 200, body: { debounced: true } });
  const supersede = { queue: "once", dedupKey: "sync-3", supersede: true, payload: PAYLOAD };
  expectStatus(await measureDedup("enqueue with supersede (the key free)", () => call("POST", "/v1/jobs", { id: "s-one", ...supersede })), 201);
  expectStatus(await call("POST", "/v1/jobs/s-one/claim", { owner: "A", ttlMs: TTL }), 200);
  expect(await measureDedup("enqueue with supersede (cancels the held job)", () => call("POST", "/v1/jobs", { id: "s-two", ...supersede }))).toMatchObject({ status: 201, body: { superseded: "s-one" } });

  vi.setSystemTime(T);
  await inUse("once-purged");
  expectStatus(await call("POST", "/v1/jobs", { id: "p-one", queue: "once-purged", dedupKey: "k", dedupTtlMs: DAY, payload: PAYLOAD }), 201);
  const held = await call("POST", "/v1/jobs/p-one/claim", { owner: "A", ttlMs: TTL });
  expectStatus(await call("POST", "/v1/jobs/p-one/complete", { owner: "A", fence: held.body.fence, result: RESULT }), 200);
  await measureDedup("purge (cron, one job and its ended window)", () => alarm("once-purged", T + 8 * DAY));
}

/** The queue's alarm at `now`, as the runtime rings it: what the cron does in D1 mode. */
async function alarm(queue: string, now: number): Promise<void> {
  vi.setSystemTime(now);
  expect(await runDurableObjectAlarm(queueObject(queue))).toBe(true);
}

/** A queue in use, as the D1 cost test has it: a job due next year and a refusal this minute (its object listed, its counts' rows there). */
async function inUse(queue: string): Promise<void> {
  const id = `${queue}-resident`;
  expectStatus(await call("POST", "/v1/jobs", { id, queue, payload: PAYLOAD, delayMs: 365 * DAY }), 201);
  expectStatus(await call("POST", `/v1/jobs/${id}/complete`, { owner: "Z", fence: 1, result: RESULT }), 409);
}

beforeAll(async () => {
  vi.useFakeTimers({ toFake: ["Date"] });
  // A job's life on single calls.
  vi.setSystemTime(T);
  await inUse("single");
  expectStatus(await measure("enqueue", () => call("POST", "/v1/jobs", { id: "one", queue: "single", payload: PAYLOAD })), 201);
  const [lease] = (await measure("claim-next", () => call("POST", "/v1/queues/single/claim", { owner: "A", ttlMs: TTL }))).body.leases;
  expect(lease).toMatchObject({ fence: 1, job: { id: "one" } });
  vi.setSystemTime(T + 1_000);
  expectStatus(await measure("complete", () => call("POST", "/v1/jobs/one/complete", { owner: "A", fence: 1, result: RESULT })), 200);
  expectStatus(await measure("events (read)", () => call("GET", "/v1/jobs/one/events")), 200);
  expectStatus(await measure("stats (read)", () => call("GET", "/v1/stats")), 200); // one queue listed yet
  await measure("purge (cron, one job)", () => alarm("single", T + 8 * DAY));

  // A job's life in batches.
  vi.setSystemTime(T);
  await inUse("many");
  const jobs = Array.from({ length: BATCH }, (_, i) => ({ id: `many-${String(i).padStart(3, "0")}`, payload: PAYLOAD }));
  expectStatus(await measure(`enqueueMany of ${BATCH}`, () => call("POST", "/v1/queues/many/jobs", { jobs })), 200);
  const claimed = (await measure(`claim-next of ${BATCH}`, () => call("POST", "/v1/queues/many/claim", { owner: "W", ttlMs: TTL, limit: BATCH }))).body.leases as { fence: number; job: { id: string } }[];
  expect(claimed).toHaveLength(BATCH);
  const held = claimed.map((claim) => ({ id: claim.job.id, fence: claim.fence }));
  vi.setSystemTime(T + 1_000);
  expectStatus(await measure(`renewMany of ${BATCH}`, () => call("POST", "/v1/leases/renew", { owner: "W", ttlMs: TTL, leases: held })), 200);
  vi.setSystemTime(T + 2_000);
  const completed = await measure(`completeMany of ${BATCH} with next (none left)`, () =>
    call("POST", "/v1/leases/complete", { owner: "W", leases: held.map((h) => ({ ...h, result: RESULT })), next: { queue: "many", limit: BATCH, ttlMs: TTL } }));
  expect(completed.body.leases).toHaveLength(0);
  await measure(`purge (cron, ${BATCH} jobs)`, () => alarm("many", T + 8 * DAY));

  // The runner's steady state.
  vi.setSystemTime(T);
  await inUse("loop");
  const twice = Array.from({ length: 2 * BATCH }, (_, i) => ({ id: `loop-${String(i).padStart(3, "0")}`, payload: PAYLOAD }));
  expectStatus(await call("POST", "/v1/queues/loop/jobs", { jobs: twice }), 200);
  const first = (await call("POST", "/v1/queues/loop/claim", { owner: "W", ttlMs: TTL, limit: BATCH })).body.leases as { fence: number; job: { id: string } }[];
  const handedOn = await measure(`completeMany of ${BATCH} with next (takes ${BATCH})`, () =>
    call("POST", "/v1/leases/complete", { owner: "W", leases: first.map((f) => ({ id: f.job.id, fence: f.fence, result: RESULT })), next: { queue: "loop", limit: BATCH, ttlMs: TTL } }));
  expect(handedOn.body.leases).toHaveLength(BATCH);

  // Claim by id, and the other ends of a lease.
  vi.setSystemTime(T);
  await inUse("ends");
  for (const id of ["by-id", "failing", "released", "cancelled", "expiring"]) expectStatus(await call("POST", "/v1/jobs", { id, queue: "ends", payload: PAYLOAD }), 201);
  // Fences start at each id's floor: its queue's, raised to its directory shard's by the purges above (a fence never repeats for an id).
  const byId = await measure("claim (by id)", () => call("POST", "/v1/jobs/by-id/claim", { owner: "A", ttlMs: TTL }));
  expectStatus(byId, 200);
  const fence = byId.body.fence as number;
  vi.setSystemTime(T + 1_000);
  expectStatus(await measure("renew", () => call("POST", "/v1/jobs/by-id/renew", { owner: "A", fence, ttlMs: TTL })), 200);
  expectStatus(await measure("renew, again in the same lease", () => call("POST", "/v1/jobs/by-id/renew", { owner: "A", fence, ttlMs: TTL })), 200);
  expectStatus(await measure("refused stale write", () => call("POST", "/v1/jobs/by-id/complete", { owner: "Z", fence, result: RESULT })), 409);
  expectStatus(await measure("refused stale write, repeated", () => call("POST", "/v1/jobs/by-id/complete", { owner: "Z", fence, result: RESULT })), 409);
  vi.setSystemTime(T);
  const fences = new Map<string, number>();
  for (const id of ["failing", "released", "expiring"]) {
    const claimed = await call("POST", `/v1/jobs/${id}/claim`, { owner: "A", ttlMs: id === "expiring" ? 1_000 : TTL });
    expectStatus(claimed, 200);
    fences.set(id, claimed.body.fence);
  }
  expectStatus(await measure("fail (retried later)", () => call("POST", "/v1/jobs/failing/fail", { owner: "A", fence: fences.get("failing"), error: "boom" })), 200);
  expectStatus(await measure("release", () => call("POST", "/v1/jobs/released/release", { owner: "A", fence: fences.get("released") })), 200);
  expectStatus(await measure("cancel (queued)", () => call("POST", "/v1/jobs/cancelled/cancel", { reason: "not needed" })), 200);
  await measure("expiry (cron, one lease)", () => alarm("ends", T + 2_000)); // by-id's lease runs on
  expect((await call("GET", "/v1/jobs/expiring")).body).toMatchObject({ owner: null, fence: fences.get("expiring"), status: "queued" });

  await measureKeyedLives();
  await measureDedupKeys();
}, 180_000);

afterAll(() => vi.useRealTimers());

/** The lines of the objects table in docs/cost.md, in its order: the D1 table's, less the long poll (whose wake is another call's write here). */
const VERBS = COST_VERBS.filter((verb) => verb !== LONG_POLL);

/** A verb's rows written on D1, from the D1 table of docs/cost.md (test/worker/cost.test.ts keeps that one true). */
function d1Written(verb: string): number {
  const line = costPage.split("\n").find((text) => text.startsWith(`| ${verb} | `) && text.split("|").length === 6);
  expect(line, `the D1 line of ${verb}`).toBeDefined();
  return Number(line!.split("|")[4]!.trim());
}

function objectsTable(verbs: readonly string[] = VERBS, from = measured): string {
  expect([...from.keys()].sort()).toEqual([...verbs].sort());
  const lines = ["| verb | requests to objects | rows written, objects mode | rows written, D1 mode |", "|---|---:|---:|---:|"];
  for (const verb of verbs) {
    const { requests, rowsWritten } = from.get(verb)!;
    lines.push(`| ${verb} | ${requests} | ${rowsWritten} | ${d1Written(verb)} |`);
  }
  return lines.join("\n");
}

/** A job's life, `perJob` its verbs' sum per job, in rows written (D1, objects), requests to objects, and dollars a million jobs. */
function life(verbs: string[], perJob: number) {
  const sum = (of: (verb: string) => number) => verbs.reduce((total, verb) => total + of(verb), 0) / perJob;
  const rows = { d1: sum(d1Written), objects: sum((verb) => measured.get(verb)!.rowsWritten) };
  const requests = sum((verb) => measured.get(verb)!.requests);
  // $1.00 a million rows written (D1, and SQLite-backed objects); $0.15 a million requests to objects.
  const dollars = { d1: rows.d1 * 1.0, objects: rows.objects * 1.0 + requests * 0.15 };
  return { rows, requests, dollars };
}

describe("what a job costs in objects mode", () => {
  test("each verb bills the requests and writes the rows of its line in docs/cost.md", () => {
    console.log(objectsTable());
    expect(costPage).toContain(objectsTable());
  });

  test("a job's life, single calls and by the hundred, in rows, requests and dollars a million jobs, as docs/cost.md says", () => {
    const single = life(["enqueue", "claim-next", "complete", "purge (cron, one job)"], 1);
    const batched = life([`enqueueMany of ${BATCH}`, `claim-next of ${BATCH}`, `completeMany of ${BATCH} with next (none left)`, `purge (cron, ${BATCH} jobs)`], BATCH);
    const line = (what: string, of: ReturnType<typeof life>) =>
      `| ${what} | ${of.rows.d1} | ${of.rows.objects} | ${of.requests} | $${of.dollars.d1.toFixed(2)} | $${of.dollars.objects.toFixed(2)} |`;
    console.log([line("single calls", single), line(`batched: ${BATCH} a call`, batched)].join("\n"));
    expect(costPage).toContain(line("single calls", single));
    expect(costPage).toContain(line(`batched: ${BATCH} a call`, batched));
  });
});

describe("what once per key costs in objects mode", () => {
  test("each enqueue with a dedup key bills the requests and writes the rows of its line in docs/cost.md", () => {
    console.log(objectsTable(DEDUP_VERBS, dedupMeasured));
    expect(costPage).toContain(objectsTable(DEDUP_VERBS, dedupMeasured));
  });
});

describe("what a keyed job costs in objects mode", () => {
  test("each keyed verb bills the requests and writes the rows of its line in docs/cost.md", () => {
    console.log(objectsTable(KEYED_VERBS, keyedMeasured));
    expect(costPage).toContain(objectsTable(KEYED_VERBS, keyedMeasured));
  });

  test("a keyed job's life writes at most 2 rows more than an unkeyed one's in objects mode, single and batched, held back or with a key rate, as docs/cost.md says", () => {
    expectKeyedLives((verb) => (measured.get(verb) ?? keyedMeasured.get(verb))!.rowsWritten, costPage);
  });

  test("a keyed job's claim, completion and purge bill in objects mode what an unkeyed one's do, as they write on D1 what an unkeyed one's do", () => {
    const unkeyedLine: [string, string][] = [
      ["claim-next, keyed", "claim-next"],
      ["complete, keyed", "complete"],
      ["purge (cron, one keyed job)", "purge (cron, one job)"],
      [`claim-next of ${BATCH}, keyed`, `claim-next of ${BATCH}`],
      [`completeMany of ${BATCH}, keyed, with next (none left)`, `completeMany of ${BATCH} with next (none left)`],
      [`purge (cron, ${BATCH} keyed jobs)`, `purge (cron, ${BATCH} jobs)`],
    ];
    for (const [keyed, unkeyed] of unkeyedLine) {
      const [a, b] = [keyedMeasured.get(keyed)!, measured.get(unkeyed)!];
      expect({ requests: a.requests, rowsWritten: a.rowsWritten }, keyed).toEqual({ requests: b.requests, rowsWritten: b.rowsWritten });
      expect(d1Written(keyed), keyed).toBe(d1Written(unkeyed));
    }
  });
});
