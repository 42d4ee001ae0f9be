import type { HousekeepingOptions, LeaseStore } from "./store.ts";
import type { Waits } from "./wait/long-poll.ts";

/** How long done and dead jobs are kept by default: 7 days. */
export const RETENTION_MS = 7 * 24 * 60 * 60 * 1000;

/** What one maintenance run did: how many leases it ended and jobs it purged, and the jobs whose lease it ended. */
export type Maintained = { expired: number; purged: number; ended: { id: string; queue: string; dead: boolean }[] };

/**
 * How many chunks (of HOUSEKEEPING_CHUNK rows, src/store.ts) each part of one
 * cron run takes at most on the Worker: a larger backlog is worked through
 * over the next runs, so that a run stays within D1's limits (about 40
 * statements, each a bounded transaction).
 */
export const CRON_MAX_CHUNKS = 10;

/**
 * maintain is the housekeeping of the cron trigger (and of the Node server's
 * timer): it ends expired leases, each counting as a failed attempt, and
 * purges done and dead jobs, with their events, older than the retention;
 * each in chunks, as `options` bound them (see HousekeepingOptions).
 */
export async function maintain(store: LeaseStore, now: number, retentionMs = RETENTION_MS, options: Omit<HousekeepingOptions, "chunkSize"> = {}): Promise<Maintained> {
  const ended = await store.reclaimExpiredLeases(now, options);
  const purged = await store.purge(now, retentionMs, options);
  return { expired: ended.length, purged, ended };
}

/**
 * repeat runs `run` every `everyMs`, one run at a time: the next starts
 * `everyMs` after the one before has ended, so two never overlap however long
 * one takes. `run` should catch its own errors; a rejection is ignored and the
 * next run comes as usual. `stop` aborts the signal of the run in progress,
 * waits for that run to end, and starts no other. The timer does not keep the
 * process alive.
 */
export function repeat(everyMs: number, run: (signal: AbortSignal) => Promise<void>): { stop: () => Promise<void> } {
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
    }, everyMs);
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

/**
 * Tells the waiters what a maintenance run did: the jobs whose lease it ended
 * are claimable again (rung per queue), those that died are finished. Answers
 * the rings on their way (to Durable Objects), if any.
 */
export function wakeAfter({ ended }: Maintained, waits: Waits): Promise<void> {
  const due = new Map<string, number>();
  for (const job of ended) if (!job.dead) due.set(job.queue, (due.get(job.queue) ?? 0) + 1);
  const dead = ended.filter((job) => job.dead).map((job) => job.id);
  if (dead.length > 0) waits.finished(dead);
  return Promise.all([...due].map(([queue, jobs]) => waits.claimable(queue, jobs))).then(() => undefined);
}

/** The log line for a maintenance run. */
export function maintainedLine({ expired, purged }: Maintained): string {
  return `fencelease: ended ${expired} expired lease${expired === 1 ? "" : "s"}, purged ${purged} old job${purged === 1 ? "" : "s"}`;
}
