import { createClient } from "@libsql/client";
import { describe, expect, onTestFinished, test } from "vitest";
import type { Driver, Statement } from "../src/drivers/driver.ts";
import { libsqlDriver } from "../src/drivers/libsql-client.ts";
import { openStore } from "../src/index.ts";
import * as sql from "../src/statements.ts";
import { LeaseStore } from "../src/store.ts";
import { storageContract } from "./contract/storage.contract.ts";
import { freshStore, freshUrl } from "./fresh-db.ts";

// What the store keeps, and what it costs to keep, on libSQL over a real file;
// the same suite runs on D1 in test/worker/store-d1.test.ts. Below it, what
// only a file shows: who takes the write lock, and SQLite's query plans.
storageContract(freshStore);

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
      expect(await store.stats(T)).toEqual([
        { queue: "q", jobs: { queued: 1, scheduled: 0, leased: 0, done: 0, dead: 0 }, oldestDueAgeMs: 0, refused: { lastHour: 0, total: 0 } },
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
    await store.stats(T);
    expect(calls).toEqual(["run SELECT"]);
  });
});

describe("query plans", () => {
  /** The lines of SQLite's plan for a statement that scan a whole table of jobs or events (or a whole index of one). */
  async function fullScans(statement: Statement): Promise<string[]> {
    const url = freshUrl();
    (await openStore({ url })).close();
    const client = createClient({ url });
    onTestFinished(() => client.close());
    const plan = await client.execute({ sql: `EXPLAIN QUERY PLAN ${statement.sql}`, args: statement.args });
    return plan.rows.map((row) => String(row.detail)).filter((detail) => /^SCAN (jobs|events)\b/.test(detail));
  }

  test("the stats never scan every job or every event: each count is an index range or a row per queue", async () => {
    expect(await fullScans(sql.stats(T))).toEqual([]);
  });
});
