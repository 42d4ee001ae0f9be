import { describe, expect, test } from "vitest";
import { CRON_SCHEDULE_CHUNKS, fireOnTime, maintain, maintainedLine, repeat, wakeAfter } from "../../src/store/maintenance.ts";
import { HOUSEKEEPING_CHUNK } from "../../src/store/store.ts";
import { inChunks } from "../../src/store/in-chunks.ts";
import type { Waits } from "../../src/wait/long-poll.ts";
import { freshStore } from "../fresh-db.ts";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("repeat, the Node server's maintenance timer", () => {
  test("runs one at a time: a run slower than the period delays the next, never overlaps it", async () => {
    let running = 0;
    let most = 0;
    let runs = 0;
    const timer = repeat(2, async () => {
      runs++;
      most = Math.max(most, ++running);
      await sleep(25);
      running--;
    });
    await sleep(200);
    await timer.stop();
    expect(most).toBe(1);
    expect(runs).toBeGreaterThanOrEqual(3);
    expect(runs).toBeLessThanOrEqual(9); // each run waits out its 25 ms before the next one's 2 ms
  });

  test("stop aborts the run in progress, waits for it to end, and starts no other", async () => {
    const seen: string[] = [];
    const timer = repeat(1, async (signal) => {
      seen.push("start");
      while (!signal.aborted) await sleep(1);
      await sleep(10);
      seen.push("end");
    });
    await sleep(20);
    await timer.stop();
    expect(seen).toEqual(["start", "end"]);
    await sleep(20);
    expect(seen).toEqual(["start", "end"]);
  });

  test("a run that throws does not stop the next ones", async () => {
    let runs = 0;
    const timer = repeat(1, async () => {
      runs++;
      throw new Error("disk full");
    });
    await sleep(50);
    await timer.stop();
    expect(runs).toBeGreaterThanOrEqual(2);
  });
});

/** Waits that record what they are told, and wait for nothing. */
function recordingWaits() {
  const rung: [string, number | "some"][] = [];
  const finished: string[] = [];
  const waits: Waits = {
    claimNext: () => Promise.reject(new Error("not waited on here")),
    job: () => Promise.reject(new Error("not waited on here")),
    claimable: (queue, due) => void rung.push([queue, due]),
    finished: (ids) => void finished.push(...ids),
    ended: () => {},
  };
  return { waits, rung, finished };
}

describe("schedules in the maintenance", () => {
  const T = Date.UTC(2026, 10, 30, 2, 59, 30);
  const AT_3 = Date.UTC(2026, 10, 30, 3, 0, 0);

  test("maintain enqueues the due schedules' jobs, the log line names them, and wakeAfter rings their queues", async () => {
    const { store, snapshot } = await freshStore();
    await store.schedules.put("nightly", { queue: "reports", cron: "0 3 * * *", now: T });
    await store.schedules.put("tick", { queue: "q", cron: "* * * * *", now: T });
    await store.schedules.put("later", { queue: "q", cron: "0 4 * * *", now: T });
    expect((await maintain(store, AT_3 - 1)).fired).toEqual([]);
    const done = await maintain(store, AT_3);
    expect(done.fired).toEqual([{ id: "nightly@2026-11-30T03:00:00.000Z", queue: "reports" }, { id: "tick@2026-11-30T03:00:00.000Z", queue: "q" }]);
    expect(Object.keys(await snapshot())).toEqual(["nightly@2026-11-30T03:00:00.000Z", "tick@2026-11-30T03:00:00.000Z"]);
    expect(maintainedLine(done)).toBe("fencelease: ended 0 expired leases, purged 0 old jobs, enqueued 2 scheduled jobs (nightly@2026-11-30T03:00:00.000Z, tick@2026-11-30T03:00:00.000Z)");
    const { waits, rung, finished } = recordingWaits();
    await wakeAfter(done, waits);
    expect(rung).toEqual([["reports", 1], ["q", 1]]);
    expect(finished).toEqual([]);
  });

  test("a fire that finds its job's id taken is named in maintain's answer and log line, and in the schedule timer's log", async () => {
    const { store, exec } = await freshStore();
    await store.schedules.put("nightly", { queue: "reports", cron: "0 3 * * *", now: T });
    await store.schedules.put("tick", { queue: "q", cron: "* * * * *", now: T });
    await exec(`INSERT INTO jobs (id, queue, created_at, updated_at) VALUES ('nightly@2026-11-30T03:00:00.000Z', 'reports', ${T}, ${T})`); // from before such ids were refused
    const done = await maintain(store, AT_3);
    expect(done).toMatchObject({ fired: [{ id: "tick@2026-11-30T03:00:00.000Z", queue: "q" }], taken: [{ name: "nightly", id: "nightly@2026-11-30T03:00:00.000Z" }] });
    expect(maintainedLine(done)).toBe(
      'fencelease: ended 0 expired leases, purged 0 old jobs, enqueued 1 scheduled job (tick@2026-11-30T03:00:00.000Z); 1 scheduled fire enqueued nothing: a job had the id already ("nightly@2026-11-30T03:00:00.000Z")',
    );

    await exec(`INSERT INTO jobs (id, queue, created_at, updated_at) VALUES ('tick@2026-11-30T03:01:00.000Z', 'q', ${T}, ${T})`);
    const lines: string[] = [];
    const timer = fireOnTime(store, { clock: () => AT_3 + 60_000, waits: recordingWaits().waits, recheckMs: 60_000, log: (line) => lines.push(line) });
    for (const started = Date.now(); lines.length === 0 && Date.now() - started < 10_000; ) await sleep(5);
    await timer.stop();
    expect(lines).toEqual(['fencelease: 1 scheduled fire enqueued nothing: a job had the id already ("tick@2026-11-30T03:01:00.000Z")']);
  });

  test("a run told schedules: false (the Node server, whose schedule timer fires them) leaves a due schedule to that timer", async () => {
    const { store, snapshot } = await freshStore();
    await store.schedules.put("nightly", { queue: "reports", cron: "0 3 * * *", now: T });
    expect(await maintain(store, AT_3, undefined, { schedules: false })).toEqual({ expired: 0, purged: 0, ended: [], fired: [], taken: [], skipped: [] });
    expect(await snapshot()).toEqual({});
    expect((await store.schedules.get("nightly")).nextFireAt).toBe(AT_3); // still due, for the timer
  });

  test("a run with bounded chunks (the Worker's cron) fires at most CRON_SCHEDULE_CHUNKS chunks of schedules; the next run fires the rest", async () => {
    const { store, exec } = await freshStore();
    const many = CRON_SCHEDULE_CHUNKS * HOUSEKEEPING_CHUNK + 3;
    await exec(`WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < ${many} - 1)
                INSERT INTO schedules (name, queue, every_ms, next_fire_at, created_at, updated_at) SELECT 's-' || i, 'q', 30000, ${AT_3}, ${T}, ${T} FROM n`);
    expect((await maintain(store, AT_3, undefined, { maxChunks: 10 })).fired).toHaveLength(CRON_SCHEDULE_CHUNKS * HOUSEKEEPING_CHUNK);
    expect((await maintain(store, AT_3, undefined, { maxChunks: 10 })).fired).toHaveLength(3);
    expect((await maintain(store, AT_3)).fired).toEqual([]);
  });

  test("the Node server's timer fires a schedule at its time, not a recheck later, and rings its queue", async () => {
    const { store, snapshot } = await freshStore();
    const { waits, rung } = recordingWaits();
    const lines: string[] = [];
    const putAt = Date.now();
    await store.schedules.put("beat", { queue: "q", everyMs: 1_000, now: putAt });
    const timer = fireOnTime(store, { clock: Date.now, waits, recheckMs: 60_000, log: (line) => lines.push(line) });
    try {
      for (const started = Date.now(); rung.length === 0 && Date.now() - started < 10_000; ) await sleep(5);
    } finally {
      await timer.stop();
    }
    const id = `beat@${new Date(putAt + 1_000).toISOString()}`;
    expect(rung).toEqual([["q", 1]]);
    expect(lines).toEqual([`fencelease: enqueued 1 scheduled job (${id})`]);
    const job = (await snapshot())[id]!;
    // Enqueued at its time or just after (the timer slept until then, not the 60 s recheck), never before.
    expect(job.created_at as number).toBeGreaterThanOrEqual(putAt + 1_000);
    expect(job.created_at as number).toBeLessThan(putAt + 1_000 + 5_000);
  });

  test("the timer logs a failed run and goes on", async () => {
    const { store } = await freshStore();
    const { waits } = recordingWaits();
    const lines: string[] = [];
    store.close();
    const timer = fireOnTime(store, { clock: Date.now, waits, recheckMs: 5, log: (line) => lines.push(line) });
    for (const started = Date.now(); lines.length < 2 && Date.now() - started < 5_000; ) await sleep(5);
    await timer.stop();
    expect(lines.length).toBeGreaterThanOrEqual(2);
    expect(lines[0]).toMatch(/^fencelease: firing schedules failed: /);
  });
});

describe("inChunks, how housekeeping and the schedules' fires split their work", () => {
  /** A chunk that records each size it is given and answers full until `full` run out. */
  const chunks = (full: number) => {
    const sizes: number[] = [];
    const chunk = async (size: number) => {
      sizes.push(size);
      return sizes.length <= full;
    };
    return { sizes, chunk };
  };

  test("runs chunks of chunkSize (HOUSEKEEPING_CHUNK by default) until one is not full", async () => {
    const given = chunks(2);
    await inChunks({ chunkSize: 7 }, given.chunk);
    expect(given.sizes).toEqual([7, 7, 7]);
    const byDefault = chunks(0);
    await inChunks({}, byDefault.chunk);
    expect(byDefault.sizes).toEqual([HOUSEKEEPING_CHUNK]);
  });

  test("runs at most maxChunks, full or not", async () => {
    const given = chunks(10);
    await inChunks({ chunkSize: 1, maxChunks: 3 }, given.chunk);
    expect(given.sizes).toEqual([1, 1, 1]);
  });

  test("runs the first chunk at once, and each next one only after the event loop has turned", async () => {
    const seen: string[] = [];
    const running = inChunks({ chunkSize: 1, maxChunks: 2 }, async () => {
      seen.push("chunk");
      setImmediate(() => seen.push("turn"));
      return true;
    });
    expect(seen).toEqual(["chunk"]); // before the call has yielded once
    await running;
    expect(seen.slice(0, 3)).toEqual(["chunk", "turn", "chunk"]);
  });

  test("runs no chunk once its signal is aborted, and stops after the chunk in hand when it is aborted meanwhile", async () => {
    const before = chunks(10);
    await inChunks({ chunkSize: 1, signal: AbortSignal.abort() }, before.chunk);
    expect(before.sizes).toEqual([]);
    const controller = new AbortController();
    const sizes: number[] = [];
    await inChunks({ chunkSize: 1, signal: controller.signal }, async (size) => {
      sizes.push(size);
      if (sizes.length === 2) controller.abort();
      return true;
    });
    expect(sizes).toEqual([1, 1]);
  });

  test.each([
    [{ chunkSize: 0 }, "chunkSize must be a positive safe integer, got 0"],
    [{ maxChunks: 1.5 }, "maxChunks must be a positive safe integer, got 1.5"],
  ])("refuses %o by name, before any chunk", async (options, message) => {
    const given = chunks(10);
    await expect(inChunks(options, given.chunk)).rejects.toThrow(message);
    expect(given.sizes).toEqual([]);
  });
});

describe("what a maintenance run tells and logs", () => {
  const none = { expired: 0, purged: 0, ended: [], fired: [], taken: [], skipped: [] };

  test("wakeAfter rings each queue once with its leases ended alive and its fires, and finishes the dead ones", async () => {
    const { waits, rung, finished } = recordingWaits();
    const ended = [
      { id: "a", queue: "mail", dead: false },
      { id: "b", queue: "mail", dead: true },
      { id: "c", queue: "ops", dead: false },
    ];
    await wakeAfter({ ended, fired: [{ id: "d", queue: "mail" }] }, waits);
    expect(rung).toEqual([["mail", 2], ["ops", 1]]);
    expect(finished).toEqual(["b"]);
  });

  test("wakeAfter finishes nothing when no lease died, and rings nothing for nothing", async () => {
    const { waits, rung, finished } = recordingWaits();
    let told = 0;
    await wakeAfter({ ended: [{ id: "a", queue: "mail", dead: false }], fired: [] }, { ...waits, finished: () => void told++ });
    expect(told).toBe(0);
    expect(rung).toEqual([["mail", 1]]);
    await wakeAfter({ ended: [], fired: [] }, { ...waits, finished: () => void told++ });
    expect(told).toBe(0);
    expect(finished).toEqual([]);
  });

  test("maintainedLine counts in the singular for one, and names no fires when there are none", () => {
    expect(maintainedLine({ ...none, expired: 1, purged: 1 })).toBe("fencelease: ended 1 expired lease, purged 1 old job");
    expect(maintainedLine({ ...none, expired: 2, purged: 0 })).toBe("fencelease: ended 2 expired leases, purged 0 old jobs");
  });

  test("maintainedLine names the first five fires, taken ids and every skipped schedule, and counts the rest", () => {
    const ids = ["j1", "j2", "j3", "j4", "j5", "j6", "j7"];
    const line = maintainedLine({
      ...none,
      fired: ids.map((id) => ({ id, queue: "q" })),
      taken: ids.slice(0, 6).map((id) => ({ name: "s", id })),
      skipped: [{ name: "a", error: "bad cron" }, { name: "b", error: "bad timezone" }],
    });
    expect(line).toBe(
      "fencelease: ended 0 expired leases, purged 0 old jobs, enqueued 7 scheduled jobs (j1, j2, j3, j4, j5 and 2 more)" +
        '; 6 scheduled fires enqueued nothing: a job had the id already ("j1", "j2", "j3", "j4", "j5" and 1 more)' +
        '; could not fire "a" (bad cron), "b" (bad timezone)',
    );
    expect(maintainedLine({ ...none, fired: [{ id: "j1", queue: "q" }], taken: ids.slice(0, 5).map((id) => ({ name: "s", id })), skipped: [] })).toBe(
      'fencelease: ended 0 expired leases, purged 0 old jobs, enqueued 1 scheduled job (j1); 5 scheduled fires enqueued nothing: a job had the id already ("j1", "j2", "j3", "j4", "j5")',
    );
    expect(maintainedLine({ ...none, taken: [{ name: "s", id: "j1" }] })).toBe('fencelease: ended 0 expired leases, purged 0 old jobs; 1 scheduled fire enqueued nothing: a job had the id already ("j1")');
  });
});
