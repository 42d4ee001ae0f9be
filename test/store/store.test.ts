import { dedupContract } from "../contract/dedup.contract.ts";
import { createClient } from "@libsql/client";
import { describe, expect, onTestFinished, test } from "vitest";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Driver } from "../../src/drivers/driver.ts";
import { libsqlFileDriver } from "../../src/drivers/libsql-file.ts";
import { LeaseStore, StorageUnavailable } from "../../src/index.ts";
import { connect, openStore } from "../../src/node.ts";
import { cancelContract } from "../contract/cancel.contract.ts";
import { clockStepContract } from "../contract/clock-step.contract.ts";
import { keyReadsContract } from "../contract/key-reads.contract.ts";
import { stepsContract } from "../contract/steps.contract.ts";
import { manyContract } from "../contract/many.contract.ts";
import { lifecycleContract } from "../contract/lifecycle.contract.ts";
import { keysContract } from "../contract/keys.contract.ts";
import { pushContract } from "../contract/push.contract.ts";
import { queuesContract } from "../contract/queues.contract.ts";
import { schedulesContract } from "../contract/schedules.contract.ts";
import { searchContract } from "../contract/search.contract.ts";
import { seriesContract } from "../contract/series.contract.ts";
import { rateLimitContract } from "../contract/rate-limit.contract.ts";
import { storeContract } from "../contract/store.contract.ts";
import { tokensContract } from "../contract/tokens.contract.ts";
import { traceContract } from "../contract/trace.contract.ts";
import { freshDir, freshStore, freshUrl } from "../fresh-db.ts";
import { hranaFake } from "../hrana-fake.ts";
import { noteVerbs } from "../../src/store/note.ts";
import { clockId } from "../../src/store/step-back.ts";
import { leasesOf } from "../../src/store/job.ts";

// The store contract on libSQL over a real file, on the native file driver that
// openStore gives a `file:` URL (src/drivers/libsql-file.ts); the same suite
// runs on @libsql/client in test/store/libsql-client.test.ts and on D1 in
// test/worker/store-d1.test.ts. A D1 binding has no connection to close, so
// closing is tested here only.
storeContract(freshStore);
lifecycleContract(freshStore);
manyContract(freshStore);
rateLimitContract(freshStore);
queuesContract(freshStore);
keysContract(freshStore);
pushContract(freshStore);
schedulesContract(freshStore);
cancelContract(freshStore);
tokensContract(freshStore);
traceContract(freshStore);
clockStepContract(freshStore);
keyReadsContract(freshStore);
dedupContract(freshStore);
stepsContract(freshStore);
searchContract(freshStore);
seriesContract(freshStore);

describe("close", () => {
  test("gives the connection back: the store answers nothing afterwards, and the rows stay", async () => {
    const { store, snapshot } = await freshStore();
    await store.enqueue("job-1", { now: 1 });
    await store.claim("job-1", { owner: "A", ttlMs: 1_000, now: 1 });
    const before = await snapshot();
    store.close();
    await expect(store.get("job-1")).rejects.toThrow();
    await expect(store.ping()).rejects.toThrow(); // so /healthz answers 503
    expect(await snapshot()).toEqual(before);
  });
});

describe("clock ids", () => {
  test("each store has its own, 12 hex digits, and its claims store it beside the lease", async () => {
    const url = freshUrl();
    const [first, second] = [await openStore({ url }), await openStore({ url })];
    await first.enqueue("job-1", { now: 1 });
    await second.enqueue("job-2", { now: 1 });
    await first.claim("job-1", { owner: "A", ttlMs: 1_000, now: 1 });
    await second.claim("job-2", { owner: "B", ttlMs: 1_000, now: 1 });
    first.close();
    second.close();
    const db = createClient({ url });
    const { rows } = await db.execute("SELECT id, claim_clock FROM jobs ORDER BY id");
    db.close();
    const [one, two] = rows.map((row) => row.claim_clock as string);
    expect(one).toMatch(/^[0-9a-f]{12}$/);
    expect(two).toMatch(/^[0-9a-f]{12}$/);
    expect(one).not.toBe(two);
    expect(clockId()).toMatch(/^[0-9a-f]{12}$/);
  });
});

describe("claim order", () => {
  test("ids that tie on everything else come in SQLite's order of text, at the edges of UTF-16's ranges too", async () => {
    const { store, url } = await freshStore();
    const edges = ["~", "\u00A0", "\u07FF", "\u0800", "\uD7FF", "\uE000", "\uFFFD", "\u{10000}", "\u{1F600}", "\u{1F601}", "\u{10FFFD}"];
    const ids = [...edges.map((c) => `x${c}`), ...edges.map((c) => `x${c}y`), "x", "xy", "w\u{10000}", "z"];
    const shuffled = [...ids].sort((a, b) => (a.length * 7 + a.charCodeAt(a.length - 1)) % 13 - (b.length * 7 + b.charCodeAt(b.length - 1)) % 13);
    await store.enqueueMany("q", { jobs: shuffled.map((id) => ({ id })), now: 1_000 });
    const db = createClient({ url });
    const sqliteOrder = (await db.execute("SELECT id FROM jobs ORDER BY id")).rows.map((row) => row.id);
    db.close();
    expect(sqliteOrder).toEqual([...ids].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b))));
    const leases = await store.claimNext("q", { owner: "A", ttlMs: 1_000, limit: 100, now: 1_000 });
    expect(leases.map((lease) => lease.job.id)).toEqual(sqliteOrder);
  });

  test("leases are answered in the claim's ORDER BY whatever order the database hands back their rows", async () => {
    const T = 1_000_000;
    const { store, url } = await freshStore();
    await store.enqueue("older", { runAt: T, now: T - 10 });
    // Twins but for their ids, which differ in a first byte, as a prefix, and
    // in characters that UTF-16 (JavaScript's <) and UTF-8 (SQLite's) sort apart.
    const twins = ["b", "a-1", "a", "twin-\u{1F600}", "twin-\uFF01", "twin-"].map((id) => ({ id }));
    await store.enqueueMany("default", { jobs: [...twins, { id: "urgent", priority: 9 }, { id: "due-first", runAt: T - 5 }], now: T });
    const db = createClient({ url });
    const { rows } = await db.execute("SELECT *, 'queued' AS status FROM jobs");
    const claimOrder = (await db.execute("SELECT id FROM jobs ORDER BY priority DESC, run_at, created_at, id")).rows.map((row) => row.id);
    db.close();
    expect(claimOrder).toEqual(["urgent", "due-first", "older", "a", "a-1", "b", "twin-", "twin-\uFF01", "twin-\u{1F600}"]);
    for (const given of [rows, [...rows].reverse()]) {
      for (let shift = 0; shift < given.length; shift++) {
        const order = [...given.slice(shift), ...given.slice(0, shift)];
        expect(leasesOf(order).map((lease) => lease.job.id), `rows given as ${order.map((row) => row.id).join(", ")}`).toEqual(claimOrder);
      }
    }
  });
});

describe("what each verb sends", () => {
  /** A store over a driver that notes each call: "batch N" (N statements) or "read". */
  async function counted() {
    const url = freshUrl();
    (await openStore({ url })).close(); // the migrations
    const driver = libsqlFileDriver(fileURLToPath(url));
    const calls: string[] = [];
    const counting: Driver = {
      run: (statement) => (calls.push("read"), driver.run(statement)),
      batch: (statements) => (calls.push(`batch ${statements.length}`), driver.batch(statements)),
      close: () => driver.close(),
    };
    const store = new LeaseStore(counting);
    /** The calls `verb` made. */
    const sent = async (verb: () => Promise<unknown>) => {
      calls.length = 0;
      await verb().catch(() => {});
      return [...calls];
    };
    /** Runs `sql` on the database, as another writer would. */
    const exec = async (sql: string) => void (await driver.run({ sql, args: [] }));
    return { store, sent, exec };
  }

  test("an enqueue that finds its id taken, then gone before it reads the job (deleted in between by another connection), enqueues again and answers created", async () => {
    const url = freshUrl();
    const other = await openStore({ url });
    await other.enqueue("a", { payload: "old", now: 1 });
    const driver = libsqlFileDriver(fileURLToPath(url));
    const calls: string[] = [];
    let deleteAfterBatch = true;
    const racing: Driver = {
      run: (statement) => (calls.push("read"), driver.run(statement)),
      batch: async (statements) => {
        calls.push(`batch ${statements.length}`);
        const rows = await driver.batch(statements);
        if (deleteAfterBatch) (deleteAfterBatch = false), await other.delete("a", { now: 2 });
        return rows;
      },
      close: () => driver.close(),
    };
    const store = new LeaseStore(racing);
    try {
      expect(await store.enqueue("a", { payload: "new", now: 3 })).toMatchObject({ created: true, job: { id: "a", payload: "new", fence: 0, createdAt: 3 } });
      expect(calls).toEqual(["batch 2", "read", "batch 2"]); // taken, gone, then inserted
      expect(await other.get("a", { now: 3 })).toMatchObject({ payload: "new", status: "queued" });
    } finally {
      store.close();
      other.close();
    }
  });

  test("an accepted write is its batch alone: the answer comes from what its statement returned", async () => {
    const { store, sent } = await counted();
    try {
      const lease = { owner: "A", fence: 1, now: 2 };
      expect(await sent(() => store.enqueue("a", { now: 1 }))).toEqual(["batch 2"]);
      expect(await sent(() => store.claim("a", { owner: "A", ttlMs: 1_000, now: 2 }))).toEqual(["batch 2"]);
      expect(await sent(() => store.renew("a", { ...lease, ttlMs: 1_000 }))).toEqual(["batch 2"]);
      expect(await sent(() => store.complete("a", { ...lease, result: "r" }))).toEqual(["batch 3"]);
      await store.enqueue("b", { maxAttempts: 1, now: 1 });
      await store.claim("b", { owner: "A", ttlMs: 1_000, now: 2 });
      expect(await sent(() => store.fail("b", { ...lease, error: "x" }))).toEqual(["batch 2"]);
      expect(await sent(() => store.retry("b", { now: 3 }))).toEqual(["batch 2"]);
      await store.claim("b", { owner: "A", ttlMs: 1_000, now: 3 });
      expect(await sent(() => store.release("b", { owner: "A", fence: 2, now: 4 }))).toEqual(["batch 2"]);
      expect(await sent(() => store.cancel("b", { now: 5 }))).toEqual(["batch 2"]);
      expect(await sent(() => store.delete("b", { now: 6 }))).toEqual(["batch 2"]);
    } finally {
      store.close();
    }
  });

  test("a write that changed nothing reads the job once, after it, to say why (or to answer the same completion again)", async () => {
    const { store, sent } = await counted();
    try {
      await store.enqueue("a", { now: 1 });
      await store.claim("a", { owner: "A", ttlMs: 1_000, now: 2 });
      expect(await sent(() => store.enqueue("a", { now: 3 }))).toEqual(["batch 2", "read"]);
      expect(await sent(() => store.claim("a", { owner: "B", ttlMs: 1_000, now: 3 }))).toEqual(["batch 2", "read"]);
      expect(await sent(() => store.renew("a", { owner: "B", fence: 1, ttlMs: 1_000, now: 3 }))).toEqual(["batch 2", "read"]);
      expect(await sent(() => store.fail("a", { owner: "B", fence: 1, error: "x", now: 3 }))).toEqual(["batch 2", "read"]);
      expect(await sent(() => store.release("a", { owner: "B", fence: 1, now: 3 }))).toEqual(["batch 2", "read"]);
      await store.complete("a", { owner: "A", fence: 1, result: "r", now: 3 });
      expect(await sent(() => store.complete("a", { owner: "A", fence: 1, result: "r", now: 4 }))).toEqual(["batch 3", "read"]);
      expect(await sent(() => store.complete("a", { owner: "B", fence: 1, result: "r", now: 4 }))).toEqual(["batch 3", "read"]);
      expect(await sent(() => store.retry("a", { now: 4 }))).toEqual(["batch 2", "read"]);
      expect(await sent(() => store.cancel("a", { now: 4 }))).toEqual(["batch 2", "read"]);
      await store.enqueue("held", { now: 1 });
      await store.claim("held", { owner: "A", ttlMs: 1_000, now: 2 });
      expect(await sent(() => store.delete("held", { now: 3 }))).toEqual(["batch 2", "read"]);
    } finally {
      store.close();
    }
  });

  test("fireDue reads the due schedules a chunk at a time and writes each chunk's fires in one batch; a chunk not full is the last", async () => {
    const { store, sent } = await counted();
    const AT_3 = Date.UTC(2026, 10, 30, 3);
    try {
      for (const name of ["a", "b"]) await store.schedules.put(name, { queue: "q", cron: "0 3 * * *", now: AT_3 - 1_000 });
      expect(await sent(() => store.schedules.fireDue({ now: AT_3 - 1 }))).toEqual(["read", "read"]); // none due; then the next fire
      expect(await sent(() => store.schedules.fireDue({ now: AT_3, chunkSize: 1 }))).toEqual(["read", "batch 3", "read", "batch 3", "read", "read"]);
      expect(await sent(() => store.schedules.fireDue({ now: AT_3 + 24 * 3_600_000 }))).toEqual(["read", "batch 3", "read"]);
    } finally {
      store.close();
    }
  });

  test("fireDue writes nothing for a chunk whose due schedules are all skipped", async () => {
    const { store, sent, exec } = await counted();
    const AT_3 = Date.UTC(2026, 10, 30, 3);
    try {
      await store.schedules.put("a", { queue: "q", cron: "0 3 * * *", now: AT_3 - 1_000 });
      await exec("UPDATE schedules SET timezone = 'Mars/Olympus_Mons'"); // stored by another runtime
      const fired = await store.schedules.fireDue({ now: AT_3 });
      expect(fired.skipped.map((schedule) => schedule.name)).toEqual(["a"]);
      expect(await sent(() => store.schedules.fireDue({ now: AT_3 }))).toEqual(["read", "read"]);
    } finally {
      store.close();
    }
  });

  test("a push claim is one batch; a second only to follow a bucket whose clock stepped back", async () => {
    const { store, sent } = await counted();
    try {
      for (const id of ["p-1", "p-2"]) await store.enqueue(id, { queue: "mail", now: 1 });
      await store.push.put("mail", { url: "https://push.example/a", now: 1 });
      await store.queues.set("mail", { ratePerSecond: 10, burst: 1, now: 1 });
      expect(await sent(() => store.push.claim("mail", { limit: 5, now: 1_000 }))).toEqual(["batch 3"]); // took its token
      expect(await sent(() => store.push.claim("mail", { limit: 5, now: 1_050 }))).toEqual(["batch 3"]); // no token yet
      expect(await sent(() => store.push.claim("mail", { limit: 5, now: 500 }))).toEqual(["batch 3", "batch 1"]); // the clock stepped back
    } finally {
      store.close();
    }
  });
});

describe("a busy database", () => {
  test("a write that waited out the busy timeout is StorageUnavailable, changes nothing, and the next write works", async () => {
    const url = freshUrl();
    const store = await openStore({ url, busyTimeoutMs: 20 });
    const holder = createClient({ url });
    try {
      await store.enqueue("job-1", { now: 1 });
      const lock = await holder.transaction("write"); // another writer holds the lock past our timeout
      const started = performance.now();
      await expect(store.claim("job-1", { owner: "A", ttlMs: 1_000, now: 1 })).rejects.toBeInstanceOf(StorageUnavailable);
      await expect(store.claim("job-1", { owner: "A", ttlMs: 1_000, now: 1 })).rejects.toBeInstanceOf(StorageUnavailable);
      expect(performance.now() - started).toBeLessThan(2_000); // the 20 ms asked for, not the default 5 s
      lock.close();
      // libSQL would leave the failed statements "in progress" and refuse every later commit on that connection.
      expect(await store.claim("job-1", { owner: "A", ttlMs: 1_000, now: 2 })).toMatchObject({ fence: 1 });
      expect(await noteVerbs(store).complete("job-1", "A", 1, 3, "done")).toBe(true);
    } finally {
      holder.close();
      store.close();
    }
  });
});

describe.skipIf(process.env.FENCELEASE_IN_PROCESS_ONLY === "1")("a long tight loop", () => {
  test("does not grow memory without bound: libSQL frees statements only when the event loop gets a turn", async () => {
    const store = await openStore({ url: freshUrl() });
    try {
      const before = process.memoryUsage().rss;
      for (let i = 0; i < 4_000; i++) {
        await store.enqueue(`job-${i}`, { now: 1 });
        await store.complete(`job-${i}`, { owner: "A", fence: (await store.claim(`job-${i}`, { owner: "A", ttlMs: 1_000, now: 1 })).fence, result: "r", now: 2 });
      }
      // On @libsql/client, without its driver's yield, this loop grew by about
      // 700 MB; the file driver prepares each statement once, and without its
      // yield the loop grows by about 25 MB, too little to tell here from noise:
      // test/drivers/libsql-file.test.ts runs a loop long enough to tell.
      expect(process.memoryUsage().rss - before).toBeLessThan(250 * 1024 * 1024);
    } finally {
      store.close();
    }
  });
});

describe("dataVersion, what the wait rooms' re-check compares", () => {
  const drivers: [string, Parameters<typeof freshStore>[0]][] = [
    ["the native file driver", undefined],
    ["@libsql/client on a file", async (url, options) => openStore({ client: await connect(url), ...options })],
  ];
  for (const [driver, open] of drivers) {
    test(`on ${driver}, it changes when another connection commits, and not for the store's own writes or anyone's reads`, async () => {
      const fresh = await freshStore(open);
      const { store } = fresh;
      const other = await fresh.reopen();
      const first = await store.dataVersion();
      expect(first).toEqual(expect.any(Number));
      await store.enqueue("own", { queue: "q" });
      await store.claimNext("q", { owner: "w", ttlMs: 60_000, now: Date.now() });
      await other.stats({ now: Date.now() });
      expect(await store.dataVersion()).toBe(first);
      await other.enqueue("theirs", { queue: "q" });
      const second = await store.dataVersion();
      expect(second).not.toBe(first);
      expect(await store.dataVersion()).toBe(second);
      await fresh.exec("UPDATE jobs SET priority = 1 WHERE id = 'theirs'"); // plain SQL
      expect(await store.dataVersion()).not.toBe(second);
    });
  }
});

// A remote driver sends claim-next's retryAfterMs hint in the claim's own
// batch; a local file reads it only after a claim that came back short. Both
// must answer the same: the hint only when the bucket is what held the claim back.
describe("claim-next on a remote database, its hint in the claim's batch", () => {
  const T = 1_000_000;
  const TTL = 30_000;

  /** A store on test/hrana-fake.ts over a fresh file: @libsql/client speaking Hrana over HTTP. */
  async function remoteStore() {
    const fake = await hranaFake(join(freshDir(), "remote.db"));
    const store = await openStore({ url: fake.url });
    onTestFinished(() => store.close());
    return store;
  }

  test("answers the leases it took, a retryAfterMs only when the empty bucket held it back, and no data version", async () => {
    const store = await remoteStore();
    expect(await store.dataVersion()).toBeNull(); // each call may be served by another connection
    await store.queues.set("q", { ratePerSecond: 1, burst: 2, now: T });
    await store.enqueueMany("q", { jobs: [{ id: "a" }, { id: "b" }, { id: "c" }], now: T });
    await store.enqueue("later", { queue: "q", runAt: T + 10_000, now: T });
    const taken = await store.claimNext("q", { owner: "A", ttlMs: TTL, limit: 2, now: T });
    expect(taken.map((lease) => [lease.job.id, lease.fence, lease.until])).toEqual([["a", 1, T + TTL], ["b", 1, T + TTL]]);
    expect("retryAfterMs" in taken).toBe(false); // c is due and the bucket is empty, but the claim took its limit
    const short = await store.claimNext("q", { owner: "A", ttlMs: TTL, limit: 2, now: T + 1 });
    expect([...short]).toEqual([]);
    expect(short.retryAfterMs).toBe(999);
    const one = await store.claimNext("q", { owner: "A", ttlMs: TTL, limit: 2, now: T + 1_000 });
    expect(one.map((lease) => lease.job.id)).toEqual(["c"]);
    expect("retryAfterMs" in one).toBe(false); // short, and the bucket empty again, but only "later" is left, not yet due
  });
});
