import type { DurableObjectNamespace, DurableObjectState, DurableObjectStub } from "@cloudflare/workers-types";
import { StorageUnavailable } from "../../store/errors.ts";
import { LeaseStore } from "../../store/store.ts";
import { driverFor, number, type WorkerEnv } from "./env.ts";
import { answered, type Claimed, giveBack, localWaits, type WaitingClaim, type Waits } from "../../wait/long-poll.ts";
import { WaitRoom } from "../../wait/wait-room.ts";

/** What a write tells a queue's object: `due` jobs claimable now ("some": unknown), the next of the others at `at`. */
type Ring = { queue: string; due: number | "some"; at?: number };

/**
 * QueueDoorbell is the Durable Object of one queue (one object per queue name):
 * where the Worker's waiting claims of that queue wait, and what the Worker's
 * writes ring once their batch has committed (enqueue, release, fail, retry,
 * and the cron for the leases it ends). It runs the very waits of the Node
 * server, a WaitRoom and the one claim-next statement over the same D1 (or
 * libSQL) database, so one single-threaded object sees its queue's waiters and
 * rings in one order: a ring can never fall between a waiter's empty claim and
 * its sleep. Its own storage is unused: a later step can keep the queue's rows
 * there and run the same statements on it (docs/scale.md).
 *
 * Requests (fetch, JSON, from the Worker only): POST /claim with a
 * WaitingClaim answers Claimed; POST /ring with a Ring answers 204.
 *
 * Guarantees: those of WaitRoom (first come first served, one waiter woken per
 * job, no missed ring, at most MAX_WAITING waiters, here per queue), and the
 * claim is the same conditional statement as every other claim, so it decides
 * against all of them. A caller whose request is cancelled (its client gone,
 * which cancels the Worker's request to this object) stops waiting, and what
 * its claim took by then is released.
 *
 * Failure modes:
 * - A ring lost on its way (the Worker's waitUntil cut short, this object
 *   restarting): its waiters wake at the next ring, their timer, or the end of
 *   their waitMs, after which the client asks again. The cron rings every
 *   minute for the leases it ends.
 * - Writes that do not pass through the Worker (a Node server on the same
 *   Turso database, plain SQL) ring nothing here and there is no re-check: a
 *   waiter sees them at its next claim, at the latest when its waitMs ends.
 * - Leases taken outside this object (a claim by id, a `next`) are not timed
 *   here: their end is seen at a waiter's next claim, or rung by the cron.
 * - A lease that a complete, fail or release ends rings no object (that would
 *   cost a request per completion): a claim held back by its queue's
 *   maxLeased takes the freed slot at its timer (the first lease's end) or
 *   its next claim, at the latest when its waitMs ends. A claim held back by
 *   the rate limit wakes at the next token, as on Node.
 * - The object fails or restarts while claims wait: they end with an error,
 *   which the Worker answers 503 `unavailable` (outcome unknown).
 */
export class QueueDoorbell {
  readonly #room: WaitRoom;
  readonly #waits: Waits;

  constructor(_state: DurableObjectState, env: WorkerEnv) {
    this.#room = new WaitRoom({ maxWaiting: number(env.MAX_WAITING), recheckMs: 0 });
    this.#waits = localWaits(new LeaseStore(driverFor(env)), this.#room, Date.now);
  }

  /** How many claims wait here now. */
  get waiting(): number {
    return this.#room.waiting;
  }

  /** Serves the Worker's /claim and /ring. */
  async fetch(request: Request): Promise<Response> {
    const { pathname } = new URL(request.url);
    try {
      if (request.method === "POST" && pathname === "/claim") {
        return Response.json(await this.#waits.claimNext((await request.json()) as WaitingClaim, request.signal));
      }
      if (request.method === "POST" && pathname === "/ring") {
        const { queue, due, at } = (await request.json()) as Ring;
        await this.#waits.claimable(queue, due, at);
        return new Response(null, { status: 204 });
      }
      return new Response("no such route", { status: 404 });
    } catch (error) {
      return new Response(`the queue's doorbell failed: ${(error as Error).message}`, { status: 503 });
    }
  }
}

/**
 * durableWaits are the Worker's waits with a QueueDoorbell binding: a waiting
 * claim first claims here (no hop to the object when a job is due), then waits
 * in its queue's object; rings go to that object. Reads waiting for a result
 * wait in their own request (`inRequest`, see requestWaits), re-reading every
 * second: completions ring no object, so that they cost no extra request.
 */
export function durableWaits(namespace: DurableObjectNamespace, store: LeaseStore, inRequest: Waits, clock: () => number): Waits {
  const object = (queue: string) => namespace.get(namespace.idFromName(queue));
  return {
    async claimNext(claim, signal) {
      const started = performance.now();
      const leases = await store.claimNext(claim.queue, { owner: claim.owner, ttlMs: claim.ttlMs, limit: claim.limit, now: clock() });
      // Taken, or no token before the wait would end: no hop to the object.
      if (leases.length > 0 || (leases.retryAfterMs ?? 0) >= claim.waitMs) return answered(leases, 0);
      const spent = Math.floor(performance.now() - started);
      const claimed = await waitInObject(object(claim.queue), { ...claim, waitMs: Math.max(0, claim.waitMs - spent) }, signal);
      if (signal.aborted && claimed.leases.length > 0) {
        // The client went while the answer was on its way: it is handed nothing.
        const released = await giveBack(store, claimed.leases, claim.owner, clock());
        await ring(object(claim.queue), { queue: claim.queue, due: released });
        return { leases: [], waitedMs: spent + claimed.waitedMs };
      }
      return { ...claimed, waitedMs: spent + claimed.waitedMs };
    },
    job: (id, waitMs, signal) => inRequest.job(id, waitMs, signal),
    claimable: (queue, due, at) => ring(object(queue), { queue, due, at }),
    finished() {},
    ended() {}, // see QueueDoorbell: a completion rings no object
  };
}

/** Waits in a queue's object; its failure is a 503 whose outcome is unknown (its claim may have run). */
async function waitInObject(stub: DurableObjectStub, claim: WaitingClaim, signal: AbortSignal): Promise<Claimed> {
  let response;
  try {
    response = await stub.fetch("https://doorbell/claim", { method: "POST", body: JSON.stringify(claim), signal: signal as never });
  } catch (error) {
    if (signal.aborted) return { leases: [], waitedMs: 0 }; // given up with its client: the object released what it took
    throw new StorageUnavailable(error, "unknown");
  }
  if (!response.ok) throw new StorageUnavailable(new Error(await response.text()), "unknown");
  return (await response.json()) as Claimed;
}

/** Rings a queue's object; answers once it has been rung. */
async function ring(stub: DurableObjectStub, what: Ring): Promise<void> {
  const response = await stub.fetch("https://doorbell/ring", { method: "POST", body: JSON.stringify(what) });
  if (!response.ok) throw new Error(`the queue's doorbell answered ${response.status}: ${await response.text()}`);
}
