import { createClient } from "@libsql/client";
import { describe, expect, onTestFinished, test } from "vitest";
import type { Driver } from "../../src/drivers/driver.ts";
import { libsqlDriver } from "../../src/drivers/libsql-client.ts";
import { migrate } from "../../src/index.ts";
import { openStore, readMigrations } from "../../src/node.ts";
import { LeaseStore } from "../../src/store/store.ts";
import { jsonDepthContract } from "../contract/json-depth.contract.ts";
import { storageContract } from "../contract/storage.contract.ts";
import { freshStore, freshUrl } from "../fresh-db.ts";

// What the store keeps, what it costs to keep, and how deep its JSON values
// may nest, on libSQL over a real file; the same suites run on D1 in
// test/worker/store-d1.test.ts. Below them, what only a file shows: who takes
// the write lock, and a migration of old rows.
storageContract(freshStore);
jsonDepthContract(freshStore);

const T = 1_000_000;

describe("stats", () => {
  test("are a read: they answer while another connection holds the write lock", async () => {
    const url = freshUrl();
    const store = await openStore({ url, busyTimeoutMs: 20 });
    const holder = createClient({ url });
    onTestFinished(() => {
      holder.close();
      store.close();
    });
    await store.enqueue("job-1", { queue: "q", now: T });
    const lock = await holder.transaction("write");
    try {
      await lock.execute("UPDATE jobs SET owner = 'X', until = 1e15"); // not committed: the stats see the job as it was
      expect(await store.stats({ now: T })).toEqual([
        { queue: "q", jobs: { queued: 1, scheduled: 0, leased: 0, done: 0, dead: 0, cancelled: 0 }, oldestDueAgeMs: 0, refused: { lastHour: 0, total: 0 }, paused: false, topKeys: [] },
      ]);
    } finally {
      lock.close();
    }
  });

  test("are one SELECT run on its own, never a write batch, so group commit sends it around the group", async () => {
    const url = freshUrl();
    (await openStore({ url })).close();
    const client = createClient({ url });
    const inner = libsqlDriver(client);
    const calls: string[] = [];
    const spy: Driver = {
      run: (statement) => (calls.push(`run ${statement.sql.trim().split(/\s/)[0]}`), inner.run(statement)),
      batch: (statements) => (calls.push(`batch of ${statements.length}`), inner.batch(statements)),
      close: () => inner.close(),
    };
    const store = new LeaseStore(spy);
    onTestFinished(() => store.close());
    await store.stats({ now: T });
    expect(calls).toEqual(["run WITH"]);
  });
});

describe("purge", () => {
  test("runs each chunk as its own transaction, and lets the event loop turn between chunks", async () => {
    const url = freshUrl();
    const store = await openStore({ url });
    for (let i = 0; i < 5; i++) {
      await store.enqueue(`done-${i}`, { now: T });
      await store.complete(`done-${i}`, { owner: "A", fence: (await store.claim(`done-${i}`, { owner: "A", ttlMs: 1_000, now: T })).fence, result: "r", now: T });
    }
    store.close();
    const inner = libsqlDriver(createClient({ url }));
    let turns = 0;
    let purging = true;
    const tick = () => {
      turns++;
      if (purging) setImmediate(tick);
    };
    const batches: number[] = [];
    const spy: Driver = {
      run: (statement) => inner.run(statement),
      batch: (statements) => (batches.push(turns), inner.batch(statements)),
      close: () => inner.close(),
    };
    const spied = new LeaseStore(spy);
    onTestFinished(() => spied.close());
    setImmediate(tick);
    expect(await spied.purge({ retentionMs: 1_000, now: T + 1_000, chunkSize: 2 })).toBe(5);
    purging = false;
    expect(batches).toHaveLength(3); // 2, 2, then 1: fewer than a chunk, so the last
    expect(batches[1]! > batches[0]! && batches[2]! > batches[1]!).toBe(true);
  });
});

describe("migration 0005", () => {
  test("folds the events already recorded: one renewed event per lease, one refused event per stale lease, the counters untouched", async () => {
    const url = freshUrl();
    const client = createClient({ url });
    onTestFinished(() => client.close());
    const migrations = await readMigrations();
    await migrate(libsqlDriver(client), migrations.filter((migration) => migration.name < "0005"));
    await client.execute("INSERT INTO jobs (id, queue, created_at, updated_at) VALUES ('job-1', 'q', 1, 1), ('job-2', 'q', 1, 1)");
    const event = (id: string, at: number, kind: string, owner: string, fence: number, action: string | null = null, currentFence: number | null = null) =>
      client.execute({ sql: "INSERT INTO events (job_id, queue, at, kind, action, owner, fence, current_fence) VALUES (?, 'q', ?, ?, ?, ?, ?, ?)", args: [id, at, kind, action, owner, fence, currentFence] });
    await event("job-1", 2, "claimed", "A", 1);
    for (const at of [3, 4, 5]) await event("job-1", at, "renewed", "A", 1);
    for (const at of [6, 7]) await event("job-1", at, "refused", "Z", 1, "renew", 1);
    await event("job-1", 8, "refused", "Z", 1, "complete", 1);
    await event("job-1", 9, "claimed", "B", 2);
    await event("job-1", 10, "renewed", "B", 2);
    await event("job-2", 11, "renewed", "A", 1);
    const counters = "SELECT (SELECT total FROM refusal_counts) AS total, (SELECT sum(refusals) FROM refusal_minutes) AS minutes";
    expect((await client.execute(counters)).rows.map((row) => ({ ...row }))).toEqual([{ total: 3, minutes: 3 }]);

    await migrate(libsqlDriver(client), migrations);
    const rows = (await client.execute("SELECT job_id, at, kind, action, owner, fence, count, last_at FROM events ORDER BY seq")).rows.map((row) => ({ ...row }));
    expect(rows).toEqual([
      { job_id: "job-1", at: 1, kind: "enqueued", action: null, owner: null, fence: null, count: 1, last_at: null },
      { job_id: "job-2", at: 1, kind: "enqueued", action: null, owner: null, fence: null, count: 1, last_at: null },
      { job_id: "job-1", at: 2, kind: "claimed", action: null, owner: "A", fence: 1, count: 1, last_at: null },
      { job_id: "job-1", at: 3, kind: "renewed", action: null, owner: "A", fence: 1, count: 3, last_at: 5 },
      { job_id: "job-1", at: 6, kind: "refused", action: "renew", owner: "Z", fence: 1, count: 2, last_at: 7 },
      { job_id: "job-1", at: 8, kind: "refused", action: "complete", owner: "Z", fence: 1, count: 1, last_at: null },
      { job_id: "job-1", at: 9, kind: "claimed", action: null, owner: "B", fence: 2, count: 1, last_at: null },
      { job_id: "job-1", at: 10, kind: "renewed", action: null, owner: "B", fence: 2, count: 1, last_at: null },
      { job_id: "job-2", at: 11, kind: "renewed", action: null, owner: "A", fence: 1, count: 1, last_at: null },
    ]);
    expect((await client.execute(counters)).rows.map((row) => ({ ...row }))).toEqual([{ total: 3, minutes: 3 }]);
  });
});
