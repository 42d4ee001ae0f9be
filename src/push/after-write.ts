import type { LeaseStore } from "../store/store.ts";
import type { Waits } from "../wait/long-poll.ts";
import type { DeliverOptions } from "./deliver.ts";
import { pushDue } from "./push-due.ts";

// Push where no dispatcher waits (the Worker): the write that makes jobs of a
// pushed queue due delivers them itself, after its answer. The HTTP app
// already tells its Waits of every such write (an enqueue, a fail due at once,
// a retry, a resume) and hands what that answers to waitUntil: the Waits
// below deliver there.

/** How many due jobs the waitUntil of one write delivers at most. */
export const MAX_PUSH_AFTER_WRITE = 100;

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
 * queue due now also delivers them (up to MAX_PUSH_AFTER_WRITE, within the
 * queue's maxInFlight) in what it answers, which the app hands to waitUntil.
 * Deliveries tell the plain `waits` what they wrote, so that a failure due at
 * once waits for the next write or the cron rather than loop in one request.
 * `changed` is what the push routes call after a put, rotate or delete;
 * `maxInFlight` answers a queue's, or null when it is not pushed (`ttlMs`:
 * how long the list of pushed queues is trusted, PUSHED_QUEUES_TTL_MS by default).
 */
export function pushAfterWrites(waits: Waits, options: Omit<DeliverOptions, "waits"> & { ttlMs?: number }): { waits: Waits; changed(queue: string): void; maxInFlight(queue: string): Promise<number | null> } {
  const pushed = pushedQueues(options.store, options.ttlMs);
  const deliverDue = async (queue: string, due: number | "some") => {
    const maxInFlight = await pushed.maxInFlight(queue);
    if (maxInFlight === null) return;
    await pushDue(queue, { ...options, waits, limit: Math.min(MAX_PUSH_AFTER_WRITE, due === "some" ? maxInFlight : due) });
  };
  return {
    waits: {
      ...waits,
      claimable(queue, due, at) {
        const rung = waits.claimable(queue, due, at);
        if (due === 0) return rung;
        const pushing = deliverDue(queue, due).catch((error: unknown) => options.log?.(`fencelease: pushing the jobs of ${JSON.stringify(queue)} failed: ${(error as Error).message}`));
        return Promise.all([rung, pushing]).then(() => undefined);
      },
    },
    changed() {
      pushed.forget();
    },
    maxInFlight: (queue) => pushed.maxInFlight(queue),
  };
}
