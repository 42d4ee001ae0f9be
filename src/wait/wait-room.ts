/** Options of a WaitRoom; every one has a default. */
export type WaitRoomOptions = {
  /** The most requests waiting at once; `enter` answers null beyond it. Default MAX_WAITING (10,000). */
  maxWaiting?: number;
  /**
   * How often the room looks again, for the writes it does not hear of
   * (another process on the same file, plain SQL): one `Recheck` for every
   * queue and job with waiters at once. Default RECHECK_MS (1 s); 0 never.
   */
  recheckMs?: number;
  /** The clock that `wakeAt` times are read on (the server's); default Date.now. */
  clock?: () => number;
};

/** The default most requests waiting at once in one room. */
export const MAX_WAITING = 10_000;
/** The default re-check of a queue with waiters: 1 s. */
export const RECHECK_MS = 1_000;

/** The longest delay a timer takes (a longer one would fire at once); a timer that far ahead is re-armed when it fires. */
const MAX_DELAY_MS = 2 ** 31 - 1;

/** Where a waiter waits: for a job of a queue, or for the result of one job. */
type Line = { kind: "queue" | "job"; key: string };

/** One queue's waiters in arrival order, and its timer at the next due job. */
type QueueLine = { waiters: Set<Waiter>; timer?: { at: number; handle: unknown } };

/** What the room has waiters for: the queues with waiting claims, the jobs with waiting reads. */
export type Waiting = { queues: string[]; jobs: string[] };

/**
 * What a re-check found: when a job of each queue (of those asked about)
 * next becomes claimable, maybe already (a queue left out has none), and
 * which of the jobs are finished.
 */
export type Rechecked = { claimable: { queue: string; at: number }[]; finished: string[] };

/**
 * The room's re-check: given what it has waiters for, what the writes it did
 * not hear of changed. `localWaits` asks the store (src/wait/long-poll.ts).
 */
export type Recheck = (waiting: Waiting) => Rechecked | Promise<Rechecked>;

/** The re-check of a room that was given none: every queue may have a job now, every job may be finished; its waiters look for themselves. */
const LOOK_AGAIN: Recheck = ({ queues, jobs }) => ({ claimable: queues.map((queue) => ({ queue, at: 0 })), finished: jobs });

/** Timers must not keep a Node process alive; Workers timers have no unref. */
function unref(timer: unknown): unknown {
  (timer as { unref?: () => void } | undefined)?.unref?.();
  return timer;
}

/**
 * WaitRoom is where waiting requests wait, in one process (the Node server,
 * one Durable Object, one Worker isolate): per queue, the claims waiting for
 * a job, first come first served; per job, the reads waiting for its result.
 * It decides nothing about leases: a woken waiter runs the same claim-next
 * statement as any other claim, which alone decides who gets a job.
 *
 * Guarantees:
 * - No wake-up is missed: a waiter enters BEFORE its first claim, and a ring
 *   that comes while it claims is kept (it is `owed`), so that its next
 *   `sleep` returns at once and it claims again.
 * - No thundering herd: `ring(queue, jobs)` wakes waiters in arrival order
 *   until their limits cover `jobs`, skipping those already woken and not yet
 *   done claiming, and those whose limit is 0 for now (the push dispatcher
 *   with every delivery on its way). A wake of unknown size (a timer, a
 *   re-check) wakes one; a waiter that then takes a full batch hands the wake
 *   on (`leave(true)`), and so on until one comes back short. A waiter whose
 *   short claim does not mean the queue has no more (the dispatcher's claim
 *   stops at the queue's maxInFlight too) hands it on with `passOn`.
 * - A wake is not lost with its waiter: one that leaves while owed (its
 *   deadline, its client gone, a failed claim) hands the wake to the next.
 * - Scheduled jobs and lease ends: `wakeAt` keeps one timer per queue with
 *   waiters, at the earliest time given; when it fires, one waiter wakes.
 * - Bounded: at most `maxWaiting` waiters; `enter` answers null beyond it,
 *   and after `stop`. `stop` wakes every waiter at once, and `stopped` tells
 *   each to answer now.
 * - Re-checked, not polled: while anyone waits, the room runs its `Recheck`
 *   once every `recheckMs`, for every queue and job with waiters at once (one
 *   at a time: a tick that finds the last still running skips), and wakes
 *   what it reports: a queue's timer moved to its next claimable time (one
 *   waiter woken if that has come), every reader of a finished job. An idle
 *   waiter costs nothing per tick of its own.
 *
 * Failure modes:
 * - A write this room does not hear of (another process, plain SQL, a ring
 *   lost on its way) wakes nobody until the next re-check finds it; with
 *   `recheckMs` 0 they wait for their deadline, the next ring or the timer. A
 *   re-check that fails is dropped; the next tick asks again.
 * - A woken waiter that loses the race (another client took the job) finds
 *   nothing and sleeps again: one claim spent, nothing taken twice.
 * - Timers run on the process's own clock: a server clock moved by hand moves
 *   where `wakeAt` arms a timer, not how long a waiter waits.
 */
export class WaitRoom {
  readonly #queues = new Map<string, QueueLine>();
  readonly #jobs = new Map<string, Set<Waiter>>();
  readonly #maxWaiting: number;
  readonly #recheckMs: number;
  readonly #clock: () => number;
  #recheck: Recheck = LOOK_AGAIN;
  /** The re-check's timer, while anyone waits. */
  #ticking: unknown;
  /** A re-check in progress: the next tick waits for it to end. */
  #checking = false;
  #waiting = 0;
  #stopped = false;

  constructor(options: WaitRoomOptions = {}) {
    this.#maxWaiting = options.maxWaiting ?? MAX_WAITING;
    this.#recheckMs = options.recheckMs ?? RECHECK_MS;
    this.#clock = options.clock ?? Date.now;
    if (!Number.isSafeInteger(this.#maxWaiting) || this.#maxWaiting < 0) throw new RangeError(`maxWaiting must be a whole number, 0 or more, got ${options.maxWaiting}`);
    if (!Number.isSafeInteger(this.#recheckMs) || this.#recheckMs < 0) throw new RangeError(`recheckMs must be a whole number of ms, 0 or more, got ${options.recheckMs}`);
  }

  /** How many requests wait now. */
  get waiting(): number {
    return this.#waiting;
  }

  /** Whether `stop` was called: waiters answer at once, and no new one enters. */
  get stopped(): boolean {
    return this.#stopped;
  }

  /** How often the room re-checks its lines (0: never). */
  get recheckMs(): number {
    return this.#recheckMs;
  }

  /** Sets what the re-check asks (see Recheck); without it, each tick wakes one waiter of every queue and every reader, who look for themselves. */
  recheckWith(recheck: Recheck): void {
    this.#recheck = recheck;
  }

  /** A place in `queue`'s line for a claim of up to `limit` jobs; null when the room is full or stopped. */
  enterQueue(queue: string, limit: number): Waiter | null {
    if (!this.#admit()) return null;
    let line = this.#queues.get(queue);
    if (!line) {
      line = { waiters: new Set() };
      this.#queues.set(queue, line);
    }
    const waiter = new Waiter(this, { kind: "queue", key: queue }, limit);
    line.waiters.add(waiter);
    return waiter;
  }

  /** A place among those waiting for job `id`'s result; null when the room is full or stopped. */
  enterJob(id: string): Waiter | null {
    if (!this.#admit()) return null;
    const waiter = new Waiter(this, { kind: "job", key: id }, 1);
    let line = this.#jobs.get(id);
    if (!line) this.#jobs.set(id, (line = new Set()));
    line.add(waiter);
    return waiter;
  }

  /** `jobs` jobs of `queue` became claimable: wakes waiters, first come first served, until their limits cover them. */
  ring(queue: string, jobs: number): void {
    let left = jobs;
    for (const waiter of this.#queues.get(queue)?.waiters ?? []) {
      if (left <= 0) return;
      if (waiter.owed || waiter.limit === 0) continue;
      waiter.rung();
      left -= waiter.limit;
    }
  }

  /** Some jobs of `queue` may be claimable, how many unknown: wakes the first waiter not already woken that may take one (but `except`). */
  wake(queue: string, except?: Waiter): void {
    for (const waiter of this.#queues.get(queue)?.waiters ?? []) {
      if (waiter.owed || waiter.limit === 0 || waiter === except) continue;
      waiter.rung();
      return;
    }
  }

  /** A job of `queue` becomes claimable at `at` (the server's clock): one waiter wakes then. Null: none is due. */
  wakeAt(queue: string, at: number | null): void {
    const line = this.#queues.get(queue);
    if (!line || at === null) return;
    if (line.timer && line.timer.at <= at) return;
    clearTimeout(line.timer?.handle as number);
    const fire = () => {
      if (line.timer?.handle === handle) line.timer = undefined;
      this.wake(queue);
    };
    const handle = unref(setTimeout(fire, Math.min(MAX_DELAY_MS, Math.max(0, at - this.#clock()))));
    line.timer = { at, handle };
  }

  /** Whether `queue` has a timer armed: if not, a waiter that found nothing asks when to set one. */
  hasTimer(queue: string): boolean {
    return this.#queues.get(queue)?.timer !== undefined;
  }

  /** The jobs finished (done, dead, cancelled, or gone): wakes everyone waiting for their results. */
  finished(ids: Iterable<string>): void {
    for (const id of ids) for (const waiter of this.#jobs.get(id) ?? []) waiter.rung();
  }

  /** Wakes every waiter, for good: each answers at once; nobody enters any more. */
  stop(): void {
    this.#stopped = true;
    for (const line of this.#queues.values()) for (const waiter of line.waiters) waiter.rung();
    for (const line of this.#jobs.values()) for (const waiter of line) waiter.rung();
  }

  /** Takes `waiter` out of its line; called by `Waiter.leave`. */
  remove(waiter: Waiter, line: Line): void {
    if (--this.#waiting === 0) {
      clearInterval(this.#ticking as number);
      this.#ticking = undefined;
    }
    if (line.kind === "job") {
      const waiters = this.#jobs.get(line.key);
      waiters?.delete(waiter);
      if (waiters?.size === 0) this.#jobs.delete(line.key);
      return;
    }
    const queue = this.#queues.get(line.key);
    if (!queue) return;
    queue.waiters.delete(waiter);
    if (queue.waiters.size > 0) return;
    clearTimeout(queue.timer?.handle as number);
    this.#queues.delete(line.key);
  }

  #admit(): boolean {
    if (this.#stopped || this.#waiting >= this.#maxWaiting) return false;
    if (this.#waiting++ === 0 && this.#recheckMs > 0) this.#ticking = unref(setInterval(() => void this.#tick(), this.#recheckMs));
    return true;
  }

  /** One re-check of every line, and the wakes it calls for. */
  async #tick(): Promise<void> {
    if (this.#checking || this.#stopped) return;
    this.#checking = true;
    try {
      const found = await this.#recheck({ queues: [...this.#queues.keys()], jobs: [...this.#jobs.keys()] });
      for (const { queue, at } of found.claimable) this.wakeAt(queue, at);
      this.finished(found.finished);
    } catch {
      // Dropped: the next tick asks again, and each waiter's deadline answers it meanwhile.
    } finally {
      this.#checking = false;
    }
  }
}

/**
 * One waiting request's place in a WaitRoom: it sleeps between its claims (or
 * reads) until it is rung, its deadline passes, its signal aborts or the room
 * stops; it leaves once, whatever happened.
 */
export class Waiter {
  /** The most jobs its claim takes: what a ring counts it for; 0, none for now, and rings pass it by. It may change while it waits (the push dispatcher's is its deliveries free). */
  limit: number;
  readonly #room: WaitRoom;
  readonly #line: Line;
  #owed = false;
  #wake: (() => void) | undefined;
  #left = false;

  constructor(room: WaitRoom, line: Line, limit: number) {
    this.#room = room;
    this.#line = line;
    this.limit = limit;
  }

  /** Rung, and no claim (or read) has started since: one is on its way, so another ring passes it by. */
  get owed(): boolean {
    return this.#owed;
  }

  /** The room stopped: answer now. */
  get stopped(): boolean {
    return this.#room.stopped;
  }

  /** Marks this waiter rung, waking it if it sleeps; called by the room. */
  rung(): void {
    this.#owed = true;
    this.#wake?.();
  }

  /**
   * Sleeps until rung, `deadline` (performance.now() ms), `signal` or the
   * room's stop; at once if a ring came since the last `claiming`.
   */
  sleep(deadline: number, signal?: AbortSignal): Promise<void> {
    if (this.#owed || this.stopped || signal?.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = unref(setTimeout(() => wake(), Math.max(0, deadline - performance.now())));
      const wake = () => {
        clearTimeout(timer as number);
        signal?.removeEventListener("abort", wake);
        this.#wake = undefined;
        resolve();
      };
      signal?.addEventListener("abort", wake, { once: true });
      this.#wake = wake;
    });
  }

  /**
   * A claim (or read) starts now: it answers the rings before it. A ring that
   * comes while it runs may be for a job it does not see, so it stays owed.
   */
  claiming(): void {
    this.#owed = false;
  }

  /** Its claim came back short, which may not mean its queue has no more: wakes the next waiter of its queue that may take one. */
  passOn(): void {
    if (this.#line.kind === "queue" && !this.#left) this.#room.wake(this.#line.key, this);
  }

  /**
   * Leaves the line. A waiter that leaves owed, or with `handOn` (it took a
   * full batch, so there may be more), wakes the next one in its queue.
   */
  leave(handOn = false): void {
    if (this.#left) return;
    this.#left = true;
    this.#wake?.();
    this.#room.remove(this, this.#line);
    if (this.#line.kind === "queue" && (this.#owed || handOn)) this.#room.wake(this.#line.key);
  }
}
