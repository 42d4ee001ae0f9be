import type { Job, Lease } from "../store/job.ts";
import type { ClaimedLeases, LeaseStore } from "../store/store.ts";
import { MAX_WAITING, type Recheck, type Rechecked, WaitRoom } from "./wait-room.ts";

// Nothing here imports the store itself, only its type: the client's calls in
// the same process (src/client/in-process/) wait here too, over a store its
// caller passes, and the client must not load the store's code.

/** What the waits read and write: the claim, the reads the re-check makes, and the release of leases nobody will take. */
export type WaitingStore = Pick<LeaseStore, "claimNext" | "release" | "get" | "nextClaimableAt" | "nextClaimableAtEach" | "finishedOf" | "dataVersion">;

/** A claim-next that may wait: up to `limit` jobs of `queue`, waiting at most `waitMs` for the first. */
export type WaitingClaim = { queue: string; owner: string; ttlMs: number; limit: number; waitMs: number };

/**
 * What a waiting claim answers: the leases, and how long it waited before the
 * claim that took them (whole ms, rounded down), so that a client can put the
 * start of its leases no earlier than its send time plus `waitedMs`; and, when
 * its last claim was stopped short by the queue's rate limit, in how many ms
 * from then the next token is due (`retryAfterMs`).
 */
export type Claimed = { leases: Lease[]; waitedMs: number; retryAfterMs?: number };

/**
 * What the HTTP app needs to wait, and to tell waiters what its writes did.
 * `claimNext` and `job` are the long polls; the others are called after a
 * write's batch has committed, and may answer a promise (a ring sent to a
 * Durable Object) that the app lets finish after its answer.
 */
export type Waits = {
  /** Claims as claim-next does, waiting up to `waitMs` while none is due; [] when none came. */
  claimNext(claim: WaitingClaim, signal: AbortSignal): Promise<Claimed>;
  /** Reads job `id`, waiting up to `waitMs` for it to be done, dead or cancelled; NotFound if there is none. */
  job(id: string, waitMs: number, signal: AbortSignal): Promise<Job>;
  /** `due` jobs of `queue` are claimable now ("some": how many is unknown), and the next of the others at `at`. */
  claimable(queue: string, due: number | "some", at?: number): void | Promise<void>;
  /** These jobs are done, dead, cancelled or deleted. */
  finished(ids: string[]): void;
  /**
   * A lease of `queue` held by `owner` ended (completed, failed, released): a
   * claim its maxLeased held back may take the slot, and so may a push
   * delivery its maxInFlight held back when `owner` is the push owner.
   */
  ended(queue: string, owner: string): void | Promise<void>;
  /** How many long polls wait here now, where this process can tell (the `fencelease_waiting_requests` gauge). */
  waiting?: (() => number) | undefined;
};

/** Whether a job's result is final: done, cancelled, or dead (a retry can still bring it back). */
export function isFinished(job: Job): boolean {
  return job.status === "done" || job.status === "dead" || job.status === "cancelled";
}

const NOTHING: Rechecked = { claimable: [], finished: [] };

/**
 * storeRecheck is the re-check of a room over `store`: for the writes that
 * ring nobody, those of other connections. While the store's dataVersion
 * stays the same, nobody else wrote, and every write of this process rang
 * the room as it committed: a tick costs that one read, whatever the number of
 * waiters. Once it changes (and on every tick where it cannot tell: a remote
 * database), one read of every queue with waiters (when a job of each is next
 * claimable) and one of every job waited on (which are finished), however
 * many there are. The version is kept only once both reads have answered, so
 * a write that comes between the version and the reads is read again at the
 * next tick, never missed.
 */
export function storeRecheck(store: WaitingStore, clock: () => number): Recheck {
  let seen: number | null = null;
  return async ({ queues, jobs }) => {
    const version = await store.dataVersion();
    if (version !== null && version === seen) return NOTHING;
    const [claimable, finished] = await Promise.all([
      queues.length === 0 ? [] : store.nextClaimableAtEach(queues, { now: clock() }),
      jobs.length === 0 ? [] : store.finishedOf(jobs),
    ]);
    seen = version;
    return { claimable, finished };
  };
}

/**
 * localWaits waits in `room`, in this process, over `store`: the Node server's
 * waits, a Durable Object's, and a Worker isolate's without one. The room's
 * re-check asks the store (storeRecheck).
 */
export function localWaits(store: WaitingStore, room: WaitRoom, clock: () => number): Waits {
  room.recheckWith(storeRecheck(store, clock));
  return {
    claimNext: (claim, signal) => waitForJobs(store, room, claim, clock, signal),
    job: (id, waitMs, signal) => waitForResult(store, room, id, waitMs, clock, signal),
    claimable(queue, due, at) {
      if (due === "some") room.wake(queue);
      else if (due > 0) room.ring(queue, due);
      if (at !== undefined) room.wakeAt(queue, at);
    },
    finished: (ids) => room.finished(ids),
    ended: (queue) => room.wake(queue),
    waiting: () => room.waiting,
  };
}

/**
 * requestWaits are the waits of a Worker isolate with no Durable Object to
 * wait in. There one request can never wake another (the runtime refuses to
 * settle a promise for a request other than the one that made it; only a
 * Durable Object may), so each waiting request waits in a WaitRoom of its
 * own, which nothing rings: it claims (or reads) again at the next due job's
 * timer, and when its re-check (every RECHECK_MS, 1 s: one read, as D1
 * cannot tell whether anyone wrote) finds a job due or its job finished. At
 * most `maxWaiting` wait at once in the isolate.
 */
export function requestWaits(store: WaitingStore, clock: () => number, maxWaiting = MAX_WAITING): Waits {
  let waiting = 0;
  const own = <T>(wait: (waits: Waits) => Promise<T>): Promise<T> => {
    const room = new WaitRoom({ maxWaiting: waiting < maxWaiting ? 1 : 0, clock });
    waiting++;
    return wait(localWaits(store, room, clock)).finally(() => waiting--);
  };
  return {
    claimNext: (claim, signal) => own((waits) => waits.claimNext(claim, signal)),
    job: (id, waitMs, signal) => own((waits) => waits.job(id, waitMs, signal)),
    claimable() {},
    finished() {},
    ended() {},
    waiting: () => waiting,
  };
}

/**
 * The long poll of claim-next: enter the queue's line, then claim; while
 * nothing comes, sleep until rung, the next due job (a timer), the deadline,
 * the client's disconnect or the server's stop, and claim again. Each claim is
 * the one claim-next statement, so a woken waiter that loses the race simply
 * waits on. A claim the queue's rate limit stopped short sets the timer at its
 * next token; when that comes after the deadline, it answers at once, saying
 * so (`retryAfterMs`), rather than hold the request to no purpose. A client
 * gone by the time its claim answers is never handed a lease: what it took is
 * released at once (the attempt given back) and handed to the next waiter. A
 * full room answers after one claim, as with no wait.
 */
export async function waitForJobs(store: WaitingStore, room: WaitRoom, claim: WaitingClaim, clock: () => number, signal: AbortSignal): Promise<Claimed> {
  const { queue, owner, ttlMs, limit } = claim;
  const entered = performance.now();
  const deadline = entered + claim.waitMs;
  const none = (retryAfterMs?: number) => ({ leases: [], waitedMs: Math.floor(performance.now() - entered), ...(retryAfterMs !== undefined && { retryAfterMs }) });
  const waiter = room.enterQueue(queue, limit);
  if (waiter === null) return answered(await store.claimNext(queue, { owner, ttlMs, limit, now: clock() }), 0);
  let handOn = false;
  try {
    for (;;) {
      waiter.claiming();
      const waitedMs = Math.floor(performance.now() - entered);
      const now = clock();
      const leases = await store.claimNext(queue, { owner, ttlMs, limit, now });
      const { retryAfterMs } = leases;
      if (retryAfterMs !== undefined) room.wakeAt(queue, now + retryAfterMs); // the next token: one waiter claims it
      if (leases.length > 0) {
        if (signal.aborted) {
          waiter.leave();
          room.ring(queue, await giveBack(store, leases, owner, clock()));
          return none();
        }
        handOn = leases.length === limit; // there may be more: the next waiter looks
        room.wakeAt(queue, Math.min(...leases.map((lease) => lease.until))); // the others wake if these leases run out
        return answered(leases, waitedMs);
      }
      if (waiter.stopped || signal.aborted || performance.now() + (retryAfterMs ?? 0) >= deadline) return none(retryAfterMs);
      if (!room.hasTimer(queue)) {
        // A time not after this claim's own is one it looked at and could not take (a key without room, seen as
        // due): a timer there would wake it at once, again and again. It waits for a ring or the re-check instead.
        const at = await store.nextClaimableAt(queue, { now: clock() });
        if (at === null || at > now) room.wakeAt(queue, at);
      }
      await waiter.sleep(deadline, signal);
      if (waiter.stopped || signal.aborted) return none();
    }
  } finally {
    waiter.leave(handOn);
  }
}

/** A claim's leases as a waiting claim answers them, with when the next token is due if the rate limit stopped it short. */
export function answered(leases: ClaimedLeases, waitedMs: number): Claimed {
  return { leases: [...leases], waitedMs, ...(leases.retryAfterMs !== undefined && { retryAfterMs: leases.retryAfterMs }) };
}

/** Releases leases taken for a client that has gone (the attempts given back); answers how many were, to ring for. */
export async function giveBack(store: WaitingStore, leases: Lease[], owner: string, now: number): Promise<number> {
  let released = 0;
  for (const lease of leases) {
    try {
      await store.release(lease.job.id, { owner, fence: lease.fence, now });
      released++;
    } catch (error) {
      const code = (error as { code?: unknown } | null)?.code;
      if (code !== "stale_lease" && code !== "not_found") throw error; // LeaseLost, NotFound: that lease had ended already
    }
  }
  return released;
}

/**
 * The long poll of a job's result: enter the job's line, then read it; until
 * it is done, dead or cancelled, sleep until a write of this process finishes
 * it, the room's re-check finds it finished (the writes of other processes),
 * the deadline, the client's disconnect or the server's stop, and read again.
 * Answers the job as last read; a full room answers after one read.
 */
async function waitForResult(store: WaitingStore, room: WaitRoom, id: string, waitMs: number, clock: () => number, signal: AbortSignal): Promise<Job> {
  const deadline = performance.now() + waitMs;
  const waiter = room.enterJob(id);
  try {
    for (;;) {
      waiter?.claiming();
      const job = await store.get(id, { now: clock() });
      if (waiter === null || isFinished(job) || waiter.stopped || signal.aborted || performance.now() >= deadline) return job;
      await waiter.sleep(deadline, signal);
    }
  } finally {
    waiter?.leave();
  }
}
