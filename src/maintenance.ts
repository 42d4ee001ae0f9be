import type { LeaseStore } from "./store.ts";

/** How long done and dead jobs are kept by default: 7 days. */
export const RETENTION_MS = 7 * 24 * 60 * 60 * 1000;

/** What one maintenance run did. */
export type Maintained = { expired: number; purged: number };

/**
 * maintain is the housekeeping of the cron trigger (and of the Node server's
 * timer): it ends expired leases, each counting as a failed attempt, and
 * purges done and dead jobs, with their events, older than the retention.
 */
export async function maintain(store: LeaseStore, now: number, retentionMs = RETENTION_MS): Promise<Maintained> {
  const expired = await store.reclaimExpired(now);
  const purged = await store.purge(now, retentionMs);
  return { expired, purged };
}

/** The log line for a maintenance run. */
export function maintainedLine({ expired, purged }: Maintained): string {
  return `fencelease: ended ${expired} expired lease${expired === 1 ? "" : "s"}, purged ${purged} old job${purged === 1 ? "" : "s"}`;
}
