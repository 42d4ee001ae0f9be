import { describe, expect, test } from "vitest";
import { libsqlFileDriver } from "../../src/drivers/libsql-file.ts";
import { LeaseStore } from "../../src/store/store.ts";
import { waitForJobs } from "../../src/wait/long-poll.ts";
import { type Waiter, WaitRoom } from "../../src/wait/wait-room.ts";
import { freshStore } from "../fresh-db.ts";

// The room alone: who wakes, when, and what a waiter owes. No timers are
// waited on but the few ms of `wakeAt`; everything else is decided by calls.

const FAR = () => performance.now() + 60_000;

/** Enters `n` waiters of `limit` into queue q and puts each to sleep; `woken` lists the indexes woken so far. */
function line(room: WaitRoom, n: number, limit = 1) {
  const woken: number[] = [];
  const waiters = Array.from({ length: n }, (_, i) => {
    const waiter = room.enterQueue("q", limit)!;
    waiter.claiming();
    void waiter.sleep(FAR()).then(() => woken.push(i));
    return waiter;
  });
  return { waiters, woken, settled: () => new Promise((resolve) => setTimeout(resolve, 0)) };
}

describe("WaitRoom", () => {
  test("a ring of 10 jobs wakes the first 10 of 100 waiters, in arrival order, and no other", async () => {
    const room = new WaitRoom({ recheckMs: 0 });
    const { waiters, woken, settled } = line(room, 100);
    room.ring("q", 10);
    await settled();
    expect(woken).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    room.ring("q", 1); // the 10 woken are still on their way to claim: the next job goes to the 11th
    await settled();
    expect(woken.at(-1)).toBe(10);
    for (const waiter of waiters) waiter.leave();
    expect(room.waiting).toBe(0);
  });

  test("a ring counts each waiter's limit: a waiter taking up to 5 covers 5 jobs", async () => {
    const room = new WaitRoom({ recheckMs: 0 });
    const { woken, settled } = line(room, 4, 5);
    room.ring("q", 6);
    await settled();
    expect(woken).toEqual([0, 1]);
  });

  test("a waiter whose limit is 0 for now (a dispatcher with every delivery out) is passed by a ring and a wake; passOn wakes the next, never itself", async () => {
    const room = new WaitRoom({ recheckMs: 0 });
    const { waiters, woken, settled } = line(room, 3);
    waiters[0]!.limit = 0;
    room.ring("q", 1);
    await settled();
    expect(woken).toEqual([1]); // not the first, which could take nothing
    room.wake("q");
    await settled();
    expect(woken).toEqual([1, 2]);
    waiters[2]!.claiming();
    void waiters[2]!.sleep(FAR()).then(() => woken.push(2));
    waiters[0]!.limit = 1;
    waiters[0]!.passOn(); // its claim came back short: the next that may take a job wakes, not itself
    await settled();
    expect(woken).toEqual([1, 2, 2]);
    expect(waiters[0]!.owed).toBe(false);
    for (const waiter of waiters) waiter.leave();
  });

  test("a ring that comes while a waiter claims is kept: its next sleep returns at once", async () => {
    const room = new WaitRoom({ recheckMs: 0 });
    const waiter = room.enterQueue("q", 1)!;
    waiter.claiming(); // its claim runs; the job is committed just after the claim read, and rung
    room.ring("q", 1);
    const started = performance.now();
    await waiter.sleep(FAR());
    expect(performance.now() - started).toBeLessThan(50);
    waiter.claiming();
    expect(waiter.owed).toBe(false);
    waiter.leave();
  });

  test("a waiter that leaves owed, or with a full batch, hands the wake to the next one", async () => {
    const room = new WaitRoom({ recheckMs: 0 });
    const { waiters, woken, settled } = line(room, 3);
    room.ring("q", 1);
    await settled();
    waiters[0]!.leave(); // gone before its claim: its client disconnected
    await settled();
    expect(woken).toEqual([0, 1]);
    waiters[1]!.claiming();
    waiters[1]!.leave(true); // took a full batch: there may be more
    await settled();
    expect(woken).toEqual([0, 1, 2]);
  });

  test("wakeAt keeps the earliest time of a queue with waiters and wakes one waiter then", async () => {
    const now = 1_000_000;
    const room = new WaitRoom({ recheckMs: 0, clock: () => now });
    room.wakeAt("q", now + 10); // nobody waits: nothing to arm
    expect(room.hasTimer("q")).toBe(false);
    const { woken } = line(room, 2);
    room.wakeAt("q", now + 5_000);
    room.wakeAt("q", now + 20);
    room.wakeAt("q", now + 10_000); // later than the one armed: ignored
    expect(room.hasTimer("q")).toBe(true);
    const started = performance.now();
    while (woken.length === 0) await new Promise((resolve) => setTimeout(resolve, 1));
    expect(performance.now() - started).toBeLessThan(1_000);
    expect(woken).toEqual([0]);
    expect(room.hasTimer("q")).toBe(false);
  });

  test("a job due a year ahead arms a timer that does not fire now: no waiter spins on it", async () => {
    const room = new WaitRoom({ recheckMs: 0 });
    const { waiters, woken } = line(room, 1);
    room.wakeAt("q", Date.now() + 365 * 24 * 60 * 60 * 1000); // past the longest delay a timer can take
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(room.hasTimer("q")).toBe(true);
    expect(woken).toEqual([]);
    waiters[0]!.leave();
    expect(room.hasTimer("q")).toBe(false); // the line is gone, and its timer with it
  });

  test("enter answers null beyond maxWaiting and after a stop; a stop wakes every waiter, claims and reads", async () => {
    const room = new WaitRoom({ maxWaiting: 3, recheckMs: 0 });
    const { woken, settled } = line(room, 2);
    const reader = room.enterJob("job-1")!;
    expect(room.enterQueue("q", 1)).toBeNull();
    expect(room.enterJob("job-2")).toBeNull();
    const read = reader.sleep(FAR());
    room.stop();
    await read;
    await settled();
    expect(woken).toEqual([0, 1]);
    expect(reader.stopped).toBe(true);
    expect(room.enterQueue("other", 1)).toBeNull();
  });

  test("the re-check asks once a tick for every line at once, and wakes one waiter of each queue due and every reader of a finished job", async () => {
    const room = new WaitRoom({ recheckMs: 20 });
    const asked: { queues: string[]; jobs: string[] }[] = [];
    room.recheckWith((waiting) => {
      asked.push(waiting);
      return { claimable: [{ queue: "a", at: 0 }, { queue: "b", at: Date.now() + 60_000 }], finished: ["job-1"] };
    });
    const woken: string[] = [];
    const sleep = (waiter: Waiter, name: string) => {
      waiter.claiming();
      void waiter.sleep(FAR()).then(() => woken.push(name));
      return waiter;
    };
    const waiters = [
      sleep(room.enterQueue("a", 1)!, "a1"), sleep(room.enterQueue("a", 1)!, "a2"), sleep(room.enterQueue("b", 1)!, "b1"),
      sleep(room.enterJob("job-1")!, "r1"), sleep(room.enterJob("job-1")!, "r2"), sleep(room.enterJob("job-2")!, "r3"),
    ];
    while (woken.length < 3) await new Promise((resolve) => setTimeout(resolve, 1));
    expect(asked[0]).toEqual({ queues: ["a", "b"], jobs: ["job-1", "job-2"] });
    expect(woken.sort()).toEqual(["a1", "r1", "r2"]); // b's job comes in a minute: its timer is armed
    expect(room.hasTimer("b")).toBe(true);
    for (const waiter of waiters) waiter.leave();
    const ticks = asked.length;
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(asked.length).toBe(ticks); // nobody waits: no tick
  });

  test("a re-check that fails is dropped, and the next tick asks again", async () => {
    const room = new WaitRoom({ recheckMs: 10 });
    let calls = 0;
    room.recheckWith(() => {
      if (++calls === 1) throw new Error("the database is busy");
      return { claimable: [{ queue: "q", at: 0 }], finished: [] };
    });
    const { waiters, woken } = line(room, 1);
    while (woken.length === 0) await new Promise((resolve) => setTimeout(resolve, 1));
    expect(calls).toBeGreaterThanOrEqual(2);
    waiters[0]!.leave();
  });

  test("finished wakes every reader of that job and no other", async () => {
    const room = new WaitRoom({ recheckMs: 0 });
    const readers: Waiter[] = [room.enterJob("a")!, room.enterJob("a")!, room.enterJob("b")!];
    const woken: number[] = [];
    readers.forEach((reader, i) => void reader.sleep(FAR()).then(() => woken.push(i)));
    room.finished(["a"]);
    await new Promise((resolve) => setTimeout(resolve, 0));
    expect(woken.sort()).toEqual([0, 1]);
  });
});

/** A store whose claim-next runs `after` once it has answered: the moment between a claim and its answer. */
class GatedStore extends LeaseStore {
  after = () => {};
  override async claimNext(...args: Parameters<LeaseStore["claimNext"]>) {
    const leases = await super.claimNext(...args);
    this.after();
    return leases;
  }
}

describe("waitForJobs", () => {
  test("a client gone between its claim and the answer is handed nothing: what it took is released, the attempt given back, for the next waiter", async () => {
    const fresh = await freshStore();
    const store = new GatedStore(libsqlFileDriver(fresh.url.slice("file:".length)));
    const room = new WaitRoom({ recheckMs: 0 });
    const gone = new AbortController();
    store.after = () => gone.abort(); // the client disconnects while its claim is answered
    await store.enqueue("job-1", { queue: "q" });
    const next = room.enterQueue("q", 1)!; // another waiter, behind it
    next.claiming();
    const nextWoken = next.sleep(FAR());
    const { leases } = await waitForJobs(store, room, { queue: "q", owner: "gone", ttlMs: 60_000, limit: 1, waitMs: 5_000 }, Date.now, gone.signal);
    expect(leases).toEqual([]);
    expect((await fresh.snapshot())["job-1"]).toMatchObject({ owner: null, until: 0, fence: 1, attempts: 0, last_event: "released" });
    await nextWoken; // the job was handed on
    expect(next.owed).toBe(true);
    next.leave();
    store.close();
  });
});
