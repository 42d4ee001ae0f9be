import type { PushChanges } from "../http/push.ts";
import { PUSH_OWNER } from "../store/sql/claim-next.ts";
import type { LeaseStore } from "../store/store.ts";
import type { Waits } from "../wait/long-poll.ts";
import type { DeliverOptions } from "./deliver.ts";
import { pushWhileDue } from "./push-due.ts";

// Push where no dispatcher waits (the Worker): the write that makes jobs of a
// pushed queue due delivers them itself, after its answer. The HTTP app
// already tells its Waits of every such write (an enqueue, a fail due at once,
// a retry, a resume) and hands what that answers to waitUntil: the Waits
// below deliver there, in rounds, taking again the slots that each round
// frees, for as long as a round can still end within PUSH_AFTER_WRITE_MS.

/** How many due jobs one claim of a write's deliveries takes at most. */
export const MAX_PUSH_AFTER_WRITE = 100;

/**
 * How long after a write its deliveries may go on: a new round starts only
 * if it can end by then (each delivery waits up to its queue's timeoutMs).
 * The runtime ends a Worker's waitUntil 30 s after the answer; the 5 s left
 * are for the claim before and the writes that record the last round. On the
 * Worker in D1 mode it is also the longest timeoutMs a queue may set.
 */
export const PUSH_AFTER_WRITE_MS = 25_000;

/** How long an isolate trusts its list of pushed queues: the most a put made elsewhere waits before writes here push. */
export const PUSHED_QUEUES_TTL_MS = 5_000;

/**
 * The pushed queues of a store, read at most once every `ttlMs` (a Worker's
 * isolate keeps them between requests), so that a write to a queue that is
 * not pushed costs no claim. `forget` reads them again at the next write.
 * The list is kept, not the read's promise: a request of a Worker must not
 * wait on another request's I/O.
 */
export function pushedQueues(store: LeaseStore, ttlMs = PUSHED_QUEUES_TTL_MS): { maxInFlight(queue: string): Promise<number | null>; forget(): void } {
  let known: { at: number; queues: Map<string, number> } | undefined;
  return {
    async maxInFlight(queue) {
      if (!known || performance.now() - known.at >= ttlMs) {
        const at = performance.now();
        const list = await store.push.list();
        known = { at, queues: new Map(list.map((settings) => [settings.queue, settings.maxInFlight])) };
      }
      return known.queues.get(queue) ?? null;
    },
    forget() {
      known = undefined;
    },
  };
}

/**
 * pushAfterWrites wraps `waits` so that a write that makes jobs of a pushed
 * queue due now also delivers them in what it answers, which the app hands to
 * waitUntil: in rounds of up to MAX_PUSH_AFTER_WRITE within the queue's
 * maxInFlight, each claimed when the one before has ended, until nothing more
 * is taken or a round could not end within `windowMs` (PUSH_AFTER_WRITE_MS by
 * default) of the write; the cron (or the queue's alarm) delivers the rest.
 * Deliveries tell the plain `waits` what they wrote: a failure due at once
 * goes out in the next round, not in a write of its own.
 * `maxTimeoutMs`, when given (the Worker in D1 mode): no delivery waits
 * longer, and a push put through the app with a longer timeoutMs is refused
 * (`timeoutMs` of the answer, read by the push routes).
 * `changed` is what the push routes call after a put, rotate or delete;
 * `maxInFlight` answers a queue's, or null when it is not pushed (`ttlMs`:
 * how long the list of pushed queues is trusted, PUSHED_QUEUES_TTL_MS by default).
 */
export function pushAfterWrites(
  waits: Waits,
  options: Omit<DeliverOptions, "waits"> & { ttlMs?: number; windowMs?: number; maxTimeoutMs?: number },
): PushChanges & { waits: Waits; maxInFlight(queue: string): Promise<number | null> } {
  const pushed = pushedQueues(options.store, options.ttlMs);
  const { windowMs = PUSH_AFTER_WRITE_MS, maxTimeoutMs } = options;
  const deliverDue = async (queue: string, due: number | "some", endBy: number) => {
    const maxInFlight = await pushed.maxInFlight(queue);
    if (maxInFlight === null) return;
    const limit = Math.min(MAX_PUSH_AFTER_WRITE, maxInFlight);
    await pushWhileDue(queue, { ...options, waits, first: due === "some" ? limit : Math.min(limit, due), limit, endBy, maxTimeoutMs });
  };
  /** Delivers what is due, alongside the ring of the plain waits; a failure is logged, never thrown at the write. */
  const alongside = (rung: void | Promise<void>, queue: string, due: number | "some") => {
    const endBy = performance.now() + windowMs;
    const pushing = deliverDue(queue, due, endBy).catch((error: unknown) => options.log?.(`fencelease: pushing the jobs of ${JSON.stringify(queue)} failed: ${(error as Error).message}`));
    return Promise.all([rung, pushing]).then(() => undefined);
  };
  return {
    waits: {
      ...waits,
      claimable(queue, due, at) {
        const rung = waits.claimable(queue, due, at);
        return due === 0 ? rung : alongside(rung, queue, due);
      },
      // A pushed lease ended through the API (its endpoint answered 202 and settled later): its slot of
      // maxInFlight is free, and without this the jobs it held back would wait for the next enqueue or the cron.
      ended(queue, owner) {
        const rung = waits.ended(queue, owner);
        return owner === PUSH_OWNER ? alongside(rung, queue, "some") : rung;
      },
    },
    changed() {
      pushed.forget();
    },
    maxInFlight: (queue) => pushed.maxInFlight(queue),
    ...(maxTimeoutMs !== undefined && {
      timeoutMs: { max: maxTimeoutMs, because: `on the Cloudflare Worker, a delivery must end within the waitUntil of the request that starts it, which the runtime ends 30 s after the answer` },
    }),
  };
}
