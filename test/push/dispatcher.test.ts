import { describe, expect, test } from "vitest";
import { wakeWith } from "../../src/wait/wake.ts";
import { PushDispatcher } from "../../src/push/dispatcher.ts";
import { PUSH_OWNER } from "../../src/store/sql/claim-next.ts";
import type { LeaseStore } from "../../src/store/store.ts";
import { localWaits } from "../../src/wait/long-poll.ts";
import { WaitRoom } from "../../src/wait/wait-room.ts";
import { freshStore } from "../fresh-db.ts";
import { answerWith, type Received, startEndpoint } from "./endpoint.ts";

// The Node server's dispatcher, as the server wires it (a WaitRoom, its
// Waits over the store), against real endpoints on 127.0.0.1 and a real
// database file: what wakes it, and how many claims it spends. Its claims are
// counted at store.push.claim: a dispatcher that claims in a loop shows there
// as hundreds of claims where a few are due.

/** A dispatcher over `store` in a room of its own, as one server process has it, with its push claims counted. */
async function dispatching(store: LeaseStore, options: { recheckMs?: number; refreshMs?: number } = {}) {
  const room = new WaitRoom({ recheckMs: options.recheckMs ?? 0 });
  const waits = localWaits(store, room, Date.now);
  const counted = { claims: 0 };
  const claim = store.push.claim.bind(store.push);
  store.push.claim = (queue, request) => {
    counted.claims++;
    return claim(queue, request);
  };
  const dispatcher = new PushDispatcher({ store, room, waits, clock: Date.now, refreshMs: options.refreshMs ?? 0 });
  await dispatcher.start();
  return {
    store,
    waits,
    dispatcher,
    counted,
    async stop() {
      await dispatcher.stop(0);
      room.stop();
    },
  };
}

/**
 * Queue "mail" pushed to `url` with one slot, and a dispatcher on it; `enqueue`
 * rings as the API's enqueue does, and `workerWaitingFor` starts a long poll
 * of the queue, lets its first claim find nothing, then enqueues `id`.
 */
async function pushedAndPolled(url: string) {
  const { store } = await freshStore();
  await store.push.put("mail", { url, timeoutMs: 10_000, maxInFlight: 1 });
  const pushing = await dispatching(store);
  const enqueue = async (id: string) => {
    const now = Date.now();
    await store.enqueue(id, { queue: "mail", now });
    await wakeWith(pushing.waits).enqueued("mail", [now], now);
  };
  const workerWaitingFor = async (id: string) => {
    const worker = pushing.waits.claimNext({ queue: "mail", owner: "worker", ttlMs: 60_000, limit: 1, waitMs: 3_000 }, new AbortController().signal);
    await sleep(50); // its first claim found nothing: it waits behind the dispatcher
    await enqueue(id);
    return worker;
  };
  return { ...pushing, enqueue, workerWaitingFor };
}

/** Waits until `ready` holds, checking every 10 ms, for at most `ms`. */
async function until(ready: () => boolean, ms = 5_000): Promise<void> {
  const deadline = performance.now() + ms;
  while (!ready()) {
    if (performance.now() > deadline) throw new Error(`not within ${ms} ms`);
    await sleep(10);
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The id of the job a request delivered, and the lease it carried. */
const leaseOf = (request: Received) => ({
  id: decodeURIComponent(request.headers["fencelease-job-id"] as string),
  owner: decodeURIComponent(request.headers["fencelease-owner"] as string),
  fence: Number(request.headers["fencelease-fence"]),
});

describe("the push dispatcher", () => {
  test("two dispatchers on one file, whose one slot a 202 lease holds, claim a few times per event, never in a loop", async () => {
    const endpoint = await startEndpoint(answerWith(202));
    const { store, reopen } = await freshStore();
    await store.push.put("mail", { url: endpoint.url, timeoutMs: 10_000, maxInFlight: 1 });
    for (const [i, id] of ["job-1", "job-2", "job-3"].entries()) await store.enqueue(id, { queue: "mail", priority: -i });
    const one = await dispatching(store, { recheckMs: 50 });
    const two = await dispatching(await reopen(), { recheckMs: 50 });
    try {
      // Each job is answered 202 and holds the slot, here for 300 ms, until the test ends its lease as
      // the endpoint would through the API of server one: that frees the slot, and server one claims at once.
      for (let i = 1; i <= 3; i++) {
        await until(() => endpoint.received.length === i);
        await sleep(300);
        const { id, owner, fence } = leaseOf(endpoint.received[i - 1]!);
        expect((await one.store.complete(id, { owner, fence, result: '"done"' })).changed).toBe(true);
        wakeWith(one.waits).ended(["mail"], owner);
      }
      await sleep(300); // nothing more to deliver: a loop would go on claiming here
      expect(endpoint.received.map((request) => leaseOf(request).id)).toEqual(["job-1", "job-2", "job-3"]);
      expect(endpoint.received.map((request) => leaseOf(request).owner)).toEqual([PUSH_OWNER, PUSH_OWNER, PUSH_OWNER]);
      // Per event (a claim, a 202 recorded, a complete; each seen by the other's re-check), a claim or two.
      expect(one.counted.claims + two.counted.claims).toBeLessThanOrEqual(30);
    } finally {
      await Promise.all([one.stop(), two.stop()]);
    }
  });

  test("an idle pushed queue is not claimed at each refresh of the settings; a larger maxInFlight put by another process is", async () => {
    const endpoint = await startEndpoint(answerWith(202));
    const { store, reopen } = await freshStore();
    await store.push.put("mail", { url: endpoint.url, maxInFlight: 1 });
    const pushing = await dispatching(store, { refreshMs: 20 });
    try {
      await sleep(300);
      expect(pushing.counted.claims).toBe(1); // its first look, when it started
      await store.enqueue("job-1", { queue: "mail" });
      await store.enqueue("job-2", { queue: "mail", priority: -1 });
      pushing.waits.claimable("mail", 2);
      await until(() => endpoint.received.length === 1);
      await sleep(100);
      expect(endpoint.received).toHaveLength(1); // job-2 waits for the slot
      // Another process raises maxInFlight: nothing rings here, the refresh finds it and claims.
      await (await reopen()).push.put("mail", { url: endpoint.url, maxInFlight: 2 });
      await until(() => endpoint.received.length === 2, 1_000);
      expect(leaseOf(endpoint.received[1]!).id).toBe("job-2");
    } finally {
      await pushing.stop();
    }
  });

  test("while its deliveries fill the queue's slots, an enqueue's ring passes the dispatcher by and wakes the worker waiting after it", async () => {
    const endpoint = await startEndpoint(answerWith(200, { ok: true }, {}, 2_000)); // slow: its one slot stays taken
    const pushing = await pushedAndPolled(endpoint.url);
    try {
      await pushing.enqueue("job-1");
      await until(() => endpoint.received.length === 1); // on its way: the dispatcher has no delivery free
      const claimsBefore = pushing.counted.claims;
      const claimed = await pushing.workerWaitingFor("job-2");
      expect(claimed.waitedMs).toBeLessThan(1_000); // rung, not answered at its deadline
      expect(claimed.leases.map((lease) => lease.job.id)).toEqual(["job-2"]);
      expect(pushing.counted.claims).toBe(claimsBefore); // the dispatcher, with no delivery free, claimed nothing
      expect(endpoint.received).toHaveLength(1);
    } finally {
      await pushing.stop();
    }
  });

  test("while 202 leases hold the queue's slots, a dispatcher that was rung and took nothing hands the ring on to the worker waiting after it", async () => {
    const endpoint = await startEndpoint(answerWith(202));
    const pushing = await pushedAndPolled(endpoint.url);
    try {
      await pushing.enqueue("job-1");
      await until(() => endpoint.received.length === 1);
      await until(() => pushing.dispatcher.inFlight === 0); // answered 202: the endpoint holds the slot, not a delivery
      const claimed = await pushing.workerWaitingFor("job-2");
      expect(claimed.waitedMs).toBeLessThan(1_000);
      expect(claimed.leases.map((lease) => lease.job.id)).toEqual(["job-2"]);
      expect((await pushing.store.get("job-1")).owner).toBe(PUSH_OWNER); // the endpoint's lease is untouched
      expect(endpoint.received).toHaveLength(1);
    } finally {
      await pushing.stop();
    }
  });

  test("a lower maxInFlight reaches its place in the room: a ring of more jobs than it may take wakes the workers waiting after it", async () => {
    const endpoint = await startEndpoint(answerWith(202));
    const { store } = await freshStore();
    await store.push.put("mail", { url: endpoint.url, maxInFlight: 5 });
    const pushing = await dispatching(store);
    try {
      await store.push.put("mail", { url: endpoint.url, maxInFlight: 1 });
      await pushing.dispatcher.changed("mail");
      let workerClaims = 0;
      const claimNext = store.claimNext.bind(store);
      store.claimNext = (queue, request) => {
        workerClaims++;
        return claimNext(queue, request);
      };
      const worker = pushing.waits.claimNext({ queue: "mail", owner: "worker", ttlMs: 60_000, limit: 3, waitMs: 3_000 }, new AbortController().signal);
      await until(() => workerClaims === 1); // its first claim found nothing: it waits behind the dispatcher
      const now = Date.now();
      for (const id of ["job-1", "job-2", "job-3"]) await store.enqueue(id, { queue: "mail", now });
      await wakeWith(pushing.waits).enqueued("mail", [now, now, now], now);
      const claimed = await worker;
      expect(claimed.waitedMs).toBeLessThan(1_000); // rung, not answered at its deadline
      expect(claimed.leases.length).toBeGreaterThanOrEqual(2); // the dispatcher takes one at most
      await until(() => claimed.leases.length + endpoint.received.length === 3); // the dispatcher's one reaches its endpoint
      expect(claimed.leases.length + endpoint.received.length).toBe(3);
    } finally {
      await pushing.stop();
    }
  });
});
