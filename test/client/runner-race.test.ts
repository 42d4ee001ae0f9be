import { type ChildProcess, spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { describe, expect, test } from "vitest";
import { LeaseClient, runWorker } from "../../src/client/index.ts";
import { startServer } from "../../src/node.ts";
import { freshStore } from "../fresh-db.ts";

// Worker runners in-process in 4 OS processes, each over its own store (its
// own connection) on one file, and beside them the Node server on the same
// file with a runner over HTTP: they drain one queue together. WAL, the busy
// timeout and the lock-wait rules let them share the file; the claim
// statement alone decides who gets a job.

const JOBS = 1_000;
const OWNERS = ["p0", "p1", "p2", "p3"];

/** A racer process (test/client/runner-race-worker.ts), ready once its store is open. */
async function racer(url: string, owner: string): Promise<{ go: () => void; result: Promise<{ ran: string[]; errors: string[] }> }> {
  const child: ChildProcess = spawn(process.execPath, ["test/client/runner-race-worker.ts", url, owner, "8"], { stdio: "pipe" });
  let stderr = "";
  child.stderr!.on("data", (chunk) => (stderr += chunk));
  const lines = createInterface({ input: child.stdout! })[Symbol.asyncIterator]();
  expect((await lines.next()).value).toBe("ready");
  const exited = new Promise((resolve) => child.on("close", resolve));
  const result = (async () => {
    const line = (await lines.next()).value as string;
    expect([await exited, stderr]).toEqual([0, ""]);
    return JSON.parse(line);
  })();
  return { go: () => child.stdin!.write("go\n"), result };
}

// Skipped under mutation testing, like the other multi-process tests: a mutant lives in the test process only.
describe.skipIf(process.env.FENCELEASE_IN_PROCESS_ONLY === "1")("worker runners in-process in 4 processes on one file, and a server beside them", () => {
  test("drain a queue of 1,000 jobs together: each job done exactly once, by the runner that claimed it, with no error anywhere", async () => {
    const { store, url, snapshot, rows } = await freshStore();
    await store.enqueueMany("race", { jobs: Array.from({ length: JOBS }, (_, i) => ({ id: `job-${String(i).padStart(4, "0")}` })) });
    await store.enqueue("bystander", { queue: "elsewhere" });
    const before = (await snapshot()).bystander;
    const server = await startServer({ host: "127.0.0.1", port: 0, databaseUrl: url, auth: "off" });
    try {
      const racers = await Promise.all(OWNERS.map((owner) => racer(url, owner)));
      const httpErrors: unknown[] = [];
      const httpRan: string[] = [];
      const overHttp = new LeaseClient({ baseUrl: server.url });
      for (const one of racers) one.go();
      await runWorker(overHttp, { queue: "race", owner: "http", concurrency: 8, ttlMs: 30_000, onError: (error) => httpErrors.push(error) }, async ({ job }) => {
        httpRan.push(job.id);
        return { by: "http" };
      }).stop({ drain: true });
      const results = await Promise.all(racers.map((one) => one.result));

      expect(results.map((result) => result.errors)).toEqual(OWNERS.map(() => [])); // no SQLITE_BUSY, no lost lease, nothing
      expect(httpErrors).toEqual([]);
      const ranBy = new Map<string, string[]>();
      for (const [i, result] of results.entries()) for (const id of result.ran) ranBy.set(id, [...(ranBy.get(id) ?? []), OWNERS[i]!]);
      for (const id of httpRan) ranBy.set(id, [...(ranBy.get(id) ?? []), "http"]);
      expect(ranBy.size).toBe(JOBS);
      expect([...ranBy.values()].filter((owners) => owners.length !== 1)).toEqual([]); // each handler ran once, in one process
      // Every racer took part: the file was shared, not taken by the first.
      expect(results.filter((result) => result.ran.length > 0).length).toBeGreaterThanOrEqual(3);

      const jobs = await snapshot();
      for (const [id, [owner]] of ranBy) expect(jobs[id]).toMatchObject({ owner, fence: 1, attempts: 1, done: 1, result: JSON.stringify({ by: owner }) });
      expect(jobs.bystander).toEqual(before);
      const events = await rows("SELECT kind, count(*) AS n FROM events WHERE job_id LIKE 'job-%' GROUP BY kind ORDER BY kind");
      expect(events).toEqual([{ kind: "claimed", n: JOBS }, { kind: "completed", n: JOBS }, { kind: "enqueued", n: JOBS }]);
    } finally {
      await server.stop();
    }
  }, 60_000);
});
