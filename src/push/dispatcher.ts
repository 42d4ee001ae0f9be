import { NotFound } from "../store/errors.ts";
import type { Lease } from "../store/job.ts";
import type { PushTarget } from "../store/push.ts";
import type { LeaseStore } from "../store/store.ts";
import type { Waits } from "../wait/long-poll.ts";
import type { Waiter, WaitRoom } from "../wait/wait-room.ts";
import { deliver, type Post } from "./deliver.ts";

/** How often the dispatcher reads which queues are pushed, for those that another process put or deleted. */
export const PUSH_REFRESH_MS = 5_000;

/** Options of a PushDispatcher. */
export type PushDispatcherOptions = {
  store: LeaseStore;
  /** The server's WaitRoom: the dispatcher waits in each pushed queue's line, beside the long polls. */
  room: WaitRoom;
  /** What deliveries tell of their writes (the server's own Waits over `room`). */
  waits: Waits;
  clock: () => number;
  log?: (line: string) => void;
  /** How often the pushed queues are read again; default PUSH_REFRESH_MS; 0 never (only `changed`). */
  refreshMs?: number;
  /** How deliveries go out; default fetch. The Node server's checks where they connect (src/runtime/node/push-network.ts). */
  post?: Post;
};

/** One pushed queue as the dispatcher works it: its deliveries on their way, and its loop. */
type Line = { queue: string; maxInFlight: number; inFlight: number; waiter?: Waiter; stopped: boolean; loop?: Promise<void> };

/**
 * PushDispatcher pushes the jobs of the pushed queues from inside the Node
 * server: per queue, one loop that waits in the server's WaitRoom as a long
 * poll does, and so is rung by the same writes (an enqueue rings it within
 * milliseconds), by the timer of the next due job (a backoff, a Retry-After),
 * by a lease's end, and by the room's re-check for writes of other processes.
 * Woken, it claims through store.push.claim (the claim-next statement: pause,
 * maxLeased and the rate limit decide there, and the queue's maxInFlight)
 * as many jobs as it has deliveries free, and delivers each with deliver().
 * Its place in the room counts for the deliveries it has free: with all
 * of them on their way, an enqueue's ring passes it by to the long polls
 * waiting after it. Its claim stops at the queue's maxInFlight pushed leases
 * too, so a claim that comes back short does not mean that no job is due
 * (202 leases, or another process's deliveries, may hold the slots): it hands
 * the wake on to the next waiter, which spends a claim at most.
 * A claim that takes nothing sets the timer at store.push.nextDueAt: while
 * the queue's slots are held by leases this loop does not wait on (202s,
 * deliveries of another process), that is when the first of them ends, and
 * it wakes sooner only when one is ended through this server or the room's
 * re-check finds a write of another process: a few claims per event, never
 * a loop.
 *
 * Guarantees:
 * - One delivery per lease: a lease is delivered by the loop that claimed it,
 *   once; a retry is a new claim, hence a new lease and fence.
 * - At most maxInFlight deliveries at once per queue, across processes: the
 *   claim counts the queue's current pushed leases.
 * - A stop claims nothing more, lets the deliveries on their way end within
 *   its grace, then aborts the others, whose leases are given back.
 *
 * Failure modes:
 * - A queue put or deleted by another process is seen at the next refresh
 *   (PUSH_REFRESH_MS); by this process, at once (`changed`). A refresh claims
 *   only for a queue whose maxInFlight grew: an idle queue costs no claim.
 * - A claim that fails (the database) is logged; the loop tries again at
 *   the room's next ring or re-check.
 * - The process dies mid-delivery: the lease runs out (the timeout plus
 *   PUSH_SETTLE_MS), and the job is claimed and delivered again.
 */
export class PushDispatcher {
  readonly #options: PushDispatcherOptions;
  readonly #lines = new Map<string, Line>();
  readonly #deliveries = new Set<Promise<unknown>>();
  readonly #stopping = new AbortController();
  #refresh: ReturnType<typeof setInterval> | undefined;

  constructor(options: PushDispatcherOptions) {
    this.#options = options;
  }

  /** Reads the pushed queues and starts a loop for each; then reads them again every `refreshMs`. */
  async start(): Promise<void> {
    await this.#refreshAll();
    const every = this.#options.refreshMs ?? PUSH_REFRESH_MS;
    if (every > 0) {
      this.#refresh = setInterval(() => void this.#refreshAll(), every);
      this.#refresh.unref?.();
    }
  }

  /** How many deliveries are on their way now. */
  get inFlight(): number {
    return this.#deliveries.size;
  }

  /** A queue's push settings were put or deleted here: its loop starts, takes the new maxInFlight, or stops. */
  async changed(queue: string): Promise<void> {
    try {
      this.#adopt(queue, (await this.#options.store.push.get(queue)).maxInFlight);
    } catch (error) {
      if (error instanceof NotFound) this.#drop(queue); // no endpoint any more
      else this.#options.log?.(`fencelease: reading the push settings of ${JSON.stringify(queue)} failed, the next refresh looks again: ${(error as Error).message}`);
    }
  }

  /**
   * Stops claiming, waits up to `graceMs` for the deliveries on their way,
   * then aborts the rest: each gives its lease back. Answers once all have ended.
   */
  async stop(graceMs = 0): Promise<void> {
    clearInterval(this.#refresh);
    for (const queue of [...this.#lines.keys()]) this.#drop(queue);
    const ended = Promise.all(this.#deliveries);
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([ended, new Promise((resolve) => (timer = setTimeout(resolve, graceMs)))]);
    clearTimeout(timer);
    this.#stopping.abort();
    await ended;
  }

  async #refreshAll(): Promise<void> {
    if (this.#stopping.signal.aborted) return;
    let pushed;
    try {
      pushed = await this.#options.store.push.list();
    } catch (error) {
      this.#options.log?.(`fencelease: reading the pushed queues failed: ${(error as Error).message}`);
      return;
    }
    const names = new Set(pushed.map((settings) => settings.queue));
    for (const queue of this.#lines.keys()) if (!names.has(queue)) this.#drop(queue);
    for (const settings of pushed) this.#adopt(settings.queue, settings.maxInFlight);
  }

  #adopt(queue: string, maxInFlight: number): void {
    if (this.#stopping.signal.aborted) return;
    const line = this.#lines.get(queue);
    if (line) {
      const grew = maxInFlight > line.maxInFlight;
      line.maxInFlight = maxInFlight;
      this.#roomFor(line);
      // Only a larger maxInFlight lets it claim more now: an idle queue costs no claim per refresh.
      if (grew) line.waiter?.rung();
      return;
    }
    const started: Line = { queue, maxInFlight, inFlight: 0, stopped: false };
    this.#lines.set(queue, started);
    started.loop = this.#run(started);
  }

  #drop(queue: string): void {
    const line = this.#lines.get(queue);
    if (!line) return;
    this.#lines.delete(queue);
    line.stopped = true;
    line.waiter?.rung();
  }

  /** One queue's loop: claim what it has room for, deliver, sleep until rung. */
  async #run(line: Line): Promise<void> {
    const { store, room, clock, log } = this.#options;
    const waiter = room.enterQueue(line.queue, line.maxInFlight);
    if (waiter === null) {
      // The room is full or stopped: the next refresh tries again.
      this.#lines.delete(line.queue);
      return;
    }
    line.waiter = waiter;
    try {
      while (!line.stopped && !waiter.stopped) {
        waiter.claiming();
        const free = line.maxInFlight - line.inFlight;
        if (free > 0) {
          try {
            const now = clock();
            const { leases, target, retryAfterMs } = await store.push.claim(line.queue, { limit: free, now });
            if (retryAfterMs !== undefined) room.wakeAt(line.queue, now + retryAfterMs);
            if (target === null) {
              this.#drop(line.queue); // its endpoint was deleted, maybe by another process
              break;
            }
            for (const lease of leases) this.#deliver(line, lease, target);
            if (leases.length === free) continue; // full: it sleeps once a delivery is on its way back
            waiter.passOn(); // short: maybe only of push slots, while a long poll behind it could take a job
            if (leases.length > 0) room.wakeAt(line.queue, Math.min(...leases.map((lease) => lease.until)));
            // Not before a job is due and, while its maxInFlight pushed leases are all held (202s,
            // deliveries of other processes), one of them ends: a claim sooner would take nothing again.
            else if (!room.hasTimer(line.queue)) room.wakeAt(line.queue, await store.push.nextDueAt(line.queue, { now: clock() }));
          } catch (error) {
            log?.(`fencelease: claiming jobs of ${JSON.stringify(line.queue)} to push failed: ${(error as Error).message}`);
          }
        }
        await waiter.sleep(performance.now() + 60_000);
      }
    } finally {
      waiter.leave();
    }
  }

  /** What a ring counts the line's waiter for: the deliveries it has free. */
  #roomFor(line: Line): void {
    if (line.waiter) line.waiter.limit = Math.max(0, line.maxInFlight - line.inFlight);
  }

  #deliver(line: Line, lease: Lease, target: PushTarget): void {
    line.inFlight++;
    this.#roomFor(line);
    const { store, clock, waits, log, post } = this.#options;
    const delivery = deliver(lease, target, { store, clock, waits, log, post, signal: this.#stopping.signal })
      .catch((error: unknown) => log?.(`fencelease: pushing job ${JSON.stringify(lease.job.id)} failed, its lease will run out: ${(error as Error).message}`))
      .finally(() => {
        line.inFlight--;
        this.#roomFor(line);
        this.#deliveries.delete(delivery);
        line.waiter?.rung(); // a delivery free: claim again
      });
    this.#deliveries.add(delivery);
  }
}
