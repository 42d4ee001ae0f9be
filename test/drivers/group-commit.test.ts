import { describe, expect, onTestFinished, test } from "vitest";
import { readsOnly } from "../../src/drivers/driver.ts";
import { libsqlDriver, LeaseStore, NotClaimable, StorageUnavailable, type Driver, type Statement } from "../../src/index.ts";
import { connect } from "../../src/node.ts";
import { groupCommit } from "../../src/drivers/group-commit.ts";
import { migrate } from "../../src/store/migrate.ts";
import { readMigrations } from "../../src/runtime/node/migrations-dir.ts";
import { freshUrl } from "../fresh-db.ts";
import { noteVerbs } from "../../src/store/note.ts";

// src/drivers/group-commit.ts: concurrent writes share one transaction, yet each
// statement decides alone and only a failing caller fails.

const T = 1_000_000;
const TTL = 60_000;

/** A driver over a fresh file database that counts the batches and runs that reach it. */
async function countingDriver() {
  const client = await connect(freshUrl());
  await migrate(libsqlDriver(client), await readMigrations());
  const inner = libsqlDriver(client);
  const calls = { batches: [] as number[], runs: 0 };
  const driver: Driver = {
    run: (statement) => (calls.runs++, inner.run(statement)),
    batch: (statements) => (calls.batches.push(statements.length), inner.batch(statements)),
    close: () => inner.close(),
  };
  onTestFinished(() => driver.close());
  return { driver, calls };
}

describe("group commit", () => {
  test("writes that arrive together run as one batch, and each caller gets its own answer", async () => {
    const { driver, calls } = await countingDriver();
    const store = new LeaseStore(groupCommit(driver));
    await Promise.all(Array.from({ length: 20 }, (_, i) => store.enqueue(`job-${i}`, { now: T })));
    calls.batches.length = 0;
    const leases = await Promise.all(Array.from({ length: 20 }, (_, i) => store.claim(`job-${i}`, { owner: `w${i}`, ttlMs: TTL + i, now: T })));
    expect(calls.batches).toHaveLength(1);
    expect(leases.map((lease) => [lease.job.id, lease.job.owner, lease.fence, lease.until])).toEqual(
      Array.from({ length: 20 }, (_, i) => [`job-${i}`, `w${i}`, 1, T + TTL + i]),
    );
  });

  test("64 concurrent claims of one job in one group: each decides alone, so exactly one wins", async () => {
    const { driver, calls } = await countingDriver();
    const store = new LeaseStore(groupCommit(driver));
    await store.enqueue("job-1", { now: T });
    calls.batches.length = 0;
    const answers = await Promise.allSettled(Array.from({ length: 64 }, (_, i) => store.claim("job-1", { owner: `w${i}`, ttlMs: TTL, now: T })));
    expect(calls.batches).toHaveLength(1);
    const won = answers.flatMap((answer, i) => (answer.status === "fulfilled" ? [i] : []));
    expect(won).toEqual([0]); // the first to arrive
    expect(answers.slice(1).every((answer) => answer.status === "rejected" && answer.reason instanceof NotClaimable)).toBe(true);
    expect(await store.get("job-1", { now: T })).toMatchObject({ owner: "w0", fence: 1, attempts: 1 });
  });

  test("a statement that fails fails only its own caller; the others in its group are committed", async () => {
    const { driver } = await countingDriver();
    const grouped = groupCommit(driver);
    const store = new LeaseStore(grouped);
    await Promise.all(["a", "b"].map((id) => store.enqueue(id, { now: T })));
    const broken: Statement = { sql: "INSERT INTO jobs (id) VALUES ('c')", args: [] }; // created_at is NOT NULL
    const [a, bad, b] = await Promise.allSettled([store.claim("a", { owner: "w", ttlMs: TTL, now: T }), grouped.batch([broken]), store.claim("b", { owner: "w", ttlMs: TTL, now: T })]);
    expect(a).toMatchObject({ status: "fulfilled", value: { fence: 1 } });
    expect(bad).toMatchObject({ status: "rejected", reason: expect.objectContaining({ message: expect.stringMatching(/NOT NULL/) }) });
    expect(b).toMatchObject({ status: "fulfilled", value: { fence: 1 } });
    expect(await noteVerbs(store).state("c", T)).toBeNull();
  });

  test("when the database is unavailable, every caller of the group gets that error and nothing is written", async () => {
    const unavailable = new StorageUnavailable(new Error("SQLITE_BUSY"), "not_applied");
    let batches = 0;
    const down: Driver = { run: async () => Promise.reject(unavailable), batch: async () => (batches++, Promise.reject(unavailable)), close: () => {} };
    const grouped = groupCommit(down);
    const answers = await Promise.allSettled([grouped.batch([{ sql: "UPDATE jobs SET fence = 1", args: [] }]), grouped.run({ sql: "DELETE FROM jobs", args: [] })]);
    expect(answers.map((answer) => answer.status === "rejected" && answer.reason)).toEqual([unavailable, unavailable]);
    expect(batches).toBe(1); // not tried again one by one, which would make each wait out the busy timeout again
  });

  test("when the outcome is unknown (the group committed, then its answer was lost), every caller gets that error and none runs again", async () => {
    const { driver } = await countingDriver();
    let lose = false;
    const lost = new StorageUnavailable(new TypeError("terminated"), "unknown");
    const committedThenLost: Driver = {
      run: (statement) => driver.run(statement),
      batch: async (statements) => {
        const rows = await driver.batch(statements);
        if (!lose) return rows;
        lose = false;
        throw lost;
      },
      close: () => driver.close(),
    };
    const store = new LeaseStore(groupCommit(committedThenLost));
    for (const id of ["a", "b", "c", "d"]) await store.enqueue(id, { queue: "q", now: T });
    lose = true;
    const answers = await Promise.allSettled([store.claim("a", { owner: "w1", ttlMs: TTL, now: T }), store.claimNext("q", { owner: "w2", ttlMs: TTL, now: T }), store.claim("c", { owner: "w3", ttlMs: TTL, now: T })]);
    expect(answers.map((answer) => answer.status === "rejected" && answer.reason)).toEqual([lost, lost, lost]);
    // Applied once: a to w1, the next due job (b) to w2, c to w3; d untouched.
    const jobs = await Promise.all(["a", "b", "c", "d"].map(async (id) => (({ owner, fence, attempts }) => ({ id, owner, fence, attempts }))((await store.get(id, { now: T }))!)));
    expect(jobs).toEqual([
      { id: "a", owner: "w1", fence: 1, attempts: 1 },
      { id: "b", owner: "w2", fence: 1, attempts: 1 },
      { id: "c", owner: "w3", fence: 1, attempts: 1 },
      { id: "d", owner: null, fence: 0, attempts: 0 },
    ]);
  });

  test("a write alone runs at once on its own, and a read bypasses the group", async () => {
    const { driver, calls } = await countingDriver();
    const store = new LeaseStore(groupCommit(driver));
    expect(await noteVerbs(store).enqueue("job-1", { now: T })).toBe(true);
    expect(calls.batches).toEqual([2]); // the insert and its count, unchanged and alone
    expect(await store.get("job-1", { now: T })).toMatchObject({ id: "job-1" });
    expect(calls.runs).toBe(1);
  });

  test("a group stops at maxStatements; the rest run in the next one", async () => {
    const { driver, calls } = await countingDriver();
    const grouped = groupCommit(driver, { maxStatements: 4 });
    const insert = (id: string): Statement => ({ sql: "INSERT INTO jobs (id, created_at, updated_at) VALUES (?1, 0, 0)", args: [id] });
    await Promise.all(["a", "b", "c", "d", "e"].map((id) => grouped.batch([insert(id)])));
    expect(calls.batches).toEqual([4, 1]);
    expect(() => groupCommit(driver, { maxStatements: 0 })).toThrow(RangeError);
  });
});

describe("what bypasses the group", () => {
  test("a read that starts with WITH is a read: stats and a refused claim's reasons run at once, never in a write's group", async () => {
    expect(readsOnly({ sql: "WITH RECURSIVE t(x) AS (SELECT 1) SELECT x, updated_at FROM t, jobs WHERE last_event = 'deleted'", args: [] })).toBe(true);
    expect(readsOnly({ sql: "  select 1", args: [] })).toBe(true);
    expect(readsOnly({ sql: "WITH t AS (SELECT 1) UPDATE jobs SET owner = NULL", args: [] })).toBe(false);
    expect(readsOnly({ sql: "WITH t AS (SELECT 1) INSERT INTO jobs SELECT * FROM t", args: [] })).toBe(false);
    expect(readsOnly({ sql: "WITH t AS (SELECT 1) DELETE FROM jobs", args: [] })).toBe(false);
    expect(readsOnly({ sql: "UPDATE jobs SET owner = NULL", args: [] })).toBe(false);
  });
});
