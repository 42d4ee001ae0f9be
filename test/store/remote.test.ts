import { join } from "node:path";
import { createClient } from "@libsql/client";
import { describe, expect, onTestFinished, test } from "vitest";
import { createApp, libsqlDriver, LeaseStore, StorageUnavailable } from "../../src/index.ts";
import { openStore } from "../../src/node.ts";
import { freshDir } from "../fresh-db.ts";
import { hranaFake } from "../hrana-fake.ts";

// The store on a remote database, as it runs against sqld or Turso: an
// `http://` URL, @libsql/client speaking Hrana over HTTP to test/hrana-fake.ts,
// which runs every statement on a real file and fails as a network does when
// told to.

const T = 1_000_000;
const TTL = 60_000;

/** A store opened on the fake's URL, the fake, and a reader of the file under it. */
async function remoteStore(options: { groupCommit?: boolean; statementTimeoutMs?: number; log?: (line: string) => void } = {}) {
  const path = join(freshDir(), "remote.db");
  const fake = await hranaFake(path);
  const store = await openStore({ url: fake.url, ...options });
  const reader = createClient({ url: `file:${path}` });
  onTestFinished(() => {
    reader.close();
    store.close();
  });
  const rows = async (sql: string) => (await reader.execute(sql)).rows.map((row) => ({ ...row }));
  return { store, fake, rows };
}

/** A GET of /healthz on an app over `store`: its status and body. */
async function health(store: LeaseStore) {
  const response = await createApp({ store, auth: "off" }).request("/healthz");
  return { status: response.status, retryAfter: response.headers.get("Retry-After"), body: (await response.json()) as { ok?: true; error?: { code: string; message: string; details?: Record<string, unknown> } } };
}

describe("a connection cut mid-answer", () => {
  test("a claim whose answer is cut after the database committed is StorageUnavailable, outcome unknown; the lease it took is there", async () => {
    const { store, fake, rows } = await remoteStore();
    await store.enqueue("job-1", { now: T });
    fake.fault({ kind: "cut-after", times: 1 });
    await expect(store.claim("job-1", { owner: "A", ttlMs: TTL, now: T })).rejects.toMatchObject({ name: "StorageUnavailable", outcome: "unknown", reason: "connection_lost" });
    expect(await rows("SELECT id, owner, fence, attempts FROM jobs")).toEqual([{ id: "job-1", owner: "A", fence: 1, attempts: 1 }]);
  });

  test("an answer that ends after half its JSON is StorageUnavailable, outcome unknown", async () => {
    const { store, fake, rows } = await remoteStore();
    await store.enqueue("job-1", { now: T });
    fake.fault({ kind: "truncate-after", times: 1 });
    await expect(store.claim("job-1", { owner: "A", ttlMs: TTL, now: T })).rejects.toMatchObject({ name: "StorageUnavailable", outcome: "unknown", reason: "connection_lost" });
    expect(await rows("SELECT owner, fence FROM jobs")).toEqual([{ owner: "A", fence: 1 }]);
  });

  test("a connection cut as the request arrives is unknown too (the client cannot tell), and then nothing was applied", async () => {
    const { store, fake, rows } = await remoteStore();
    await store.enqueue("job-1", { now: T });
    fake.fault({ kind: "cut-before", times: 1 });
    await expect(store.claim("job-1", { owner: "A", ttlMs: TTL, now: T })).rejects.toMatchObject({ name: "StorageUnavailable", outcome: "unknown" });
    expect(await rows("SELECT owner, fence FROM jobs")).toEqual([{ owner: null, fence: 0 }]);
    expect(await store.claim("job-1", { owner: "A", ttlMs: TTL, now: T })).toMatchObject({ fence: 1 }); // and the next call works
  });

  test("a statement the database refused is passed on as it is: the batch was rolled back", async () => {
    const { store, fake, rows } = await remoteStore();
    await store.enqueue("job-1", { now: T });
    await store.claim("job-1", { owner: "A", ttlMs: TTL, now: T });
    const driver = libsqlDriver(createClient({ url: fake.url }));
    onTestFinished(() => driver.close());
    const lower = driver.batch([
      { sql: "UPDATE jobs SET owner = 'B'", args: [] },
      { sql: "UPDATE jobs SET fence = 0", args: [] }, // a trigger refuses a fence going down
    ]);
    await expect(lower).rejects.toThrow(/a fence may only grow/);
    await expect(lower).rejects.not.toBeInstanceOf(StorageUnavailable);
    expect(await rows("SELECT owner, fence FROM jobs")).toEqual([{ owner: "A", fence: 1 }]);
  });

  test("over HTTP, such a claim answers 503 unavailable with outcome unknown and Retry-After, never 500", async () => {
    const { store, fake } = await remoteStore();
    const app = createApp({ store, auth: "off", clock: () => T });
    await store.enqueue("job-1", { now: T });
    fake.fault({ kind: "cut-after", times: 1 });
    const response = await app.request("/v1/jobs/job-1/claim", { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ owner: "A", ttlMs: TTL }) });
    expect(response.status).toBe(503);
    expect(response.headers.get("Retry-After")).toBe("1");
    expect(((await response.json()) as { error: unknown }).error).toMatchObject({ code: "unavailable", details: { outcome: "unknown", reason: "connection_lost" } });
  });
});

describe("group commit on a remote database", () => {
  test("claims by id whose group answer is cut: every caller is told unknown, none runs again, and each job holds its caller's lease", async () => {
    const { store, fake, rows } = await remoteStore({ groupCommit: true });
    const ids = Array.from({ length: 8 }, (_, i) => `job-${i}`);
    for (const id of ids) await store.enqueue(id, { now: T });
    const before = fake.seen.batches;
    fake.fault({ kind: "cut-after", match: "batch", times: 1 });
    const answers = await Promise.allSettled(ids.map((id, i) => store.claim(id, { owner: `w${i}`, ttlMs: TTL, now: T })));
    expect(answers.map((answer) => answer.status === "rejected" && answer.reason instanceof StorageUnavailable && answer.reason.outcome)).toEqual(ids.map(() => "unknown"));
    expect(fake.seen.batches - before).toBe(1); // one group, sent once
    expect(await rows("SELECT id, owner, fence, attempts FROM jobs ORDER BY id")).toEqual(ids.map((id, i) => ({ id, owner: `w${i}`, fence: 1, attempts: 1 })));
  });

  test("claim-next whose group answer is cut: no caller runs again, so no extra job is leased to a caller told nothing", async () => {
    const { store, fake, rows } = await remoteStore({ groupCommit: true });
    for (let i = 0; i < 16; i++) await store.enqueue(`job-${String(i).padStart(2, "0")}`, { queue: "q", now: T });
    fake.fault({ kind: "cut-after", match: "batch", times: 1 });
    const answers = await Promise.allSettled(Array.from({ length: 8 }, (_, i) => store.claimNext("q", { owner: `w${i}`, ttlMs: TTL, now: T })));
    expect(answers.every((answer) => answer.status === "rejected" && answer.reason instanceof StorageUnavailable && answer.reason.outcome === "unknown")).toBe(true);
    // The group committed once: 8 jobs leased, one to each caller, and 8 still queued.
    const leased = await rows("SELECT owner, count(*) AS jobs, max(attempts) AS attempts FROM jobs WHERE owner IS NOT NULL GROUP BY owner ORDER BY owner");
    expect(leased).toEqual(Array.from({ length: 8 }, (_, i) => ({ owner: `w${i}`, jobs: 1, attempts: 1 })));
    expect(await rows("SELECT count(*) AS n FROM jobs WHERE owner IS NULL AND fence = 0")).toEqual([{ n: 8 }]);
  });
});

describe("a remote database that stops answering", () => {
  const TIMEOUT = 300;

  test("a write fails after the statement timeout with StorageUnavailable, outcome unknown; nothing ran, and once the database answers the next write works", { timeout: 10_000 }, async () => {
    const { store, fake, rows } = await remoteStore({ statementTimeoutMs: TIMEOUT });
    await store.enqueue("job-1", { now: T });
    fake.fault({ kind: "stall" });
    const started = performance.now();
    await expect(store.claim("job-1", { owner: "A", ttlMs: TTL, now: T })).rejects.toMatchObject({ name: "StorageUnavailable", outcome: "unknown", reason: "timeout" });
    expect(performance.now() - started).toBeGreaterThanOrEqual(TIMEOUT - 1);
    expect(performance.now() - started).toBeLessThan(TIMEOUT + 1_000);
    fake.fault({ kind: "none" });
    await expect.poll(() => fake.abandoned).toBe(1); // the client gave the request up, so the database never runs it
    fake.release();
    expect(await rows("SELECT owner, fence FROM jobs")).toEqual([{ owner: null, fence: 0 }]);
    expect(await store.claim("job-1", { owner: "A", ttlMs: TTL, now: T })).toMatchObject({ fence: 1 });
  });

  test("calls that timed out leave nothing behind in the client: after 25 of them (more than @libsql/client runs at once), the next call works", { timeout: 10_000 }, async () => {
    const { store, fake } = await remoteStore({ statementTimeoutMs: TIMEOUT });
    await store.enqueue("job-1", { now: T });
    fake.fault({ kind: "stall" });
    const answers = await Promise.allSettled(Array.from({ length: 25 }, (_, i) => store.enqueue(`stuck-${i}`, { now: T })));
    expect(answers.every((answer) => answer.status === "rejected" && answer.reason.reason === "timeout")).toBe(true);
    fake.fault({ kind: "none" }); // the held requests stay held: only the client's giving up frees it
    expect(await store.claim("job-1", { owner: "A", ttlMs: TTL, now: T })).toMatchObject({ fence: 1 });
  });

  test("with group commit, writes that wait behind a stuck group are told at once when it times out, not_applied, and never sent", { timeout: 10_000 }, async () => {
    const { store, fake, rows } = await remoteStore({ groupCommit: true, statementTimeoutMs: TIMEOUT });
    for (const id of ["a", "b", "c", "d"]) await store.enqueue(id, { now: T });
    const before = fake.seen.batches;
    fake.fault({ kind: "stall" });
    const started = performance.now();
    const first = Promise.allSettled([store.claim("a", { owner: "w", ttlMs: TTL, now: T }), store.claim("b", { owner: "w", ttlMs: TTL, now: T })]);
    await expect.poll(() => fake.held).toBe(1); // the first group is on its way, and stuck
    const behind = Promise.allSettled([store.claim("c", { owner: "w", ttlMs: TTL, now: T }), store.claim("d", { owner: "w", ttlMs: TTL, now: T })]);
    const reasons = (answers: PromiseSettledResult<unknown>[]) => answers.map((answer) => answer.status === "rejected" && [answer.reason.outcome, answer.reason.reason]);
    expect(reasons(await first)).toEqual([["unknown", "timeout"], ["unknown", "timeout"]]);
    expect(reasons(await behind)).toEqual([["not_applied", "timeout"], ["not_applied", "timeout"]]);
    expect(performance.now() - started).toBeLessThan(TIMEOUT + 1_000); // not a timeout per group
    expect(fake.seen.batches - before).toBe(1);
    fake.fault({ kind: "none" });
    await expect.poll(() => fake.abandoned).toBe(1);
    fake.release();
    expect(await rows("SELECT count(*) AS leased FROM jobs WHERE owner IS NOT NULL")).toEqual([{ leased: 0 }]);
  });

  test("/healthz answers 503 timeout while the database does not answer, and 200 once it does", { timeout: 10_000 }, async () => {
    const { store, fake } = await remoteStore({ statementTimeoutMs: TIMEOUT, log: () => {} });
    expect((await health(store)).status).toBe(200);
    fake.fault({ kind: "stall" });
    const stalled = await health(store);
    expect(stalled).toMatchObject({ status: 503, retryAfter: "1", body: { error: { code: "unavailable", details: { reason: "timeout" } } } });
    fake.fault({ kind: "none" });
    await store.enqueue("job-1", { now: T }); // a write that succeeds says writes work again
    expect(await health(store)).toMatchObject({ status: 200, body: { ok: true } });
  });

  test("/healthz answers 503 while writes are failing: after a write timed out, until a write succeeds", { timeout: 10_000 }, async () => {
    const { store, fake } = await remoteStore({ statementTimeoutMs: TIMEOUT, log: () => {} });
    await store.enqueue("job-1", { now: T });
    fake.fault({ kind: "stall", match: "batch" }); // statements alone, the health check's probe among them, still answer
    await expect(store.claim("job-1", { owner: "A", ttlMs: TTL, now: T })).rejects.toMatchObject({ reason: "timeout" });
    expect(await health(store)).toMatchObject({ status: 503, body: { error: { details: { reason: "timeout", outcome: "unknown" } } } });
    fake.fault({ kind: "none" });
    expect(await store.claim("job-1", { owner: "A", ttlMs: TTL, now: T })).toMatchObject({ fence: 1 });
    expect((await health(store)).status).toBe(200);
  });
});
