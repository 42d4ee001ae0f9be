import type { FiredJob, SkippedSchedule, TakenFire } from "./schedules.ts";
import type { HousekeepingOptions, LeaseStore } from "./store.ts";
import type { Waits } from "../wait/long-poll.ts";

/** How long done, dead and cancelled jobs are kept by default: 7 days. */
export const RETENTION_MS = 604_800_000;

/**
 * What one maintenance run did: how many leases it ended and jobs it purged,
 * the jobs whose lease it ended, the jobs its schedules' fires enqueued, the
 * fires that found their id taken, and the schedules it could not fire.
 */
export type Maintained = { expired: number; purged: number; ended: { id: string; queue: string; dead: boolean }[]; fired: FiredJob[]; taken: TakenFire[]; skipped: SkippedSchedule[] };

/**
 * How many chunks (of HOUSEKEEPING_CHUNK rows, src/store/shapes.ts) each part of one
 * cron run takes at most on the Worker: a larger backlog is worked through
 * over the next runs, so that a run stays within D1's limits (about 40
 * statements, each a bounded transaction).
 */
export const CRON_MAX_CHUNKS = 10;

/**
 * How many chunks of due schedules (500 each, 3 statements a chunk) a run
 * whose chunks are bounded (the Worker's cron) fires at most: 1,000 fires a
 * minute, and few statements beside the rest of the run.
 */
export const CRON_SCHEDULE_CHUNKS = 2;

/**
 * maintain is the housekeeping of the cron trigger (and of the Node server's
 * timer): it enqueues the jobs of the schedules due (at most
 * CRON_SCHEDULE_CHUNKS chunks of them when `maxChunks` is given), ends expired leases,
 * each counting as a failed attempt, and purges done, dead and cancelled jobs,
 * with their events, older than the retention; each in chunks, as `options` bound
 * them (see HousekeepingOptions). `schedules: false` leaves the schedules to a
 * timer of their own (the Node server's `fireOnTime`).
 */
export async function maintain(store: LeaseStore, now: number, retentionMs = RETENTION_MS, options: Omit<HousekeepingOptions, "chunkSize"> & { schedules?: boolean | undefined } = {}): Promise<Maintained> {
  const maxChunks = options.maxChunks === undefined ? undefined : Math.min(options.maxChunks, CRON_SCHEDULE_CHUNKS);
  const { jobs: fired, taken, skipped } = options.schedules === false ? { jobs: [], taken: [], skipped: [] } : await store.schedules.fireDue({ ...options, maxChunks, now });
  const ended = await store.expire({ ...options, now });
  const purged = await store.purge({ ...options, retentionMs, now });
  return { expired: ended.length, purged, ended, fired, taken, skipped };
}

/**
 * repeat runs `run` every `everyMs`, one run at a time: the next starts
 * `everyMs` after the one before has ended, so two never overlap however long
 * one takes (a function `everyMs` is asked for each wait, once the run before
 * has ended). `run` should catch its own errors; a rejection is ignored and
 * the next run comes as usual. `stop` aborts the signal of the run in
 * progress, waits for that run to end, and starts no other. The timer does
 * not keep the process alive.
 */
export function repeat(everyMs: number | (() => number), run: (signal: AbortSignal) => Promise<void>): { stop: () => Promise<void> } {
  const stopping = new AbortController();
  let running: Promise<void> | undefined;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const next = () => {
    timer = setTimeout(() => {
      running = run(stopping.signal)
        .catch(() => {})
        .finally(() => {
          running = undefined;
          if (!stopping.signal.aborted) next();
        });
    }, typeof everyMs === "number" ? everyMs : everyMs());
    (timer as { unref?: () => void }).unref?.();
  };
  next();
  return {
    async stop() {
      stopping.abort();
      clearTimeout(timer);
      await running;
    },
  };
}

/** The longest the Node server's schedule timer sleeps by default: other processes may put schedules that fire sooner. */
export const SCHEDULE_RECHECK_MS = 1_000;

/**
 * fireOnTime is the Node server's schedule timer: it fires the due schedules
 * (one run at a time, see `repeat`), then sleeps until the next fire, or at
 * most `recheckMs`, so that a fire is enqueued within milliseconds of its
 * time, and one that another process put within `recheckMs`. The jobs it
 * enqueues wake their queues' waiters. A failed run is logged, and tried
 * again after `recheckMs`.
 */
export function fireOnTime(store: LeaseStore, options: { clock: () => number; waits: Waits; recheckMs: number; log?: (line: string) => void }): { stop: () => Promise<void> } {
  const { clock, waits, recheckMs, log } = options;
  let nextFireAt: number | null = 0; // the first run comes at once
  const sleep = () => (nextFireAt === null ? recheckMs : Math.min(recheckMs, Math.max(0, nextFireAt - clock())));
  return repeat(sleep, async (signal) => {
    try {
      const fired = await store.schedules.fireDue({ signal, now: clock() });
      nextFireAt = fired.nextFireAt;
      if (fired.skipped.length > 0) log?.(`fencelease: ${skippedLine(fired.skipped)}`);
      if (fired.taken.length > 0) log?.(`fencelease: ${takenLine(fired.taken)}`);
      if (fired.jobs.length === 0) return;
      void wakeAfter({ ended: [], fired: fired.jobs }, waits);
      log?.(`fencelease: ${firedLine(fired.jobs)}`);
    } catch (error) {
      nextFireAt = null;
      log?.(`fencelease: firing schedules failed: ${(error as Error).message}`);
    }
  });
}

/**
 * Tells the waiters what a maintenance run did: the jobs whose lease it ended
 * are claimable again, and so are the jobs its fires enqueued (rung per
 * queue); those that died are finished. Answers
 * the rings on their way (to Durable Objects), if any.
 */
export function wakeAfter({ ended, fired }: Pick<Maintained, "ended" | "fired">, waits: Waits): Promise<void> {
  const due = new Map<string, number>();
  for (const job of [...ended.filter((job) => !job.dead), ...fired]) due.set(job.queue, (due.get(job.queue) ?? 0) + 1);
  const dead = ended.filter((job) => job.dead).map((job) => job.id);
  if (dead.length > 0) waits.finished(dead);
  return Promise.all([...due].map(([queue, jobs]) => waits.claimable(queue, jobs))).then(() => undefined);
}

/** Whether a maintenance run did anything worth a log line: an idle server's runs say nothing. */
export function didAnything({ expired, purged, fired, taken, skipped }: Maintained): boolean {
  return expired + purged + fired.length + taken.length + skipped.length > 0;
}

/** The log line for a maintenance run. */
export function maintainedLine({ expired, purged, fired, taken, skipped }: Maintained): string {
  return `fencelease: ended ${expired} expired lease${expired === 1 ? "" : "s"}, purged ${purged} old job${purged === 1 ? "" : "s"}${fired.length > 0 ? `, ${firedLine(fired)}` : ""}${taken.length > 0 ? `; ${takenLine(taken)}` : ""}${skipped.length > 0 ? `; ${skippedLine(skipped)}` : ""}`;
}

/** The fires that enqueued nothing because their job's id was taken, for a log line. */
function takenLine(taken: TakenFire[]): string {
  const named = taken.slice(0, 5).map((fire) => JSON.stringify(fire.id)).join(", ") + (taken.length > 5 ? ` and ${taken.length - 5} more` : "");
  return `${taken.length} scheduled fire${taken.length === 1 ? "" : "s"} enqueued nothing: a job had the id already (${named})`;
}

/** The schedules a run could not fire, and why, for a log line. */
function skippedLine(skipped: SkippedSchedule[]): string {
  return `could not fire ${skipped.map(({ name, error }) => `${JSON.stringify(name)} (${error})`).join(", ")}`;
}

/** What schedules' fires enqueued, for a log line. */
function firedLine(fired: FiredJob[]): string {
  const named = fired.slice(0, 5).map((job) => job.id).join(", ") + (fired.length > 5 ? ` and ${fired.length - 5} more` : "");
  return `enqueued ${fired.length} scheduled job${fired.length === 1 ? "" : "s"} (${named})`;
}
