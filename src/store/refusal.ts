import { type LeaseLostReason, LeaseLost, NotFound } from "./errors.ts";
import type { Row } from "../drivers/driver.ts";
import type { Job, JobStatus } from "./job.ts";

// Only explains a refusal that SQL already decided; it never decides one.

/** What a refusal's reason is read from: the job's lease and status as they are now. */
type Holder = Pick<Job, "owner" | "fence" | "status">;

/**
 * Why the write of (owner, fence) was refused, read from the job as it is now:
 * the lease's own fate first (superseded, not_owner), then the job's (done,
 * cancelled: a cancel keeps the owner and fence, so its holder is told so).
 */
export function leaseLostReason(current: Holder, owner: string, fence: number): LeaseLostReason {
  if (fence < current.fence) return "superseded";
  if (fence !== current.fence || owner !== current.owner) return "not_owner";
  if (current.status === "done") return "done";
  if (current.status === "cancelled") return "cancelled";
  return "expired";
}

/** The error for a refused write with a lease: NotFound, or LeaseLost with its reason. */
export function refusal(id: string, current: Holder | null, owner: string, fence: number): LeaseLost | NotFound {
  if (current === null) return new NotFound(id);
  return new LeaseLost(id, leaseLostReason(current, owner, fence), current.fence);
}

/** How one lease of a many-lease call ended: its answer, or the domain error that says why it was refused. */
export type LeaseOutcome<T> = ({ id: string } & T) | { id: string; error: LeaseLost | NotFound };

/**
 * Each presented lease's outcome, in order: `accepted(id)` unless it is among
 * the `refused` rows (see readRefused in src/store/sql/many.ts), whose job, or
 * its absence, says why.
 */
export function outcomes<T extends object>(presented: { id: string; fence: number }[], owner: string, refused: Row[], accepted: (id: string) => T): LeaseOutcome<T>[] {
  const rows = new Map(refused.map((row) => [row.lease_id as string, row]));
  return presented.map(({ id, fence }) => {
    const row = rows.get(id);
    if (row === undefined) return { id, ...accepted(id) };
    const current = row.found === 0 ? null : { owner: row.owner as string | null, fence: row.fence as number, status: row.status as JobStatus };
    return { id, error: refusal(id, current, owner, fence) };
  });
}
