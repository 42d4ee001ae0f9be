import type { LeaseStore } from "./store.ts";
import type { Waits } from "./wait/long-poll.ts";

/** How long done and dead jobs are kept by default: 7 days. */
export const RETENTION_MS = 7 * 24 * 60 * 60 * 1000;

/** What one maintenance run did: how many leases it ended and jobs it purged, and the jobs whose lease it ended. */
export type Maintained = { expired: number; purged: number; ended: { id: string; queue: string; dead: boolean }[] };

/**
 * maintain is the housekeeping of the cron trigger (and of the Node server's
 * timer): it ends expired leases, each counting as a failed attempt, and
 * purges done and dead jobs, with their events, older than the retention.
 */
export async function maintain(store: LeaseStore, now: number, retentionMs = RETENTION_MS): Promise<Maintained> {
  const ended = await store.reclaimExpiredLeases(now);
  const purged = await store.purge(now, retentionMs);
  return { expired: ended.length, purged, ended };
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
